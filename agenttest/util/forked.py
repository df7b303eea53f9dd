"""A call made in a forked copy of this process — on the other core, with every object the process holds —
whose text answer is read back through a pipe: work at the end of a run that the rest of the run's end need
not wait for (the history's recording). The copy dies with this process (Linux's parent-death signal), never
takes Ctrl-C (this process decides what a stop means) and leaves by ``os._exit``: nothing of this process's
own (its event loop, its atexit handlers, its files' buffers) runs twice."""

from __future__ import annotations

import ctypes
import gc
import os
from os import _exit
import signal
import sys
import time
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with(parent: int) -> None:
    """In a child: be killed when ``parent`` dies, whatever kills it (even SIGKILL)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        _exit(70)


def available() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


class Lost(Exception):
    """The copy ended without an answer (killed, or out of time); the text says how."""


class Child:
    """``work(receive)`` in a forked copy; ``receive()`` there gives what ``send`` gives here (once)."""

    def __init__(self, work: Callable[[Callable[[], bytes]], str | bytes]):
        to_child, self._to_child = os.pipe()
        self._from_child, from_child = os.pipe()
        parent = os.getpid()
        try:
            self.pid = os.fork()
        except OSError:
            for fd in (to_child, self._to_child, self._from_child, from_child):
                os.close(fd)
            raise
        if self.pid == 0:  # the copy: from here to os._exit
            code = 70
            try:
                os.close(self._to_child)
                os.close(self._from_child)
                _quiet(parent)
                answer = work(lambda: _read_all(to_child))
                answer = answer if isinstance(answer, bytes) else answer.encode("utf-8", "replace")
                _write_all(from_child, answer)
                code = 0
            finally:
                _exit(code)
        os.close(to_child)
        os.close(from_child)
        self._sent = False

    def send(self, data: bytes) -> None:
        """What the copy's ``receive()`` gives (at most once; ``result`` sends nothing if nothing was sent)."""
        if self._sent:
            return
        self._sent = True
        try:
            _write_all(self._to_child, data)
        except OSError:  # the copy is gone: result() says so
            pass
        finally:
            os.close(self._to_child)

    def result(self, timeout: float) -> str:
        """The copy's answer; ``Lost`` when it ended without one, or was still at work after ``timeout`` seconds
        (then it is killed)."""
        return self.answer(timeout).decode("utf-8", "replace")

    def answer(self, timeout: float) -> bytes:
        """``result`` as the copy wrote it: its bytes (a ``work`` may give bytes instead of text)."""
        self.send(b"")
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not _readable(self._from_child, left):
                    self._kill()
                    raise Lost(f"it did not finish within {timeout:g} s")
                chunk = os.read(self._from_child, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(self._from_child)
        status = self._reap()
        if status is not None and status != 0:
            raise Lost(f"it ended with {'signal ' + signal.Signals(-status).name if status < 0 else f'exit code {status}'}")
        return b"".join(chunks)

    def stop(self) -> None:
        """The copy's work is no longer wanted: it is killed (and reaped), its answer never read."""
        if not self._sent:  # (``send`` closed it)
            self._sent = True
            os.close(self._to_child)
        os.close(self._from_child)
        self._kill()

    def _kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reap()

    def _reap(self) -> int | None:
        """The copy's exit code (negative: the signal that ended it); None when something else reaped it."""
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # a child watcher of the event loop's took it first
            return None
        return os.waitstatus_to_exitcode(status)


def _quiet(parent: int) -> None:
    """The copy's signals and collector: no Ctrl-C (the parent decides), no wake-ups of the parent's event
    loop, no collection (it would touch, so copy, every page of the parent's objects)."""
    gc.disable()
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # not the main thread
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with(parent)


def _readable(fd: int, timeout: float) -> bool:
    import select

    ready, _, _ = select.select([fd], [], [], timeout)
    return bool(ready)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
