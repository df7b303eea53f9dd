"""Regular expressions that users write (regex assertions, ``regex:`` strings): compiled with the
``regex`` package (Python's ``re`` syntax) and searched with a deadline, so that a pattern that
backtracks catastrophically is a failed check, not a frozen run."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

TIMEOUT = 2.0  # seconds one search may take


class PatternTimeout(Exception):
    """A search ran past its deadline."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern; raises ``regex.error`` with the reason."""
    import regex  # on the first pattern: a run without one never imports it (start-up)

    return regex.compile(pattern)


def search(pattern: str, text: str, timeout: float = TIMEOUT) -> Any:
    """The first match of ``pattern`` in ``text``, or None. The search releases the GIL (other threads
    and the event loop run meanwhile) and stops after ``timeout`` seconds with PatternTimeout."""
    try:
        return compile_pattern(pattern).search(text, timeout=timeout, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(f"/{pattern}/ took longer than {timeout:g}s on {len(text):,} characters "
                             "(catastrophic backtracking?); simplify the pattern") from None


def __getattr__(name: str) -> Any:
    """``patterns.error`` is ``regex.error``, imported when first named (``except patterns.error`` names it only
    when an exception reaches it)."""
    if name == "error":
        import regex

        return regex.error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
