"""JSON reports read back into a RunReport (the inverse of ``records``), for ``diff``, ``merge`` and
``--baseline``. Fields a report does not have take their defaults; a file that is not a report is a
usage error at its place."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from agenttest.errors import AgentTestError, Location
from agenttest.model import (AssertionResult, CaseResult, CheckpointResult, EndpointLoad, Gate, ModelCall, RunReport, Spend, Stability,
                    ToolCall, Turn, Usage, WorldChange, WorldRecord)
from agenttest.util.positions import json_offset, line_col

STATUSES = ("passed", "failed", "error", "timeout", "skipped")
HINT = "give a JSON report written by agent-test (-o report.json, or the default output-<timestamp>.json)"


class _Bad(Exception):
    def __init__(self, message: str, path: Sequence[Any]):
        super().__init__(message)
        self.path = path


def read(path: str) -> RunReport:
    """The report in ``path``; a missing, unreadable or malformed file is an AgentTestError."""
    if not os.path.isfile(path):
        raise AgentTestError(f"{path}: no such report file", hint=HINT)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentTestError(f"{path}: cannot be read: {exc}", hint=HINT) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        raise AgentTestError(f"not valid JSON: {getattr(exc, 'msg', exc)}", Location(path, line, col), HINT) from None
    try:
        return report_of(data)
    except _Bad as exc:
        line, col = line_col(text, json_offset(text, exc.path))
        raise AgentTestError(f"not an agent-test report: {exc}", Location(path, line, col), HINT) from None


def _need(value: Any, kind: type | tuple[type, ...], what: str, path: Sequence[Any]) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind in (int, float, (int, float)):
        raise _Bad(f"{what} is missing or not {getattr(kind, '__name__', 'a number')}", path)
    return value


def report_of(data: Any) -> RunReport:
    """A report's JSON document → RunReport (raises _Bad with the JSON path of the problem)."""
    _need(data, dict, "the report", [])
    results = _need(data.get("results"), list, "'results'", ["results"])
    summary = data.get("summary") if isinstance(data.get("summary"), dict) else {}
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    stability = tuple(_stability(s) for s in summary.get("stability") or () if isinstance(s, dict))
    return RunReport(
        results=tuple(result_of(r, i) for i, r in enumerate(results)),
        started_at=str(meta.get("started_at", "")), completed_at=str(meta.get("completed_at", "")),
        duration_ms=float(summary.get("duration_ms") or 0), agent_id=str(summary.get("agent_id", "")),
        agent_path=str(summary.get("agent_path", "")), connector=str(summary.get("connector", "")),
        simulator=str(summary.get("simulator", "")), input_source=str(meta.get("input_file", "")),
        output_file=str(meta.get("output_file", "")),
        environment=dict(data.get("environment") or {}), options=dict(meta.get("options") or {}), stability=stability,
        interrupted=bool(summary.get("interrupted")), stopped_early=bool(summary.get("stopped_early")),
        not_run=int(summary.get("not_run") or 0), warnings=tuple(str(w) for w in meta.get("warnings") or ()),
        gates=tuple(_gate(g) for g in summary.get("gates") or () if isinstance(g, dict)),
        matrix=tuple(str(c) for c in summary.get("matrix") or ()), generation=tuple(_spend(s) for s in summary.get("generation") or () if isinstance(s, dict)),
        load=_load(summary.get("load")),
    )


def result_of(d: Any, index: int) -> CaseResult:
    where = ["results", index]
    _need(d, dict, f"result {index + 1}", where)
    case_id = _need(d.get("id"), str, "'id'", [*where, "id"])
    if d.get("status") not in STATUSES:
        raise _Bad(f"'status' must be one of {', '.join(STATUSES)}, not {d.get('status')!r}", [*where, "status"])
    return CaseResult(
        id=case_id, status=d["status"], name=str(d.get("name", "")), input=d.get("input"), output=d.get("output"),
        duration_ms=float(d.get("duration_ms") or 0), error=str(d.get("error", "")) if d["status"] != "skipped" else "",
        skip_reason=str(d.get("skip_reason") or (d.get("error", "") if d["status"] == "skipped" else "")),
        assertions=tuple(_assertion(a) for a in d.get("assertions") or () if isinstance(a, dict)),
        tool_calls=tuple(_tool_call(c) for c in d.get("tool_calls") or () if isinstance(c, dict)),
        usage=_usage(d.get("usage")), turns=tuple(_turn(t) for t in d.get("turns") or () if isinstance(t, dict)),
        checkpoints=tuple(_checkpoint(c) for c in d.get("checkpoints") or () if isinstance(c, dict)),
        dynamic="turns" in d or "checkpoints" in d, run=int(d.get("run") or 1),
        warnings=tuple(str(w) for w in d.get("warnings") or ()), logs=tuple(str(x) for x in d.get("logs") or ()),
        index=index, file=str(d.get("file", "")), line=int(d.get("line") or 0), traceback=str(d.get("traceback", "")),
        stdout=str(d.get("stdout", "")), stderr=str(d.get("stderr", "")), world=_world(d.get("world")),
        description=str(d.get("description", "")), tags=tuple(str(t) for t in d.get("tags") or ()),
        connector=str(d.get("connector", "")), spend=tuple(_spend(s) for s in d.get("spend") or () if isinstance(s, dict)),
        model_calls=tuple(ModelCall(str(c.get("role", "")), str(c.get("connector", "")), str(c.get("model", "")),
                                    float(c.get("duration_ms") or 0)) for c in d.get("model_calls") or () if isinstance(c, dict)),
        simulator=d["simulator"] if isinstance(d.get("simulator"), dict) else None,
    )


