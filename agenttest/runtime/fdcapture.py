"""What is written below Python — ``os.write(1, …)``, a subprocess that prints, a C library — caught at the
file descriptors. While a process runs user code (the controller for the whole command, a worker, a Ray
actor), its fds 1 and 2 are pipes read by one thread here; agent-test's own output goes to the saved real
descriptors. Bytes written while exactly one case runs in the process are that case's (its ``stdout`` and
``stderr``); the rest is output outside any case: shown on the real stderr with control characters escaped
and keys hidden, and said once in a warning when it went to stdout."""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from agenttest.util.text import printable

CHUNK = 65536
OUTSIDE = "output written to stdout outside any case (by user code or a process it started) is shown on stderr"
_STREAMS = ("stdout", "stderr")


class Descriptors:
    """fds 1 and 2 of this process as pipes, read by a thread from ``start`` to ``stop``."""

    def __init__(self, redact: Callable[[str], str] | None = None):
        self.saved = (os.dup(1), os.dup(2))  # the real ones: agent-test's own output, and what is shown of the rest
        self.redact = redact or (lambda text: text)
        self.reads: list[int] = []
        for target in (1, 2):
            read, write = os.pipe()
            os.dup2(write, target)
            os.close(write)
            os.set_blocking(read, False)
            self.reads.append(read)
        self._wake = os.pipe()
        self.lock = threading.Lock()
        self.running: list[Any] = []  # the captures of the cases running in this process
        self._decoders = [codecs.getincrementaldecoder("utf-8")("backslashreplace") for _ in _STREAMS]
        self._partial = ["", ""]  # output outside any case, not yet a whole line
        self.outside = [0, 0]  # bytes of each stream written outside any case
        self._poll = select.poll()
        for fd in self.reads:
            self._poll.register(fd, select.POLLIN)
        self._thread = threading.Thread(target=self._pump, name="agent-test: output below Python", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        poller = select.poll()
        for fd in (*self.reads, self._wake[0]):
            poller.register(fd, select.POLLIN)
        while True:
            ready = poller.poll()
            if any(fd == self._wake[0] for fd, _ in ready):
                return
            for fd, event in ready:
                if event & (select.POLLHUP | select.POLLERR) and not event & select.POLLIN:
                    poller.unregister(fd)  # every writer is gone (after stop's restore)
            with self.lock:
                self._take()

    def _take(self) -> None:
        """Read what the pipes hold now (the lock held)."""
        for at, fd in enumerate(self.reads):
            while True:
                try:
                    data = os.read(fd, CHUNK)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                self._give(at, self._decoders[at].decode(data), len(data))

    def _give(self, at: int, text: str, size: int) -> None:
        if len(self.running) == 1:
            self.running[0].below(_STREAMS[at], text)
            return
        self.outside[at] += size
        lines = (self._partial[at] + text).split("\n")
        self._partial[at] = lines.pop()
        for line in lines:
            self._show(at, line)

    def _show(self, at: int, line: str) -> None:
        shown = ("(stdout) " if at == 0 else "") + printable(self.redact(line)) + "\n"
        try:
            os.write(self.saved[1], shown.encode("utf-8", "backslashreplace"))
        except OSError:  # the real stderr is gone: nothing can be shown any more
            pass

    def begin(self, capture: Any) -> None:
        with self.lock:
            self.running.append(capture)

    def end(self, capture: Any, wrote: bool) -> None:
        """The case is over; ``wrote``: it ran user code, whose last bytes may still be in the pipes."""
        with self.lock:
            if wrote and self._poll.poll(0):
                self._take()
            if capture in self.running:
                self.running.remove(capture)

    def settle(self, capture: Any) -> None:
        """Before ``capture`` takes text written at the Python level: the bytes its case wrote below Python before
        it, read first — the thread that reads the pipes may not have yet, and the print would come before them
        (and split a line in two)."""
        if len(self.running) != 1 or self.running[0] is not capture:
            return
        with self.lock:
            if self._poll.poll(0):
                self._take()

    def drain(self) -> None:
        with self.lock:
            self._take()

    def warning(self) -> str | None:
        return OUTSIDE if self.outside[0] else None

    def stop(self) -> None:
        """Everything read and shown; fds 1 and 2 back to what they were."""
        with self.lock:
            self._take()
            for at, rest in enumerate(self._partial):
                if rest:
                    self._show(at, rest)
            self._partial = ["", ""]
        os.write(self._wake[1], b"x")
        self._thread.join(5)
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        self.close()

    def close(self) -> None:
        """Close what this object holds (in a forked child: the parent's, without touching its lock or thread)."""
        for fd in (*self.reads, *self._wake, *self.saved):
            try:
                os.close(fd)
            except OSError:
                pass


_active: Descriptors | None = None
_below: tuple[TextIO, TextIO] | None = None  # text streams on fds 1 and 2 (the pipes while capturing)


def start(redact: Callable[[str], str] | None = None) -> Descriptors | None:
    """Capture this process's fds 1 and 2 (None when it cannot: a descriptor is closed, or not POSIX)."""
    global _active
    if _active is not None:
        return _active
    if not hasattr(select, "poll"):
        return None
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    try:
        _active = Descriptors(redact)
    except OSError:
        return None
    return _active


def stop() -> None:
    global _active
    if _active is not None:
        active, _active = _active, None
        active.stop()


def active() -> Descriptors | None:
    return _active


def redact_with(redact: Callable[[str], str]) -> None:
    if _active is not None:
        _active.redact = redact


def begin(capture: Any) -> None:
    if _active is not None:
        _active.begin(capture)


def settle(capture: Any) -> None:
    """Before a print of ``capture``'s case is kept: what the case wrote below Python until then is kept first."""
    if _active is not None:
        _active.settle(capture)


def end(capture: Any, wrote: bool) -> None:
    if _active is not None:
        _active.end(capture, wrote)


def warning() -> str | None:
    """The warning for the report, once what was written so far is read."""
    if _active is None:
        return None
    _active.drain()
    return _active.warning()


def below() -> tuple[TextIO, TextIO]:
    """Text streams on fds 1 and 2 whatever they are now (unbuffered: each write reaches the descriptor at
    once, so it is read as the case's that wrote it)."""
    global _below
    if _below is None:
        _below = tuple(io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                        write_through=True) for fd in (1, 2))  # type: ignore[assignment]
    assert _below is not None
    return _below


