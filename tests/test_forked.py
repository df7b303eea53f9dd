"""util/forked.py: a call in a forked copy of the process — its answer read back, what the parent sends
received there, and a copy that crashes, is killed, hangs or is sent Ctrl-C ends as ``Lost`` or goes on,
never hanging the parent."""

from __future__ import annotations

import os
import signal
import time

import pytest

from agenttest.util import forked

pytestmark = pytest.mark.skipif(not forked.available(), reason="fork is POSIX only")


def test_the_copy_answers_with_what_it_holds_and_what_it_was_sent():
    held = {"cases": 10_000}  # made before the fork: the copy has it without being sent it

    child = forked.Child(lambda receive: f"{held['cases']} cases, sent {receive().decode()!r}")
    child.send(b"out.json")
    assert child.result(30) == "10000 cases, sent 'out.json'"


def test_a_copy_may_answer_in_bytes():
    assert forked.Child(lambda receive: b"\x80\x00 pickled").answer(30) == b"\x80\x00 pickled"


def test_a_copy_sent_nothing_receives_nothing():
    child = forked.Child(lambda receive: f"got {receive()!r}")
    assert child.result(30) == "got b''"


def test_a_copy_that_raises_or_is_killed_is_lost_and_said_so():
    def boom(receive):
        raise RuntimeError("a bug")

    with pytest.raises(forked.Lost, match="exit code 70"):
        forked.Child(boom).result(30)

    def killed(receive):
        os.kill(os.getpid(), signal.SIGKILL)
        return "never"

    with pytest.raises(forked.Lost, match="signal SIGKILL"):
        forked.Child(killed).result(30)


def test_a_copy_still_at_work_after_the_time_given_is_killed(tmp_path):
    woke = tmp_path / "woke"

    def hangs(receive):
        time.sleep(60)
        woke.touch()  # a parent that waited the copy out would find this
        return "late"

    child = forked.Child(hangs)
    with pytest.raises(forked.Lost, match="did not finish within 0.5 s"):
        child.result(0.5)
    assert not woke.exists()  # killed at the time given, not waited for
    with pytest.raises(ChildProcessError):  # reaped: nothing of it is left
        os.waitpid(child.pid, os.WNOHANG)


def test_ctrl_c_does_not_stop_the_copy():
    """Ctrl-C reaches every process of the terminal's group: the parent decides what it means, the copy
    finishes its work."""
    child = forked.Child(lambda receive: "finished " + receive().decode())
    time.sleep(0.2)  # its signals are set
    os.kill(child.pid, signal.SIGINT)
    time.sleep(0.1)
    child.send(b"all the same")
    assert child.result(30) == "finished all the same"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the parent-death signal is Linux's")
def test_the_copy_dies_with_its_parent(tmp_path):
    """No process started by a run outlives it: the copy of a parent that is killed is killed too."""
    import subprocess
    import sys
    import textwrap

    pid_file = tmp_path / "copy.pid"
    script = textwrap.dedent(f"""
        import os, time
        from agenttest.util import forked
        child = forked.Child(lambda receive: (open({str(pid_file)!r}, "w").write(str(os.getpid())), time.sleep(60), "late")[2])
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        copy = int(pid_file.read_text())
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 60
        while _alive(copy) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(copy)
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False
