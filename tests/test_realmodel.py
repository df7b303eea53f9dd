"""agent-test against a real server and a real model (issue 51 item 7): llama-cpp-python's server with
SmolLM2-135M-Instruct, started on 127.0.0.1 (tests/realmodel.py). The assertions are on agent-test's behaviour —
statuses, errors, usage marks, retries — never on the model's wording. ``-m "not realmodel"`` leaves them out;
under CI=true a server that cannot start fails them.

What this server and model do, that the tests lean on: with ``tool_choice: "auto"`` (without it the server
ignores ``tools``) a reply is either tool calls or an empty message; ``content: null`` beside tool calls is a
500 (a validation error); streams carry no usage; a stream in progress ends, without a ``finish_reason``,
when another request waits; a non-streaming answer, once started, is made to its end."""

from __future__ import annotations

import json

import pytest
import realmodel
from helpers import AppBuilder, cli, report
from realmodel_suite import build_suite, check_suite

pytestmark = pytest.mark.realmodel

TOOLS = [{"name": "lookup_expense", "description": "Look up the user's expense", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = "def lookup_expense(ctx):\n    return {'id': 'EXP-100', 'amount': 12}\n"
PROMPT = "- role: system\n  content: You help employees with their expenses.\n"
CALL = {"id": "c1", "type": "function", "function": {"name": "lookup_expense", "arguments": "{}"}}
# a conversation after which this model calls the tool, then answers with an empty message (deterministic: temperature 0)
ASKED_BEFORE = [{"role": "user", "content": "What is my expense?"}, {"role": "assistant", "content": "", "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "EXP-100"}, {"role": "assistant", "content": "It is EXP-100."}]


@pytest.fixture(scope="session")
def llama(tmp_path_factory):
    server = realmodel.start(tmp_path_factory.mktemp("llama"))
    yield server
    realmodel.stop(server)


@pytest.fixture
def real(tmp_path, llama, monkeypatch):
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    app = AppBuilder(tmp_path / "app", None)
    base = {"model": realmodel.MODEL, "host": llama.host, "tool_choice": "auto", "temperature": 0, "seed": 1, "max_tokens": 48,
            "timeout": 600}
    app.connector("llama", {"type": "openai", "options": {**base, "max_concurrency": 1}})
    app.connector("streamed", {"type": "openai", "options": {**base, "max_concurrency": 1, "stream": True}})
    app.connector("crowded", {"type": "openai", "options": {**base, "stream": True}})  # no max_concurrency
    app.connector("nulls", {"type": "openai", "options": {**base, "max_concurrency": 1, "tool_content": None}})
    app.agent("bot", connector="llama", tools=TOOLS, files={"src/tools.py": TOOLS_PY, "prompts.yml": PROMPT}, max_tool_rounds=2)
    app.agent("talker", connector="llama")
    return app


def run(app, cases, *args, agent="bot"):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", agent, "-o", str(out), *args)
    assert result.exit_code in (0, 1), result.output  # never agent-test's own failure (2, 3)
    return result, report(out)["results"]


def test_an_empty_reply_after_a_tool_call_is_an_empty_output_and_content_null_is_retried(real):
    """Items 1 and 4: the model calls the tool and then says nothing — the case fails with the reply as it was
    (it passed on the tool's JSON); and the server's 500 to ``content: null`` is met by one retry with ""."""
    cases = [{"id": f"asked-{i}", "input": ASKED_BEFORE + [{"role": "user", "content": text}],
              "assert": {"type": "contains", "value": "EXP-100"}}
             for i, text in enumerate(["What is my other expense?", "Look up my expense."])]
    result, results = run(real, cases)
    for r in results:
        assert "model error 500" not in r.get("error", ""), r["error"]
        assert isinstance(r["output"], (str, type(None))), r["output"]  # never a tool's result
        if r["status"] == "passed":
            assert "EXP-100" in r["output"]
    silent = [r for r in results if r["tool_calls"] and r["output"] == ""]
    assert silent, f"the model no longer calls the tool and then answers nothing: {[(r['status'], r['output']) for r in results]}"
    for r in silent:
        assert r["status"] == "failed"
        assert any("the agent's last reply was empty after calling lookup_expense" in w for w in r["warnings"])
    said = " ".join(w for r in results for w in r.get("warnings", ()))
    assert 'answered 500 to "content": null beside tool_calls' in said


def test_a_request_the_server_says_is_invalid_is_not_retried(real):
    """Item 4 (and 7): a connector that insists on ``content: null`` gets the server's validation 500 once."""
    real.agent("bot", connector="nulls", tools=TOOLS, files={"src/tools.py": TOOLS_PY, "prompts.yml": PROMPT}, max_tool_rounds=2)
    _, results = run(real, [{"id": "c", "input": ASKED_BEFORE + [{"role": "user", "content": "Look up my expense."}]}])
    (r,) = results
    assert r["status"] == "error" and "model error 500" in r["error"], r
    assert "not retried: the server says the request is invalid" in r["error"] and "retries" not in r["error"]


def test_a_stream_without_usage_is_estimated_and_a_token_budget_does_not_pass_on_nothing(real):
    """Item 2: the server's streams carry no usage; the tokens are estimated (or said to be unknown)."""
    real.agent("talker", connector="streamed")
    _, results = run(real, [{"id": "tight", "input": "Hello!", "budget": {"tokens": 5}},
                            {"id": "loose", "input": "Hello!", "budget": {"tokens": 100000}}], agent="talker")
    tight, loose = results
    assert tight["usage"].get("source") in ("estimated", "unknown")
    if tight["usage"]["source"] == "estimated":  # bpe-openai installed (CI installs it)
        assert tight["status"] == "failed" and tight["usage"]["total_tokens"] > 5 and "(estimated" in tight["error"]
        assert loose["status"] == "passed"
    else:
        assert tight["status"] == loose["status"] == "error" and "token usage is unknown" in tight["error"]


def test_unstreamed_usage_is_the_servers_own(real):
    _, results = run(real, [{"id": "c", "input": "Hello!", "budget": {"tokens": 100000}}], agent="talker")
    (r,) = results
    assert r["status"] == "passed" and "source" not in r["usage"] and r["usage"]["total_tokens"] > 0


def test_parallel_streams_cut_by_the_server_are_retried_then_explained(real):
    """Item 5: the server ends a stream when another request waits; one retry, then the error says what to do."""
    real.agent("talker", connector="crowded")
    cases = [{"id": f"c{i}", "input": f"Say hello to person {i}."} for i in range(4)]
    _, results = run(real, cases, "--parallel", "4", agent="talker")
    errors = [r for r in results if r["status"] != "passed"]
    assert errors, "no stream was cut: the server served four streams at once"
    for r in errors:
        assert r["status"] == "error" and "ended without a finish_reason" in r["error"] and "again when retried" in r["error"], r
        assert 'lower --parallel (it is 4) or set "max_concurrency": 1 on connector crowded' in r["error"]


def test_max_concurrency_one_keeps_parallel_streams_whole(real):
    real.agent("talker", connector="streamed")
    cases = [{"id": f"c{i}", "input": f"Say hello to person {i}."} for i in range(4)]
    _, results = run(real, cases, "--parallel", "4", agent="talker")
    assert [r["status"] for r in results] == ["passed"] * 4, [r.get("error") for r in results]


def test_a_timed_out_request_does_not_time_out_the_cases_after_it(real):
    """Item 6: the server makes an abandoned non-streaming answer to its end; the next cases wait for it in
    agent-test's queue (their deadlines standing still), not at the server (where their deadlines ran out)."""
    slow = {"id": "slow", "input": "Write a very long story about a cat.", "timeout": "2s", "options": {"max_tokens": 1500}}
    quick = [{"id": f"quick-{i}", "input": "Hi", "timeout": "4s", "options": {"max_tokens": 4}} for i in range(3)]
    _, results = run(real, [slow, *quick], "--parallel", "4", agent="talker")
    status = {r["id"]: r["status"] for r in results}
    assert status["slow"] == "timeout"
    assert [status[f"quick-{i}"] for i in range(3)] == ["passed"] * 3, [r.get("error") for r in results]


def test_a_suite_with_tools_a_judge_and_a_simulator_on_the_real_model(real, tmp_path):
    """Item 7: tools, a judge and a simulator on the same small model, at --parallel 4 — no error of agent-test's
    own, every judge or simulator failure charged to it, usage marked. (The 10 × 5 run: tests/realmodel_suite.py.)"""
    folder = build_suite(real.root, json.loads((real.root / "connectors" / "llama.conn.yao").read_text())["options"]["host"], cases=4)
    out = tmp_path / "suite.json"
    result = cli("-i", str(folder), "-n", "suite.bot", "--runs", "2", "--parallel", "4", "-o", str(out), "--app", str(real.root))
    check_suite(result, report(out))
