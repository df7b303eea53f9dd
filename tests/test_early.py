"""An openai connector's first requests, sent while the SDK imports (connectors/early.py): each is the SDK's
own request byte for byte — compared at a real loopback server with the request the SDK sends — and anything
the early path does not take is sent again through the SDK, which classifies it as always."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from agenttest.connectors import early
from agenttest.connectors.base import ChatRequest, ConnectorSpec
from agenttest.connectors.openai import OpenAIConnector, post_options
from tests.conftest import Answer, OpenAIServer, cli, report

KEY = "sk-test-SECRET-0123456789"
REQUEST = ChatRequest(messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Grüße, 東京 — 1/2 ½"}],
                      tools=[{"name": "lookup", "description": "find", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
                      options={"temperature": 0.25})


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    """No variable that changes what the SDK sends (a proxy, OPENAI_ORG_ID…): the early path may be taken."""
    for name in list(os.environ):
        if name.upper().startswith("OPENAI_") or name.lower() in early._PROXIES or name == "AGENTTEST_HTTP":
            monkeypatch.delenv(name)


def differences(a: tuple[str, list[tuple[str, str]], bytes], b: tuple[str, list[tuple[str, str]], bytes]) -> list[str]:
    """How two requests as the server received them differ: request line, each header (name as sent, value,
    place), the body's bytes. Empty: the same request."""
    found = [f"request line {a[0]!r} ≠ {b[0]!r}"] if a[0] != b[0] else []
    for i in range(max(len(a[1]), len(b[1]))):
        x, y = (a[1][i] if i < len(a[1]) else None), (b[1][i] if i < len(b[1]) else None)
        if x != y:
            found.append(f"header {i}: {x} ≠ {y}")
    if a[2] != b[2]:
        at = next((i for i, (p, q) in enumerate(zip(a[2], b[2])) if p != q), min(len(a[2]), len(b[2])))
        found.append(f"body differs at byte {at} ({len(a[2])} and {len(b[2])} bytes)")
    return found


def connector(server: OpenAIServer, **options) -> OpenAIConnector:
    return OpenAIConnector(ConnectorSpec(id="fake", type="openai", options={"model": "fake-model", "host": server.host, "key": KEY, **options}))


async def early_then_sdk(conn: OpenAIConnector, request: ChatRequest = REQUEST) -> None:
    """The request sent from the early path, then the same request through the SDK (imported in this process)."""
    assert conn.early_possible() and conn._early is not None
    answer = await conn._early.send(conn.request_body(request))
    assert not isinstance(answer, early.Handed), answer.why
    assert early.IMPORTER.done()  # the SDK is imported here: complete() sends through it
    await conn.complete(request)
    await conn.aclose()


@pytest.mark.parametrize("options", [{}, {"headers": {"X-Team": "qa", "api-key": "k2"}, "organization": "org-7", "timeout": 30, "top_p": 0.5}],
                         ids=["defaults", "headers-organization-timeout"])
def test_the_early_request_is_the_sdks_byte_for_byte(server, options):
    asyncio.run(early_then_sdk(connector(server, **options)))
    assert len(server.wire) == 2
    assert differences(server.wire[0], server.wire[1]) == []
    line, headers, body = server.wire[0]
    assert line == "POST /v1/chat/completions HTTP/1.1" and json.loads(body)["temperature"] == 0.25
    assert ("authorization", f"Bearer {KEY}") in headers and any(k == "x-stainless-package-version" for k, _ in headers)


def test_the_comparison_fails_when_the_sdk_sends_another_header(server):
    """What the test above would say if the SDK changed a header, added one or sent other bytes: the SDK's own
    request with a header value changed, one added (through its public per-request options) and another body."""
    async def go() -> None:
        conn = connector(server)
        assert conn.early_possible() and conn._early is not None
        await conn._early.send(conn.request_body(REQUEST))
        await conn.complete(REQUEST)  # makes the SDK client
        client = conn._clients[0]
        for headers, body in (({"X-Stainless-Lang": "python3"}, conn.request_body(REQUEST)), ({"X-New": "1"}, conn.request_body(REQUEST)),
                              ({}, {**conn.request_body(REQUEST), "temperature": 0.5})):
            await client.post("/chat/completions", cast_to=object, body=body, options={**post_options(client), "headers": headers})
        await conn.aclose()

    asyncio.run(go())
    early_request, sdk, changed, added, other_body = server.wire
    assert differences(early_request, sdk) == []
    assert [d for d in differences(early_request, changed) if "x-stainless-lang" in d] == [
        "header 7: ('x-stainless-lang', 'python') ≠ ('x-stainless-lang', 'python3')"]
    assert any("('x-new', '1')" in d for d in differences(early_request, added))
    assert differences(early_request, other_body) == [f"header 16: ('content-length', '{len(early_request[2])}') ≠ ('content-length', '{len(other_body[2])}')",
                                                      f"body differs at byte {early_request[2].index(b'0.25') + 2} ({len(early_request[2])} and {len(other_body[2])} bytes)"]


