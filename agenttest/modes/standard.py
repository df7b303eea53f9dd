"""Standard mode: one call of the agent with the case's history, then every assertion on the reply."""

from __future__ import annotations

from typing import Any

from ..assertions import Observation, evaluate_all
from ..messages import resolve
from ..model import AssertionResult, AssertionSpec, Case, CaseResult, Context, Reply
from ..runtime import Runtime


def agent_options(case: Case) -> dict[str, Any]:
    """The case's options minus what agent-test itself reads."""
    return {k: v for k, v in case.options.items() if k not in ("connector", "metadata")}


def verdict(results: tuple[AssertionResult, ...]) -> str:
    if all(r.passed for r in results):
        return "passed"
    return "error" if any(r.error for r in results) else "failed"


def expectations(case: Case) -> tuple[AssertionSpec, ...]:
    """The case's assertions; with none, ``expected`` becomes an equals assertion."""
    if case.assertions:
        return case.assertions
    if case.has_expected:
        return (AssertionSpec("equals", {"type": "equals", "value": case.expected}, case.location),)
    return ()


async def run(case: Case, runtime: Runtime, ctx: Context) -> CaseResult:
    """Raises AgentError for agent failures; the runner turns it into an ``error`` result."""
    assert runtime.agent is not None
    messages = resolve(case.messages, case.base_dir)
    reply: Reply = await runtime.agent.run(ctx, messages, runtime.connector_for(case), agent_options(case))
    obs = Observation(reply.output, reply.tool_calls, case.raw.get("input"), case, runtime)
    results = await evaluate_all(expectations(case), obs)
    return CaseResult(
        id=case.id,
        name=case.name,
        status=verdict(results),  # type: ignore[arg-type]
        input=case.raw.get("input"),
        output=reply.output,
        assertions=results,
        tool_calls=reply.tool_calls,
        usage=reply.usage,
    )
