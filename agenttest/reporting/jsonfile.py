"""JSON (the full report) and JSONL (one result a line, then the summary), written as a stream of chunks."""

from __future__ import annotations

import json
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
    return dumps(value, indent=2).replace("\n", "\n" + " " * level)


@register(".jsonl")
def to_jsonl(report: RunReport) -> Iterator[str]:
    for r in report.results:
        yield dumps(result_dict(r)) + "\n"
    yield dumps({"summary": summary_dict(report), "environment": report.environment}) + "\n"
