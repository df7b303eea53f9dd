"""The ``cel`` and ``collateral`` assertions (FORMATS §18), usable in any case: a CEL expression over the world the
agent left, what it changed (``diff``) and the journal of its tool calls; and an allowlist of the collections
the agent may change — any change elsewhere fails, naming where."""

from __future__ import annotations

from typing import Any

from agenttest.assertions.registry import CheckProblem, Observation, register
from agenttest.model import AssertionResult, Case
from agenttest.runtime import cel
from agenttest.runtime.journal import changed_collections, context
from agenttest.util.text import shorten

EXPR = {"type": "string", "description": "a CEL expression over world, diff and journal that must be true"}
ALLOW = {"type": "array", "items": {"type": "string"},
         "description": "the collections the agent may change, dotted (shop.orders); a change anywhere else fails"}


def _check_cel(params: dict[str, Any]) -> list[CheckProblem]:
    expr = params.get("expr")
    if not isinstance(expr, str):
        return [("expr", "'cel' needs 'expr', a CEL expression", "e.g. {type: cel, expr: 'journal.count(\"send_email\") == 1'}")]
    return [("expr", f"{p.message} (at {p.line}:{p.column} of the expression)", p.hint) for p in cel.check(expr)]


def names(case: Case | None) -> Any:
    """How the journal names a called tool: a scenario's dotted name (``email__send`` → ``email.send``)."""
    scenario = case.scenario if case is not None else None
    if scenario is None:
        return str
    return lambda name: (tool.name if (tool := scenario.tool(name)) is not None else name)


def scope(obs: Observation) -> dict[str, Any]:
    """The CEL context of what the assertion observes."""
    return context(obs.world, obs.initial_world, obs.trajectory, obs.output, names(obs.case))


@register("cel", fields={"expr": EXPR}, check=_check_cel)
def cel_assertion(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """A CEL expression over world, diff and journal holds."""
    expr = params["expr"]
    try:
        value = cel.evaluate(expr, scope(obs))
    except cel.CelError as exc:
        return AssertionResult(type="cel", passed=False, message=f"{expr}: could not be evaluated: {exc}", expected=True, actual=None)
    if not isinstance(value, bool):
        return AssertionResult(type="cel", passed=False, message=f"{expr} gave {shorten(value, 80)}, not a boolean", expected=True, actual=value)
    return AssertionResult(type="cel", passed=value, message="" if value else f"false: {expr}", expected=True, actual=value)


def _check_collateral(params: dict[str, Any]) -> list[CheckProblem]:
    allowed = params.get("allow_changes")
    if not isinstance(allowed, list) or not all(isinstance(a, str) and a for a in allowed):
        return [("allow_changes", "'collateral' needs 'allow_changes', a list of collections (shop.orders)",
                 "an empty list allows no change at all")]
    return []


def allowed(name: str, allow: list[str]) -> bool:
    """``shop.orders`` is allowed by ``shop.orders`` and by the whole pack, ``shop``."""
    return any(name == a or name.startswith(a + ".") for a in allow)


@register("collateral", fields={"allow_changes": ALLOW}, check=_check_collateral)
def collateral(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The agent changed nothing outside the collections it may change (new collections included)."""
    allow = params["allow_changes"]
    changed = changed_collections(obs.initial_world if obs.initial_world is not None else {}, obs.world if obs.world is not None else {})
    outside = [c for c in changed if not allowed(c, allow)]
    if not outside:
        return AssertionResult(type="collateral", passed=True, message="", expected=allow, actual=changed)
    return AssertionResult(type="collateral", passed=False, message=f"changed outside allow_changes: {', '.join(outside)}", expected=allow, actual=changed)
