"""Nothing a run starts outlives it (Linux). What a tool, a hook or an MCP server starts is found by three nets:

- a **cgroup v2** of the run's own, when one can be made beside agent-test's: agent-test moves into it, so
  everything the run starts is born in it, whatever its session, parentage or environment; at the end agent-test
  moves back out and kills the cgroup. A later run kills what a dead run's cgroup still holds;
- a **child subreaper** (``PR_SET_CHILD_SUBREAPER``, agent-test and each worker): a process whose parent leaves
  (``sh -c 'cmd &'``, a double fork, ``setsid``) is re-parented to it, not to init, so it is still found under it;
- the **run's mark**, ``AGENTTEST_RUN=<id>`` in the environment of every program the run starts.

At the end of the run what is left — in the cgroup, under agent-test and started during the run, or marked — is
killed. A watchdog (this file run as a script, in a session of its own, holding nothing of the run) outlives a
controller killed by SIGKILL and does the same once it is gone. Only the run's own processes are ever touched:
each is checked (through a pidfd, so a reused pid is never hit) before it is signalled. This module uses the
standard library only: the watchdog runs it without importing agent-test."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator

MARKER = "AGENTTEST_RUN"
PREFIX = "agent-test-"  # a run's cgroup: agent-test-<controller pid>-<its start time>
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37
_ROUNDS = 5  # sweeps: what a dying process started meanwhile is found by the next


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or not); whether it was one before."""
    libc = _libc()
    if libc is None or not sys.platform.startswith("linux"):
        return False
    was = ctypes.c_int(0)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
    return bool(was.value)


def _stat(pid: int | str) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process; None when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else (int(fields[1]), int(fields[19]))


def _now() -> int:
    """Now, in the clock ticks since boot that /proc gives start times in."""
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _marked(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return mark in f.read().split(b"\0")
    except OSError:
        return False


def cgroup_root() -> str | None:
    """This process's cgroup v2 folder, when it is one we may make cgroups in (else None)."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
        with open("/proc/self/mountinfo") as f:
            mount = next((line.split()[4] for line in f if " - cgroup2 " in line), None)
    except OSError:
        return None
    if path is None or mount is None:
        return None
    folder = os.path.join(mount, path.lstrip("/"))
    procs = os.path.join(folder, "cgroup.procs")
    return folder if os.access(folder, os.W_OK) and os.access(procs, os.W_OK) else None


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


def _members(cgroup: str) -> list[int]:
    try:
        with open(os.path.join(cgroup, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _empty(cgroup: str, wait: float) -> bool:
    ends = time.monotonic() + wait
    while _members(cgroup):
        if time.monotonic() >= ends:
            return False
        time.sleep(0.02)
    return True


def end_cgroup(cgroup: str, spare: Iterable[int] = ()) -> None:
    """Kill everything in ``cgroup`` (``spare`` apart, which must have left it) and remove it."""
    spared = set(spare)
    for _ in range(_ROUNDS):
        if not _write(os.path.join(cgroup, "cgroup.kill"), "1"):  # Linux < 5.14: one by one
            kill([p for p in _members(cgroup) if p not in spared])
        if _empty(cgroup, 1.0):
            break
    with contextlib.suppress(OSError):
        os.rmdir(cgroup)


def kill(pids: dict[int, int] | Iterable[int]) -> int:
    """SIGKILL each process — given as pid → start time, only if it is still that process — through a pidfd
    where there is one, so that the process checked is the process signalled. How many were signalled."""
    started = pids if isinstance(pids, dict) else dict.fromkeys(pids, None)
    killed = 0
    for pid, start in started.items():
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fd = -1
        try:
            stat = _stat(pid)
            if stat is None or (start is not None and stat[1] != start):
                continue
            if fd >= 0:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
        finally:
            if fd >= 0:
                os.close(fd)
    return killed


def under(root: int, since: int, spare: Iterable[int] = ()) -> dict[int, int]:
    """Every process under ``root`` through a child of it started at or after ``since`` (the run's own, and
    what they started — not a process ``root`` had before), ``spare`` and its descendants apart: pid → start."""
    table = {int(n): s for n in os.listdir("/proc") if n.isdigit() and (s := _stat(n)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    spared = set(spare)
    todo = [p for p in children.get(root, []) if table[p][1] >= since and p not in spared]
    found = {}
    while todo:
        pid = todo.pop()
        found[pid] = table[pid][1]
        todo += [c for c in children.get(pid, []) if c not in spared]
    return found


def marked(run: str, since: int, spare: Iterable[int] = ()) -> dict[int, int]:
    """The processes whose environment carries this run's mark (and that started since it began): pid → start."""
    mark = f"{MARKER}={run}".encode()
    spared = {os.getpid(), *spare}
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in spared and (s := _stat(name)) is not None and s[1] >= since and _marked(int(name), mark):
            found[int(name)] = s[1]
    return found


def sweep(run: str, since: int, cgroup: str | None, root: int | None = None, spare: Iterable[int] = ()) -> int:
    """Kill what the run left: its cgroup, what is under ``root`` since it began, what carries its mark."""
    spared = {os.getpid(), *spare}
    total = 0
    if cgroup is not None:
        end_cgroup(cgroup, spared)
    for _ in range(_ROUNDS):
        found = marked(run, since, spared)
        if root is not None:
            found.update(under(root, since, spared))
        if not found:
            break
        total += kill(found)
        time.sleep(0.02)
    if root == os.getpid():
        _reap(since, spared)
    return total


def _reap(since: int, spare: set[int]) -> None:
    """Our children of the run that ended (killed above, or orphans re-parented to us and gone): no zombie stays.
    Only those: a child this process had before the run is its owner's to wait for."""
    me = os.getpid()
    for _ in range(50):
        zombies = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in spare:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    text = f.read().decode(errors="replace")
            except OSError:
                continue
            fields = text[text.rfind(")") + 2:].split()
            if fields[0] == "Z" and int(fields[1]) == me and int(fields[19]) >= since:
                zombies.append(int(name))
        if not zombies:
            return
        for pid in zombies:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.01)


