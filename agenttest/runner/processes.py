"""No process outlives the run: a worker dies with the controller (Linux's parent-death signal), and
what runs under a worker is found in /proc and killed with it.

MCP stdio servers start in sessions of their own (the ``mcp`` SDK's ``start_new_session``), so a worker's
process group does not reach them; their parentage does, and a snapshot taken once a worker's servers
are up still finds them after the worker died and they were re-parented. Elsewhere than Linux: process
groups only."""

from __future__ import annotations

import os
import signal
import time

from agenttest.util.forked import die_with  # noqa: F401 — a worker dies with the controller, as any copy of it does


def _stat(pid: int | str) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks since boot) of a process, None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, …; starttime is field 22
    return None if fields[0] == "Z" else (int(fields[1]), int(fields[19]))


def _table() -> dict[int, tuple[int, int]]:
    """pid → (parent pid, start time), for every live process we can see."""
    names = os.listdir("/proc") if os.path.isdir("/proc") else []
    return {int(n): stat for n in names if n.isdigit() and (stat := _stat(n)) is not None}


def descendants(root: int, table: dict[int, tuple[int, int]]) -> list[int]:
    """Every process under ``root`` in ``table``."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def kill(pids: list[int]) -> None:
    """SIGKILL each (and reap those that are our own children)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    for pid in pids:
        reap(pid, 0.2)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tree(root: int) -> dict[int, int]:
    """pid → start time of every process under ``root`` now (to kill later, even after re-parenting)."""
    table = _table()
    return {pid: table[pid][1] for pid in descendants(root, table)}


def kill_tree(known: dict[int, int]) -> None:
    """Kill the processes of a ``tree`` snapshot that still run (a pid reused since is left alone)."""
    kill([pid for pid, start in known.items() if (_stat(pid) or (0, -1))[1] == start])


def reap(pid: int, wait: float = 1.0) -> int | None:
    """The wait status of a child once it has ended (None if it is still running after ``wait`` seconds)."""
    ends = time.monotonic() + wait
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= ends:
            return None
        time.sleep(0.01)


def describe(status: int | None) -> str:
    """A wait status as the report says it: ``exit code 0``, ``signal SIGSEGV``."""
    if status is None:
        return "it ended"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"
