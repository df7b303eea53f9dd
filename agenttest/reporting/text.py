"""JSON (the full report) and JSONL (one result a line, then the summary)."""

from __future__ import annotations

import json

from ..model import RunReport
from . import register
from .data import report_dict, result_dict, summary_dict


def dumps(value: object, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


@register(".json")
def to_json(report: RunReport) -> str:
    return dumps(report_dict(report), indent=2) + "\n"


@register(".jsonl")
def to_jsonl(report: RunReport) -> str:
    lines = [dumps(result_dict(r)) for r in report.results]
    lines.append(dumps({"summary": summary_dict(report), "environment": report.environment}))
    return "\n".join(lines) + "\n"
