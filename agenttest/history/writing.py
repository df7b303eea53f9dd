"""Results and reports as plain JSON-ready records (FORMATS §6): one shape shared by every report format,
the hooks that receive results (After, AfterAll) and the event stream."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agenttest.verdicts import costs
from agenttest.verdicts import gates
from agenttest.model import (AssertionResult, CaseResult, CheckpointResult, EndpointLoad, Gate, ModelCall, RunReport, Spend, Turn, Usage,
                    WorldChange, WorldRecord)
from agenttest.util.text import as_text, shorten


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
    if t.attachments:
        out["attachments"] = list(t.attachments)
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


def change_dict(c: WorldChange) -> dict[str, Any]:
    out: dict[str, Any] = {"path": c.path, "op": c.op}
    if c.op != "added":
        out["before"] = c.before
    if c.op != "removed":
        out["after"] = c.after
    return out


def world_dict(w: WorldRecord) -> dict[str, Any]:
    return {"initial": w.initial, "final": w.final, "changes": [change_dict(c) for c in w.changes]}


def change_text(c: WorldChange, limit: int = 80) -> str:
    """One change on one line: ``+ $.expenses[1] = {…}``, ``- $.draft (was …)``, ``~ $.budget: 100 → 40``."""
    if c.op == "added":
        return f"+ {c.path} = {shorten(c.after, limit)}"
    if c.op == "removed":
        return f"- {c.path} (was {shorten(c.before, limit)})"
    return f"~ {c.path}: {shorten(c.before, limit)} → {shorten(c.after, limit)}"


def result_dict(r: CaseResult) -> dict[str, Any]:
    out: dict[str, Any] = {"id": r.id}
    if r.name:
        out["name"] = r.name
    if r.description:
        out["description"] = r.description
    if r.tags:
        out["tags"] = list(r.tags)
    out.update(status=r.status, input=r.input, output=r.output, duration_ms=round(r.duration_ms, 1))
    if r.status == "skipped":
        if r.skip_reason:
            out["skip_reason"] = r.skip_reason
    elif r.status != "passed":  # every result that did not pass says why (FORMATS §6)
        out["error"] = r.reasons[0]
        out["assertion_errors"] = r.assertion_errors
    out["run"] = r.run
    out["assertions"] = [assertion_dict(a) for a in r.assertions]
    out["tool_calls"] = [c.as_dict() for c in r.tool_calls]
    out["usage"] = r.usage.as_dict()
    if r.simulator:
        out["simulator"] = dict(r.simulator)
    if r.dynamic:
        out["turns"] = [turn_dict(t) for t in r.turns]
        out["checkpoints"] = [checkpoint_dict(c) for c in r.checkpoints]
        out["total_turns"] = len(r.turns)
    if r.world is not None:
        out["world"] = world_dict(r.world)
    if r.warnings:
        out["warnings"] = list(r.warnings)
    if r.logs:
        out["logs"] = list(r.logs)
    if r.file:
        out["file"] = r.file
        if r.line:
            out["line"] = r.line
    if r.connector:
        out["connector"] = r.connector
    if r.spend:
        out["spend"] = [spend_dict(s) for s in r.spend]
        cost = costs.total(r.spend)
        if cost is not None:
            out["cost"] = round(cost, 8)
    for key in ("stdout", "stderr", "traceback"):
        if getattr(r, key):
            out[key] = getattr(r, key)
    if r.model_calls:
        out["model_calls"] = [model_call_dict(c) for c in r.model_calls]
    return out


def spend_dict(s: Spend) -> dict[str, Any]:
    out: dict[str, Any] = {"role": s.role, "connector": s.connector, "calls": s.calls, "usage": s.usage.as_dict()}
    if s.cost is not None:
        out["cost"] = round(s.cost, 8)
    return out


def gate_dict(g: Gate) -> dict[str, Any]:
    """One case's (× connector's) gate and the figures behind it."""
    out: dict[str, Any] = {"id": g.id, "connector": g.connector}
    if g.file:
        out["file"] = g.file
    out.update(verdict=g.verdict, runs=g.runs, planned=g.planned, passed=g.passed, pass_rate=round(g.pass_rate, 4),
               min_pass_rate=g.min_pass_rate, pass_hat_k=g.pass_hat_k, pass_at_k=g.pass_at_k, flaky=g.flaky,
               classification=gates.classify(100 * g.pass_rate) if g.runs else None)
    if g.saved:
        out["saved"] = g.saved
    if g.skipped:
        out["skipped"] = g.skipped
    out["duration"] = {"median_ms": g.median_ms, "mean_ms": g.mean_ms, "min_ms": g.min_ms, "max_ms": g.max_ms, "std_ms": g.std_ms}
    out["tokens"] = g.tokens
    if g.cost is not None:
        out["cost"] = round(g.cost, 8)
    if g.total_cost is not None:
        out["total_cost"] = round(g.total_cost, 8)
    return out


def _spent(usage: Usage, cost: float | None) -> dict[str, Any]:
    return {"usage": usage.as_dict(), **({"cost": round(cost, 8)} if cost is not None else {})}


def cost_dict(report: RunReport) -> dict[str, Any] | None:
    """Tokens and cost by role and by connector, and in total; None when no model was called."""
    t = costs.totals(report.results, report.generation)
    if not t.any:
        return None
    out: dict[str, Any] = {"total": round(t.cost, 8) if t.cost is not None else None,
                           "by_role": {role: _spent(*v) for role, v in t.by_role.items()},
                           "by_connector": {conn: _spent(*v) for conn, v in t.by_connector.items()}}
    if t.unpriced_tokens:
        out["unpriced_tokens"] = t.unpriced_tokens
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
        out["stability"] = [{k: v for k, v in asdict(s).items() if k != "connector" or report.matrix} for s in report.stability]
        out["stable_cases"] = sum(1 for s in report.stability if s.classification == "stable")
        total_runs = sum(s.runs for s in report.stability)
        out["overall_pass_rate"] = round(100.0 * sum(s.passed for s in report.stability) / total_runs, 1) if total_runs else 100.0
    if gates.shown(report.gates, report.matrix):
        out["cases"] = len(report.gates)
        out["gates_passed"] = sum(1 for g in report.gates if g.verdict == "passed")
        out["gates_failed"] = len(gates.failed(report.gates))
        out["gates"] = [gate_dict(g) for g in report.gates]
    if report.matrix:
        out["matrix"] = list(report.matrix)
    saved = gates.runs_saved(report.gates)
    if saved:
        out["runs_saved"] = saved
    spent = cost_dict(report)
    if spent is not None:
        out["costs"] = spent
    if report.generation:
        out["generation"] = [spend_dict(s) for s in report.generation]
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
    from agenttest.version import __version__

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
    """An input for a one-line preview: the last user message, its attachments as ``+ [name]``."""
    from agenttest.model.messages import last_user_content, normalize

    if isinstance(value, (str, dict, list)) and value:
        try:
            text, names = last_user_content(normalize(value))
        except (AttributeError, TypeError):
            return as_text(value)
        return " + ".join([text, *(f"[{n}]" for n in names)] if text else [f"[{n}]" for n in names])
    return ""


def row_input(r: CaseResult) -> str:
    """The input preview of a result: the last user message, or a dynamic case's first turn."""
    return preview(r.input) or (as_text(r.turns[0].input) if r.turns else "") or r.name
