"""User code cannot hang or kill the run, and signals stop it cleanly (issue 12, items 1 and 6). These run
``python -m agenttest`` as a subprocess — real signals, real threads, a real interpreter exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from helpers import REPO, report, tool_app

from agenttest.history.store import History

TOOL_NAMES = ("sleeper", "exiter", "threader", "interrupter")
TOOLS_PY = """
import os, sys, threading, time
def sleeper(ctx):
    if os.environ.get("MARK_DIR"):  # a test can wait for the cases to be in here
        open(os.path.join(os.environ["MARK_DIR"], f"sleeping-{time.monotonic_ns()}"), "w").close()
    time.sleep(3600)
def exiter(ctx):
    sys.exit(6)
def threader(ctx):
    threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: it would keep the process alive
    return "started"
def interrupter(ctx):
    raise KeyboardInterrupt
"""
ENV_TEST = """
import os, time
MARK = os.environ["MARK_DIR"]
def mark(name):
    open(os.path.join(MARK, name), "a").write("x")
def Before(ctx, case):
    if case["id"] == "hang-before":
        time.sleep(3600)
    if case["id"] == "exit-before":
        raise SystemExit(3)
    return {"data": case["id"]}
def After(ctx, case, result, data):
    mark("after-" + case["id"])
    if os.environ.get("HANG_AFTER") and result["status"] == "error":  # a clean-up that hangs once the run is stopped
        time.sleep(3600)
    if os.environ.get("SLOW_AFTER") and result["status"] == "passed":  # a clean-up still running when the run is stopped
        mark("cleaning-" + case["id"])
        time.sleep(float(os.environ["SLOW_AFTER"]))
        mark("cleaned-" + case["id"])
def AfterAll(ctx, results, data):
    mark("afterall")
    if os.environ.get("HANG_AFTER_ALL"):
        time.sleep(3600)
def ExitAll(ctx, *args):
    os._exit(5)
def TestPytestFail(t, ctx):
    import pytest
    pytest.fail("from pytest")
def TestSleeps(t, ctx):
    time.sleep(3600)
def AtExit(ctx, cases):
    import atexit
    atexit.register(mark, "atexit")
def GcState(ctx, cases):
    import gc, sys
    young = {id(o) for o in gc.get_objects()}  # every generation but the permanent one
    sdk = sys.modules["openai.types.chat"].__dict__ if "openai.types.chat" in sys.modules else None
    frozen = "later" if sdk is None else f"frozen={id(sdk) not in young}"  # later: it imports beside the first requests
    passes = len(getattr(gc, "passes_seen", ()))  # counted from the interpreter's start (the test's sitecustomize)
    mark(f"gc-enabled={gc.isenabled()}-young={gc.get_threshold()[0]}-sdk-{frozen}-few={passes < 10}")
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    agent = tool_app(tmp_path / "app", TOOL_NAMES, TOOLS_PY)
    (agent / "src" / "env_test.py").write_text(textwrap.dedent(ENV_TEST))
    (agent / "src" / "suite_test.py").write_text("import pytest\n" + textwrap.dedent(ENV_TEST))  # imported with the suite, not in a test's time
    (tmp_path / "marks").mkdir()
    return tmp_path / "app"


# agent-test with the grace of After hooks after a stop set to ``sys.argv[1]`` seconds (its workers are forked: theirs too)
WITH_GRACE = ("import sys; from agenttest.runner import case; from agenttest.runner.local import child, worker;"
              "case.AFTER_GRACE = float(sys.argv.pop(1)); worker.STOP_GRACE = child.STOP_GRACE = case.AFTER_GRACE + 1.0;"
              "sys.argv[0] = 'agent-test'; from agenttest.cli import entry; entry()")


def agent_test(app_dir: Path, cases: list[dict] | None, *args: str, env: dict[str, str] | None = None, wait: bool = True,
               grace: float | None = None):
    if cases is not None:
        path = app_dir / "cases.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases))
        args = ("-i", str(path), *args)
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(app_dir.parent / "marks"), **(env or {})}
    program = ["-m", "agenttest"] if grace is None else ["-c", WITH_GRACE, str(grace)]
    command = [sys.executable, *program, *args, "-n", "bot", "--app", str(app_dir)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)
    if not wait:
        return proc
    try:
        stdout, stderr = proc.communicate(timeout=180)  # a run that waited for the user code that hangs would not end
    finally:
        proc.kill()
    return proc.returncode, stdout, stderr


def marks(app_dir: Path) -> set[str]:
    return set(os.listdir(app_dir.parent / "marks"))


