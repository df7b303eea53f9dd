"""One primitive for every phase of a case (pytest's ``CallInfo.from_call``): run it, and turn what it raised —
its deadline passing, a hook's failure, a bug of ours or of a plug-in — into data the runner decides on. Only
a stop (``CancelledError``: Ctrl-C, SIGTERM) goes through."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

T = TypeVar("T")
Phase = Literal["before", "mode", "after"]


@dataclass(frozen=True, slots=True)
class Captured(Generic[T]):
    """What a phase gave: its value, or what it raised."""

    phase: Phase
    value: T | None = None
    raised: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.raised is None


async def capture(phase: Phase, call: Callable[[], Awaitable[T]]) -> Captured[T]:
    """``await call()``, what it returned or raised kept; never raises but ``CancelledError``."""
    try:
        return Captured(phase, await call())
    except Exception as exc:  # noqa: BLE001 — whatever a phase raises is its case's, never the run's end
        return Captured(phase, raised=exc)


def internal_error(exc: BaseException) -> tuple[str, str]:
    """The text of a bug of ours met inside a case: ``internal error: Type: message`` and the traceback."""
    return f"internal error: {type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))
