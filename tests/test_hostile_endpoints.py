"""Endpoints that misbehave (issue 12): each bad response is one case's ``error`` — never a crashed run,
never a silent pass — worded truthfully, and no secret substituted into a connector leaks."""

from __future__ import annotations

import errno
import json

import pytest

from agenttest.connectors.httpfailures import connection_failure, retry_after
from helpers import Answer, cli, report

DEEP = "[" * 100_000 + "]" * 100_000
HTML = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def run_cases(app, cases, *flags, stream=False):
    if stream:
        app.connector("fake", {"type": "openai", "options": {"model": "fake-model", "host": app.server_host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                             "max_retries": 0, "stream": True}})
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), *flags)
    return result, report(out)


@pytest.fixture
def hostile(app, server):
    app.server_host = server.host
    return app


ANSWERS = {
    "usage": Answer("fine", usage_raw={"prompt_tokens": "ten", "completion_tokens": 5, "total_tokens": 15}),
    "deep-body": Answer(raw=DEEP),
    "deep-args": Answer("", tool_calls=[{"name": "t", "arguments": DEEP}]),
    "deep-args-object": Answer("", tool_calls=[{"name": "t", "arguments": "[" * 500 + "]" * 500}]),
    "html": Answer(raw=HTML, content_type="text/html"),
    "ok": Answer("fine"),
}
EXPECTED = {
    "usage": "usage.prompt_tokens is 'ten', not a number of tokens",
    "deep-body": "JSON nested too deeply",
    "deep-args": "tool-call arguments from 127.0.0.1:",
    "deep-args-object": "are nested more than 64 deep",
    "html": "an HTML page titled '502 Bad Gateway': is the API base right?",
}


def test_each_bad_response_is_that_cases_error_and_the_run_goes_on(hostile, server):
    server.responder = lambda req: ANSWERS[req["messages"][-1]["content"]]
    cases = [{"id": name, "input": name} for name in ANSWERS]
    result, data = run_cases(hostile, cases, "--parallel", "3")
    assert result.exit_code == 1, result.output
    by_id = {r["id"]: r for r in data["results"]}
    assert by_id["ok"]["status"] == "passed"
    for name, text in EXPECTED.items():
        assert by_id[name]["status"] == "error" and text in by_id[name]["error"], (name, by_id[name].get("error"))
        assert "internal error" not in by_id[name]["error"]
    assert data["summary"]["usage"]["total_tokens"] == 15  # the good case only


STREAMS = {
    "plain-json": (Answer(raw=json.dumps({"id": "x", "object": "chat.completion", "choices": []})),
                   "asked for a stream, but 127.0.0.1:"),
    "html": (Answer(raw=HTML, content_type="text/html"), "answered with text/html (an HTML page titled '502 Bad Gateway'"),
    "cut-off": (Answer("half an ans", finish=False, done=False), "ended without a finish_reason (cut off after 11 characters)"),
}


def test_a_streaming_connector_answered_badly_is_an_error_not_a_silent_pass(hostile, server):
    server.responder = lambda req: STREAMS[req["messages"][-1]["content"]][0] if req["messages"][-1]["content"] in STREAMS else Answer("complete answer", done=False)
    cases = [{"id": name, "input": name, "assert": {"type": "not_contains", "value": "zzz"}} for name in [*STREAMS, "no-done"]]
    result, data = run_cases(hostile, cases, stream=True)
    by_id = {r["id"]: r for r in data["results"]}
    for name, (_, text) in STREAMS.items():
        assert by_id[name]["status"] == "error" and text in by_id[name]["error"], (name, by_id[name].get("error"))
    assert "set \"stream\": false on the connector" in by_id["plain-json"]["error"]
    assert by_id["no-done"]["status"] == "passed" and by_id["no-done"]["output"] == "complete answer"  # finished, [DONE] missing
    assert all(b.get("stream") is True for b in server.bodies())


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_server_that_hangs_up_is_worded_as_such(hostile, server, monkeypatch, transport):
    monkeypatch.setenv("AGENTTEST_HTTP", transport)  # aiohttp's mapping says ConnectTimeout: still not "timed out"
    server.responder = lambda req: Answer(hang_up=True)
    result, data = run_cases(hostile, [{"id": "a", "input": "hi"}])
    (r,) = data["results"]
    assert r["status"] == "error" and "connection to 127.0.0.1:" in r["error"] and "closed the connection without answering" in r["error"]
    assert "(after 2 retries)" in r["error"]  # retried like any dropped connection


def chain(*errors: BaseException) -> BaseException:
    for outer, inner in zip(errors, errors[1:]):
        outer.__cause__ = inner
    return errors[0]