def test_user_code_that_hangs_exits_or_starts_threads_stays_inside_its_case(app_dir, tmp_path):
    cases = [
        {"id": "sleeps", "input": "call sleeper", "timeout": "1s"},
        {"id": "exits", "input": "call exiter", "assert": {"type": "contains", "value": "SystemExit: 6"}},
        {"id": "interrupts", "input": "call interrupter", "assert": {"type": "contains", "value": "KeyboardInterrupt"}},
        {"id": "threads", "input": "call threader"},
        {"id": "hang-before", "input": "hi", "before": "env_test.Before", "timeout": "1s"},
        {"id": "exit-before", "input": "hi", "before": "env_test.Before", "after": "env_test.After"},
        {"id": "last", "input": "hi"},
    ]
    out = tmp_path / "r.json"
    code, stdout, stderr = agent_test(app_dir, cases, "-o", str(out))  # ended: the hung threads (an hour each) were abandoned
    assert code == 1 and "Traceback" not in stderr, stderr
    got = {r["id"]: r for r in report(out)["results"]}
    assert got["sleeps"]["status"] == "timeout" and got["sleeps"]["tool_calls"] == []  # still running when cut
    assert got["exits"]["status"] == "passed" and got["interrupts"]["status"] == "passed"  # the tool's error went to the model
    assert got["threads"]["status"] == "passed"
    assert got["hang-before"]["status"] == "timeout"
    assert got["exit-before"]["status"] == "error" and "before hook env_test.Before failed: SystemExit: 3" in got["exit-before"]["error"]
    assert "after-exit-before" not in marks(app_dir)  # After runs only after a Before that succeeded
    assert got["last"]["status"] == "passed"


def test_script_tests_and_after_all_that_misbehave(app_dir, tmp_path):
    out = tmp_path / "r.json"
    # 3 s, and pytest imported with the suite: under load, a worker's first import of pytest (TestPytestFail) took over 1 s
    code, stdout, stderr = agent_test(app_dir, None, "-i", "scripts.suite", "--timeout", "3s", "--after", "env_test.AfterAll",
                                      "-o", str(out), env={"HANG_AFTER_ALL": "1"})
    assert code == 1 and "Traceback" not in stderr, stderr
    got = {r["id"]: r for r in report(out)["results"]}
    assert got["TestPytestFail"]["status"] == "error" and "Failed: from pytest" in got["TestPytestFail"]["error"]
    assert got["TestSleeps"]["status"] == "timeout"
    assert "afterall" in marks(app_dir)
    assert any("AfterAll did not return within" in w for w in report(out)["metadata"]["warnings"])


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_global_hook_that_calls_os_exit_ends_its_call_not_agent_test(app_dir, tmp_path, workers):
    """BeforeAll and AfterAll run in the controller: os._exit there ended agent-test at once, with the hook's
    exit code (4, 5), no report and no message, after every case had run."""
    out = tmp_path / "r.json"
    code, stdout, stderr = agent_test(app_dir, [{"id": "a", "input": "hi", "assert": {"type": "type", "value": "string"}}], "--after",
                                      "env_test.ExitAll", "--workers", workers, "-o", str(out))
    assert code == 0 and "Traceback" not in stderr, stderr
    data = report(out)
    assert [r["status"] for r in data["results"]] == ["passed"]
    assert data["metadata"]["warnings"] == ["AfterAll failed: ProcessExit: os._exit(5) was called: it would end agent-test with no report (env_test.py:25)"]
    assert "AfterAll failed: ProcessExit: os._exit(5)" in stdout
    code, stdout, stderr = agent_test(app_dir, [{"id": "a", "input": "hi"}], "--before", "env_test.ExitAll", "--workers", workers, "-o", str(out))
    assert code == 2 and "Traceback" not in stderr, stderr
    assert "BeforeAll failed: ProcessExit: os._exit(5) was called: it would end agent-test with no report (env_test.py:25); no case was run" in stderr


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_run_after_and_after_all_run_and_the_report_is_written(app_dir, tmp_path, sig, code, workers):
    cases = [{"id": "quick", "input": "hi"}] + [{"id": f"slow{i}", "input": "call sleeper", "after": "env_test.After"} for i in range(3)]
    out, history = tmp_path / "r.json", tmp_path / "h.sqlite"
    proc = agent_test(app_dir, cases, "-o", str(out), "--parallel", "2", "--after", "env_test.AfterAll", "--workers", workers,
                      "--history", str(history), wait=False)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while time.time() < deadline and not (any("[quick]" in line for line in lines)
                                          and sum(m.startswith("sleeping-") for m in marks(app_dir)) >= 2):
        time.sleep(0.05)  # until quick has finished and two slow cases are in their sleeping tool (on a busy machine, seconds)
    proc.send_signal(sig)
    proc.wait(timeout=120)
    reader.join(timeout=5)
    stdout, stderr = "".join(lines), proc.stderr.read()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and "INTERRUPTED" in stdout
    cut = next(line for line in stdout.splitlines() if line.strip().startswith("Cut short:"))  # they have no verdict line
    assert cut.split(":", 1)[1].split("(")[0].strip().split(", ") == ["[slow0]", "[slow1]"], cut
    data = report(out)
    assert [r["id"] for r in data["results"]] == ["quick"] and data["summary"]["interrupted"] is True
    assert data["summary"].get("terminated", False) is (sig == signal.SIGTERM)  # which signal, for the viewer and the history
    assert {"after-slow0", "after-slow1", "afterall"} <= marks(app_dir)  # After of the cases cut short, and AfterAll
    assert "after-slow2" not in marks(app_dir)  # held (one worker) or waiting (two): it never starts once stopped
    with History(str(history), create=False) as recorded:  # the history does not show it as a green run of 1 case
        (run,) = recorded.runs()
    assert (run.cases, run.not_run, run.exit_code) == (1, 3, code) and run.interrupted
    assert (run.cases_text(), run.pass_rate_text()) == ("1 of 4", "100.0% (21–100%) (interrupted)")  # Wilson over the case that ran


