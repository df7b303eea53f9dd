"""The dialects of OpenAI-compatible servers (issue 51 items 4, 5): ``content`` beside tool calls (null, "",
omitted; a 500 on null retried once with "" and said), tool loops without streaming, request validation
errors not retried, and streams cut by a server that serves one request at a time — against the loopback
server with each quirk of llama-cpp-python's switched on."""

from __future__ import annotations

import time

import pytest
from helpers import Answer, cli, report

TOOLS = [{"name": "lookup", "description": "find", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = "def lookup(ctx):\n    return {'id': 'EXP-1'}\n"


def tool_then_text(req):
    if req["messages"][-1]["role"] == "tool":
        return Answer("found EXP-1")
    return Answer("", tool_calls=[{"name": "lookup", "arguments": {}}])


def make(app, server, **options):
    server.responder = tool_then_text
    app.connector("local", {"type": "openai", "options": {"model": "m", "host": server.host, "max_retries": 2, **options}})
    app.agent("bot", connector="local", tools=TOOLS, files={"src/tools.py": TOOLS_PY})


def run(app, cases, *args):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), *args)
    return result, report(out) if out.exists() else None


def tool_messages(server):
    return [m for b in server.bodies() for m in b["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]


def test_a_500_on_null_content_is_retried_once_with_an_empty_string_and_said(app, server):
    make(app, server)
    server.null_content_500 = True
    result, data = run(app, [{"id": "a", "input": "find", "assert": {"type": "contains", "value": "EXP-1"}},
                             {"id": "b", "input": "find", "assert": {"type": "contains", "value": "EXP-1"}}], "--workers", "0")
    assert result.exit_code == 0, result.output
    a, b = data["results"]
    assert 'answered 500 to "content": null beside tool_calls' in " ".join(a["warnings"])
    assert 'set "tool_content": "" on connector local' in " ".join(a["warnings"])
    assert "warnings" not in b  # learned: the second case sends "" at once
    contents = [m.get("content", "absent") for m in tool_messages(server)]
    assert contents == [None, "", ""]  # a's refused attempt, a's retry, b's first attempt
    assert len(server.requests) == 5  # a: tool call, 500, retry; b: tool call, answer


@pytest.mark.parametrize("setting, sent", [("", ""), ("omit", "absent"), (None, None)])
def test_tool_content_says_how_the_content_is_written(app, server, setting, sent):
    make(app, server, tool_content=setting)
    result, data = run(app, [{"id": "a", "input": "find"}])
    assert result.exit_code == 0, result.output
    assert [m.get("content", "absent") for m in tool_messages(server)] == [sent]
    assert "warnings" not in data["results"][0]


def test_a_tool_content_given_is_kept_even_when_refused(app, server):
    make(app, server, tool_content=None)
    server.null_content_500 = True
    result, data = run(app, [{"id": "a", "input": "find"}])
    (r,) = data["results"]
    assert r["status"] == "error" and "model error 500" in r["error"] and "not retried" in r["error"]
    assert [m.get("content", "absent") for m in tool_messages(server)] == [None]


def test_a_bad_tool_content_is_a_usage_error_naming_the_connector(app, server):
    make(app, server, tool_content="empty")
    result, _ = run(app, [{"id": "a", "input": "find"}])
    assert result.exit_code == 2 and "Traceback" not in result.output
    text = result.output
    assert "connector local: 'tool_content' must be null, \"\" or \"omit\", not 'empty'" in text and "local.conn.yao" in text


def test_a_request_validation_error_is_not_retried(app, server):
    make(app, server)
    server.responder = lambda req: Answer(status=500, error="1 validation error for CreateChatCompletionRequest: Input should be a valid string")
    result, data = run(app, [{"id": "a", "input": "hello"}])
    (r,) = data["results"]
    assert r["status"] == "error" and "not retried: the server says the request is invalid" in r["error"]
    assert len(server.requests) == 1


def test_other_server_errors_are_still_retried(app, server):
    make(app, server)
    server.responder = lambda req: Answer(status=500, error="out of memory", headers={"retry-after-ms": "1"})
    result, data = run(app, [{"id": "a", "input": "hello"}])
    assert data["results"][0]["status"] == "error" and "after 2 retries" in data["results"][0]["error"]
    assert len(server.requests) == 3


def test_stream_tools_false_sends_a_tool_loop_unstreamed(app, server):
    make(app, server, stream=True, stream_tools=False)
    app.agent("talker", connector="local")  # no tools: streamed
    result, data = run(app, [{"id": "a", "input": "find"}])
    assert result.exit_code == 0, result.output
    assert all("stream" not in b for b in server.bodies())
    cases = app.cases("more.jsonl", [{"id": "b", "input": "hi"}])
    cli("-i", str(cases), "-n", "talker")
    assert server.bodies()[-1]["stream"] is True


def test_tool_choice_is_sent_only_beside_tools(app, server):
    make(app, server, tool_choice="auto")
    app.agent("talker", connector="local")
    run(app, [{"id": "a", "input": "find"}])
    assert all(b["tool_choice"] == "auto" for b in server.bodies())
    cli("-i", str(app.cases("more.jsonl", [{"id": "b", "input": "hi"}])), "-n", "talker")
    assert "tool_choice" not in server.bodies()[-1]


# ---- streams cut (item 5) ------------------------------------------------------------------------


def test_a_stream_cut_once_is_retried(app, server):
    make(app, server, stream=True)
    answers = iter([Answer("par", finish=False, done=False), Answer("whole answer")])
    server.responder = lambda req: next(answers)
    result, data = run(app, [{"id": "a", "input": "hi", "assert": {"type": "contains", "value": "whole"}}])
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 2


def test_streams_cut_under_concurrency_say_to_lower_parallel(app, server):
    make(app, server, stream=True)
    server.responder = lambda req: Answer("a streamed answer")
    server.one_at_a_time = server.interrupt_streams = True
    cases = [{"id": f"c{i}", "input": f"hi {i}"} for i in range(4)]
    result, data = run(app, cases, "--parallel", "4", "--workers", "0")
    errors = [r for r in data["results"] if r["status"] != "passed"]
    assert errors, "a server that ends a stream when another request waits cut none"
    for r in errors:
        assert r["status"] == "error" and "ended without a finish_reason" in r["error"] and "again when retried" in r["error"]
        assert 'lower --parallel (it is 4) or set "max_concurrency": 1 on connector local' in r["error"]


def test_max_concurrency_one_keeps_streams_whole(app, server):
    make(app, server, stream=True, max_concurrency=1)
    server.responder = lambda req: Answer("a streamed answer")
    server.one_at_a_time = server.interrupt_streams = True
    cases = [{"id": f"c{i}", "input": f"hi {i}"} for i in range(4)]
    result, data = run(app, cases, "--parallel", "4")
    assert result.exit_code == 0, result.output
    assert all(r["status"] == "passed" for r in data["results"])


# ---- servers that serve one request at a time (item 6) ---------------------------------------------


def test_a_timed_out_request_is_closed_on_the_wire(app, server):
    make(app, server)
    server.responder = lambda req: Answer("late", delay=5)
    result, data = run(app, [{"id": "a", "input": "hi", "timeout": "0.5s"}])
    assert data["results"][0]["status"] == "timeout"
    deadline = time.monotonic() + 60
    while not server.disconnected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.disconnected == 1  # the server saw the connection close: it may stop generating


def test_a_request_abandoned_on_a_one_at_a_time_server_does_not_time_out_the_next(app, server):
    """Issue 51 item 6: the server goes on with an abandoned request; the next case must not spend its deadline
    waiting behind it at the server (it waits in agent-test's queue, its deadline standing still)."""
    make(app, server, max_concurrency=1)
    server.one_at_a_time = server.finishes_abandoned = True
    server.responder = lambda req: Answer("late" if "slow" in str(req["messages"]) else "quick", delay=5 if "slow" in str(req["messages"]) else 0.05)
    cases = [{"id": "slow", "input": "slow", "timeout": "0.5s"}] + [{"id": f"q{i}", "input": f"q{i}", "timeout": "2s"} for i in range(2)]
    result, data = run(app, cases, "--parallel", "4", "--workers", "0")
    status = {r["id"]: r["status"] for r in data["results"]}
    assert status == {"slow": "timeout", "q0": "passed", "q1": "passed"}, result.output
    assert server.peak_in_flight == 1
