"""Text of model output: JSON found inside it, any value as text, and one-line shortening for display."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|jsonc)?[ \t]*\n(.*?)```", re.DOTALL)
_decoder = json.JSONDecoder()
_MISSING = object()


def find_json(text: Any) -> tuple[bool, Any]:
    """(True, value) for the first JSON document found in ``text``; (False, None) if there is none.

    Non-string input is already data and is returned as is."""
    if not isinstance(text, str):
        return True, text
    stripped = text.strip()
    if not stripped:
        return False, None
    value = _loads(stripped)
    if value is not _MISSING:
        return True, value
    for block in _FENCE.findall(text):
        value = _loads(block.strip())
        if value is not _MISSING:
            return True, value
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = _decoder.raw_decode(text, i)
            except ValueError:
                continue
            return True, value
    return False, None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _MISSING


def as_text(value: Any) -> str:
    """An output as text: strings as they are, anything else as compact JSON (as Yao's json.Marshal)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def shorten(value: Any, limit: int, marker: str = "…") -> str:
    """``value`` as one line of at most ``limit`` characters (whitespace runs become one space)."""
    text = " ".join(as_text(value).split())
    return text if len(text) <= limit else text[: max(0, limit - len(marker))].rstrip() + marker
