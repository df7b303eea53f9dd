"""The ``budget`` assertion (FORMATS §4): the case has stayed within each given limit — the agent under
test's tokens and cost, its tool calls, the turns, the time — at the point it is checked (a checkpoint:
that turn; a case's assertions: the end of the conversation)."""

from __future__ import annotations

from typing import Any

from agenttest.accounting import budgets
from agenttest.model import AssertionResult
from agenttest.assertions.registry import CheckProblem, Observation, register

COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
FIELDS: dict[str, dict[str, Any]] = {
    "tokens": {**COUNT, "description": "the agent under test's tokens at most"},
    "cost": {"type": "number", "minimum": 0, "description": "the agent under test's cost in USD at most (needs the connector's pricing)"},
    "tool_calls": {**COUNT, "description": "tool calls at most"},
    "turns": {**COUNT, "description": "conversation turns at most"},
    "duration": {"type": ["string", "number"], "description": "time since the case started at most: \"30s\", \"2m\" or seconds"},
}


def _check(params: dict[str, Any]) -> list[CheckProblem]:
    given = [name for name in budgets.LIMITS if name in params]
    if not given:
        return [(None, "a 'budget' assertion needs a limit", f"give one or more of {', '.join(budgets.LIMITS)}, e.g. {{\"type\": \"budget\", \"tokens\": 2000}}")]
    out: list[CheckProblem] = []
    if "duration" in params:
        try:
            budgets.value("duration", params["duration"])
        except ValueError as exc:
            out.append(("duration", f"bad 'duration': {exc}", None))
    return out


@register("budget", fields=FIELDS, check=_check)
def budget(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The case stayed within each given limit."""
    limit = budgets.of_case(params)
    spent = obs.spent
    if spent is None:
        return AssertionResult(type="budget", passed=False, message="budget: nothing was measured here (only cases and checkpoints have a budget)",
                               expected=limit.limits(), error=True)
    unmeasured = budgets.unmeasured(limit, spent)
    if unmeasured:
        return AssertionResult(type="budget", passed=False, message=unmeasured, expected=limit.limits(), actual=spent.as_dict(), error=True)
    exceeded = budgets.overruns(limit, spent)
    if exceeded:
        return AssertionResult(type="budget", passed=False, message=budgets.message(exceeded), expected=limit.limits(), actual=spent.as_dict())
    return AssertionResult(type="budget", passed=True, message="", expected=limit.limits(), actual=spent.as_dict())
