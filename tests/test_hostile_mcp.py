"""MCP edges (issue 25, item 7), with real stdio servers written with the ``mcp`` SDK: no grandchild outlives
the run, Ctrl-C while servers start is honoured at once, a token printed before the protocol is never shown,
and a server gets the SDK's default environment plus its declared ``env`` — never a connector's key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import REPO, Answer, cli, last_user, report, survivors
from test_mcp import alive

SERVER = str(REPO / "tests" / "mcp_hostile_server.py")
KEY = "sk-test-SECRET-0123456789"  # the loopback connector's key (conftest)


def server_file(app, *flags: str, **keys) -> None:
    app.file("mcps/edges.mcp.yao", json.dumps({"transport": "stdio", "command": "python", "arguments": [SERVER, *flags], **keys}))
    app.agent("bot", mcp={"servers": ["edges"]})


def calling(name: str, arguments: dict):
    def respond(request):
        if request["messages"][-1]["role"] == "tool":
            return Answer("done: " + request["messages"][-1]["content"])
        return Answer("", tool_calls=[{"name": f"edges__{name}", "arguments": arguments}])
    return respond


def test_a_stdio_server_gets_the_default_environment_and_its_env_only(app, server, monkeypatch):
    monkeypatch.setenv("UNRELATED_TOKEN", "tok-SECRET-ABCDEFGHIJ")
    server_file(app, env={"GREETING": "hello-from-env"})
    server.responder = lambda req: calling("env", {"name": json.loads(last_user(req))["ask"]})(req)
    cases = [{"id": name, "input": json.dumps({"ask": name})} for name in ("FAKE_OPENAI_KEY", "UNRELATED_TOKEN", "GREETING", "PATH")]
    path = app.cases("c.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 0, result.output
    got = {r["id"]: r["tool_calls"][0]["result"] for r in report(out)["results"]}
    assert got["FAKE_OPENAI_KEY"] == "" and got["UNRELATED_TOKEN"] == ""  # not inherited
    assert got["GREETING"] == "hello-from-env" and got["PATH"] == os.environ["PATH"]
    assert all(KEY not in json.dumps(b) for b in server.bodies())  # never sent to the model


def test_a_token_printed_before_the_protocol_is_never_shown(app, server, tmp_path):
    server_file(app, "--chatty")
    server.responder = calling("env", {"name": "GREETING"})
    path = app.cases("c.jsonl", [{"id": "a", "input": "x"}])
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json"), "-v"],
                          capture_output=True, text=True, cwd=app.root, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tok-LEAKED" not in proc.stdout + proc.stderr + (tmp_path / "r.json").read_text()
    assert "Traceback" not in proc.stderr


def test_grandchildren_of_a_stdio_server_do_not_outlive_the_run(app, server, tmp_path):
    pids = tmp_path / "pids"
    server_file(app, env={"MCP_PID_FILE": str(pids)})
    server.responder = calling("spawn", {})
    path = app.cases("c.jsonl", [{"id": "a", "input": "x"}])
    result = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2  # the server and the grandchild its tool started
    assert survivors(started) == []


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_servers_start_is_honoured_at_once(app, server, tmp_path, sig, code):
    pids = tmp_path / "pids"
    """The server takes 600 s to start and has as long to (its "timeout"): only the signal can end the run, and a
    run that waited for either would not have ended when the test stops waiting."""
    server_file(app, "--slow", "600", env={"MCP_PID_FILE": str(pids)}, timeout="600s")
    path = app.cases("c.jsonl", [{"id": "a", "input": "x"}])
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=app.root)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not pids.exists():  # the server process is starting
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == code, stdout + stderr
    assert "Traceback" not in stderr
    (pid,) = [int(p) for p in pids.read_text().split()]
    assert not alive(pid)
    assert server.requests == []


# ---- servers written for mcp 1.x ------------------------------------------------------------------

V1_SERVER = """
from mcp.server.fastmcp import FastMCP  # mcp 1.x; in 2.x this import fails

app = FastMCP("old")


@app.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    app.run()
"""
V1_PACKAGES = ["mcp==1.30.0", "httpx", "httpcore", "h11", "httpx-sse", "pydantic-settings", "python-dotenv", "certifi", "idna"]


@pytest.fixture(scope="session")
def mcp1(pytestconfig, tmp_path_factory):
    """mcp 1.x and what it needs beyond this environment, in a folder of their own (kept in pytest's cache,
    or for this session only under ``-p no:cacheprovider``): what ``PYTHONPATH`` (or a separate virtual
    environment) gives a server written for 1.x."""
    cache = getattr(pytestconfig, "cache", None)
    folder = cache.mkdir("mcp1") if cache is not None else tmp_path_factory.mktemp("mcp1")
    if not (folder / "mcp" / "server" / "fastmcp").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(folder), *V1_PACKAGES],
                       check=True, capture_output=True, timeout=300)
    return folder


def test_a_server_written_for_mcp_1_runs_from_its_own_environment(app, server, mcp1):
    app.file("mcps/old_server.py", V1_SERVER)
    app.agent("bot", mcp={"servers": ["edges"]})
    app.file("mcps/edges.mcp.yao", json.dumps({"transport": "stdio", "command": "python", "arguments": ["mcps/old_server.py"],
                                               "env": {"PYTHONPATH": str(mcp1)}}))
    server.responder = calling("add", {"a": 2, "b": 3})
    out = app.root / "r.json"
    result = cli("-i", str(app.cases("c.jsonl", [{"id": "a", "input": "x", "assert": {"type": "contains", "value": "done: 5"}}])), "-n", "bot", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert report(out)["results"][0]["tool_calls"][0]["result"] == "5"


def test_agent_test_beside_mcp_1_uses_it(app, server, mcp1, tmp_path):
    """Its client works on 1.x too (tests/test_mcp_sdks.py): pip install 'mcp<2' beside agent-test breaks nothing."""
    server_file(app)
    server.responder = calling("env", {"name": "GREETING"})
    path = app.cases("c.jsonl", [{"id": "a", "input": "x", "assert": {"type": "tool_called", "value": "edges__env"}}])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mcp1), str(REPO)])}  # as after pip install 'mcp<2'
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot"], capture_output=True, text=True,
                          cwd=app.root, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
