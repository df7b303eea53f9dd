"""User code — tools, hooks, script assertions, script tests, generator scripts — runs in daemon threads.

Whatever it does stays inside its case: ``print`` is captured per case (never interleaved with the
console), any exception — ``SystemExit``, ``KeyboardInterrupt``, pytest's ``fail()`` included — becomes
a ``CallError`` carrying the user's ``file:line`` and traceback, and a call that hangs is abandoned at
its deadline (a daemon thread is never waited for, so it cannot keep the run from ending)."""

from __future__ import annotations

import asyncio
import codecs
import contextvars
import inspect
import io
import os
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import Any, TextIO
from collections.abc import Iterator

from agenttest.errors import CallError, PolicyDenied
from agenttest.runtime import fdcapture

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # agenttest/, whose frames are not the user's


MAX_CAPTURE = 1024 * 1024  # bytes of each stream a case keeps (UTF-8); the rest is counted, not kept


class Capture:
    """What user code printed while one case ran: the first MAX_CAPTURE bytes of each stream, and how many
    more there were (a tool that prints in a loop cannot fill the memory of the run or its report)."""

    __slots__ = ("_out", "_err", "_lock", "_room", "_more", "ran", "_below_open")

    def __init__(self) -> None:  # every case has one; few print: nothing is made until they do
        self._out: list[str] = []
        self._err: list[str] = []
        self._lock = _LOCK
        self._room = [MAX_CAPTURE, MAX_CAPTURE]  # bytes each stream may still keep
        self._more = [0, 0]  # bytes each stream printed past its room
        self.ran = False  # user code ran for the case: it may have written below Python too (fdcapture)
        self._below_open = [False, False]  # each stream's last text came from below Python and ended no line

    def write(self, stream: str, text: str) -> None:
        at = 0 if stream == "stdout" else 1
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            room = self._room[at]
            if size > room:
                kept = _first_bytes(text, room)
                self._more[at] += size - len(kept.encode("utf-8", "surrogatepass"))
                text, size = kept, room
            self._room[at] = room - size
            if text:
                (self._out if at == 0 else self._err).append(text)

    def below(self, stream: str, text: str) -> None:
        """Text written below Python (fdcapture), kept as a print is."""
        self.write(stream, text)
        self._below_open[0 if stream == "stdout" else 1] = not text.endswith("\n")

    def at_line_start(self, stream: str) -> bool:
        """Whether what ``stream`` kept so far ends a line (or is nothing yet), or ends with a line written below
        Python whose end may still be in the pipe (a process run unbuffered writes a print's text, then its newline)."""
        at = 0 if stream == "stdout" else 1
        kept = self._out if at == 0 else self._err
        if not kept or kept[-1].endswith("\n"):
            return True
        if self._below_open[at]:
            self._below_open[at] = False
            return True
        return False

    def text(self) -> tuple[str, str]:
        with self._lock:
            return _told(self._out, self._more[0]), _told(self._err, self._more[1])


def _told(kept: list[str], more: int) -> str:
    return "".join(kept) + (f"\n… {more:,} bytes more" if more else "")


def _first_bytes(text: str, size: int) -> str:
    """The longest start of ``text`` whose UTF-8 takes at most ``size`` bytes (never half a character)."""
    if size <= 0:
        return ""
    if text.isascii():
        return text[:size]
    return text.encode("utf-8", "surrogatepass")[:size].decode("utf-8", "ignore")


_LOCK = threading.Lock()  # captures are written from a case's threads: one lock for all (held for an append)


current_capture: contextvars.ContextVar[Capture | None] = contextvars.ContextVar("agenttest_capture", default=None)
# Set when the caller stops waiting for a call (its deadline, Ctrl-C): code that can be stopped from
# outside — TypeScript in the Node process — watches it; a Python thread cannot be.
abandoned: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("agenttest_abandoned", default=None)


