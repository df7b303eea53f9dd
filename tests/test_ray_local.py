"""``--executor ray`` with no address: the local Ray the run starts (and stops) for itself, seen from outside —
``python -m agenttest`` as a subprocess, its process tree's sockets and files read from /proc. Needs the ``ray``
extra; each test starts and ends its own Ray (no ``ray stop``: the run's Ray is the run's)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import proctree
import pytest
from helpers import REPO, report, survivors, tool_app

pytest.importorskip("ray")
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")

SECRET = "sk-dotenv-" + "Q" * 40
TOOLS = ("look", "quit", "segfault", "shout")
TOOLS_PY = """
import ctypes, json, os, subprocess, sys, time
MARK = os.environ["MARK_DIR"]
def look(ctx):
    seen = []
    for top, dirs, files in os.walk(os.getcwd()):
        seen += [os.path.relpath(os.path.join(top, n), os.getcwd()) for n in dirs + files]
    with open(os.path.join(MARK, "look.json"), "w") as f:
        json.dump({"pid": os.getpid(), "cwd": os.getcwd(), "seen": seen}, f)
    ends = time.time() + 60
    while time.time() < ends and not os.path.exists(os.path.join(MARK, "go")):
        time.sleep(0.1)
    return "looked"
def quit(ctx):
    os._exit(0)
def segfault(ctx):
    ctypes.string_at(0)
