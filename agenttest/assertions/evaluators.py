"""Custom evaluators (seed format A's): a Python function of the app's ``scripts/`` that judges what a check
cannot — it receives the observation and the recorded history of the conversation (a suite's: its summary,
status and cases) and returns a verdict."""

from __future__ import annotations

from typing import Any

from agenttest.runtime import usercalls
from agenttest.errors import CallError
from agenttest.model import AssertionResult
from agenttest.util.values import fresh
from agenttest.assertions.registry import CheckProblem, Need, Observation, register
from agenttest.assertions.script import script_ref, verdict_of


def _check(params: dict[str, Any]) -> list[CheckProblem]:
    if script_ref({"use": params.get("use")}) is None:
        return [("use", "an 'evaluator' needs \"use\": \"scripts.<module>.<function>\"", "e.g. \"scripts.history.selected_product\"")]
    return []


def _needs(params: dict[str, Any]) -> list[Need]:
    return [Need("script", script_ref({"use": params.get("use")}) or "", "use")]


def subject(params: dict[str, Any], obs: Observation) -> dict[str, Any]:
    """What the function receives: the observation, the history and its params — or a suite's summary, status and
    cases (with an empty history)."""
    if obs.suite is not None:
        return {**obs.suite, "history": [], "params": fresh(params.get("params") or {})}
    case = obs.case
    about = {"id": case.id, "name": case.name, "metadata": fresh(case.metadata), "tags": list(case.tags),
             "variants": list(case.variants)} if case is not None else {}
    return {"observation": fresh(obs.observed), "history": fresh(list(obs.history)), "params": fresh(params.get("params") or {}),
            "case": about, "turn": fresh(obs.current)}


@register("evaluator", fields={"use": {"type": "string"}, "params": {"type": "object"}}, check=_check, needs=_needs)
async def evaluator(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """A function of the app's scripts/ judges the observation with the conversation's history."""
    ref = script_ref({"use": params["use"]}) or ""
    if obs.judge is None:
        return AssertionResult(type="evaluator", passed=False, message="no caller to load the evaluator", error=True)
    fn = obs.judge.script(ref)
    try:
        returned = await usercalls.call(fn, subject(params, obs), what=f"evaluator {ref}")
    except CallError as exc:
        return AssertionResult(type="evaluator", passed=False, message=str(exc).replace(f"evaluator {ref} failed: ", f"evaluator {ref} raised ", 1),
                               error=True, traceback=exc.traceback or "")
    try:
        passed, message = verdict_of(returned)
    except ValueError as exc:
        return AssertionResult(type="evaluator", passed=False, message=f"evaluator {ref} {exc}", error=True)
    return AssertionResult(type="evaluator", passed=passed, message="" if passed else f"evaluator {ref}: {message or 'returned false'}", actual=message or None)
