"""Standard mode: one call of the agent with the case's history, then every assertion on the reply."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from functools import partial as partial_of

from agenttest.plugins import MODES
from agenttest.assertions import Observation, evaluate_all
from agenttest.assertions.registry import score
from agenttest.errors import CallError, CallLimit
from agenttest.model import AssertionResult, AssertionSpec, Case, CaseResult, Limits, Status
from agenttest.accounting import budgets
from agenttest.model.results import blocks
from agenttest.runtime.trace import Trace
from agenttest.modes import observing
from agenttest.modes.base import CaseEnv, output_notes, world_view


def error_by(results: Iterable[AssertionResult]) -> str:
    """Whose fault an error is: ``validator`` when the first assertion that could not be evaluated is a judge's
    (its reply unusable, or it could not be called) — not the agent's."""
    first = next((r for r in results if r.error), None)
    return "validator" if first is not None and first.type == "agent" else ""


def verdict(results: tuple[AssertionResult, ...]) -> Status:
    """Passed when every assertion held but those of ``severity: minor``; error when one could not be evaluated."""
    if not any(blocks(r) for r in results):
        return "passed"
    return "error" if any(r.error for r in results) else "failed"


def expectations(case: Case) -> tuple[AssertionSpec, ...]:
    """The case's assertions; with none, ``expected`` becomes an equals assertion."""
    if case.assertions:
        return case.assertions
    if case.has_expected:
        return (AssertionSpec("equals", {"type": "equals", "value": case.expected}, case.location, ("expected",)),)
    return ()


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    try:
        messages = await env.messages(case)
        reply = await env.reply(messages, case.options, Limits(env.calls_left(trace)))  # Agent.run keeps only the model parameters
    except CallLimit:
        assert env.budget is not None
        return partial(case, trace, "failed", f"{budgets.PREFIX}model_calls > {env.budget.model_calls}")
    except CallError as exc:
        return partial(case, trace, "error", f"agent error: {exc}")
    seen = world_view(trace)
    obs = Observation(output=reply.output, tool_calls=reply.tool_calls, input=case.input, case=case, judge=env.caller, spending=partial_of(env.spent, trace, 1),
                      document=partial_of(observing.single, reply, seen.get("world")), **seen)
    results = await evaluate_all(expectations(case), obs)
    status = verdict(results)
    errored = next((r for r in results if r.error), None) if status == "error" else None
    return CaseResult(
        name=case.name, status=status, input=case.input, output=reply.output,
        error=errored.message if errored else "", traceback=errored.traceback if errored else "",
        assertions=results, tool_calls=reply.tool_calls, usage=reply.usage, score=score(results), error_by=error_by(results) if status == "error" else "",
        **output_notes(reply),
    )


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    return CaseResult(status=status, name=case.name, input=case.input, error=error, tool_calls=tuple(trace.tool_calls), usage=trace.agent_usage)


MODES.add("standard", sys.modules[__name__])  # the built-in mode registers as a plug-in would
