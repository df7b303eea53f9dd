"""Durations and sizes as users write them (``"2m30s"``, ``"20MB"``) and as the console shows them."""

from __future__ import annotations

import math
import re
from typing import Any

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """``"30s"``, ``"2m30s"``, ``"1h"``, ``"500ms"`` or a number of seconds → seconds (> 0).

    Raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration (use e.g. \"30s\", \"2m30s\", \"1h\" or a number of seconds)")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            pos, seconds = 0, 0.0
            for m in _DURATION.finditer(text):
                if m.start() != pos:
                    break
                seconds += float(m.group(1)) * _UNITS[m.group(2)]
                pos = m.end()
            if pos != len(text) or not text:
                raise ValueError(
                    f"{value!r} is not a duration (use e.g. \"30s\", \"2m30s\", \"1h\", \"500ms\" or a number of seconds)"
                ) from None
    else:
        raise ValueError(f"{value!r} is not a duration (use e.g. \"30s\" or a number of seconds)")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{value!r} is not a positive duration")
    return seconds


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(b|kb|k|mb|m|gb|g)?", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}


def parse_size(value: str) -> int:
    """``"20MB"``, ``"500kb"``, ``"1g"`` or a number of bytes → bytes (> 0). Raises ValueError."""
    m = _SIZE.fullmatch(str(value).strip())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{value!r} is not a size (use e.g. \"20MB\", \"500KB\" or a number of bytes)")
    return int(float(m.group(1)) * _SIZE_UNITS[(m.group(2) or "b").lower()])


def format_duration(seconds: float) -> str:
    """Seconds → ``1.2s``, ``1.8m``, ``350ms``, ``4.2ms``, ``0.31ms`` for the console.

    Below 10 ms the figure keeps two significant digits, so a per-test figure of a fast run
    (100,000 mock cases) never reads ``0ms``."""
    if seconds <= 0:
        return "0ms"
    if seconds < 0.001:
        return f"{seconds * 1000:.2f}ms"
    if seconds < 0.01:
        return f"{seconds * 1000:.1f}ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def format_timeout(seconds: float) -> str:
    """Go-style duration text as Yao prints it: ``5m0s``."""
    whole = int(seconds)
    if whole != seconds or whole < 1:
        return f"{seconds:g}s"
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m}m{s}s"
    if m:
        return f"{m}m{s}s"
    return f"{s}s"
