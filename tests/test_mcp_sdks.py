"""Issue 50 item 14: agent-test's MCP client works with whichever mcp SDK the environment has — 2.x (the rest of
the suite) or 1.x from 1.10 on (here) — so that ``pip install agent-test`` never upgrades the SDK a user's servers
are written for. Each 1.x is installed once into a folder of its own (pytest's cache), put first on ``PYTHONPATH``
as ``pip install 'mcp<2'`` would put it, and agent-test runs as a real process against stdio, streamable-HTTP
and SSE servers written with either major."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, Answer, report
from mcp_server import HttpServer
from test_hostile_mcp import V1_SERVER

DEPENDENCIES = ["httpx", "httpcore", "h11", "httpx-sse", "pydantic-settings", "python-dotenv", "certifi", "idna"]
OF_ITS_TIME = {"1.10.0": ["pydantic==2.11.7", "pydantic-core==2.33.2"]}  # 1.10 imports a pydantic internal that 2.12 removed
TOKEN = "Bearer mcp-token-0123456789"


@pytest.fixture(scope="session", params=["1.10.0", "1.30.0"])
def mcp1(request, pytestconfig, tmp_path_factory):
    """mcp ``version`` and what it needs beyond this environment, in a folder of their own (kept in pytest's cache,
    or for this session only under ``-p no:cacheprovider``)."""
    version = request.param
    cache = getattr(pytestconfig, "cache", None)
    folder = cache.mkdir(f"mcp-{version}") if cache is not None else tmp_path_factory.mktemp(f"mcp-{version}")
    if not (folder / f"mcp-{version}.dist-info").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(folder), f"mcp=={version}",
                        *DEPENDENCIES, *OF_ITS_TIME.get(version, [])], check=True, capture_output=True, timeout=300)
    return version, folder


@pytest.fixture(scope="module")
def http_server():
    with HttpServer(token=TOKEN) as srv:
        yield srv


def _run(app, mcp1, *args: str) -> subprocess.CompletedProcess[str]:
    """agent-test as a process of an environment whose mcp is 1.x."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mcp1[1]), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "agenttest", *args], capture_output=True, text=True, cwd=app.root, env=env, timeout=120)


def test_the_client_on_mcp_1_calls_a_1x_server_and_a_2x_server_over_stdio(app, server, mcp1):
    version, folder = mcp1
    probe = _run(app, mcp1, "--version")
    assert probe.returncode == 0
    said = subprocess.run([sys.executable, "-c", "import importlib.metadata as m; print(m.version('mcp'))"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(folder)})
    assert said.stdout.strip() == version  # the client below runs on this SDK
    app.file("mcps/old_server.py", V1_SERVER)
    app.file("mcps/edges.mcp.yao", json.dumps({"transport": "stdio", "command": "python", "arguments": ["mcps/old_server.py"],
                                               "env": {"PYTHONPATH": str(folder)}}))  # a server written for 1.x, in its environment
    app.file("mcps/calc.mcp.yao", json.dumps({"transport": "stdio", "command": "python", "arguments": [str(REPO / "tests" / "mcp_server.py")]}))
    app.agent("bot", mcp={"servers": ["edges", "calc"]})

    def respond(request):
        last = request["messages"][-1]
        if last["role"] == "tool":
            return Answer("done: " + last["content"])
        if last["content"] == "old":
            return Answer("", tool_calls=[{"name": "edges__add", "arguments": {"a": 2, "b": 3}}])
        return Answer("", tool_calls=[{"name": "calc__convert", "arguments": {"amount": 10, "currency": "EUR"}}])

    server.responder = respond
    path = app.cases("c.jsonl", [{"id": "old", "input": "old", "assert": {"type": "tool_result", "value": {"tool": "add", "result": 5}}},
                                 {"id": "new", "input": "new", "assert": {"type": "tool_result", "value": {"tool": "convert", "result": {"usd": 10.8}}}}])
    out = app.root / "r.json"
    result = _run(app, mcp1, "-i", str(path), "-n", "bot", "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r["tool_calls"][0]["result"] for r in report(out)["results"]] == ["5", '{\n  "usd": 10.8,\n  "rate": 1.08\n}']
    offered = sorted(t["function"]["name"] for t in server.bodies()[0]["tools"])
    assert "edges__add" in offered and "calc__convert" in offered and "Traceback" not in result.stderr


def test_the_client_on_mcp_1_reaches_http_and_sse_servers_with_a_token(app, server, mcp1, http_server, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", TOKEN.removeprefix("Bearer "))
    app.file("mcps/remote.mcp.yao", json.dumps({"transport": "http", "url": http_server.url, "authorization_token": "Bearer $ENV.MCP_TOKEN"}))
    app.file("mcps/events.mcp.yao", json.dumps({"transport": "sse", "url": http_server.sse_url, "authorization_token": "Bearer $ENV.MCP_TOKEN"}))
    app.agent("bot", mcp={"servers": ["remote", {"server_id": "events", "tools": ["add"]}]})
    def respond(request):
        if request["messages"][-1]["role"] == "tool":
            return Answer("done: " + " | ".join(m["content"] for m in request["messages"] if m["role"] == "tool"))
        return Answer("", tool_calls=[{"name": "remote__add", "arguments": {"a": 1, "b": 2}}, {"name": "events__add", "arguments": {"a": 30, "b": 4}}])

    server.responder = respond
    path = app.cases("c.jsonl", [{"id": "both", "input": "both", "assert": {"type": "contains", "value": "done: 3 | 34"}}])
    http_server.seen.clear()
    result = _run(app, mcp1, "-i", str(path), "-n", "bot", "-o", str(app.root / "r.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(http_server.seen) == {TOKEN}


def test_an_mcp_older_than_1_10_is_exit_2_saying_what_to_install(app, tmp_path):
    old = tmp_path / "old"
    (old / "mcp").mkdir(parents=True)
    (old / "mcp" / "__init__.py").write_text("class ClientSession: pass\n")  # an SDK that says it is 1.9
    (old / "mcp-1.9.4.dist-info").mkdir()
    (old / "mcp-1.9.4.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp\nVersion: 1.9.4\n")
    app.file("mcps/calc.mcp.yao", json.dumps({"transport": "stdio", "command": "python", "arguments": [str(REPO / "tests" / "mcp_server.py")]}))
    app.agent("bot", mcp={"servers": ["calc"]})
    path = app.cases("c.jsonl", [{"id": "a", "input": "x", "assert": {"type": "contains", "value": "x"}}])
    result = _run(app, ("1.9.4", old), "-i", str(path), "-n", "bot")
    assert result.returncode == 2, result.stdout + result.stderr
    assert ("mcp server 'calc': agent-test's MCP client needs the mcp SDK 1.10 or later (1.x or 2.x), but this environment has "
            "mcp 1.9.4; pip install 'mcp>=1.10'") in result.stderr and "Traceback" not in result.stderr
