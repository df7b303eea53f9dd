"""Text: JSON found inside model output, any value as text, one-line shortening, text made safe where it
enters a run (lone surrogates) and where it is shown (control characters, right-to-left overrides)."""

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
    for start, end in _spans(text):
        value = _loads(text[start:end])
        if value is not _MISSING:
            return True, value
    return False, None


def json_documents(text: str) -> list[Any]:
    """Every JSON document ``text`` holds, as ``find_json`` would look for them — the whole text, else each
    fenced block, else each outermost object or array in prose that parses — equal ones once. More than one
    means it is unclear which is meant."""
    stripped = text.strip()
    if not stripped:
        return []
    value = _loads(stripped)
    if value is not _MISSING:
        return [value]
    found = [v for v in (_loads(block.strip()) for block in _FENCE.findall(text)) if v is not _MISSING]
    if not found:
        taken: list[tuple[int, int]] = []
        for start, end in _spans(text):  # outermost first: a span inside one taken is part of it
            if any(s <= start and end <= e for s, e in taken):
                continue
            value = _loads(text[start:end])
            if value is not _MISSING:
                taken.append((start, end))
                found.append(value)
    distinct: list[Any] = []
    for value in found:
        if value not in distinct:
            distinct.append(value)
    return distinct


def _spans(text: str, depth_limit: int = 3) -> list[tuple[int, int]]:
    """Balanced ``{…}``/``[…]`` spans in prose, outermost first, then (down to ``depth_limit`` levels) the
    ones nested in them, each level in order: parsing them all reads each character at most
    ``depth_limit`` times, so finding JSON in a long reply is linear, never quadratic. Brackets inside
    JSON strings do not count; brackets never closed do not make a level."""
    closed: list[tuple[int, int]] = []
    stack: list[int] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"' and stack:  # strings only count inside a candidate: quotes in prose do not
            in_string = True
        elif ch in "{[":
            stack.append(i)
        elif ch in "}]" and stack:
            start = stack.pop()
            if (text[start] == "{") == (ch == "}"):
                closed.append((start, i + 1))
            else:
                stack.clear()  # mismatched: not JSON around here; start afresh
    closed.sort()
    levels: list[list[tuple[int, int]]] = [[] for _ in range(depth_limit)]
    enclosing: list[int] = []  # ends of the spans that contain the current one
    for start, end in closed:
        while enclosing and enclosing[-1] <= start:
            enclosing.pop()
        if len(enclosing) < depth_limit:
            levels[len(enclosing)].append((start, end))
        enclosing.append(end)
    return [span for level in levels for span in level]


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
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


_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
# Bidirectional overrides and isolates (and the marks) reorder what follows them on screen: an id could show
# "passed" spelt backwards over "failed". They are shown as their code, like control characters.
BIDI = {c: f"\\u{c:04x}" for c in [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
_CONTROLS.update(BIDI)
_CONTROLS_ONE_LINE = {**_CONTROLS, 0x0A: "\\n"}


def printable(text: str, newlines: bool = False) -> str:
    """``text`` safe for a terminal: escape sequences, other control characters and right-to-left overrides
    are shown escaped (``\\x1b[2K``, ``\\u202e``), never obeyed. Newlines are kept only when ``newlines``."""
    return text.translate(_CONTROLS if newlines else _CONTROLS_ONE_LINE)


def safe_text(text: str) -> str:
    """``text`` that can always be encoded: a surrogate pair written as two code points is joined, a lone
    surrogate (a string cut mid-emoji) becomes U+FFFD. Almost every string takes the fast path."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_SURROGATE = re.compile("[\ud800-\udfff]")


def cleaned(value: Any) -> Any:
    """``value`` (parsed JSON: dicts, lists, strings) with every string made safe by ``safe_text``, keys included.
    Containers are changed in place, without recursion (a value nested as deep as the parser allows is fine)."""
    if isinstance(value, str):
        return safe_text(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(isinstance(k, str) and _SURROGATE.search(k) for k in item):  # rebuilt, keeping the order
                renamed = {safe_text(k) if isinstance(k, str) else k: v for k, v in item.items()}
                item.clear()
                item.update(renamed)
            pairs: Any = item.items()
        elif isinstance(item, list):
            pairs = enumerate(item)
        else:
            continue
        for key, v in list(pairs):
            if isinstance(v, str):
                if _SURROGATE.search(v):
                    item[key] = safe_text(v)
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return value


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def escapes_surrogates(text: str) -> bool:
    """Whether JSON or YAML ``text`` may spell a surrogate as an escape (``"\\ud83d"``): parsed, it needs ``cleaned``."""
    return _ESCAPED_SURROGATE.search(text) is not None


def loads(text: str) -> Any:
    """``json.loads``, with lone surrogates that the text spells as escapes (``"\\ud83d"``) made safe."""
    value = json.loads(text)
    return cleaned(value) if escapes_surrogates(text) else value


def plural(count: int, word: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{count} {word}" if count == 1 else f"{count:,} {word}s"


def written(value: Any) -> str:
    """A value in a message as a case file writes it: 'robot' for text; true, 7, null — not Python's True, None."""
    return repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)[:80]
