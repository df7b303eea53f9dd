"""JSON (the full report) and JSONL (one result a line, then the summary), written as a stream of chunks."""

from __future__ import annotations

import json
import tempfile
from array import array
from json.encoder import INFINITY
from json.encoder import encode_basestring as _text  # the C encoder's, as json.dumps uses with ensure_ascii=False
from collections.abc import Callable, Iterator
from typing import Any

from agenttest.model import CaseResult, RunReport
from agenttest.util.files import WRITE_ERRORS
from agenttest.reporting.formats import register
from agenttest.reporting.codec import (IF_GIVEN, IF_SET, MAX_DEPTH, SHAPES, jsonable, metadata_dict, nonfinite, result_dict, steps,
                                     summary_dict)
from agenttest.util.text import safe_text


def dumps(value: object, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


class Spool:
    """Results written as the JSON report will hold them while the run goes on (the controller mostly waits
    for its workers then), kept in a temporary file: writing the report then copies their text instead of
    encoding 10,000 results at the end. A result the report holds as a different object (a secret learned
    later was hidden in it) is encoded again."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._end = 0
        self._at_end = True  # the file's position is its end (a seek flushes the buffer: one write per result)
        # by the result's unit index: the result (to know it is the one the report holds), its text's place
        self._results: list[CaseResult | None] = []
        self._places = array("q")  # offset, length, offset, length, …

    def add(self, result: CaseResult) -> None:
        data = _result_text(result).encode("utf-8", WRITE_ERRORS)
        if not self._at_end:
            self._file.seek(self._end)
            self._at_end = True
        self._file.write(data)
        i = result.index
        if i >= len(self._results):
            grow = i + 1 - len(self._results)
            self._results += [None] * grow
            self._places.extend([0, 0] * grow)
        self._results[i] = result
        self._places[2 * i], self._places[2 * i + 1] = self._end, len(data)
        self._end += len(data)

    def text(self, result: CaseResult) -> str:
        i = result.index
        if not 0 <= i < len(self._results) or self._results[i] is not result:
            return _result_text(result)
        self._at_end = False
        self._file.seek(self._places[2 * i])
        return self._file.read(self._places[2 * i + 1]).decode("utf-8")

    def close(self) -> None:
        self._file.close()


@register(".json")
def to_json(report: RunReport) -> Iterator[str]:
    """The same document as ``json.dumps(report_dict(report), indent=2)``, one result at a time."""
    return json_chunks(report)


def json_chunks(report: RunReport, spool: Spool | None = None) -> Iterator[str]:
    """The JSON report's text, its results taken from ``spool`` when it holds them."""
    yield "{\n"
    yield f'  "summary": {_indented(summary_dict(report))},\n'
    yield f'  "environment": {_indented(report.environment)},\n'
    yield '  "results": ['
    for i, r in enumerate(report.results):
        yield ("," if i else "") + "\n    " + (spool.text(r) if spool is not None else _result_text(r))
    yield "\n  ]" if report.results else "]"
    yield f',\n  "metadata": {_indented(metadata_dict(report))}\n}}\n'


def _result_text(result: CaseResult) -> str:
    """One result as the JSON report holds it, at its indentation in the results list: the text of
    ``_indented(result_dict(result), 4)``, written from the result's objects without making that dict
    (``_shaped``: half the controller's CPU a result was the two steps)."""
    parts: list[str] = []
    try:
        _write(result, "\n    ", parts)
    except _Other:  # a value the fast writer leaves to the standard library (_indented)
        return _indented(result_dict(result), 4)
    return "".join(parts)


def _write(value: object, newline: str, parts: list[str]) -> None:
    """``_put(encode(value), newline, parts)``: a result type by its shape, anything else made JSON-ready."""
    kind = type(value)
    writer = _WRITERS.get(kind)
    if writer is not None:
        writer(value, newline, parts)
    elif kind is tuple and value and type(value[0]) in SHAPES:  # type: ignore[index]
        inner = newline + "  "
        sep = "[" + inner
        for v in value:  # type: ignore[attr-defined]
            parts.append(sep)
            _write(v, inner, parts)
            sep = "," + inner
        parts.append(newline + "]")
    elif kind in SHAPES:
        _shaped(kind)(value, newline, parts)
    else:
        _plain(value, newline, parts, 0, ())


# a dict of text alone (a message of a case's history) as written at one indentation, by its keys and values: a suite's
# cases repeat their histories' messages, and a result writes its case's history (a third of writing a mock case's result)
_TEXTS: dict[tuple[Any, ...], str] = {}
MEMO, MEMO_TEXT = 8192, 2048


def _plain(value: Any, newline: str, parts: list[str], depth: int, path: tuple[int, ...]) -> None:
    """``_put(jsonable(value, depth, path), newline, parts)`` — what a model, a tool or a case gave — written as
    it is read: plain dicts with text keys, lists and tuples, text and numbers here; anything else (a set,
    bytes, an object, a key to make text of, nesting past MAX_DEPTH) as ``jsonable`` makes it."""
    kind = type(value)
    if kind is str:
        parts.append(_text(value if value.isascii() else safe_text(value)))
    elif kind is dict and depth < MAX_DEPTH and id(value) not in path and all(type(k) is str and k.isascii() for k in value):
        if not value:
            parts.append("{}")
            return
        try:
            key: Any = (newline, *value.items())
            written = _TEXTS.get(key)
        except TypeError:  # a value that cannot be a key (a list, a dict)
            key, written = None, None
        if written is not None:
            parts.append(written)
            return
        inner, within, depth = newline + "  ", (*path, id(value)), depth + 1
        sep = "{" + inner
        start, text_only = len(parts), True
        for k, v in value.items():
            if type(v) is str:
                parts.append(sep + _text(k) + ": " + _text(v if v.isascii() else safe_text(v)))
            else:
                text_only = False
                parts.append(sep + _text(k) + ": ")
                _plain(v, inner, parts, depth, within)
            sep = "," + inner
        parts.append(newline + "}")
        if key is not None and text_only and len(_TEXTS) < MEMO:
            written = "".join(parts[start:])
            if len(written) <= MEMO_TEXT:
                _TEXTS[key] = written
    elif (kind is list or kind is tuple) and depth < MAX_DEPTH and id(value) not in path:
        if not value:
            parts.append("[]")
            return
        inner, within, depth = newline + "  ", (*path, id(value)), depth + 1
        sep = "[" + inner
        for v in value:
            parts.append(sep)
            _plain(v, inner, parts, depth, within)
            sep = "," + inner
        parts.append(newline + "]")
    elif kind is float:
        parts.append(float.__repr__(value) if value - value == 0 else _text(nonfinite(value)))
    elif kind is int or kind is bool or value is None:
        _put(value, newline, parts)
    else:
        _put(jsonable(value, depth, path), newline, parts)


_WRITERS: dict[type, Callable[[Any, str, list[str]], None]] = {}


def _shaped(cls: type) -> Callable[[Any, str, list[str]], None]:
    """The writer of one shape (``codec.SHAPES``): its keys' text and rules as the dict encoder has them
    (``codec.steps``), each value written as it is met — no dict made, no second walk to indent it (a result
    is some 70 keys). A plain loop, as the dict encoder's (bench/RESULTS.md: a writer made with ``exec`` per
    shape wrote 10,000 results in ~170 ms of CPU, this loop in ~215 ms — under 2% of a 10,000-case run's CPU)."""
    shape = [(_text(name) + ": ", attr, derived, when, rule, put) for name, attr, derived, when, rule, put in steps(cls)]

    def write(obj: Any, newline: str, parts: list[str]) -> None:
        inner = newline + "  "
        append = parts.append
        comma = "," + inner
        first = sep = "{" + inner
        for key, attr, derived, when, rule, put in shape:  # the rule tested inline: a call per key was a third of the time
            f = obj if derived else getattr(obj, attr)
            if when:
                if when == IF_SET:
                    if not f:
                        continue
                elif when == IF_GIVEN:
                    if f is None:
                        continue
                elif not rule(obj, f):
                    continue
            if put is not None:
                append(sep + key)
                _plain(put(f), inner, parts, 0, ())
            else:
                t = type(f)
                if t is str:
                    append(sep + key + _text(f if f.isascii() else safe_text(f)))
                elif t is int:
                    append(sep + key + int.__repr__(f))
                elif f is None:
                    append(sep + key + "null")
                elif f is True:
                    append(sep + key + "true")
                elif f is False:
                    append(sep + key + "false")
                elif t is tuple and not f:
                    append(sep + key + "[]")
                else:
                    append(sep + key)
                    _write(f, inner, parts)
            sep = comma
        append("{}" if sep is first else newline + "}")

    writer = _kept(write) if cls.__name__ in KEPT else write
    _WRITERS[cls] = writer
    return writer


# the parts of a result that the controller rebuilds as one object per value (runner/local/wire._SHARED: a verdict, a
# spend, a usage, a model call): each object's text is kept, by the object, for the indentation it was written at
KEPT = {"AssertionResult", "Spend", "Usage", "ModelCall"}


def _kept(write: Callable[[Any, str, list[str]], None], most: int = 4096) -> Callable[[Any, str, list[str]], None]:
    memo: dict[int, tuple[Any, str, str]] = {}  # id → the object (so that its id is never another's), newline, text

    def write_kept(obj: Any, newline: str, parts: list[str]) -> None:
        got = memo.get(id(obj))
        if got is not None and got[0] is obj and got[1] == newline:
            parts.append(got[2])
            return
        start = len(parts)
        write(obj, newline, parts)
        if len(memo) < most:
            memo[id(obj)] = (obj, newline, "".join(parts[start:]))
    return write_kept


def _indented(value: object, level: int = 2) -> str:
    """``dumps(value, indent=2)`` with each line but the first indented by ``level`` more spaces. The
    standard library indents in pure Python through generators; this writes the JSON-ready values a
    report holds (dicts with text keys, lists, text, numbers) twice as fast, and leaves anything else to it."""
    parts: list[str] = []
    try:
        _put(value, "\n" + " " * level, parts)
    except _Other:
        return dumps(value, indent=2).replace("\n", "\n" + " " * level)
    return "".join(parts)


class _Other(Exception):
    """A value the fast writer leaves to the standard library (a key that is not text, an object)."""


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (INFINITY, -INFINITY):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _put(value: object, newline: str, parts: list[str]) -> None:
    kind = type(value)
    if kind is str:
        parts.append(_text(value))  # type: ignore[arg-type]
    elif kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        sep = "{" + inner
        for k, v in value.items():  # type: ignore[attr-defined]
            if type(k) is not str:
                raise _Other
            kinds = type(v)
            if kinds is str:
                parts.append(sep + _text(k) + ": " + _text(v))
            elif kinds is int:
                parts.append(sep + _text(k) + ": " + int.__repr__(v))
            elif v is True or v is False or v is None:
                parts.append(sep + _text(k) + (": true" if v is True else ": false" if v is False else ": null"))
            else:
                parts.append(sep + _text(k) + ": ")
                _put(v, inner, parts)
            sep = "," + inner
        parts.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for v in value:  # type: ignore[attr-defined]
            if type(v) is str:
                parts.append(sep + _text(v))
            else:
                parts.append(sep)
                _put(v, inner, parts)
            sep = "," + inner
        parts.append(newline + "]")
    elif value is None or value is True or value is False:
        parts.append("null" if value is None else "true" if value else "false")
    elif kind is int:
        parts.append(int.__repr__(value))  # type: ignore[arg-type]
    elif kind is float:
        parts.append(_float(value))  # type: ignore[arg-type]
    else:
        raise _Other


@register(".jsonl")
def to_jsonl(report: RunReport) -> Iterator[str]:
    for r in report.results:
        yield dumps(result_dict(r)) + "\n"
    yield dumps({"summary": summary_dict(report), "environment": report.environment}) + "\n"