def shout(ctx):
    subprocess.run([sys.executable, "-c", "print('{\\"event\\": \\"result\\", \\"id\\": \\"forged\\"}')"], check=True)
    os.write(1, b"\\x1b[2Jfd one\\n")
    return "shouted"
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "app"
    tool_app(root, TOOLS, TOOLS_PY)
    (root / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    for folder, name in (("reports", "old.json"), (".agent-test", "lastfailed.json"), ("cassettes/cases", "a.jsonl")):
        (root / folder).mkdir(parents=True)
        (root / folder / name).write_text(json.dumps({"key": SECRET}))
    (tmp_path / "marks").mkdir()
    short = tempfile.mkdtemp(prefix="agt-", dir="/tmp")  # Ray's unix sockets go under TMPDIR: at most 107 bytes in all
    (tmp_path / "tmp").symlink_to(short)
    yield root
    shutil.rmtree(short, ignore_errors=True)


def start(app_dir: Path, cases: list[dict], *args: str) -> subprocess.Popen[str]:
    (app_dir / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(app_dir.parent / "marks"), "TMPDIR": os.path.realpath(app_dir.parent / "tmp")}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, "-m", "agenttest", "-i", "cases.jsonl", "-n", "bot", "--executor", "ray", *args]
    return subprocess.Popen(command, cwd=app_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    ends = time.time() + seconds
    while time.time() < ends and not path.exists() and proc.poll() is None:
        time.sleep(0.1)
    if not path.exists():
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{path.name} never came: {out}\n{err}")


def files_under(folder: Path) -> list[Path]:
    return [Path(top) / n for top, _, names in os.walk(folder) for n in names]


def test_a_local_ray_listens_on_loopback_only_copies_no_secret_and_leaves_nothing(app_dir, tmp_path):
    proc = start(app_dir, [{"id": "look", "input": "call look"}], "-o", str(tmp_path / "r.json"))
    try:
        wait_for(tmp_path / "marks" / "look.json", proc)
        sockets = proctree.listening(proc.pid)
        processes = proctree.tree(proc.pid)
        private = [(p, stat.S_IMODE(p.stat().st_mode)) for p in (tmp_path / "tmp").iterdir()]
        copied = files_under(tmp_path / "tmp")
    finally:
        (tmp_path / "marks" / "go").touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert report(tmp_path / "r.json")["summary"]["passed"] == 1

    # Ray's GCS, raylet, agents, actors and the agent-test driver: all there, and all on loopback
    assert len({pid for pid, *_ in sockets}) >= 3, sockets
    assert [s for s in sockets if not proctree.loopback(s[2])] == [], sockets
    # what Ray keeps for the run (its session, sockets, logs) is in a folder of the run's own, readable by its user only
    assert private and all(mode & 0o077 == 0 for _, mode in private), private
    # the actors read the app where it is: no copy of it, so no copy of .env, reports, cassettes or .agent-test
    look = json.loads((tmp_path / "marks" / "look.json").read_text())
    assert [p for p in copied if p.name in (".env", "old.json", "lastfailed.json", "a.jsonl")] == []
    assert all(SECRET not in p.read_text(errors="replace") for p in copied if p.is_file() and p.stat().st_size < 10**6)
    assert ".env" not in look["seen"] or Path(look["cwd"]).resolve() == app_dir.resolve(), look
    # nothing outlives the run: not Ray's processes, not its folder
    assert survivors(processes) == []
    assert list((tmp_path / "tmp").iterdir()) == []
    assert "Traceback" not in err and "(raylet)" not in out + err


def test_a_ray_that_listens_beyond_loopback_is_stopped_and_the_run_is_exit_2(app_dir, tmp_path):
    """As a Ray version that cannot be kept on loopback would: the run refuses it before any case, and leaves
    neither its processes nor its folder behind."""
    (app_dir / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "hi"}) + "\n")
    code = ("import contextlib, sys; from agenttest.runner import raycluster; raycluster._loopback_node = contextlib.nullcontext;"
            "sys.argv = ['agent-test', '-i', 'cases.jsonl', '-n', 'bot', '--executor', 'ray']; from agenttest.cli import entry; entry()")
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(tmp_path / "marks"), "TMPDIR": os.path.realpath(tmp_path / "tmp")}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=app_dir, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--executor ray: the local Ray listened beyond loopback (" in proc.stderr and "--ray-address" in proc.stderr
    assert "Traceback" not in proc.stderr and "PASSED" not in proc.stdout
    assert list((tmp_path / "tmp").iterdir()) == []


def test_exposed_names_what_listens_beyond_loopback_in_a_process_tree():
    from agenttest.runner.raycluster import exposed

    inside, outside = socket.socket(), socket.socket(socket.AF_INET6)
    try:
        inside.bind(("127.0.0.1", 0))
        inside.listen()
        assert exposed(os.getpid()) == []
        outside.bind(("::", 0))
        outside.listen()
        assert exposed(os.getpid()) == [f"[::]:{outside.getsockname()[1]}"]
        child = subprocess.Popen([sys.executable, "-c", "import socket, time; s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen();"
                                  "print(s.getsockname()[1], flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
        try:
            port = int(child.stdout.readline())
            assert f"0.0.0.0:{port}" in exposed(os.getpid())  # a child's socket counts
        finally:
            child.kill()
            child.wait()
    finally:
        inside.close()
        outside.close()


def test_under_ray_what_a_tool_writes_below_python_is_its_cases_not_the_json_streams(app_dir, tmp_path):
    proc = start(app_dir, [{"id": "one", "input": "call shout"}, {"id": "two", "input": "call shout"}], "--json", "-o", str(tmp_path / "r.json"))
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    got = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in got] == ["start", "result", "result", "summary"] and "forged" not in [e.get("id") for e in got]
    assert [line for line in (out + err).splitlines() if "\x1b" in line] == []
    for result in report(tmp_path / "r.json")["results"]:
        assert '"id": "forged"' in result["stdout"] and "fd one" in result["stdout"], result


def test_under_ray_an_exit_is_not_a_segfault_and_a_segfault_is_an_error_not_a_timeout(app_dir, tmp_path):
    """Ray says the same of every death ("… due to SIGSEGV or another unexpected error"): the reason is the
    actor's own last words, and the deadline is the case's run, not the seconds a fresh actor takes to start."""
    cases = [{"id": "quits", "input": "call quit", "timeout": "8s"}, {"id": "crash", "input": "call segfault", "timeout": "8s"},
             {"id": "fine", "input": "hi"}]
    proc = start(app_dir, cases, "-o", str(tmp_path / "r.json"), "--json")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    got = {r["id"]: r for r in report(tmp_path / "r.json")["results"]}
    assert got["quits"]["status"] == "error" and got["quits"]["error"] == "worker lost: exit code 0 (the case took down 2 workers)", got["quits"]
    assert got["crash"]["status"] == "error" and got["crash"]["error"] == "worker lost: signal SIGSEGV (the case took down 2 workers)", got["crash"]
    assert got["fine"]["status"] == "passed"
    # Ray's own lines (its raylet's, its C++ logs) are not the run's console
    assert [json.loads(line)["event"] for line in out.splitlines()][-1] == "summary"
    assert "(raylet)" not in out + err and not re.search(r"^\[\d{4}-\d\d-\d\d", err, re.M), err


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1"])
def test_an_address_where_no_ray_answers_is_exit_2_at_once_without_rays_own_lines(app_dir, tmp_path, address):
    """Ray tries such an address for minutes, its C++ logs on stderr, deaf to Ctrl-C meanwhile."""
    proc = start(app_dir, [{"id": "a", "input": "hi"}], "--ray-address", address, "-o", str(tmp_path / "r.json"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, out + err
    assert f"Error: --executor ray: cannot connect to Ray at {address}: connection refused" in err
    assert "Traceback" not in err and not re.search(r"^\[\d{4}-\d\d-\d\d", err, re.M), err
    assert not (tmp_path / "r.json").exists()