def _assertion(d: dict[str, Any]) -> AssertionResult:
    score = d.get("score")
    return AssertionResult(str(d.get("type", "")), bool(d.get("passed")), str(d.get("message", "")), d.get("expected"),
                           d.get("actual"), float(score) if isinstance(score, (int, float)) else None,
                           d.get("details") if isinstance(d.get("details"), dict) else None, bool(d.get("error")))


def _tool_call(d: dict[str, Any]) -> ToolCall:
    error = d.get("error")
    return ToolCall(str(d.get("name", "")), d.get("arguments"), str(d.get("id", "")), d.get("result"),
                    str(error) if error is not None else None, float(d.get("duration_ms") or 0), d.get("server"),
                    bool(d.get("mocked")), d.get("fault"))


def _usage(d: Any) -> Usage:
    d = d if isinstance(d, dict) else {}
    return Usage(int(d.get("prompt_tokens") or 0), int(d.get("completion_tokens") or 0), int(d.get("total_tokens") or 0),
                 int(d.get("cached_tokens") or 0))


def _cost(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _spend(d: dict[str, Any]) -> Spend:
    return Spend(str(d.get("role", "")), str(d.get("connector", "")), _usage(d.get("usage")), int(d.get("calls") or 0), _cost(d.get("cost")))


def _load(d: Any) -> tuple[EndpointLoad, ...]:
    connectors = d.get("connectors") if isinstance(d, dict) else None
    if not isinstance(connectors, dict):
        return ()
    names = {f for f in EndpointLoad.__dataclass_fields__ if f != "connector"}
    return tuple(EndpointLoad(str(name), **{k: v for k, v in e.items() if k in names}) for name, e in connectors.items() if isinstance(e, dict))


def _gate(d: dict[str, Any]) -> Gate:
    raw = d.get("duration")
    duration: dict[str, Any] = raw if isinstance(raw, dict) else {}

    def ms(key: str) -> float:
        return float(duration.get(key) or 0)

    return Gate(str(d.get("id", "")), str(d.get("connector", "")), str(d.get("file", "")), int(d.get("planned") or 0),
                int(d.get("runs") or 0), int(d.get("passed") or 0), float(d.get("min_pass_rate", 1.0)), int(d.get("skipped") or 0),
                int(d.get("saved") or 0), ms("mean_ms"), ms("median_ms"), ms("min_ms"), ms("max_ms"), ms("std_ms"),
                int(d.get("tokens") or 0), _cost(d.get("cost")), _cost(d.get("total_cost")))


def _turn(d: dict[str, Any]) -> Turn:
    return Turn(int(d.get("turn") or 0), d.get("input"), d.get("output"),
                tuple(_tool_call(c) for c in d.get("tool_calls") or () if isinstance(c, dict)),
                tuple(str(c) for c in d.get("checkpoints") or ()), float(d.get("duration_ms") or 0), str(d.get("simulator_reasoning", "")),
                tuple(str(a) for a in d.get("attachments") or ()))


def _checkpoint(d: dict[str, Any]) -> CheckpointResult:
    verdict = d.get("verdict")
    return CheckpointResult(str(d.get("id", "")), bool(d.get("reached")), bool(d.get("required", True)), d.get("reached_at_turn"),
                            str(d.get("description", "")), str(d.get("message", "")), d.get("tool"),
                            _assertion(verdict) if isinstance(verdict, dict) else None)


def _world(d: Any) -> WorldRecord | None:
    if not isinstance(d, dict):
        return None
    changes = tuple(WorldChange(str(c.get("path", "")), c.get("op", "changed"), c.get("before"), c.get("after"))
                    for c in d.get("changes") or () if isinstance(c, dict))
    return WorldRecord(d.get("initial"), d.get("final"), changes)


def _stability(d: dict[str, Any]) -> Stability:
    def num(key: str) -> float:
        return float(d.get(key) or 0)

    return Stability(str(d.get("id", "")), int(d.get("runs") or 0), int(d.get("passed") or 0), num("pass_rate"), num("avg_ms"),
                     num("min_ms"), num("max_ms"), num("std_ms"), str(d.get("classification", "")), str(d.get("connector", "")))