class _Router(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr during a run: text written inside a case goes to its capture."""

    def __init__(self, real: TextIO, name: str):
        self.real = real
        self.name = name

    def write(self, text: str) -> int:  # type: ignore[override]
        capture = current_capture.get()
        if capture is None:
            return self.real.write(text)
        if capture.at_line_start(self.name):  # what the case wrote below Python before this line comes first (a syscall: once a line)
            fdcapture.settle(capture)
        capture.write(self.name, text)
        return len(text)

    def flush(self) -> None:
        if current_capture.get() is None:
            self.real.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.real, "encoding", "utf-8")

    @property
    def buffer(self) -> _BinaryRouter:
        """``sys.stdout.buffer.write(b"…")`` works in user code too: the bytes are captured as UTF-8 text."""
        return _BinaryRouter(self)


class _BinaryRouter(io.RawIOBase):
    """The ``buffer`` of a _Router: bytes decoded (bad bytes escaped) and written as text."""

    def __init__(self, text: _Router):
        self.text = text
        self._decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:  # type: ignore[override]
        real = getattr(self.text.real, "buffer", None)
        if current_capture.get() is None and real is not None:  # outside any case: the real stream's bytes
            return int(real.write(data))
        self.text.write(self._decoder.decode(bytes(data)))
        return len(data)

    def flush(self) -> None:
        self.text.flush()


_home: list[str] = []  # the run's working directory, while a run captures user code


@contextmanager
def capturing(home: str | None = None) -> Iterator[None]:
    """Route ``print`` of user code to the capture of the case it runs for (for the whole run); a call that
    changed the working directory (``os.chdir`` in a tool) is followed by a return to ``home``."""
    old_out, old_err = sys.stdout, sys.stderr
    if isinstance(old_out, _Router):  # already routed (a worker forked during the run)
        yield
        return
    # outside any case, what user code prints joins what it writes below Python (fds 1 and 2, captured):
    # sys.stdout may be agent-test's own console by now
    real_out, real_err = fdcapture.below() if fdcapture.active() is not None else (old_out, old_err)
    sys.stdout, sys.stderr = _Router(real_out, "stdout"), _Router(real_err, "stderr")  # type: ignore[assignment]
    _home.append(home or os.getcwd())
    try:
        yield
    finally:
        sys.stdout, sys.stderr = old_out, old_err
        _home.pop()


def _go_home() -> None:
    """After a user call: back in the run's working directory, wherever the call went."""
    if _home:
        try:
            os.chdir(_home[-1])
        except OSError:  # home itself is gone: every path of the run is absolute anyway
            pass


class Deadline(CallError):
    """User code did not return in time; its thread was abandoned."""


class ProcessExit(SystemExit):
    """``os._exit(n)`` called by a global hook: in the controller it would end agent-test at once, with no
    report and an exit code of the hook's choosing, so it ends the hook's call instead (as ``sys.exit`` does)."""

    def __str__(self) -> str:
        return f"os._exit({self.code}) was called: it would end agent-test with no report"


@contextmanager
def no_exit() -> Iterator[None]:
    """While global hooks (BeforeAll, AfterAll) run in the controller, ``os._exit`` raises ``ProcessExit`` in
    the thread that called it. Cases are kept from it by their worker process; nothing else runs then."""
    real = os._exit

    def refused(status: int = 0) -> None:
        raise ProcessExit(status)

    os._exit = refused  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


async def call(fn: Callable[..., Any], *args: Any, what: str, timeout: float | None = None, kwargs: Mapping[str, Any] | None = None,
               grace: float | None = None, unfinished: Callable[[], None] | None = None) -> Any:
    """``fn(*args, **kwargs)`` in a daemon thread, in a copy of the caller's context (so its prints are
    captured for the caller's case and its agent calls belong to it). Raises CallError naming ``what``.
    ``kwargs`` is a mapping, not ``**``: a tool's arguments may be named ``what`` or ``timeout`` too.
    ``grace``: when the caller is cancelled (Ctrl-C) while ``fn`` runs, the seconds it still gets to finish —
    then its value is returned all the same (the caller knows it was stopped); ``unfinished`` is called if it
    has not finished by then, and the cancellation goes on."""
    kwargs = kwargs or {}
    touched()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()
    stop = threading.Event()
    context.run(abandoned.set, stop)

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def target() -> None:
        try:
            value = context.run(fn, *args, **kwargs)
            if inspect.isawaitable(value):  # an ``async def`` tool or hook: awaited in this thread's own loop
                value = context.run(asyncio.run, _awaited(value))
        except BaseException as exc:  # noqa: BLE001 — user code may raise anything; none of it may escape
            try:
                failure = _failure(what, exc)
            except BaseException:  # noqa: BLE001 — e.g. its traceback cannot be read: the call still ends, now
                failure = CallError(f"{what} failed: {_type_name(exc)}")
            _go_home()
            _post(loop, settle, False, failure)
        else:
            _go_home()
            _post(loop, settle, True, value)

    threading.Thread(target=target, name=f"agent-test: {what}", daemon=True).start()
    try:
        done, _ = await asyncio.wait({future}, timeout=timeout)
    except asyncio.CancelledError:  # the case's deadline, or Ctrl-C
        finished: set[asyncio.Future[Any]] = set()
        try:
            if grace:  # an After hook stopped by Ctrl-C while it cleans up: it may finish (a second Ctrl-C ends this too)
                try:
                    finished, _ = await asyncio.wait({future}, timeout=grace)
                finally:  # not finished in time, or a second stop: the user hears of it either way
                    if not finished and unfinished is not None:
                        unfinished()
        finally:
            if not finished:
                stop.set()
                future.cancel()
        if not finished:
            raise
        return future.result()  # it finished within its grace: its case has its result (the caller was stopped after)
    if not done:
        stop.set()
        future.cancel()
        raise Deadline(f"{what} did not return within {timeout:g}s")
    return future.result()


def touched() -> None:
    """User code runs for the current case (a call here, an MCP server's tool): what it wrote below Python is
    read before the case ends."""
    capture = current_capture.get()
    if capture is not None:
        capture.ran = True


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _post(loop: asyncio.AbstractEventLoop, settle: Callable[..., None], ok: bool, value: Any) -> None:
    try:
        loop.call_soon_threadsafe(settle, ok, value)
    except RuntimeError:  # the run is over and its loop closed: nobody waits for this call any more
        pass


def _failure(what: str, exc: BaseException) -> CallError:
    if isinstance(exc, CallError):  # e.g. an agent called from a hook failed: keep its message
        return CallError(f"{what} failed: {said(exc)}", exc.traceback or user_traceback(exc), exc.cause, exc.location)
    where = user_location(exc)
    text = said(exc)
    if isinstance(exc, PolicyDenied):  # a refusal by policy, not a crash: said as the tool said it, counted as a violation
        failure = CallError(f"{what} refused by policy: {text}", None, f"policy violation: {text}", where)
        failure.denied = text or "denied by policy"
        return failure
    cause = f"{_type_name(exc)}: {text}" if text else _type_name(exc)
    return CallError(f"{what} failed: {cause}" + (f" ({where})" if where else ""), user_traceback(exc), cause, where)


def said(exc: BaseException) -> str:
    """``str(exc)``, or what Python's own traceback printer says when that raises (user code's ``__str__``)."""
    try:
        return str(exc)
    except BaseException:  # noqa: BLE001
        return "<exception str() failed>"


def _type_name(exc: BaseException) -> str:
    name = getattr(type(exc), "__name__", None)
    return name if isinstance(name, str) else "an exception"


def _user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(exc.__traceback__) if not os.path.abspath(f.filename).startswith(_PACKAGE + os.sep)]


def user_location(exc: BaseException) -> str:
    """``file.py:12`` of the innermost frame in the user's code, or ""."""
    frames = _user_frames(exc)
    if not frames:
        return ""
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno}"


def user_traceback(exc: BaseException) -> str:
    """The traceback without agent-test's own frames, as Python prints it."""
    frames = traceback.StackSummary.from_list(_user_frames(exc))
    lines = ["Traceback (most recent call last):\n", *frames.format(), *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines)
