"""What user code (a tool) returns, as the JSON the model is sent and the report keeps — or the tool call's
error when it has no JSON form; and what user code is handed of a case (``fresh``)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import os
from typing import Any

from agenttest.errors import CallError
from agenttest.util.text import safe_text, shorten


MAX_RESULT_DEPTH = 100  # a tool result nested deeper is refused (the model could not use it anyway)
_TEXT_FORMS = {("decimal", "Decimal"), ("uuid", "UUID")}  # by name: their modules need not be imported for this


def fresh(value: Any) -> Any:
    """A copy of a case's data (dicts, lists and tuples, to any depth; the rest as it is) for user code to
    change at will: the loader holds a message or an assertion written alike in many cases as one object
    (``inputs.reading._shared``), so what a hook edits must be its own."""
    kind = type(value)
    if kind is dict:
        return {k: fresh(v) for k, v in value.items()}
    if kind is list:
        return [fresh(v) for v in value]
    if kind is tuple:
        return tuple(fresh(v) for v in value)
    return value


def sendable(value: Any, what: str, use: str = "sent to the model") -> Any:
    """``value`` — what user code (a tool) returned — as the JSON the model is sent and the report keeps:
    tuples and sets become lists, bytes text, dates ISO text, dataclasses objects. A circular structure or
    an object with no JSON form is a CallError naming ``what`` and what the value is for (``use``: sent to the
    model, the case's output), never a silent ``str()``."""
    return _sendable(value, what, use, (), 0)


def _sendable(value: Any, what: str, use: str, path: tuple[int, ...], depth: int) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if (type(value).__module__, type(value).__name__) in _TEXT_FORMS:
        return str(value)
    if isinstance(value, os.PathLike):
        return _sendable(os.fspath(value), what, use, path, depth)
    if isinstance(value, enum.Enum):
        return _sendable(value.value, what, use, path, depth)
    if depth > MAX_RESULT_DEPTH:
        raise CallError(f"{what} returned a value nested more than {MAX_RESULT_DEPTH} levels deep")
    if id(value) in path:
        raise CallError(f"{what} returned a circular structure (a {type(value).__name__} that contains itself), "
                        f"which cannot be {use}")
    inner = (*path, id(value))
    if isinstance(value, dict):
        return {_key(k, what): _sendable(v, what, use, inner, depth + 1) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [_sendable(v, what, use, inner, depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))  # a set has no order: give it one
    if isinstance(value, (list, tuple)):
        return [_sendable(v, what, use, inner, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _sendable(getattr(value, f.name), what, use, inner, depth + 1) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):  # a pydantic model
        return _sendable(value.model_dump(), what, use, inner, depth + 1)
    kind = type(value)
    raise CallError(f"{what} returned a {kind.__module__}.{kind.__qualname__} object, which has no JSON form and cannot be "
                    f"{use} (return dicts, lists, strings and numbers)")


def _key(key: Any, what: str) -> str:
    if isinstance(key, str):
        return safe_text(key)
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)  # as json.dumps writes such keys: 1 → "1", True → "true"
    raise CallError(f"{what} returned a dict with a {type(key).__name__} key ({shorten(repr(key), 60)}); JSON keys are strings")
