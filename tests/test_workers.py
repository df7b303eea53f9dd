"""Controller and workers (FORMATS §15): whatever a worker does — exits, segfaults, is SIGKILLed, holds the
GIL — the verdict survives, innocent cases run again, deadlines hold, signals are honoured and no process
outlives the run. These run ``python -m agenttest`` as a subprocess: real processes, real signals."""

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

from agenttest.model import CaseKey
from helpers import REPO, Answer, alive, cli, report, survivors, tool_app

TOOLS = ("hog", "segfault", "quit", "nap", "once", "spawn", "stamp")
TOOLS_PY = """
import ctypes, os, re, subprocess, sys, time
MARK = os.environ["MARK_DIR"]
def mark(name, text="x"):
    with open(os.path.join(MARK, name), "a") as f:
        f.write(text)
def hog(ctx):
    mark("hog", str(os.getpid()) + "\\n")
    return bool(re.match(r'^(a+)+$', 'a' * 40 + 'b'))  # catastrophic backtracking: holds the GIL for ages
def segfault(ctx):
    time.sleep(0.3)  # the case beside it is in its tool by now
    ctypes.string_at(0)
def quit(ctx):
    os._exit(0)
def nap(ctx):
    mark("nap")
    time.sleep(float(os.environ.get("NAP", "1.5")))
    return "rested"
def once(ctx):
    first = not os.path.exists(os.path.join(MARK, "once"))
    mark("once", str(os.getpid()) + "\\n")
    if first:
        time.sleep(60)  # the test kills this worker meanwhile
    return "second time lucky"
def stamp(ctx):
    began = time.time()
    time.sleep(0.3)
    mark("stamps", f"{began} {time.time()}\\n")
    return "stamped"
def spawn(ctx):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    mark("spawned", str(child.pid) + "\\n")
    return "spawned"
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    tool_app(tmp_path / "app", TOOLS, TOOLS_PY)
    (tmp_path / "marks").mkdir()
    return tmp_path / "app"


def agent_test(app_dir: Path, cases: list[dict], *args: str, env: dict[str, str] | None = None, wait: bool = True):
    path = app_dir / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(app_dir.parent / "marks"),
                "AGENTTEST_WORKER_SILENCE": "3", **(env or {})}
    command = [sys.executable, "-m", "agenttest", "-i", str(path), *args, "-n", "bot", "--app", str(app_dir)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)
    if not wait:
        return proc
    try:
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        proc.kill()
    return proc.returncode, stdout, stderr


def mark(app_dir: Path, name: str) -> str:
    path = app_dir.parent / "marks" / name
    return path.read_text() if path.exists() else ""


def results(out: Path) -> dict[str, dict]:
    return {r["id"]: r for r in report(out)["results"]}


def test_a_tool_holding_the_gil_ends_as_its_timeout_and_the_run_goes_on(app_dir, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, stderr = agent_test(app_dir, [{"id": "hog", "input": "call hog", "timeout": "1s"}, {"id": "after", "input": "hi"}],
                                      "-o", str(out))  # ended: the regex (hours) did not hold the run
    assert code == 1 and "Traceback" not in stderr, stderr
    got = results(out)
    assert got["hog"]["status"] == "timeout" and "timeout after 1s (worker lost: no answer for 3 s)" in got["hog"]["error"]
    assert got["hog"]["duration_ms"] >= 1000  # how long it ran until its worker was lost, not 0
    assert got["after"]["status"] == "passed"
    (pid,) = [int(p) for p in mark(app_dir, "hog").split()]
    assert not alive(pid)


def test_a_case_held_behind_a_hung_one_is_run_again_not_timed_out(app_dir, tmp_path):
    """At --parallel 1 the worker holds the next case while one runs. When the running one hangs the worker,
    the held one had not started: it runs again on a fresh worker, though its deadline (counted from when it
    was sent, it would have passed) is shorter than the wait."""
    out = tmp_path / "r.json"
    cases = [{"id": "hog", "input": "call hog", "timeout": "1s"}, {"id": "held", "input": "hi", "timeout": "2s"}, {"id": "after", "input": "hi"}]
    code, stdout, stderr = agent_test(app_dir, cases, "-o", str(out))
    assert code == 1 and "Traceback" not in stderr, stderr
    got = results(out)
    assert got["hog"]["status"] == "timeout"
    assert got["held"]["status"] == "passed" and got["after"]["status"] == "passed", got["held"]


@pytest.mark.parametrize("culprit, parallel", [("quit", 1), ("hog", 1), ("quit", 2)])
def test_after_a_worker_is_lost_parallel_still_bounds_the_cases_at_once(app_dir, tmp_path, culprit, parallel):
    """The case held ahead runs again on a worker of its own: it waits for a place among --parallel, as do the
    cases after it (a new user's trial found --parallel + 1 at once after a loss, and lines mixed up)."""
    out = tmp_path / "r.json"
    n = 6
    cases = [{"id": "culprit", "input": f"call {culprit}", "timeout": "1s"}] + [{"id": f"s{i}", "input": "call stamp"} for i in range(n)]
    code, stdout, stderr = agent_test(app_dir, cases, "-o", str(out), "--parallel", str(parallel))
    assert code == 1 and "Traceback" not in stderr, stderr
    got = results(out)
    assert got["culprit"]["status"] in ("error", "timeout") and all(got[f"s{i}"]["status"] == "passed" for i in range(n)), got
    spans = [tuple(map(float, line.split())) for line in mark(app_dir, "stamps").split("\n") if line]
    assert len(spans) == n
    at_once = max(sum(1 for s in spans if s[0] <= t < s[1]) for t, _ in spans)
    assert at_once <= parallel, spans
    if parallel == 1:
        lines = [line for line in stdout.splitlines() if line.startswith("► [")]
        assert [line.split("]")[0] for line in lines] == ["► [culprit"] + [f"► [s{i}" for i in range(n)], lines
        assert all(line.count("►") == 1 for line in lines), lines


def test_one_case_at_a_time_each_line_shows_its_own_case_and_verdict(app_dir, tmp_path):
    """With a case held ahead the console still shows each case's line, then its verdict, in order."""
    out = tmp_path / "r.json"
    cases = [{"id": f"c{i:02d}", "input": f"hi {i}"} for i in range(40)]
    code, stdout, stderr = agent_test(app_dir, cases, "-o", str(out))
    assert code == 0, stdout + stderr
    lines = [line for line in stdout.splitlines() if line.startswith("► [")]
    assert len(lines) == 40
    for i, line in enumerate(lines):
        assert line.startswith(f"► [c{i:02d}] hi {i} ") and line.count("►") == 1 and "PASSED" in line, line


def test_a_segfault_errors_its_case_after_two_workers_and_the_innocent_case_beside_it_is_run_again(app_dir, tmp_path):
    out = tmp_path / "r.json"
    cases = [{"id": "innocent", "input": "call nap"}, {"id": "crash", "input": "call segfault"}, {"id": "later", "input": "hi"}]
    code, stdout, stderr = agent_test(app_dir, cases, "-o", str(out), "--parallel", "2", env={"NAP": "1"})
    assert code == 1 and "Traceback" not in stderr, stderr
    got = results(out)
    assert got["crash"]["status"] == "error" and got["crash"]["error"] == "worker lost: signal SIGSEGV (the case took down 2 workers)"
    assert got["innocent"]["status"] == "passed" and got["later"]["status"] == "passed"
    assert mark(app_dir, "nap") == "xx"  # the innocent case was cut short by the crash beside it, and ran again
    assert "ERROR" in stdout and "worker lost: signal SIGSEGV" in stdout


def test_os_exit_0_in_a_tool_is_never_a_green_run(app_dir, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, stderr = agent_test(app_dir, [{"id": "quits", "input": "call quit"}, {"id": "fine", "input": "hi"}], "-o", str(out))
    assert code == 1, stderr
    got = results(out)
    assert got["quits"]["status"] == "error" and got["quits"]["error"].startswith("worker lost: exit code 0")
    assert got["fine"]["status"] == "passed"


def test_a_worker_killed_mid_case_has_its_case_run_again_on_a_fresh_worker(app_dir, tmp_path):
    out = tmp_path / "r.json"
    proc = agent_test(app_dir, [{"id": "victim", "input": "call once"}, {"id": "other", "input": "hi"}], "-o", str(out), wait=False)
    deadline = time.time() + 120
    while time.time() < deadline and not mark(app_dir, "once"):
        time.sleep(0.05)
    first = int(mark(app_dir, "once").split()[0])
    os.kill(first, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stdout + stderr
    got = results(out)
    assert got["victim"]["status"] == "passed" and "second time lucky" in got["victim"]["output"]
    assert got["victim"]["warnings"] == ["its worker was lost while it ran (signal SIGKILL): this is its run again, on a fresh worker"]
    assert "warnings" not in got["other"]  # held ahead, it had not started: nothing happened to it
    pids = [int(p) for p in mark(app_dir, "once").split()]
    assert len(pids) == 2 and pids[0] != pids[1]  # the second run was in a new worker


def test_sigterm_while_mcp_servers_start_leaves_no_process_behind(app_dir, tmp_path):
    pid_file = tmp_path / "mcp-pids"
    server = {"transport": "stdio", "command": sys.executable, "arguments": [str(REPO / "tests" / "mcp_server.py"), "--slow-start"],
              "env": {"MCP_PID_FILE": str(pid_file)}, "timeout": "600s"}  # never ready, given 600 s: only the signal ends the run
    (app_dir / "mcps").mkdir()
    (app_dir / "mcps" / "slow.mcp.yao").write_text(json.dumps(server))
    package = json.loads((app_dir / "assistants" / "bot" / "package.yao").read_text())
    (app_dir / "assistants" / "bot" / "package.yao").write_text(json.dumps({**package, "mcp": {"servers": ["slow"]}}))
    out = tmp_path / "r.json"
    proc = agent_test(app_dir, [{"id": "a", "input": "hi"}], "-o", str(out), "--workers", "2", wait=False)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and len(pid_file.read_text().split() if pid_file.exists() else []) < 4:
        time.sleep(0.05)  # two servers (one per worker), each with its child
    assert proc.poll() is None, proc.communicate()
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) == 4 and all(alive(p) for p in pids)
    try:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "terminated before any case ran" in stderr
    assert not out.exists()  # no case ran: nothing to report
    assert survivors(pids) == []


def test_what_a_tool_spawned_does_not_outlive_the_run(app_dir, tmp_path):
    code, stdout, stderr = agent_test(app_dir, [{"id": "s", "input": "call spawn"}], "-o", str(tmp_path / "r.json"))
    assert code == 0, stderr
    (child,) = [int(p) for p in mark(app_dir, "spawned").split()]
    assert not alive(child)


# ---- in-process CLI runs against the loopback server ----------------------------------------------


def suite(n: int) -> list[dict]:
    return [{"id": f"c{i:02d}", "input": f"say:ok #{i}", "assert": {"type": "contains", "value": "ok" if i % 3 else "nope"}} for i in range(n)]


@pytest.mark.parametrize("workers", ["0", "1", "2"])
def test_the_same_suite_gives_the_same_verdicts_in_process_and_with_one_or_two_workers(app, server, workers):
    server.responder = lambda req: Answer("ok")
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", suite(12))
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--parallel", "4", "--runs", "2", "--workers", workers)
    assert result.exit_code == 1, result.output
    got = report(out)["results"]
    assert [(r["id"], r["run"], r["status"]) for r in got] == [(f"c{i:02d}", run, "failed" if i % 3 == 0 else "passed")
                                                                for i in range(12) for run in (1, 2)]
    cases = {json.loads(line)["id"]: json.loads(line)["input"] for line in path.read_text().splitlines() if line.strip()}
    assert all(r["input"] == cases[r["id"]] for r in got)  # a worker sends a result without its input; it is put back


def test_rate_limits_are_for_the_whole_run_with_two_workers(app, server):
    server.limit(4, "0.1")
    server.responder = lambda req: Answer("ok", delay=0.05)
    app.connector("fake", {"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                          "max_concurrency": 6}})
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": f"c{i:02d}", "input": f"hi {i}"} for i in range(40)])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--parallel", "10", "--workers", "2")
    assert result.exit_code == 0, result.output
    data = report(out)
    assert data["summary"]["passed"] == 40
    rejected = sum(1 for r in server.requests if r["rejected"])
    load = data["summary"]["load"]["connectors"]["fake"]
    assert server.peak_in_flight <= 6  # max_concurrency held across both workers, not 6 each
    assert rejected > 0 and data["summary"]["load"]["absorbed"] == rejected  # 429s beyond 4, every one absorbed
    assert load["requests"] == len(server.requests)


def test_record_and_replay_with_two_workers(app, server, monkeypatch):
    """The workers record; the controller writes the cassettes; a replay on two workers sends nothing."""
    server.responder = lambda req: Answer("ok " + req["messages"][-1]["content"])
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", suite(6))
    tapes = app.root / "tapes"
    recorded = cli("-i", str(path), "-o", str(app.root / "a.json"), "--record", str(tapes), "--workers", "2", "--parallel", "3")
    assert recorded.exit_code == 1, recorded.output
    assert len(list(tapes.rglob("*.jsonl"))) == 6  # the controller wrote every case's cassette
    sent = len(server.requests)
    monkeypatch.delenv("FAKE_OPENAI_KEY")  # a replay needs no key: nothing is sent
    replayed = cli("-i", str(path), "-o", str(app.root / "b.json"), "--replay", str(tapes), "--workers", "2")
    assert replayed.exit_code == 1, replayed.output
    assert len(server.requests) == sent

    def verdicts(name: str) -> list[tuple[str, str, str]]:
        return [(r["id"], r["status"], r["output"]) for r in report(app.root / name)["results"]]

    assert verdicts("a.json") == verdicts("b.json")


@pytest.mark.parametrize("value", ["-1", "many", "1000"])
def test_a_bad_workers_value_is_exit_2(app, value):
    app.agent("bot")
    result = cli("-i", "hi", "-n", "bot", "--workers", value)
    assert result.exit_code == 2 and "--workers" in result.stderr and "'auto'" in result.stderr, result.output


def test_without_ray_the_flag_is_exit_2_saying_how_to_install_it(offline_app):
    offline_app.file("assistants/bot/mock.yml", 'default: "hi"\n')
    offline_app.file("assistants/bot/package.yao", json.dumps({"name": "bot", "connector": "mock"}))
    code = ("import sys; sys.modules['ray'] = None; sys.argv = ['agent-test', '-i', 'hello', '-n', 'bot', '--executor', 'ray'];"
            "from agenttest.cli import entry; entry()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=offline_app.root,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--executor ray: Ray is not installed" in proc.stderr and "pip install 'agent-test[ray]'" in proc.stderr


def test_results_cross_the_channel_unchanged():
    """Results go to the controller through reducers of their own (a class's number and its values, rebuilt
    without __init__): every kind of value in them comes back equal, of its own class, and each reduced class is
    one whose every field __init__ takes, keyword-only or not (what ``records.builder`` sets, in field order)."""
    import dataclasses
    import pickle

    from agenttest.model import AssertionResult, CaseKey, CaseResult, ModelCall, ToolCall, Turn, Usage
    from agenttest.runner.local import wire

    assert {c.__name__ for c in wire.REDUCERS} >= {"CaseResult", "AssertionResult", "ToolCall", "Usage", "Turn", "ModelCall"}
    for cls in wire.REDUCERS:
        assert all(f.init for f in dataclasses.fields(cls)) and not hasattr(cls, "__post_init__")
    call = ToolCall(name="t", arguments={"a": [1, {"b": None}]}, id="id1", result={"ok": True}, error=None, duration_ms=1.5)
    result = CaseResult(key=CaseKey(id="c"), status="failed", name="name", input=[{"role": "user", "content": "hi"}], output={"x": (1, 2)}, error="boom",
                        assertions=(AssertionResult(type="contains", passed=False, message="no", expected="x", actual="y"),), tool_calls=(call,), usage=Usage(1, 2, 3, 1),
                        turns=(Turn(turn=1, input="hi", output="yo", tool_calls=(call,), checkpoints=("cp",), duration_ms=2.0),), model_calls=(ModelCall("agent", "mock", "m", 0.1),),
                        tags=("a", "b"), run=2, index=7)
    back = pickle.loads(wire.pickled(("result", 7, result)))
    assert back == ("result", 7, result) and type(back[2].turns[0]) is Turn
    assert b"_made" in wire.pickled(("result", 7, result)) and b"CaseResult" not in wire.pickled(("result", 7, result))
    for built in (back[2], back[2].usage, back[2].turns[0], back[2].tool_calls[0], back[2].assertions[0]):
        again = type(built)(**{f.name: getattr(built, f.name) for f in dataclasses.fields(built)})  # every slot set, as __init__ sets it
        assert built == again and built is not again and repr(built) == repr(again)
    import re

    pattern = pickle.loads(wire.pickled(("result", 1, ToolCall(name="t", arguments={}, id="i", result=re.compile("a+b"), error=None, duration_ms=0.0))))[2].result
    assert pattern.pattern == "a+b"  # a type only copyreg knows how to pickle still crosses


def test_a_frame_the_other_end_waits_for_is_written_at_once_others_in_one_write_per_loop_turn():
    """``at_once`` (a case for a worker, or a worker's last result) leaves before the loop turns; other frames
    of one turn go out together."""
    import asyncio
    import pickle
    import socket

    from agenttest.runner.local.wire import Channel

    async def go():
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        channel = await Channel.open(ours)

        def waiting() -> bytes:
            try:
                return theirs.recv(65536)
            except BlockingIOError:
                return b""

        channel.send(("beat",))
        channel.send(("beat",))
        assert waiting() == b""  # buffered until the loop turns
        channel.send(("run", 3), at_once=True)
        data = waiting()
        frames = []
        while data:
            size = int.from_bytes(data[:4], "big")
            frames.append(pickle.loads(data[4:4 + size]))
            data = data[4 + size:]
        assert frames == [("beat",), ("beat",), ("run", 3)]  # in order, the earlier ones with it
        await asyncio.sleep(0)
        assert waiting() == b""  # nothing written twice
        channel.close()
        theirs.close()

    asyncio.run(go())


def test_a_result_crosses_without_its_cases_input_which_the_controller_puts_back():
    """The result's input is its case's own object: pickled without it (less to send, and the controller's
    results share their cases' inputs instead of holding copies); any other input is sent as it is."""
    import pickle

    from agenttest.model import CaseResult
    from agenttest.runner.local import wire

    history = [{"role": "user", "content": "hi " * 100}]
    result = CaseResult(key=CaseKey(id="c"), status="passed", name="name", input=history, output="ok")
    light = wire.pickled(("result", 1, result), without_input=history)
    other = CaseResult(key=CaseKey(id="c"), status="passed", name="name", input=[dict(m) for m in history], output="ok")  # equal, not the same object
    heavy = wire.pickled(("result", 1, other), without_input=history)
    assert pickle.loads(light)[2].input is None and len(light) < len(heavy) - 250
    assert pickle.loads(heavy)[2].input == history
    assert pickle.loads(wire.pickled(("result", 1, result)))[2].input == history  # nothing left out otherwise


def test_the_kept_pickler_follows_copyreg_nests_fails_and_threads_cleanly():
    """A thread keeps one pickler for its messages: a reducer user code registers with copyreg later is used;
    a message pickled inside another's pickling (a user's reducer that sends) gets a pickler of its own and
    leaves the outer one whole; a message that cannot be pickled leaves the next one whole; threads never
    share a buffer."""
    import copyreg
    import pickle
    import threading

    from agenttest.model import CaseResult
    from agenttest.runner.local import wire

    class Point:
        def __init__(self, x: int):
            self.x = x

    assert pickle.loads(wire.pickled(("result", 1, CaseResult(key=CaseKey(id="a"), status="passed", output="one"))))[2].output == "one"
    copyreg.pickle(Point, lambda p: (int, (p.x * 10,)))  # registered after the first message: used from now on
    try:
        assert pickle.loads(wire.pickled(("note", Point(4))))[1] == 40
        inner: list[bytes] = []

        class Sends:
            def __reduce__(self):
                inner.append(wire.pickled(("note", "inside"), without_input=None))
                return (str, ("outer",))

        history = [{"role": "user", "content": "hi"}]
        outer = pickle.loads(wire.pickled(("result", 2, CaseResult(key=CaseKey(id="b"), status="passed", input=history, output=Sends())), without_input=history))
        assert pickle.loads(inner[0]) == ("note", "inside") and outer[2].output == "outer" and outer[2].input is None
        with pytest.raises((pickle.PicklingError, AttributeError)):
            wire.pickled(("note", lambda: None))  # a lambda cannot be pickled
        assert pickle.loads(wire.pickled(("result", 3, CaseResult(key=CaseKey(id="c"), status="passed", input=history)), without_input=history))[2].input is None
        assert pickle.loads(wire.pickled(("result", 3, CaseResult(key=CaseKey(id="c"), status="passed", input=history))))[2].input == history
    finally:
        del copyreg.dispatch_table[Point]

    failures: list[str] = []

    def many(tag: str) -> None:
        for i in range(2000):
            back = pickle.loads(wire.pickled(("result", i, CaseResult(key=CaseKey(id=f"{tag}{i}"), status="passed", output=tag * 50))))
            if back[2].id != f"{tag}{i}" or back[2].output != tag * 50:
                failures.append(f"{tag}{i}")

    threads = [threading.Thread(target=many, args=(t,)) for t in "xyz"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_results_rebuilt_in_the_controller_share_their_labels_and_their_cases_ids():
    """Labels every result repeats (status, role, connector, model, assertion type) arrive as one object each,
    not a copy per result; a result's id is its case's own (interned when the case was made); equal usages
    are one object; a usage holding a value that cannot be a key is still rebuilt."""
    import pickle
    import sys

    from agenttest.inputs.reading import parse
    from agenttest.model import AssertionResult, CaseResult, ModelCall, Spend, Usage
    from agenttest.runner.local import wire

    case = parse('{"id": "case-7", "input": "hi", "assert": {"type": "contains", "value": "ok"}}\n', "t.jsonl").cases[0]

    def result(n: int) -> CaseResult:
        usage = Usage(20 + n % 1, 4, 24)
        return CaseResult(key=CaseKey(id="".join(["case-", "7"]), connector="".join(["mo", "ck"])), status="".join(["pass", "ed"]), output="ok", usage=usage,
                          assertions=(AssertionResult(type="".join(["cont", "ains"]), passed=True, checked="".join(["value=", "ok"])),),
                          spend=(Spend("".join(["ag", "ent"]), "".join(["mo", "ck"]), Usage(20, 4, 24), 1),),
                          model_calls=(ModelCall("".join(["ag", "ent"]), "mock", "".join(["m", "1"])),))

    a, b = (pickle.loads(wire.pickled(("result", i, result(i))))[2] for i in (1, 2))
    assert a == result(1) and b == result(2)
    assert a.status is b.status and a.connector is b.connector and a.assertions[0].type is b.assertions[0].type
    assert a.assertions[0].checked is b.assertions[0].checked and a.spend[0].role is b.model_calls[0].role
    assert a.model_calls[0].model is b.model_calls[0].model
    assert a.id is case.id is sys.intern("case-7")
    assert a.usage is b.usage is a.spend[0].usage
    odd = pickle.loads(wire.pickled(("result", 1, CaseResult(key=CaseKey(id="c"), status="passed", usage=Usage([1], 0, 1)))))[2]  # type: ignore[arg-type]
    assert odd.usage == Usage([1], 0, 1)  # type: ignore[arg-type]


def test_results_rebuilt_in_the_controller_share_their_verdicts_spends_and_output_but_never_conflate_numbers():
    """100,000 results of one agent repeat their assertions' verdicts, their spends and often their output: each
    distinct value arrives as one object (their tuples too). A score, a cost or an expected value that is equal
    but not alike (1, 1.0, True: JSON writes them differently) is rebuilt, never taken for another's."""
    import json
    import pickle

    from agenttest.reporting.codec import result_dict
    from agenttest.model import AssertionResult, CaseResult, ModelCall, Spend, Usage
    from agenttest.runner.local import wire

    def result(n: int, score: object = None, cost: object = 0.25, expected: object = "ok") -> CaseResult:
        return CaseResult(key=CaseKey(id=f"case-{n}"), status="passed", output="".join(["Expense ", "submitted"]), index=n,
                          assertions=(AssertionResult(type="contains", passed=True, message="".join(["found ", "ok"]), expected=expected, score=score),),  # type: ignore[arg-type]
                          spend=(Spend("agent", "mock", Usage(20, 4, 24), 1, cost),),  # type: ignore[arg-type]
                          model_calls=(ModelCall("agent", "mock", "m", 0.1),))

    def arrived(r: CaseResult) -> CaseResult:
        return pickle.loads(wire.pickled(("result", r.index, r)))[2]  # type: ignore[no-any-return]

    a, b = arrived(result(1)), arrived(result(2))
    assert a == result(1) and b == result(2) and a.id != b.id
    assert a.assertions is b.assertions and a.assertions[0] is b.assertions[0]
    assert a.spend is b.spend and a.output is b.output and a.model_calls is b.model_calls
    for field, values in (("score", (1, 1.0, True)), ("cost", (1, 1.0)), ("expected", (1, 1.0, True))):
        made = [arrived(result(10 + i, **{field: v})) for i, v in enumerate(values)]
        for r, v in zip(made, values):
            got = r.assertions[0].score if field == "score" else r.spend[0].cost if field == "cost" else r.assertions[0].expected
            assert type(got) is type(v), (field, v, got)
        texts = {json.dumps(result_dict(r)["assertions"] if field != "cost" else [s.cost for s in r.spend]) for r in made}
        assert len(texts) == len(values), (field, texts)  # 1, 1.0 and true stay themselves in the report
    long = "x" * 600
    c, d = (arrived(CaseResult(key=CaseKey(id=f"l{i}"), status="passed", output="".join([long, "!"]), index=i)) for i in (1, 2))
    assert c.output == d.output and c.output is not d.output  # a long text is each result's own: no memo of large outputs


SILENT = "give the seconds a worker may stay silent before it is taken for lost, a positive number"
TRANSPORT = "give the openai connector's HTTP transport, aiohttp or httpx"
SHIP = "give 1 to ship the app folder to a Ray cluster on this machine, or 0"


@pytest.mark.parametrize("name, value, accepted", [("AGENTTEST_WORKER_SILENCE", "abc", SILENT), ("AGENTTEST_WORKER_SILENCE", "nan", SILENT),
                                                   ("AGENTTEST_WORKER_SILENCE", "-1", SILENT), ("AGENTTEST_RAY_SILENCE", "0", SILENT),
                                                   ("AGENTTEST_RAY_SILENCE", "inf", SILENT), ("AGENTTEST_HTTP", "curl", TRANSPORT),
                                                   ("AGENTTEST_RAY_SHIP", "yes", SHIP)])
def test_a_bad_setting_in_the_environment_is_exit_2_with_one_line(app_dir, tmp_path, name, value, accepted):
    for workers in ("1", "0"):
        code, stdout, stderr = agent_test(app_dir, [{"id": "a", "input": "hi"}], "-o", str(tmp_path / "r.json"), "--workers", workers,
                                          env={name: value})
        assert code == 2 and "Traceback" not in stderr, stderr
        assert f"Error: {name}={value!r}: {accepted}" in stderr, stderr
        assert not (tmp_path / "r.json").exists()


def test_a_bad_setting_in_the_environment_is_said_before_the_first_model_call(app, server, monkeypatch):
    """A generator (-i agents:…) calls its model while the cases load, before any worker starts: the environment
    is checked before that, in --list and --dry-run too."""
    app.agent("bot")
    app.agent("gen", files={"prompts.yml": "- role: system\n  content: You generate.\n"})
    server.responder = lambda req: Answer(json.dumps([{"id": "made", "input": "hi"}]))
    for name, value in (("AGENTTEST_WORKER_SILENCE", "abc"), ("AGENTTEST_HTTP", "curl")):
        monkeypatch.setenv(name, value)
        for flags in ([], ["--list"], ["--workers", "0", "--json"]):
            result = cli("-i", "agents:gen?count=1", "-n", "bot", *flags, cwd=app.root)
            assert result.exit_code == 2 and f"{name}={value!r}" in result.stderr, result.output
            assert not server.requests, server.requests
        monkeypatch.delenv(name)
    made = cli("-i", "agents:gen?count=1", "-n", "bot", "--workers", "0", cwd=app.root)
    assert made.exit_code == 0 and server.requests, made.output  # the same run, its environment right, calls the generator


def test_a_good_silence_in_the_environment_is_taken(app_dir, tmp_path):
    code, stdout, stderr = agent_test(app_dir, [{"id": "hog", "input": "call hog", "timeout": "1s"}], "-o", str(tmp_path / "r.json"),
                                      env={"AGENTTEST_WORKER_SILENCE": "2.5"})
    assert code == 1, stderr
    assert "(worker lost: no answer for 2.5 s)" in results(tmp_path / "r.json")["hog"]["error"]


def test_the_workers_stop_while_the_report_is_written_and_the_launcher_closes_after_them():
    """The pool's first close (the run's end) tells every worker to stop and returns: their stopping — MCP servers,
    the process ended and reaped — goes on while the report is decided and written. ``stopped`` (before the summary)
    and every later close (the session's) wait for it, and the launcher (Ray: leaving the cluster) closes only once
    every worker has stopped."""
    from agenttest.config import RunConfig
    from agenttest.model import Plan
    from agenttest.resolution.planning import settings_of
    from agenttest.runner.controller import Pool

    said: list[str] = []

    class Stopping:  # a worker whose stop goes on until it is let go (its After hooks, its MCP servers)
        warnings: list[str] = []
        in_flight = 0

        def __init__(self, name: str):
            self.name, self.go = name, asyncio.Event()

        async def run(self, unit):
            raise AssertionError("no case is run here")

        def alive(self) -> bool:
            return True

        async def stop(self) -> None:
            said.append(f"stop {self.name}")
            await self.go.wait()
            said.append(f"stopped {self.name}")

    workers = {0: Stopping("a"), 1: Stopping("b")}

    class Launcher:
        plan = None

        async def __call__(self, slot: int) -> Stopping:
            return workers[slot]

        async def aclose(self) -> None:
            said.append("launcher closed")

    async def go() -> None:
        pool = Pool(2, Launcher())
        assert await pool.start(Plan(agent="", items=(), settings=settings_of(RunConfig(inputs=("x.jsonl",))))) == []
        first = asyncio.ensure_future(pool.aclose())  # the run's end: returns with the workers still stopping
        for _ in range(3):
            await asyncio.sleep(0)
        assert first.done() and said == ["stop a", "stop b"]
        stopped, later = asyncio.ensure_future(pool.stopped()), asyncio.ensure_future(pool.aclose())
        await asyncio.sleep(0)
        assert not stopped.done() and not later.done()
        workers[0].go.set()
        await asyncio.sleep(0)
        assert not stopped.done() and said == ["stop a", "stop b", "stopped a"]
        workers[1].go.set()
        await stopped
        await later
        assert said == ["stop a", "stop b", "stopped a", "stopped b", "launcher closed", "launcher closed"]
        await pool.aclose()  # and any number of times more
        assert said[-1] == "launcher closed" and said.count("stop a") == 1

    asyncio.run(go())