def stale_cgroups(parent: str) -> None:
    """End the cgroups of runs whose controller is gone (killed with its watchdog): what they hold is left over."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        try:
            pid, start = (int(x) for x in name[len(PREFIX):].split("-")[:2])
        except ValueError:
            continue
        stat = _stat(pid)
        if stat is None or stat[1] != start:
            end_cgroup(os.path.join(parent, name))


class Run:
    """The process-owning part of a run: the mark, the subreaper, the cgroup and the watchdog (``contained``)."""

    def __init__(self, owner: bool):
        self.id = os.urandom(8).hex()
        self.pid = os.getpid()
        self.since = _now()
        self.owner = owner  # agent-test owns this process (the CLI), not a library call or a test's in-process run
        self.cgroup: str | None = None
        self.origin: str | None = None
        self.watchdog: subprocess.Popen[bytes] | None = None
        self.was_subreaper = False
        self.mark_before = os.environ.get(MARKER)

    def enter(self) -> None:
        if self.owner:
            self._cgroup()
            self._watchdog()
            if self.cgroup is not None and not _write(os.path.join(self.cgroup, "cgroup.procs"), str(self.pid)):
                self._drop_cgroup()
        os.environ[MARKER] = self.id  # every program the run starts carries it, and what those start
        self.was_subreaper = subreaper(True)

    def _cgroup(self) -> None:
        parent = cgroup_root()  # the run's cgroup goes inside agent-test's own (a run a tool started: inside that run's)
        if parent is None:
            return
        stale_cgroups(parent)
        stat = _stat(self.pid)
        folder = os.path.join(parent, f"{PREFIX}{self.pid}-{stat[1] if stat else 0}-{self.id}")
        try:
            os.mkdir(folder)
        except OSError:
            return
        self.cgroup, self.origin = folder, parent

    def _drop_cgroup(self) -> None:
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self.cgroup)
        self.cgroup = self.origin = None

    def _watchdog(self) -> None:
        stat = _stat(self.pid)
        env = {k: v for k, v in os.environ.items() if k != MARKER}
        argv = [sys.executable, "-I", os.path.abspath(__file__), str(self.pid), str(stat[1] if stat else 0), self.id, str(self.since),
                self.cgroup or "-"]
        try:
            self.watchdog = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True, env=env, close_fds=True)
        except OSError:
            self.watchdog = None

    def exit(self) -> None:
        if self.mark_before is None:
            os.environ.pop(MARKER, None)
        else:
            os.environ[MARKER] = self.mark_before
        if self.cgroup is not None and self.origin is not None:
            _write(os.path.join(self.origin, "cgroup.procs"), str(self.pid))  # out first: the cgroup is killed whole
        spare = [self.watchdog.pid] if self.watchdog is not None else []
        sweep(self.id, self.since, self.cgroup, self.pid, spare)
        if not self.was_subreaper:
            subreaper(False)
        if self.watchdog is not None:
            with contextlib.suppress(OSError, ValueError):
                assert self.watchdog.stdin is not None
                self.watchdog.stdin.write(b"done")
                self.watchdog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.watchdog.wait(2)


@contextlib.contextmanager
def contained(owner: bool = False) -> Iterator[Run | None]:
    """For a command that runs user code: what it starts ends with it (``owner``: the command owns this
    process — cgroup and watchdog too)."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"):
        yield None
        return
    run = Run(owner)
    run.enter()
    try:
        yield run
    finally:
        run.exit()


def in_worker() -> None:
    """In a worker process: what its tools leave behind is re-parented to it (found, and killed, with it)."""
    subreaper(True)


def watch(pid: int, start: int, run: str, since: int, cgroup: str | None) -> None:
    """The watchdog: wait until the controller is gone; unless it said it ended its run itself, end it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stat = _stat(pid)
    if stat is not None and stat[1] == start:
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fd = -1
        poller = select.poll()
        poller.register(0, select.POLLIN)
        if fd >= 0:
            poller.register(fd, select.POLLIN)
        said = b""
        while True:
            ready = poller.poll(None if fd >= 0 else 500)
            if any(f == 0 for f, _ in ready):
                chunk = os.read(0, 16)
                said += chunk
                if said.startswith(b"done"):
                    return
                if not chunk:
                    break
            if fd >= 0 and any(f == fd for f, _ in ready):
                break
            if fd < 0 and (_stat(pid) or (0, -1))[1] != start:
                break
    sweep(run, since, cgroup)


if __name__ == "__main__":  # the watchdog: python -I containment.py PID START RUN SINCE CGROUP|-
    _pid, _start, _run, _since, _cgroup = sys.argv[1:6]
    watch(int(_pid), int(_start), _run, int(_since), None if _cgroup == "-" else _cgroup)