@pytest.mark.parametrize("cause, kind, words", [
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"), "unreachable", "connection refused"),
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "connection", "connection reset by the server"),
    (OSError(errno.EMFILE, "Too many open files"), "connection", "out of file descriptors (too many open connections: try a lower --parallel, or raise `ulimit -n`)"),
    (__import__("socket").gaierror(-2, "Name or service not known"), "unreachable", "cannot resolve the host name (Name or service not known)"),
])
def test_connection_failures_are_worded_truthfully(cause, kind, words):
    exc = chain(RuntimeError("Connection error."), type("ConnectError", (Exception,), {})("All connection attempts failed"), cause)
    assert connection_failure(exc) == (kind, words)


@pytest.mark.parametrize("headers, seconds", [
    ({"retry-after": "2"}, 2.0), ({"retry-after": "0.5"}, 0.5), ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after": "soon"}, None), ({}, None), ({"retry-after": "-3"}, 0.0), ({"retry-after": "nan"}, None),
    ({"retry-after": "1", "retry-after-ms": "100"}, 0.1),  # OpenAI sends both: the finer one first
    ({"retry-after": "1", "retry-after-ms": "soon"}, 1.0), ({"retry-after": "1", "retry-after-ms": "-5"}, 1.0),  # nonsense: the other
    ({"retry-after-ms": "nan"}, None),
])
def test_retry_after_forms(headers, seconds):
    assert retry_after(headers) == seconds


def test_retry_after_as_an_http_date():
    from email.utils import formatdate
    import time

    in_ten_seconds = formatdate(time.time() + 10, usegmt=True)  # a date, whole seconds: 9–10 s from now as it is read
    assert 8 <= retry_after({"retry-after": in_ten_seconds}) <= 10


def test_a_503_storm_suggests_a_lower_parallel(hostile, server):
    server.responder = lambda req: Answer(status=503, error="overloaded", headers={"retry-after-ms": "1"})
    result, data = run_cases(hostile, [{"id": f"c{i}", "input": "hi"} for i in range(3)], "--parallel", "3")
    assert all("the endpoint is overloaded: try a lower --parallel (it is 3)" in r["error"] for r in data["results"])
    assert any("responses were 503 (overloaded)" in w for w in data["metadata"]["warnings"])
    load = data["summary"]["load"]["connectors"]["fake"]
    assert load["overloaded"] == 9 and load["requests"] == 9  # 3 cases × (1 + 2 retries)


# ---- secrets -----------------------------------------------------------------------------------


def test_every_substituted_value_is_hidden_headers_and_url_userinfo_included(app, server, monkeypatch):
    monkeypatch.setenv("GATEWAY_TOKEN", "gw-token-7f3a9c1e55")
    monkeypatch.setenv("PROXY_PASSWORD", "hunter2-but-longer")
    server.responder = lambda req: Answer(status=400, error=f"bad auth: {req['messages'][-1]['content']} " + "x" * 990 + " gw-token-7f3a9c1e55")
    host = server.host.replace("http://", "http://user:$ENV.PROXY_PASSWORD@")
    app.connector("gw", {"type": "openai", "options": {"model": "m", "host": host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                       "headers": {"X-Gateway": "Bearer $ENV.GATEWAY_TOKEN"}}})
    app.agent("bot", connector="gw")
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hunter2-but-longer"}])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--json")
    seen = result.stdout + result.stderr + out.read_text()
    for secret in ("gw-token-7f3a9c1e55", "hunter2-but-longer", "sk-test-SECRET-0123456789"):
        assert secret not in seen
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["x-gateway"] == "Bearer gw-token-7f3a9c1e55"  # the header was really sent
    error = report(out)["results"][0]["error"]
    assert "bad auth: ***" in error and error.endswith("…")  # redacted first, then cut: no prefix of the key survives
    assert "gw-token" not in error and "gw-tok" not in error


def test_a_value_too_short_to_hide_is_said_once(app, server, monkeypatch):
    monkeypatch.setenv("SHORT_KEY", "test")
    server.responder = lambda req: Answer("a test reply")
    app.connector("short", {"type": "openai", "options": {"model": "m", "host": server.host, "key": "$ENV.SHORT_KEY"}})
    app.agent("bot", connector="short")
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi"}, {"id": "b", "input": "hi"}])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "-v")
    assert result.exit_code == 0
    assert result.stdout.count("$ENV.SHORT_KEY is shorter than 8 characters, so it is not hidden in output") == 1
    assert "a test reply" in result.stdout and "***" not in result.stdout  # ordinary words stay readable