def test_the_installed_sdk_is_a_compared_version():
    """Another SDK version turns the early path off until the test above has compared it (and VERIFIED names it)."""
    assert early.sdk_version() == openai.__version__
    assert openai.__version__ in early.VERIFIED


@pytest.mark.parametrize("env, options, why", [
    ({"HTTPS_PROXY": "http://127.0.0.1:9"}, {}, "the environment sets HTTPS_PROXY"),
    ({"OPENAI_PROJECT_ID": "p"}, {}, "the environment sets OPENAI_PROJECT_ID"),
    ({"AGENTTEST_HTTP": "httpx"}, {}, "the SDK sends on httpx"),
    ({}, {"headers": {"User-Agent": "mine"}}, "the header 'User-Agent' is one the SDK sets itself, or not plain text"),
    ({}, {"headers": {"X-A": "1", "x-a": "2"}}, "two headers differ only in case"),
    ({}, {"headers": {"X-A": "é"}}, "the header 'X-A' is one the SDK sets itself, or not plain text"),
    ({}, {"host": "http://127.0.0.1:9/v1?api-version=1"}, "the endpoint is not a plain http(s) URL"),
    ({}, {"host": "http://127.0.0.1:9/a%20b"}, "the endpoint's URL would be re-encoded"),
])
def test_what_the_sdk_alone_sends(server, monkeypatch, env, options, why):
    """Whatever makes the SDK's request another than this module can make: the early path is never taken."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    conn = connector(server, **options)
    assert early.why_not(conn.base_url, conn.headers, conn.organization, conn.request_timeout) == why
    assert not conn.early_possible()


def test_a_connector_that_streams_waits_for_the_sdk(server):
    conn = connector(server, stream=True)
    assert not conn.early_possible()


def _run(tmp_path: Path, server: OpenAIServer, *args: str, ids: tuple[str, ...] = ("one",)) -> subprocess.CompletedProcess[str]:
    """agent-test in a fresh interpreter (the SDK not yet imported: its first requests leave early), on one case per id."""
    root = tmp_path / "app"
    (root / "connectors").mkdir(parents=True)
    (root / "assistants" / "bot").mkdir(parents=True)
    (root / "connectors" / "fake.conn.yao").write_text(json.dumps({"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY"}}))
    (root / "assistants" / "bot" / "package.yao").write_text(json.dumps({"name": "bot", "connector": "fake"}))
    (root / "cases.jsonl").write_text("".join(json.dumps({"id": i, "input": "hello there", "assert": [{"type": "contains", "value": "hello"}]}) + "\n" for i in ids))
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("OPENAI_") and k.lower() not in early._PROXIES and k != "AGENTTEST_HTTP"}
    env["FAKE_OPENAI_KEY"] = KEY
    return subprocess.run([sys.executable, "-m", "agenttest", "-i", "cases.jsonl", "-n", "bot", "-o", "r.json", "--no-history", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def _sdk_request(server: OpenAIServer) -> tuple[str, list[tuple[str, str]], bytes]:
    """The first request of the same case sent through the SDK (this process has imported it)."""
    server.wire.clear()
    conn = connector(server)
    conn.key = KEY

    async def go() -> None:
        assert early.IMPORTER.done()
        await conn.complete(ChatRequest(messages=[{"role": "user", "content": "hello there"}]))
        await conn.aclose()

    asyncio.run(go())
    return server.wire[0]


@pytest.mark.parametrize("workers", ["1", "0"])
def test_a_fresh_run_sends_the_sdks_request(tmp_path, server, workers):
    run = _run(tmp_path, server, "--workers", workers)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(server.wire) == 1
    sent = server.wire[0]
    assert differences(sent, _sdk_request(server)) == []
    assert report(tmp_path / "app" / "r.json")["summary"]["passed"] == 1


def test_each_of_two_workers_sends_its_first_request_as_the_sdk_does(tmp_path, server):
    """Two cases on two workers, one each: each worker's first request leaves early (the SDK imports on a thread of
    that worker, its switch interval lowered meanwhile) and is the SDK's own, byte for byte."""
    run = _run(tmp_path, server, "--workers", "2", "--parallel", "2", ids=("c1", "c2"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(server.wire) == 2
    sent = list(server.wire)
    sdk = _sdk_request(server)
    assert [differences(s, sdk) for s in sent] == [[], []]
    assert report(tmp_path / "app" / "r.json")["summary"]["passed"] == 2


_SWITCH = """
import sys
sys.path.insert(0, sys.argv[1])
from agenttest.connectors import early
early.SDK_MODULES = ("probe_switch",)  # imported as the SDK would be: it notes the switch interval it was imported under
before = sys.getswitchinterval()
early.IMPORTER.start()
early.IMPORTER.join()
import probe_switch
print(before, probe_switch.SEEN, sys.getswitchinterval())
"""


@pytest.mark.parametrize("sets", [None, 0.002], ids=["restored", "kept-when-set-meanwhile"])
def test_the_gil_changes_hands_sooner_while_the_sdk_imports_on_its_thread(tmp_path, sets):
    """While the SDK imports on its thread, the event loop beside it waits at most IMPORT_SWITCH for the GIL; the
    interval is restored once it has imported — unless something else set it meanwhile (then that value stays)."""
    (tmp_path / "probe_switch.py").write_text("import sys\nSEEN = sys.getswitchinterval()\n" + (f"sys.setswitchinterval({sets})\n" if sets else ""))
    run = subprocess.run([sys.executable, "-c", _SWITCH, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    before, seen, after = map(float, run.stdout.split())
    assert before == 0.005 and seen == pytest.approx(early.IMPORT_SWITCH)
    assert after == (sets or before)


def test_an_early_request_that_fails_is_sent_again_through_the_sdk(tmp_path, server):
    """A 500 to the early request: sent again through the SDK (the same bytes), whose answer the case gets; --calls
    says the endpoint saw it twice."""
    answers = iter([Answer(status=500, error="busy"), Answer(content="hello back")])
    server.responder = lambda body: next(answers)
    run = _run(tmp_path, server, "--calls", "all")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(server.wire) == 2 and differences(server.wire[0], server.wire[1]) == []
    call = report(tmp_path / "app" / "r.json")["results"][0]["calls"]["exchanges"][0]
    assert [(r["kind"], r["status"]) for r in call["retries"]] == [("early", 500)]
    assert "sent again through the SDK" in call["retries"][0]["error"] and KEY not in run.stdout + run.stderr


def test_an_invalid_request_fails_as_through_the_sdk(tmp_path, server):
    """A 400 (the request is invalid): the SDK's answer to it is the case's error, not retried, as without the early path."""
    server.responder = lambda body: Answer(status=400, error="Invalid value for 'temperature'")
    run = _run(tmp_path, server)
    assert run.returncode == 1, run.stdout + run.stderr
    result = report(tmp_path / "app" / "r.json")["results"][0]
    assert result["status"] == "error" and "model error 400" in result["error"]
    assert len(server.wire) == 2  # the early request, then the SDK's (an error that is not retried)


def test_an_endpoint_down_is_said_as_the_sdk_says_it(tmp_path, monkeypatch):
    """Nothing listens: the early request fails, and the SDK's attempts (the throttle's retries) say why — what the
    same run says in this process, where every request goes through the SDK."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed: connections to it are refused

    class Down:
        host = f"http://127.0.0.1:{port}"

    run = _run(tmp_path, Down(), "--timeout", "20s")  # type: ignore[arg-type]
    assert run.returncode == 1, run.stdout + run.stderr
    result = report(tmp_path / "app" / "r.json")["results"][0]
    assert result["status"] == "error" and f"127.0.0.1:{port}" in result["error"], result["error"]
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)
    assert cli("-i", "cases.jsonl", "-n", "bot", "-o", "sdk.json", "--no-history", "--timeout", "20s", cwd=tmp_path / "app").exit_code == 1
    assert report(tmp_path / "app" / "sdk.json")["results"][0]["error"] == result["error"]