@pytest.mark.parametrize("workers, twice", [("0", False), ("1", False), ("0", True), ("1", True)])
def test_an_after_hook_still_running_at_the_end_of_its_grace_is_said(app_dir, tmp_path, workers, twice):
    """Ctrl-C: the After hook of a case cut short gets a few seconds; one that hangs is left, and the console and
    the report say so (its clean-up may not have happened), in this process and in a worker."""
    cases = [{"id": "quick", "input": "hi"}, {"id": "slow0", "input": "call sleeper", "after": "env_test.After"}]
    out = tmp_path / "r.json"
    proc = agent_test(app_dir, cases, "-o", str(out), "--parallel", "2", "--workers", workers, "--no-history", wait=False,
                      env={"HANG_AFTER": "1"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while time.time() < deadline and not (any("[quick]" in line for line in lines) and any(m.startswith("sleeping-") for m in marks(app_dir))):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    if twice:  # the second ends the grace: the hook is still said to be left unfinished
        while time.time() < deadline and "after-slow0" not in marks(app_dir):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    reader.join(timeout=5)
    stdout, stderr = "".join(lines), proc.stderr.read()
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    said = "slow0: the after hook env_test.After was still running when its grace after the stop ended (5s, or a second Ctrl-C) and was left unfinished"
    assert "after-slow0" in marks(app_dir) and said in stdout + stderr
    assert any(w.startswith(said) for w in report(out)["metadata"]["warnings"])


@pytest.mark.parametrize("workers, takes, twice", [("0", 30, False), ("1", 30, False), ("0", 1.5, False), ("1", 1.5, False), ("0", 30, True),
                                                   ("1", 30, True)])
def test_an_after_hook_running_when_the_run_is_stopped_gets_its_grace(app_dir, tmp_path, workers, takes, twice):
    """Ctrl-C while a case's After hook is cleaning up: the hook may finish within the grace; one that does not
    is said to be left unfinished (console and report) — it was dropped at once, without a word. A second
    Ctrl-C ends the grace at once, and the hook is still said to be left unfinished. Twice: the grace is 600 s and
    the hook takes 30 s, so only the second Ctrl-C can have ended the run before the hook."""
    cases = [{"id": "med", "input": "hi", "after": "env_test.After"}]
    out = tmp_path / "r.json"
    grace = 600.0 if twice else None
    proc = agent_test(app_dir, cases, "-o", str(out), "--workers", workers, "--no-history", wait=False, env={"SLOW_AFTER": str(takes)},
                      grace=grace)
    deadline = time.time() + 60
    while time.time() < deadline and "cleaning-med" not in marks(app_dir):
        time.sleep(0.05)
    try:
        proc.send_signal(signal.SIGINT)
        if twice:
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    said = (f"med: the after hook env_test.After was still running when its grace after the stop ended ({grace or 5:g}s, or a second "
            "Ctrl-C) and was left unfinished")
    warnings = report(out)["metadata"].get("warnings") or []
    if takes > 5:  # longer than the grace (5 s), or cut by the second Ctrl-C (of 600 s): left, and said
        assert said in stdout + stderr and any(w.startswith(said) for w in warnings)
        assert "cleaned-med" not in marks(app_dir)
    else:  # the case had passed and its clean-up finished: a result, not a case cut short
        assert "cleaned-med" in marks(app_dir) and said not in stdout + stderr and not any(w.startswith(said) for w in warnings)
        assert [(r["id"], r["status"]) for r in report(out)["results"]] == [("med", "passed")] and "Cut short" not in stdout


SLOW_FORMAT = '''
import os, time
from agenttest.reporting import register

@register(".slow")
def slow(report):
    open(os.environ["MARK_DIR"] + "/writing", "w").close()
    for i in range(20):
        time.sleep(0.1)
        yield f"line {i}\\n"
'''


def test_ctrl_c_while_the_report_is_written_finishes_the_write(app_dir, tmp_path):
    site = tmp_path / "site"
    dist = site / "slow_format-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-format\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[agenttest.plugins]\nslow = slow_format\n")
    (site / "slow_format.py").write_text(SLOW_FORMAT)
    out = tmp_path / "r.slow"
    proc = agent_test(app_dir, [{"id": "a", "input": "hi"}], "-o", str(out), wait=False,
                      env={"PYTHONPATH": os.pathsep.join([str(site), str(REPO)])})
    deadline = time.time() + 120
    while time.time() < deadline and "writing" not in marks(app_dir):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    assert out.read_text() == "".join(f"line {i}\n" for i in range(20))  # whole, never half written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".agent-test-")]  # no temporary file left


def test_the_cli_leaves_at_once_after_the_report_with_atexit_handlers_run_and_output_flushed(app_dir, tmp_path):
    """The fast exit (os._exit after the report) skips only the interpreter's teardown: user code's atexit
    handlers run, the console's last line reaches the pipe, the exit code is the verdict's."""
    out = tmp_path / "r.json"
    cases = [{"id": f"c{i}", "input": "hi", "assert": {"type": "contains", "value": "never said"}} for i in range(50)]
    code, stdout, stderr = agent_test(app_dir, cases, "--before", "env_test.AtExit", "-o", str(out))
    assert code == 1 and "Traceback" not in stderr, stderr
    assert "atexit" in marks(app_dir)
    assert stdout.rstrip().endswith("═" * 63) and "50 of 50 tests did not pass" in stdout, stdout[-500:]
    assert len(report(out)["results"]) == 50


def test_in_process_runs_leave_the_garbage_collector_alone(app_dir, tmp_path):
    """gc.freeze and the thresholds are for the CLI's own process; a library or CliRunner caller keeps its own."""
    import gc

    from helpers import cli

    before = gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()
    path = app_dir / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "hi"}) + "\n")
    result = cli("-i", str(path), "-n", "bot", "--app", str(app_dir), "-o", str(tmp_path / "r.json"))
    assert result.exit_code in (0, 1), result.output
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before


