"""JSON (the full report) and JSONL (one result a line, then the summary), written as a stream of chunks."""

from __future__ import annotations

import json
from json.encoder import INFINITY
from json.encoder import encode_basestring as _text  # the C encoder's, as json.dumps uses with ensure_ascii=False
from collections.abc import Iterator

from agenttest.model import RunReport
from agenttest.reporting.formats import register
from agenttest.history.codec import metadata_dict, result_dict, summary_dict


def dumps(value: object, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


@register(".json")
def to_json(report: RunReport) -> Iterator[str]:
    """The same document as ``json.dumps(report_dict(report), indent=2)``, one result at a time."""
    yield "{\n"
    yield f'  "summary": {_indented(summary_dict(report))},\n'
    yield f'  "environment": {_indented(report.environment)},\n'
    yield '  "results": ['
    for i, r in enumerate(report.results):
        yield ("," if i else "") + "\n    " + _indented(result_dict(r), 4)
    yield "\n  ]" if report.results else "]"
    yield f',\n  "metadata": {_indented(metadata_dict(report))}\n}}\n'


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
