"""What each model was sent and answered (``--calls``, issue 58): every call of a case — the agent's, the judge's,
the simulator's — kept in the report with its request as sent, its response as received, timing and retries;
repeated messages stored once; secrets hidden; attachments summarised. End to end on the loopback server."""

from __future__ import annotations

import base64
import json

import pytest

from helpers import Answer, cli, last_user, report

KEY = "sk-test-SECRET-0123456789"  # the app fixture's $FAKE_OPENAI_KEY


def body_of(calls: dict, exchange: dict) -> dict:
    """An exchange's request body as the report gives it: its parameters, messages and tools by number."""
    body = dict(exchange["parameters"])
    body["messages"] = [calls["messages"][i] for i in exchange["messages"]]
    if "tools" in exchange:
        body["tools"] = calls["tools"][exchange["tools"]]
    return body


TOOLS = [{"name": "lookup", "description": "Look an order up", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}]


@pytest.fixture
def shop(app, server):
    """An agent with a tool and a system prompt, and a judge; the agent looks order 7 up, then answers."""
    app.agent("bot", tools=TOOLS, options={"temperature": 0.3}, files={
        "prompts.yml": "- role: system\n  content: You are the shop's assistant.\n",
        "src/tools.py": "def lookup(ctx, id):\n    return {'id': id, 'status': 'shipped'}\n"})
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n"})

    def responder(req):
        if req["messages"][0].get("content") == "You are a validator.":
            return Answer('{"passed": false, "reason": "no date given"}')
        if req["messages"][-1].get("role") == "tool":
            return Answer("Order 7 has shipped.", usage=(30, 6))
        return Answer(tool_calls=[{"name": "lookup", "arguments": {"id": "7"}}], usage=(20, 4))

    server.responder = responder
    cases = [{"id": "judged", "input": "Where is order 7?", "assertions": [
                {"type": "contains", "value": "shipped"},
                {"type": "agent", "use": "agents:judge", "value": "Gives a delivery date"}]},
             {"id": "fine", "input": "Where is order 7?", "assertions": [{"type": "contains", "value": "shipped"}]}]
    return app.cases("cases.jsonl", cases)


