"""JSON (the full report) and JSONL (one result a line, then the summary), written as a stream of chunks."""

from __future__ import annotations

import json
import tempfile
from array import array
from json.encoder import INFINITY
from json.encoder import encode_basestring as _text  # the C encoder's, as json.dumps uses with ensure_ascii=False
from collections.abc import Iterator

from agenttest.model import CaseResult, RunReport
from agenttest.util.files import WRITE_ERRORS
from agenttest.reporting.formats import register
from agenttest.history.codec import metadata_dict, result_dict, summary_dict


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
        # by the result's unit index: the result (to know it is the one the report holds), its text's place
        self._results: list[CaseResult | None] = []
        self._places = array("q")  # offset, length, offset, length, …

    def add(self, result: CaseResult) -> None:
        data = _result_text(result).encode("utf-8", WRITE_ERRORS)
        self._file.seek(self._end)
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
    """One result as the JSON report holds it, at its indentation in the results list."""
    return _indented(result_dict(result), 4)


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