@pytest.mark.parametrize("workers", ["0", "1"])
@pytest.mark.parametrize("sdk_first", [False, True], ids=["early", "sdk-first"])
def test_the_cli_runs_its_cases_with_start_up_frozen_and_the_collector_on(app_dir, tmp_path, workers, server, sdk_first):
    """In the CLI's own process (and a worker forked from it) user code meets a collector that is on, runs
    at the run's thresholds, and has start-up's objects — the SDK's included, when it is imported at start-up —
    frozen (speed/collector.py). By default the SDK imports beside the first requests (connectors/early.py); an
    ``OPENAI_*`` variable (it may change what the SDK sends) has it imported first."""
    (app_dir / "connectors" / "fake.conn.yao").write_text(json.dumps({"type": "openai", "options": {
        "model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY", "max_retries": 0}}))
    package = app_dir / "assistants" / "bot" / "package.yao"
    package.write_text(json.dumps({**json.loads(package.read_text()), "connector": "fake"}))
    counting = tmp_path / "counting"  # the collector's passes from the interpreter's start: before, ~60 to the run
    counting.mkdir()
    (counting / "sitecustomize.py").write_text("import gc\ngc.passes_seen = []\n"
                                               "gc.callbacks.append(lambda phase, info: phase == 'start' and gc.passes_seen.append(info))\n")
    cases = [{"id": "a", "input": "hi"}]
    code, stdout, stderr = agent_test(app_dir, cases, "--before", "env_test.GcState", "--workers", workers,
                                      env={"FAKE_OPENAI_KEY": "sk-test-gc", "PYTHONPATH": f"{counting}{os.pathsep}{REPO}",
                                           **({"OPENAI_ORG_ID": "org-gc"} if sdk_first else {})})
    assert code in (0, 1) and "Traceback" not in stderr, stderr
    assert server.requests, "the case reached the model"
    sdk = "frozen=True" if sdk_first else "later"
    assert [m for m in marks(app_dir) if m.startswith("gc-")] == [f"gc-enabled=True-young=20000-sdk-{sdk}-few=True"]
