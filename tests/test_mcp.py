"""MCP servers (FORMATS §12): real servers written with the ``mcp`` SDK — on stdio, and on 127.0.0.1 over
streamable HTTP and SSE — give an agent tools that the loopback model calls; the trace, assertions, errors,
start failures and shutdown (no process outlives a run, Ctrl-C included)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agenttest.app.folders import App
from agenttest.assertions.static import name_matches
from agenttest.agents.catalog import Catalog
from agenttest.model import Context
from agenttest.runtime.trace import Trace, current_trace
from helpers import REPO, Answer, alive, cli, report, survivors
from mcp_server import HttpServer

SERVER = str(REPO / "tests" / "mcp_server.py")
TOKEN = "Bearer mcp-token-SECRET-0123456789"


def stdio(app, rel: str, pid_file: Path | None = None, *extra: str, **keys) -> None:
    """Write a stdio server file running tests/mcp_server.py."""
    data = {"label": "Calc", "transport": "stdio", "command": "python", "arguments": [SERVER, *extra], **keys}
    if pid_file is not None:
        data["env"] = {"MCP_PID_FILE": str(pid_file)}
    app.file(rel, json.dumps(data))


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def calls_then_echo(plan: dict[str, list[dict]]):
    """A model that answers a user message named in ``plan`` with those tool calls, and a tool result with
    ``done: <results>``."""
    def respond(request):
        messages = request["messages"]
        if messages[-1]["role"] == "tool":
            results = [m["content"] for m in messages if m["role"] == "tool"]
            return Answer("done: " + " | ".join(results))
        return Answer("", tool_calls=plan[messages[-1]["content"]])
    return respond


# ---- names -------------------------------------------------------------------------------------


def test_tool_names_match_as_server__tool_server_dot_tool_or_tool():
    assert name_matches("convert", "rates__convert") and name_matches("rates__convert", "rates__convert")
    assert name_matches("rates.convert", "rates__convert") and name_matches("team.search.find", "team_search__find")
    assert not name_matches("other.convert", "rates__convert") and not name_matches("rates.add", "rates__convert")
    assert not name_matches("convert", "reconvert")


# ---- stdio --------------------------------------------------------------------------------------


def test_stdio_server_tools_are_offered_called_traced_and_asserted(app, server, tmp_path):
    pid_file = tmp_path / "pids"
    stdio(app, "mcps/tools/calc.mcp.yao", pid_file)
    app.agent("bot", mcp={"servers": ["tools.calc"]})
    server.responder = calls_then_echo({
        "convert": [{"name": "tools_calc__convert", "arguments": {"amount": 10, "currency": "EUR"}}],
        "bad": [{"name": "tools_calc__convert", "arguments": {"amount": 1, "currency": "XXX"}}],
        "add": [{"name": "tools_calc__add", "arguments": {"a": 2, "b": 3}}],
    })
    called = {"type": "tool_called", "value": {"name": "tools.calc.convert", "arguments": {"currency": "EUR"}}}
    path = app.cases("cases.jsonl", [
        {"id": "convert", "input": "convert", "assert": [
            called, {"type": "tool_called", "value": "convert"}, {"type": "tool_called", "value": "tools_calc__convert"},
            {"type": "tool_called", "value": "other.convert", "negate": True},
            {"type": "tool_result", "value": {"tool": "tools.calc.convert", "result": {"usd": 10.8, "rate": 1.08}}}]},
        {"id": "bad", "input": "bad", "assert": [{"type": "contains", "value": "unknown currency 'XXX'"},
                                                 {"type": "tool_result", "value": {"tool": "convert"}, "negate": True}]},
        {"id": "add", "input": "add", "assert": {"type": "contains", "value": "done: 5"}},
        {"id": "wrong", "input": "add", "assert": {"type": "tool_called", "value": "tools.calc.convert"}},
    ])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--parallel", "2", "-o", str(out))
    assert result.exit_code == 1, result.output
    data = report(out)
    assert [r["status"] for r in data["results"]] == ["passed", "passed", "passed", "failed"]
    (missed,) = data["results"][3]["assertions"]
    assert missed["passed"] is False and "tools_calc__add" in missed["message"]
    (convert,) = data["results"][0]["tool_calls"]
    assert convert["server"] == "tools.calc" and convert["name"] == "tools_calc__convert"
    assert json.loads(convert["result"]) == {"usd": 10.8, "rate": 1.08}
    (bad,) = data["results"][1]["tool_calls"]
    assert bad["server"] == "tools.calc" and bad["error"] == "Error executing tool convert: unknown currency 'XXX'"  # the server's text
    first = server.bodies()[0]
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(offered) == {"tools_calc__convert", "tools_calc__add", "tools_calc__env", "tools_calc__nap"}
    schema = offered["tools_calc__convert"]
    assert schema["description"] == "Convert an amount in a currency to USD."
    assert schema["parameters"]["required"] == ["amount", "currency"]
    assert schema["parameters"]["properties"]["amount"]["type"] == "number"
    fed_back = [m for b in server.bodies() for m in b["messages"] if m["role"] == "tool" and "XXX" in m["content"]]
    assert json.loads(fed_back[0]["content"]) == {"error": bad["error"]}
    started = pids(pid_file)
    assert len(started) == 1  # one server for four cases run two at a time
    assert not alive(started[0])  # and it is gone when the run is over


def test_a_server_that_dies_between_calls_is_started_again_at_most_three_times(app, server, tmp_path):
    pid_file = tmp_path / "pids"
    stdio(app, "mcps/calc.mcp.yao", pid_file)
    app.agent("bot", mcp={"servers": [{"server_id": "calc", "tools": ["add", "env"]}]})

    async def scenario():
        catalog = Catalog(App(str(app.root)))
        try:
            await catalog.start()
            agent = await catalog.ready("bot")
            assert sorted(agent.tools) == ["calc__add", "calc__env"] and agent.tools["calc__add"].server == "calc"
            assert await agent.tools["calc__add"].call(Context(), {"a": 40, "b": 2}) == "42"
            os.kill(pids(pid_file)[0], signal.SIGKILL)  # between calls: the next call starts it again
            for _ in range(200):
                if not alive(pids(pid_file)[0]):
                    break
                await asyncio.sleep(0.01)
            trace = Trace()
            current_trace.set(trace)
            assert await agent.tools["calc__add"].call(Context(), {"a": 1, "b": 1}) == "2"
            assert len(pids(pid_file)) == 2 and trace.notes[0].startswith("mcp server 'calc' had exited")
            assert trace.notes[0].endswith("it was started again for this case (1 of at most 3 restarts)")
            for n in range(3):  # killed again and again: three restarts a run, then its calls fail
                os.kill(pids(pid_file)[-1], signal.SIGKILL)
                while alive(pids(pid_file)[-1]):
                    await asyncio.sleep(0.01)
                if n < 2:
                    assert await agent.tools["calc__add"].call(Context(), {"a": 1, "b": n}) == str(1 + n)
            with pytest.raises(Exception) as info:
                await agent.tools["calc__add"].call(Context(), {"a": 1, "b": 1})
            return info.value
        finally:
            await catalog.aclose()

    error = asyncio.run(scenario())
    assert type(error).__name__ == "CallError"
    assert str(error).startswith("mcp server 'calc' exited and was started again 3 times already; it is not restarted any more")
    assert len(pids(pid_file)) == 4 and survivors(pids(pid_file)) == []


def test_a_tool_call_that_ends_its_server_costs_that_case_only(app, server, tmp_path):
    """A tool that calls os._exit in a shared stdio server: the case that called it gets the error, and the
    cases after it get a server started again, not 'Connection closed' for the rest of the run."""
    pid_file = tmp_path / "pids"
    stdio(app, "mcps/kit.mcp.yao", None, env={"MCP_PID_FILE": str(pid_file), "MCP_CRASH_TOOL": "1"})
    app.agent("bot", mcp={"servers": ["kit"]})
    server.responder = calls_then_echo({"crash": [{"name": "kit__crash", "arguments": {}}],
                                        "add": [{"name": "kit__add", "arguments": {"a": 2, "b": 3}}]})
    path = app.cases("cases.jsonl", [
        {"id": "before", "input": "add", "assert": {"type": "contains", "value": "done: 5"}},
        {"id": "crash", "input": "crash", "assert": {"type": "tool_result", "value": {"tool": "crash"}}},
        {"id": "after-1", "input": "add", "assert": {"type": "contains", "value": "done: 5"}},
        {"id": "after-2", "input": "add", "assert": {"type": "contains", "value": "done: 5"}},
    ])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    data = report(out)
    assert [r["status"] for r in data["results"]] == ["passed", "failed", "passed", "passed"], result.output
    assert data["results"][1]["tool_calls"][0]["error"].startswith("mcp server 'kit'")
    (note,) = data["results"][2]["warnings"]
    assert note.startswith("mcp server 'kit' had exited") and note.endswith("(1 of at most 3 restarts)")
    assert "warnings" not in data["results"][3]
    assert len(pids(pid_file)) == 2 and survivors(pids(pid_file)) == []


# ---- HTTP and SSE -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_server():
    with HttpServer(token=TOKEN) as srv:
        yield srv


def test_http_and_sse_servers_with_an_authorization_token(app, server, tmp_path, http_server, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", TOKEN.removeprefix("Bearer "))
    app.file("mcps/remote.mcp.yao", json.dumps({"transport": "http", "url": http_server.url, "authorization_token": "Bearer $ENV.MCP_TOKEN"}))
    app.file("mcps/events.mcp.yao", json.dumps({"transport": "sse", "url": http_server.sse_url, "authorization_token": "Bearer $ENV.MCP_TOKEN"}))
    app.agent("bot", mcp={"servers": ["remote", {"server_id": "events", "tools": ["add"]}]})
    server.responder = calls_then_echo({"both": [{"name": "remote__add", "arguments": {"a": 1, "b": 2}},
                                                 {"name": "events__add", "arguments": {"a": 30, "b": 4}}]})
    path = app.cases("cases.jsonl", [{"id": "both", "input": "both", "assert": [
        {"type": "tool_called", "value": "remote.add"}, {"type": "tool_called", "value": "events__add"},
        {"type": "tool_result", "value": {"tool": "events.add", "result": 34}}, {"type": "contains", "value": "done: 3 | 34"}]}])
    out = tmp_path / "r.json"
    http_server.seen.clear()
    result = cli("-i", str(path), "-n", "bot", "-v", "-o", str(out))
    assert result.exit_code == 0, result.output
    offered = sorted(t["function"]["name"] for t in server.bodies()[0]["tools"])
    assert offered == ["events__add", "remote__add", "remote__convert", "remote__env", "remote__nap"]
    calls = report(out)["results"][0]["tool_calls"]
    assert [(c["name"], c["server"], c["result"]) for c in calls] == [("remote__add", "remote", "3"), ("events__add", "events", "34")]
    assert set(http_server.seen) == {TOKEN}  # the header exactly as the file writes it, as Yao sends it
    assert "mcp-token-SECRET" not in result.output + out.read_text()


def test_a_rejected_token_is_exit_2_naming_the_server(app, server, tmp_path, http_server, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN", "wrong-token-0123456789")
    app.file("mcps/remote.mcp.yao", json.dumps({"transport": "http", "url": http_server.url, "authorization_token": "$ENV.MCP_TOKEN"}))
    app.agent("bot", mcp={"servers": ["remote"]})
    result = cli("-i", str(app.cases("c.jsonl", [{"id": "a", "input": "x"}])), "-n", "bot")
    assert result.exit_code == 2, result.output
    assert "mcp server 'remote' (http: " in result.stderr and "failed to start" in result.stderr and "401" in result.stderr
    assert "wrong-token" not in result.output and not server.requests and "Traceback" not in result.output


# ---- an agent's own servers, process transport --------------------------------------------------


CALC_PY = """
def Double(n):
    return n * 2