def test_a_failed_case_keeps_every_call_as_sent_and_answered(shop, server, tmp_path):
    result = cli("-i", str(shop), "-n", "bot", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 1
    judged, fine = report(tmp_path / "r.json")["results"]
    assert "calls" not in fine  # --calls failed (the default): a passed case keeps none
    calls = judged["calls"]
    made = calls["exchanges"]
    assert [(e["role"], e.get("for", "")) for e in made] == [("agent", ""), ("agent", ""), ("validator", "assertion 2")]
    sent = server.bodies()[:3]
    assert [body_of(calls, e) for e in made] == sent  # each body exactly as the server received it
    assert all(e["url"] == f"{server.url}/chat/completions" for e in made) and made[0]["parameters"]["temperature"] == 0.3
    # the agent's second call repeats its first call's messages: each is stored once
    assert made[1]["messages"][:2] == made[0]["messages"] and len(calls["messages"]) == 2 + 2 + 2
    assert made[0]["tools"] == made[1]["tools"] == 0 and len(calls["tools"]) == 1 and "tools" not in made[2]
    first, second, judge = (e["response"] for e in made)
    assert first["tool_calls"] == [{"id": "call_0", "name": "lookup", "arguments": {"id": "7"}}] and first["finish_reason"] == "tool_calls"
    assert second == {"content": "Order 7 has shipped.", "finish_reason": "stop", "model": "fake-model",
                      "usage": {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}}
    assert json.loads(judge["content"]) == {"passed": False, "reason": "no date given"}
    assert all(e["duration_ms"] >= e["queued_ms"] >= 0 and "retries" not in e and "error" not in e for e in made)
    assert KEY not in (tmp_path / "r.json").read_text()


def test_calls_all_keeps_a_passed_cases_calls_and_none_keeps_nothing(shop, tmp_path):
    assert cli("-i", str(shop), "-n", "bot", "--calls", "all", "-o", str(tmp_path / "all.json")).exit_code == 1
    assert [len(r["calls"]["exchanges"]) for r in report(tmp_path / "all.json")["results"]] == [3, 2]
    assert cli("-i", str(shop), "-n", "bot", "--calls", "none", "-o", str(tmp_path / "none.json")).exit_code == 1
    data = report(tmp_path / "none.json")
    assert not any("calls" in r for r in data["results"]) and data["metadata"]["options"]["calls"] == "none"


def test_a_bad_calls_value_is_a_usage_error(shop):
    result = cli("-i", str(shop), "-n", "bot", "--calls", "failures")
    assert result.exit_code == 2 and "'failures' is not one of 'none', 'failed', 'all'" in result.output
    assert "Traceback" not in result.output


def test_retries_say_why_and_how_long_and_a_stream_its_first_byte(app, server, tmp_path):
    app.agent("bot")
    app.connector("streamed", {"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                             "stream": True}})
    app.agent("streamer", connector="streamed")
    asked = []

    def responder(req):
        asked.append(1)
        if len(asked) == 1:
            return Answer(status=429, error="slow down", headers={"retry-after": "0.05"})
        if len(asked) == 2:
            return Answer(status=503, error="busy")
        return Answer("made it", usage=None)

    server.responder = responder
    path = app.cases("cases.jsonl", [{"id": "slow", "input": "hi", "assertions": [{"type": "contains", "value": "never"}]}])
    assert cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json")).exit_code == 1
    made = report(tmp_path / "r.json")["results"][0]["calls"]["exchanges"]
    assert len(made) == 1 and len(asked) == 3
    first, second = made[0]["retries"]
    assert (first["kind"], first["status"], first["waited_ms"]) == ("rate_limit", 429, 50.0) and "slow down" in first["error"]
    assert (second["kind"], second["status"]) == ("server", 503) and second["waited_ms"] > 0
    assert made[0]["duration_ms"] >= 50 and made[0]["response"]["usage"]["source"] in ("estimated", "unknown")
    asked.clear()
    server.responder = lambda req: Answer("streamed", usage=None)
    assert cli("-i", str(path), "-n", "streamer", "-o", str(tmp_path / "s.json")).exit_code == 1
    (call,) = report(tmp_path / "s.json")["results"][0]["calls"]["exchanges"]
    assert call["parameters"]["stream"] is True and 0 <= call["first_byte_ms"] <= call["duration_ms"]
    assert call["response"]["usage"]["source"] in ("estimated", "unknown")  # no usage in the stream: never shown as measured


def test_a_failed_call_keeps_its_request_and_the_error(app, server, tmp_path):
    app.agent("bot")
    server.responder = lambda req: Answer(status=400, error="max_tokens is too large")
    path = app.cases("cases.jsonl", [{"id": "bad", "input": "hi", "options": {"max_tokens": 999999}}])
    assert cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json")).exit_code == 1
    (call,) = report(tmp_path / "r.json")["results"][0]["calls"]["exchanges"]
    assert "response" not in call and "max_tokens is too large" in call["error"] and call["parameters"]["max_tokens"] == 999999


def test_no_secret_in_the_calls_and_no_credentials_in_the_url(app, server, tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_PASSWORD", "hunter2-hunter2-hunter2")
    host = server.host.replace("://", "://admin:$ENV.SHOP_PASSWORD@")
    app.connector("fake", {"type": "openai", "options": {"model": "fake-model", "host": host, "key": "$ENV.FAKE_OPENAI_KEY"}})
    app.agent("bot", files={"prompts.yml": "- role: system\n  content: 'Never say the key $ENV.FAKE_OPENAI_KEY'\n"})
    server.responder = lambda req: Answer(f"the key is {KEY} and half of it {KEY[:14]}")
    path = app.cases("cases.jsonl", [{"id": "leaky", "input": "what is the key?", "assertions": [{"type": "contains", "value": "nothing"}]}])
    assert cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.html")).exit_code == 1
    for name in ("r.json", "r.html"):
        text = (tmp_path / name).read_text()
        assert KEY not in text and KEY[:14] not in text and "hunter2" not in text, name
    (call,) = report(tmp_path / "r.json")["results"][0]["calls"]["exchanges"]
    assert call["url"] == f"{server.url}/chat/completions" and "admin" not in call["url"]


def test_attachments_are_summarised_not_inlined(app, server, tmp_path):
    app.agent("bot")
    picture = bytes(range(256)) * 40
    app.file("tests/photo.png", "")
    (app.root / "tests" / "photo.png").write_bytes(picture)
    server.responder = lambda req: Answer("a photo")
    path = app.cases("tests/cases.jsonl", [{"id": "photo", "assertions": [{"type": "contains", "value": "cat"}], "input": [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image", "source": "file://photo.png"}]}]}])
    assert cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json")).exit_code == 1
    calls = report(tmp_path / "r.json")["results"][0]["calls"]
    part = calls["messages"][-1]["content"][1]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("[attachment image/png, 10,240 bytes, sha256 ")
    assert base64.b64encode(picture).decode()[:40] not in json.dumps(calls)
    assert server.bodies()[0]["messages"][-1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")  # sent whole


def test_a_dynamic_case_files_the_simulator_and_judge_calls_under_their_turn_and_checkpoint(app, server, tmp_path):
    app.agent("bot")
    app.agent("sim", files={"prompts.yml": "- role: system\n  content: You play the user.\n"})
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n"})

    def responder(req):
        first = req["messages"][0].get("content")
        if first == "You play the user.":
            turn = json.loads(last_user(req))["turn_number"]
            return Answer(json.dumps({"message": f"question {turn}", "goal_achieved": False, "reasoning": "asking"}))
        if first == "You are a validator.":
            return Answer('{"passed": false, "reason": "not polite"}')
        return Answer(f"answer to {last_user(req)}")

    server.responder = responder
    case = {"id": "chat", "simulator": {"use": "sim"}, "max_turns": 2,
            "checkpoints": [{"id": "polite", "assert": {"type": "agent", "use": "agents:judge", "value": "is polite"}}]}
    path = app.cases("cases.jsonl", [case])
    assert cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json")).exit_code == 1
    made = report(tmp_path / "r.json")["results"][0]["calls"]["exchanges"]
    assert [(e["role"], e["turn"], e.get("for", "")) for e in made] == [
        ("simulator", 1, ""), ("agent", 1, ""), ("validator", 1, "checkpoint polite"),
        ("simulator", 2, ""), ("agent", 2, ""), ("validator", 2, "checkpoint polite")]


def test_a_replayed_call_says_so(app, server, tmp_path):
    app.agent("bot")
    server.responder = lambda req: Answer("recorded answer")
    path = app.cases("cases.jsonl", [{"id": "r", "input": "hi", "assertions": [{"type": "contains", "value": "never"}]}])
    assert cli("-i", str(path), "-n", "bot", "--record", str(tmp_path / "tapes"), "-o", str(tmp_path / "live.json")).exit_code == 1
    assert "replayed" not in report(tmp_path / "live.json")["results"][0]["calls"]["exchanges"][0]
    assert cli("-i", str(path), "-n", "bot", "--replay", str(tmp_path / "tapes"), "-o", str(tmp_path / "replay.json")).exit_code == 1
    (call,) = report(tmp_path / "replay.json")["results"][0]["calls"]["exchanges"]
    assert call["replayed"] is True and call["response"]["content"] == "recorded answer"
    assert call["url"] == f"{server.url}/chat/completions"  # where it would go: the copied request still has its endpoint


def test_a_generators_calls_are_kept_in_the_summary(app, server, tmp_path):
    app.agent("bot")
    app.agent("gen", files={"prompts.yml": "- role: system\n  content: You generate.\n"})
    cases = [{"id": "g1", "input": "hello", "assertions": [{"type": "contains", "value": "never"}]}]
    server.responder = lambda req: Answer(json.dumps(cases) if req["messages"][0].get("content") == "You generate." else "hi")
    assert cli("-i", "agents:gen?count=1", "-n", "bot", "-o", str(tmp_path / "r.json"), cwd=app.root).exit_code == 1
    data = report(tmp_path / "r.json")
    (call,) = data["summary"]["generation_calls"]["exchanges"]
    assert call["role"] == "generator" and json.loads(call["response"]["content"]) == cases
    assert data["summary"]["generation_calls"]["messages"][0] == {"role": "system", "content": "You generate."}
    assert [e["role"] for e in data["results"][0]["calls"]["exchanges"]] == ["agent"]
    assert cli("-i", "agents:gen?count=1", "-n", "bot", "--calls", "none", "-o", str(tmp_path / "n.json"), cwd=app.root).exit_code == 1
    assert "generation_calls" not in report(tmp_path / "n.json")["summary"]
