"""Results and reports as plain JSON-ready records (FORMATS §6): one shape shared by every report format,
the hooks that receive results (After, AfterAll) and the event stream."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .model import AssertionResult, CaseResult, CheckpointResult, EndpointLoad, ModelCall, RunReport, Turn
from .texts import as_text


def assertion_dict(a: AssertionResult) -> dict[str, Any]:
    out: dict[str, Any] = {"type": a.type, "passed": a.passed}
    if a.message:
        out["message"] = a.message
    if a.expected is not None:
        out["expected"] = a.expected
    if a.actual is not None:
        out["actual"] = a.actual
    if a.score is not None:
        out["score"] = a.score
    if a.details:
        out["details"] = a.details
    if a.error:
        out["error"] = True
    return out


def turn_dict(t: Turn) -> dict[str, Any]:
    out = {
        "turn": t.turn,
        "input": t.input,
        "output": t.output,
        "tool_calls": [c.as_dict() for c in t.tool_calls],
        "checkpoints": list(t.checkpoints),
        "duration_ms": round(t.duration_ms, 1),
    }
    if t.simulator_reasoning:
        out["simulator_reasoning"] = t.simulator_reasoning
    return out


def checkpoint_dict(c: CheckpointResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": c.id,
        "reached": c.reached,
        "reached_at_turn": c.reached_at_turn,
        "required": c.required,
        "passed": c.passed,
    }
    if c.description:
        out["description"] = c.description
    if c.message:
        out["message"] = c.message
    if c.tool:
        out["tool"] = c.tool
    if c.verdict is not None:
        out["verdict"] = assertion_dict(c.verdict)
    return out


def result_dict(r: CaseResult) -> dict[str, Any]:
    out: dict[str, Any] = {"id": r.id}
    if r.name:
        out["name"] = r.name
    out.update(status=r.status, input=r.input, output=r.output, duration_ms=round(r.duration_ms, 1))
    if r.error:
        out["error"] = r.error
    out["run"] = r.run
    out["assertions"] = [assertion_dict(a) for a in r.assertions]
    out["tool_calls"] = [c.as_dict() for c in r.tool_calls]
    out["usage"] = r.usage.as_dict()
    if r.dynamic:
        out["turns"] = [turn_dict(t) for t in r.turns]
        out["checkpoints"] = [checkpoint_dict(c) for c in r.checkpoints]
        out["total_turns"] = len(r.turns)
    if r.warnings:
        out["warnings"] = list(r.warnings)
    if r.logs:
        out["logs"] = list(r.logs)
    if r.file:
        out["file"] = r.file
    for key in ("stdout", "stderr", "traceback"):
        if getattr(r, key):
            out[key] = getattr(r, key)
    if r.model_calls:
        out["model_calls"] = [model_call_dict(c) for c in r.model_calls]
    return out


def model_call_dict(c: ModelCall) -> dict[str, Any]:
    out: dict[str, Any] = {"role": c.role, "connector": c.connector}
    if c.model:
        out["model"] = c.model
    out["duration_ms"] = round(c.duration_ms, 1)
    return out


def load_dict(load: tuple[EndpointLoad, ...]) -> dict[str, Any]:
    """How the endpoints held up (FORMATS §13): totals, then per connector."""
    return {
        "rate_limited": sum(e.rate_limited for e in load),
        "absorbed": sum(e.absorbed for e in load),
        "retries": sum(e.retries for e in load),
        "connectors": {e.connector: {k: v for k, v in asdict(e).items() if k != "connector"} for e in load},
    }


def summary_dict(report: RunReport) -> dict[str, Any]:
    s = report.summary
    out: dict[str, Any] = {
        "total": s.total,
        "passed": s.passed,
        "failed": s.failed,
        "skipped": s.skipped,
        "errors": s.errors,
        "timeouts": s.timeouts,
        "duration_ms": round(report.duration_ms, 1),
        "agent_id": report.agent_id,
        "agent_path": report.agent_path,
        "connector": report.connector,
    }
    if report.simulator:
        out["simulator"] = report.simulator
    out["usage"] = s.usage.as_dict()
    out["pass_rate"] = s.pass_rate
    if report.stability:
        runs = report.options.get("runs", 1)
        out["runs"] = runs
        out["stability"] = [asdict(s) for s in report.stability]
        out["stable_cases"] = sum(1 for s in report.stability if s.classification == "stable")
        total_runs = sum(s.runs for s in report.stability)
        out["overall_pass_rate"] = round(100.0 * sum(s.passed for s in report.stability) / total_runs, 1) if total_runs else 100.0
    if report.interrupted:
        out["interrupted"] = True
    if report.stopped_early:
        out["stopped_early"] = True
    if report.not_run:
        out["not_run"] = report.not_run
    if report.load:
        out["load"] = load_dict(report.load)
    return out


def metadata_dict(report: RunReport) -> dict[str, Any]:
    from .version import __version__

    return {
        "started_at": report.started_at,
        "completed_at": report.completed_at,
        "input_file": report.input_source,
        "output_file": report.output_file,
        "version": __version__,
        "options": report.options,
        **({"warnings": list(report.warnings)} if report.warnings else {}),
    }


def report_dict(report: RunReport) -> dict[str, Any]:
    return {
        "summary": summary_dict(report),
        "environment": report.environment,
        "results": [result_dict(r) for r in report.results],
        "metadata": metadata_dict(report),
    }


def preview(value: object) -> str:
    """The text of an input for a one-line preview: the last user message."""
    from .messages import last_user_text, normalize

    if isinstance(value, (str, dict, list)) and value:
        try:
            return last_user_text(normalize(value))
        except (AttributeError, TypeError):
            return as_text(value)
    return ""


def row_input(r: CaseResult) -> str:
    """The input preview of a result: the last user message, or a dynamic case's first turn."""
    return preview(r.input) or (as_text(r.turns[0].input) if r.turns else "") or r.name
