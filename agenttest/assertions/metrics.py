"""The ``metric`` assertion: a figure of the case's journal — calls, errors, violations, last_call_succeeded — or a
counter its tools keep, compared with ``op`` (eq, ne, lt, lte, gt, gte)."""

from __future__ import annotations

from typing import Any

from agenttest.errors import did_you_mean
from agenttest.model import AssertionResult
from agenttest.runtime.metrics import BUILT_IN, metrics
from agenttest.util.matching import OP_WORDS, OPS, compare
from agenttest.util.text import shorten
from agenttest.assertions.registry import CheckProblem, Observation, register

OP = {"enum": list(OPS), "description": "eq (the default), ne, lt, lte, gt, gte"}


def _check(params: dict[str, Any]) -> list[CheckProblem]:
    if not isinstance(params.get("metric"), str) or not params["metric"]:
        return [("metric", "a 'metric' assertion needs 'metric': the name of a figure or counter", f"built in: {', '.join(BUILT_IN)}")]
    if "value" not in params:
        return [(None, "a 'metric' assertion needs a 'value'", "e.g. {\"type\": \"metric\", \"metric\": \"violations\", \"value\": 0}")]
    return []


@register("metric", fields={"metric": {"type": "string", "description": "calls, errors, violations, last_call_succeeded or a counter"},
                            "op": OP, "value": {}}, check=_check)
def metric(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """A figure of the case's tool calls, or a counter its tools keep, compared with a value."""
    name, op, value = params["metric"], params.get("op", "eq"), params["value"]
    known = metrics(obs.trajectory, obs.counters)
    if name not in known:
        hint = did_you_mean(name, known) or f"known: {', '.join(known)}"
        return AssertionResult(type="metric", passed=False, message=f"no metric '{name}' in this case ({hint}); a tool counts one with ctx.count('{name}'), "
                               "or declares it in METRICS", expected=value, actual=None, error=True)
    holds, why = compare(known[name], op, value)
    if why:
        return AssertionResult(type="metric", passed=False, message=f"metrics.{name}: {why}", expected=value, actual=known[name], error=True)
    message = "" if holds else f"metrics.{name}: expected {OP_WORDS[op]} {shorten(value, 80)}, got {shorten(known[name], 80)}"
    return AssertionResult(type="metric", passed=holds, message=message, expected=value, actual=known[name])
