"""How a model request differs from a recorded one: the nearest recording, and the first difference in
words — which message, which field, the two texts where they part."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any, Protocol

from agenttest.util.text import as_text

FIELDS_FIRST = ("role", "content", "tool_calls", "tool_call_id", "name")
WINDOW = 40  # characters shown on each side of a difference
LIKENESS = 2000  # characters of two messages compared for likeness
CLOSEST = 16  # recordings compared for likeness (the rest are ranked by cheap equalities only)


class Recorded(Protocol):
    request: dict[str, Any]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _score(recorded: dict[str, Any], now: dict[str, Any]) -> tuple[Any, ...]:
    """Cheap nearness: the longest run of equal leading messages, then equal counts, model, tools, parameters."""
    rm, nm = recorded.get("messages") or [], now.get("messages") or []
    return (_prefix(rm, nm), len(rm) == len(nm), recorded.get("model") == now.get("model"),
            recorded.get("tools") == now.get("tools"), recorded.get("parameters") == now.get("parameters"))


def _alike(recorded: dict[str, Any], now: dict[str, Any], same: int) -> float:
    """How alike the first differing messages are (0–1)."""
    rm, nm = recorded.get("messages") or [], now.get("messages") or []
    if same >= min(len(rm), len(nm)):
        return 0.0
    # cut: ratio() is quadratic in the worst case, and a tool result may be long
    return difflib.SequenceMatcher(None, _text(rm[same])[:LIKENESS], _text(nm[same])[:LIKENESS], autojunk=False).ratio()


def nearest(recorded: Sequence[Recorded], request: dict[str, Any]) -> Any:
    """The recording whose request is nearest to ``request`` (the first of equals). Only the ``CLOSEST`` best by
    the cheap measure are compared for likeness, so a miss near a cassette of thousands of calls stays quick."""
    scored = sorted(((_score(c.request, request), i) for i, c in enumerate(recorded)), key=lambda s: (s[0], -s[1]), reverse=True)
    best, best_key = None, None
    for score, i in scored[:CLOSEST]:
        key = (score[0], _alike(recorded[i].request, request, score[0]), *score[1:], -i)
        if best_key is None or key > best_key:
            best, best_key = recorded[i], key
    return best


def excerpts(a: str, b: str, width: int = WINDOW) -> tuple[str, str]:
    """The two texts around the first character where they differ, ``…`` where cut."""
    at = _prefix(a, b)
    start = max(0, at - width)

    def cut(text: str) -> str:
        end = min(len(text), at + width)
        return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")

    return cut(a), cut(b)


def _compare(label: str, recorded: Any, now: Any) -> str:
    a, b = excerpts(_text(recorded), _text(now))
    return f"{label}: recorded {json.dumps(a, ensure_ascii=False)}, now {json.dumps(b, ensure_ascii=False)}"


def _message_difference(i: int, recorded: dict[str, Any], now: dict[str, Any]) -> str:
    keys = [k for k in FIELDS_FIRST if k in recorded or k in now] + sorted((set(recorded) | set(now)) - set(FIELDS_FIRST))
    role = now.get("role") or recorded.get("role") or "?"
    for key in keys:
        if recorded.get(key) != now.get(key):
            if key not in recorded:
                return _compare(f"message {i} ({role}) has a new '{key}'", "", now[key])
            if key not in now:
                return _compare(f"message {i} ({role}) lost its '{key}'", recorded[key], "")
            return _compare(f"message {i} ({role}) {key}", recorded[key], now[key])
    return f"message {i} ({role}) differs"


def _named(items: Any) -> dict[str, Any]:
    return {str(t.get("name", i)) if isinstance(t, dict) else str(i): t for i, t in enumerate(items or [])}


def _tools_difference(recorded: Any, now: Any) -> str:
    a, b = _named(recorded), _named(now)
    for name in b:
        if name not in a:
            return f"tool '{name}' is new"
    for name in a:
        if name not in b:
            return f"tool '{name}' is no longer offered"
    for name in a:
        if a[name] != b[name]:
            return _compare(f"tool '{name}' schema", a[name], b[name])
    return "the tools are in another order"


def first_difference(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """The first thing that differs, in the order a reader checks: model, messages, tools, parameters."""
    if recorded.get("model") != now.get("model"):
        return _compare("model", recorded.get("model"), now.get("model"))
    rm, nm = recorded.get("messages") or [], now.get("messages") or []
    for i, (a, b) in enumerate(zip(rm, nm), 1):
        if a != b:
            return _message_difference(i, a, b)
    if len(nm) > len(rm):
        extra = nm[len(rm)]
        return f"message {len(rm) + 1} ({extra.get('role', '?')}) is new: {json.dumps(excerpts(as_text(extra.get('content')), '')[0], ensure_ascii=False)}" \
            + f" (the recording has {len(rm)} messages)"
    if len(rm) > len(nm):
        return f"message {len(nm) + 1} is missing: the recording has {len(rm)} messages, the request {len(nm)}"
    if recorded.get("tools") != now.get("tools"):
        return _tools_difference(recorded.get("tools"), now.get("tools"))
    rp, np_ = recorded.get("parameters") or {}, now.get("parameters") or {}
    for key in sorted(set(rp) | set(np_)):
        if rp.get(key) != np_.get(key):
            if key not in rp:
                return f"parameter {key} is new: {_text(np_[key])}"
            if key not in np_:
                return f"parameter {key} is gone (recorded: {_text(rp[key])})"
            return _compare(f"parameter {key}", rp[key], np_[key])
    return "the request differs from every recording"
