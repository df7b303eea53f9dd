"""Usage is known or said to be unknown (issue 51 item 2): an endpoint that sends no usage (llama-cpp-python's
streams) has its tokens counted with a tokenizer and marked estimated, or marked unknown — and a token or
cost budget on unknown usage is the case's error, never a pass on 0 tokens and $0."""

from __future__ import annotations

import pytest
from helpers import cli, report
from scripted import Scripted

from agenttest.connectors import tokens

PRICE = {"input": 1.0, "output": 2.0}
needs_tokenizer = pytest.mark.skipif(tokens.encoder() is None, reason="bpe-openai is not installed (pip install 'agent-test[tokens]')")


@pytest.fixture
def bot(app, server):
    server.responder = Scripted()
    server.no_stream_usage = True
    for name, stream in (("streamed", True), ("plain", False)):
        app.connector(name, {"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                            "max_retries": 0, "stream": stream, "pricing": PRICE}})
    app.agent("bot", connector="streamed")
    return app


@pytest.fixture
def no_tokenizer(monkeypatch):
    monkeypatch.setattr(tokens, "_tried", True)
    monkeypatch.setattr(tokens, "_encoder", None)


def run(app, cases, *args):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), *args)
    return result, report(out)


def test_the_stream_asks_for_usage(bot, server):
    run(bot, [{"id": "c", "input": "say:ok"}])
    assert server.bodies()[0]["stream_options"] == {"include_usage": True}


@needs_tokenizer
@pytest.mark.parametrize("connector", ["streamed", "plain"])
def test_usage_the_endpoint_did_not_send_is_estimated_and_said_so(bot, server, connector):
    server.responder = lambda req: __import__("helpers").Answer("ok, " * 20, usage=None)
    result, data = run(bot, [{"id": "small", "input": "hello", "budget": {"tokens": 5}},
                             {"id": "big", "input": "hello", "budget": {"tokens": 5000}}], "-c", connector)
    small, big = data["results"]
    assert small["usage"]["source"] == "estimated" and small["usage"]["completion_tokens"] > 10
    assert small["usage"]["total_tokens"] == small["usage"]["prompt_tokens"] + small["usage"]["completion_tokens"]
    assert small["status"] == "failed" and small["error"].startswith("budget exceeded: tokens ")
    assert small["error"].endswith("> 5 (estimated: the endpoint sent no usage)")
    assert big["status"] == "passed"
    assert data["summary"]["usage"]["source"] == "estimated"
    assert "estimated: the endpoint sent no usage" in result.stdout
    assert "(estimated)" in result.stdout  # the cost line


@pytest.mark.parametrize("budget", [{"tokens": 100000}, {"cost": 10.0}])
def test_a_token_or_cost_budget_on_unknown_usage_is_an_error_not_a_pass(bot, no_tokenizer, budget):
    result, data = run(bot, [{"id": "c", "input": "say:ok", "budget": budget}])
    (r,) = data["results"]
    assert r["usage"]["source"] == "unknown" and r["usage"]["total_tokens"] == 0
    assert r["status"] == "error", r
    assert "token usage is unknown" in r["error"] and "pip install 'agent-test[tokens]'" in r["error"]
    assert result.exit_code == 1
    assert "unknown" in result.stdout


def test_the_budget_assertion_on_unknown_usage_is_an_error(bot, no_tokenizer):
    result, data = run(bot, [{"id": "c", "input": "say:ok", "assert": {"type": "budget", "tokens": 100000}}])
    (r,) = data["results"]
    assert r["status"] == "error" and "token usage is unknown" in r["error"]


def test_other_limits_still_hold_on_unknown_usage(bot, no_tokenizer):
    result, data = run(bot, [{"id": "c", "input": "say:ok", "budget": {"tool_calls": 3, "turns": 2}}])
    assert data["results"][0]["status"] == "passed"
    assert "Tokens:    unknown" in result.stdout


def test_usage_the_endpoint_sent_is_taken_as_it_is(bot, server):
    server.no_stream_usage = False
    result, data = run(bot, [{"id": "c", "input": "say:ok", "budget": {"tokens": 100}}])
    (r,) = data["results"]
    assert r["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15} and r["status"] == "passed"
    assert "estimated" not in result.stdout and "unknown" not in result.stdout


def test_estimates_add_up_and_unknown_wins():
    from agenttest.model import Usage

    assert (Usage(1, 2, 3) + Usage(1, 1, 2, source="estimated")).source == "estimated"
    assert (Usage(1, 2, 3, source="estimated") + Usage(source="unknown")).source == "unknown"
    assert (Usage() + Usage(1, 2, 3)) == Usage(1, 2, 3)
    assert Usage(source="unknown").as_dict()["source"] == "unknown" and "source" not in Usage(1, 1, 2).as_dict()