def forked(redact: Callable[[str], str] | None = None) -> Descriptors | None:
    """In a forked child (a worker): the parent's capture is let go (its descriptors closed, its lock and
    thread never touched) and the child's own begins; Python's output in the child goes to the new pipes."""
    global _active
    if _active is not None:
        _active.close()
        _active = None
    started = start(redact)
    if started is not None:
        sys.stdout, sys.stderr = below()
    return started


@contextlib.contextmanager
def own_output(redact: Callable[[str], str] | None = None) -> Iterator[None]:
    """For a command that runs user code: capture fds 1 and 2, and give ``sys.stdout``/``sys.stderr`` — when
    they are those descriptors — to agent-test on the saved real ones (its console, its events)."""
    capture = start(redact)
    if capture is None:
        yield
        return
    swapped: list[tuple[str, TextIO, TextIO]] = []
    for name, fd, saved in (("stdout", 1, capture.saved[0]), ("stderr", 2, capture.saved[1])):
        stream = getattr(sys, name)
        if _writes_to(stream, fd):
            mine: TextIO = open(saved, "w", encoding=stream.encoding, errors=stream.errors, closefd=False,  # noqa: SIM115
                                buffering=1 if stream.line_buffering else -1)
            swapped.append((name, stream, mine))
            setattr(sys, name, mine)
    try:
        yield
    finally:
        for name, old, mine in swapped:
            with contextlib.suppress(OSError, ValueError):
                mine.flush()
            setattr(sys, name, old)
        stop()


def _writes_to(stream: Any, fd: int) -> bool:
    try:
        return bool(stream.fileno() == fd)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False