def Whoami(arguments, ctx):
    return {"user": ctx.user_id, "arguments": arguments}

def Fail(arguments):
    raise ValueError("no such invoice")
"""


def test_agent_own_servers_process_transport_and_yao_full_ids(app, server, tmp_path):
    schema = {"type": "object", "description": "Double a number", "properties": {"n": {"type": "number"}}, "required": ["n"],
              "x-process-args": ["$args.n"]}
    plain = {"type": "object", "properties": {"id": {"type": "string"}}}
    app.agent("bot", mcp={"servers": ["local", {"server_id": "agents.bot.nested.calc", "tools": ["add"]}]}, files={
        "mcps/local.mcp.yao": json.dumps({"label": "Local", "transport": "process",
                                          "tools": {"double": "calc.Double", "whoami": "calc.Whoami", "fail": "calc.Fail"}}),
        "mcps/mapping/local/schemes/double.in.yao": json.dumps(schema),
        "mcps/mapping/local/schemes/whoami.in.yao": json.dumps(plain),
        "mcps/mapping/local/schemes/fail.in.yao": json.dumps(plain),
        "src/calc.py": CALC_PY,
    })
    stdio(app, "assistants/bot/mcps/nested/calc.mcp.yao")
    server.responder = calls_then_echo({"go": [{"name": "local__double", "arguments": {"n": 21}},
                                               {"name": "local__whoami", "arguments": {"id": "x"}},
                                               {"name": "local__fail", "arguments": {"id": "7"}},
                                               {"name": "agents_bot_nested_calc__add", "arguments": {"a": 1, "b": 1}}]})
    path = app.cases("cases.jsonl", [{"id": "go", "input": "go", "assert": [
        {"type": "tool_result", "value": {"tool": "local.double", "result": 42}},
        {"type": "tool_result", "value": {"tool": "whoami", "result": {"user": "test-user", "arguments": {"id": "x"}}}},
        {"type": "tool_called", "value": "agents.bot.nested.calc.add"}]}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 0, result.output
    offered = {t["function"]["name"]: t["function"] for t in server.bodies()[0]["tools"]}
    assert sorted(offered) == ["agents_bot_nested_calc__add", "local__double", "local__fail", "local__whoami"]
    assert offered["local__double"]["description"] == "Double a number"
    assert "x-process-args" not in offered["local__double"]["parameters"]
    calls = {c["name"]: c for c in report(out)["results"][0]["tool_calls"]}
    assert calls["local__double"]["server"] == "local" and calls["local__double"]["result"] == 42
    assert calls["local__fail"]["error"] == "ValueError: no such invoice"
    assert calls["agents_bot_nested_calc__add"]["server"] == "agents.bot.nested.calc"


# ---- bad input and start failures ---------------------------------------------------------------


@pytest.mark.parametrize("files, package, message", [
    ({"mcps/tools/calc.mcp.yao": {"transport": "stdio", "command": "python"}}, {"servers": ["tools.clac"]},
     "agent bot: unknown mcp server 'tools.clac'; did you mean 'tools.calc'? known servers: tools.calc"),
    ({}, {"servers": ["calc"]}, "unknown mcp server 'calc'; no *.mcp.yao under"),
    ({"mcps/calc.mcp.yao": {"transport": "stdoi", "command": "python"}}, {"servers": ["calc"]},
     "calc.mcp.yao: 'transport' must be one of stdio, http, sse, process, not 'stdoi'; did you mean 'stdio'?"),
    ({"mcps/calc.mcp.yao": {"transport": "stdio", "comand": "python"}}, {"servers": ["calc"]},
     "calc.mcp.yao:1:24: 'comand' is not a field of an mcp server file; did you mean 'command'?"),
    ({"mcps/calc.mcp.yao": {"transport": "stdio"}}, {"servers": ["calc"]}, "calc.mcp.yao: a stdio server needs a 'command'"),
    ({"mcps/calc.mcp.yao": {"transport": "http", "url": "$ENV.MCP_NOPE_URL"}}, {"servers": ["calc"]},
     "'url': environment variable MCP_NOPE_URL is not set; export MCP_NOPE_URL=…"),
    ({"mcps/calc.mcp.yao": {"transport": "sse"}}, {"servers": ["calc"]}, "an sse server needs a 'url'"),
    ({"mcps/calc.mcp.yao": {"transport": "stdio", "command": "x", "timeout": "soon"}}, {"servers": ["calc"]}, "'timeout': 'soon' is not a duration"),
    ({"assistants/bot/mcps/p.mcp.yao": {"transport": "process", "tools": {"double": "calc.Double"}}}, {"servers": ["p"]},
     "p.mcp.yao: tool 'double' has no input schema; write its JSON Schema to"),
    ({"mcps/p.mcp.yao": {"transport": "process", "tools": {"double": "calc.Double"}}}, {"servers": ["p"]},
     "a process server under"),
    ({}, ["calc"], "package.yao: 'mcp' must be an object with a 'servers' list"),
    ({}, {"servers": [{"tools": ["x"]}]}, "'mcp.servers' entries are server IDs or {\"server_id\", \"tools\"} objects"),
])
def test_bad_server_files_and_mcp_keys_are_exit_2_before_any_server_starts(app, server, files, package, message):
    for rel, data in files.items():
        app.file(rel, json.dumps(data))
    app.agent("bot", mcp=package)
    result = cli("-i", str(app.cases("c.jsonl", [{"id": "a", "input": "x"}])), "-n", "bot")
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert not server.requests


def test_process_function_missing_is_a_did_you_mean(app, server):
    app.agent("bot", mcp={"servers": ["p"]}, files={
        "mcps/p.mcp.yao": json.dumps({"transport": "process", "tools": {"double": "calc.Doubel"}}),
        "mcps/mapping/p/schemes/double.in.yao": json.dumps({"type": "object", "properties": {}}),
        "src/calc.py": CALC_PY,
    })
    result = cli("-i", str(app.cases("c.jsonl", [{"id": "a", "input": "x"}])), "-n", "bot")
    assert result.exit_code == 2 and "has no function 'Doubel'; did you mean 'Double'?" in result.stderr


def test_start_failures_are_exit_2_with_the_server_and_its_stderr(app, server, tmp_path, monkeypatch):
    monkeypatch.setenv("CALC_LICENSE_KEY", "lic-SECRET-0123456789")
    stdio(app, "mcps/broken.mcp.yao", None, "--fail")
    stdio(app, "mcps/licensed.mcp.yao", None, "--fail", env={"CALC_LICENSE": "$ENV.CALC_LICENSE_KEY"})
    app.file("mcps/missing.mcp.yao", json.dumps({"transport": "stdio", "command": str(tmp_path / "no-such-server")}))
    stdio(app, "mcps/calc.mcp.yao")
    app.agent("bot", mcp={"servers": ["broken", "licensed", "missing", {"server_id": "calc", "tools": ["convrt"]}]})
    result = cli("-i", str(app.cases("c.jsonl", [{"id": "a", "input": "x"}])), "-n", "bot")
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert "mcp server 'broken' (stdio: " in err and "mcp_server.py --fail) failed to start" in err
    assert "broken.mcp.yao: mcp server 'broken'" in err and "\n  stderr: calc: cannot start: CALC_LICENSE is not set" in err
    assert "stderr: calc: cannot start: license '***' was refused" in err and "lic-SECRET" not in result.output
    assert "mcp server 'missing'" in err and "No such file or directory" in err
    assert "agent bot: mcp server 'calc' has no tool 'convrt'; did you mean 'convert'?" in err
    assert "4 problems found; nothing was run" in err
    assert "Traceback" not in result.output and not server.requests


def test_yao_metadata_is_quiet_and_other_keys_warn(app):
    app.file("mcps/calc.mcp.yao", json.dumps({"label": "Calc", "description": "d", "version": "1", "capabilities": {},
                                              "transport": "stdio", "command": "python", "resources": {"info": "x"}}))
    app.agent("bot", mcp={"servers": ["calc"]})
    catalog = Catalog(App(str(app.root)))
    assert catalog.agent("bot").spec.mcp[0].server == "calc"
    assert [w.split(": ", 1)[1] for w in catalog.warnings if "calc.mcp.yao" in w] == ["ignored (not used by agent-test): resources"]


def test_the_sdk_is_imported_only_when_a_server_starts():
    code = "import agenttest.cli, agenttest.agents.catalog, agenttest.agents.mcp, sys; print('mcp' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.stdout.split() == ["False"], r.stderr


# ---- shutdown -----------------------------------------------------------------------------------


def slow_model(request):
    return Answer("late", delay=600)  # no run waits for it: only the signal ends the run


def slow_tool(request):
    if request["messages"][-1]["role"] == "tool":
        return Answer("awake")
    return Answer("", tool_calls=[{"name": "calc__nap", "arguments": {"seconds": 600}}])


@pytest.mark.parametrize("sig, code, responder", [(signal.SIGINT, 130, slow_model), (signal.SIGTERM, 143, slow_tool)],
                         ids=["ctrl-c-while-the-model-thinks", "sigterm-while-a-tool-runs"])
def test_a_signal_stops_the_run_and_its_stdio_server(app, server, tmp_path, sig, code, responder):
    """The model's answer and the tool's nap take 600 s: only the signal ends the run."""
    pid_file, napping = tmp_path / "pids", tmp_path / "napping"
    stdio(app, "mcps/calc.mcp.yao", None, env={"MCP_PID_FILE": str(pid_file), "MCP_NAP_FILE": str(napping)})
    app.agent("bot", mcp={"servers": ["calc"]})
    server.responder = responder
    path = app.cases("c.jsonl", [{"id": "slow", "input": "x"}])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=app.root)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (napping.exists() if responder is slow_tool else server.requests):
            time.sleep(0.05)  # the server is up and the case is under way: the model thinks, or the tool naps
        (pid,) = pids(pid_file)
        assert alive(pid)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    assert "INTERRUPTED after 0 of 1 tests" in stdout
    assert survivors([pid]) == []


# ---- the tool world applies to MCP tools too ---------------------------------------------------


def test_mocks_faults_and_unknown_names_apply_to_mcp_tools(app, server, tmp_path):
    stdio(app, "mcps/tools/calc.mcp.yao")
    app.agent("bot", mcp={"servers": ["tools.calc"]})
    server.responder = calls_then_echo({
        "mocked": [{"name": "tools_calc__convert", "arguments": {"amount": 10, "currency": "EUR"}}],
        "faulted": [{"name": "tools_calc__convert", "arguments": {"amount": 10, "currency": "EUR"}}],
    })
    cases = [
        {"id": "mocked", "input": "mocked", "mocks": [{"tool": "convert", "returns": {"amount": 999}}]},
        {"id": "faulted", "input": "faulted", "faults": [{"tool": "tools.calc.convert", "kind": "error", "message": "rates down"}]},
    ]
    path = app.cases("cases.jsonl", cases)
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(out)).exit_code == 0
    mocked, faulted = report(out)["results"]
    assert mocked["tool_calls"][0]["mocked"] is True and mocked["tool_calls"][0]["server"] == "tools.calc"
    assert mocked["output"] == 'done: {"amount": 999}'  # the model's next request carried the mocked result
    assert faulted["tool_calls"][0]["fault"] == "error" and "rates down" in faulted["output"]
    bad = app.cases("bad.jsonl", [{"id": "x", "input": "mocked", "mocks": [{"tool": "tools_calc__convrt", "returns": 1}]}])
    result = cli("-i", str(bad), "-n", "bot")
    assert result.exit_code == 2 and "mocks[0]: the agent has no tool 'tools_calc__convrt'; did you mean 'tools_calc__convert'?" in result.stderr
