"""Scenario mode (FORMATS §18, seed format B): one agent run on the task, the world offering its pack tools and
``eval.next_turn`` (the user's later turns, pulled), under budgets in steps and virtual time; then every
assertion over the world as left, its diff and the journal. A budget that runs out ends the run with
``BUDGET_EXCEEDED``: the case fails with that reason, and its assertions are still shown."""

from __future__ import annotations

import sys
from typing import Any

from agenttest.assertions import Observation, evaluate_all
from agenttest.assertions.registry import score
from agenttest.errors import CallError
from agenttest.model import Case, CaseResult, Limits, Status
from agenttest.modes.base import CaseEnv, world_view
from agenttest.modes.standard import expectations, verdict
from agenttest.plugins import MODES
from agenttest.runtime.journal import in_order
from agenttest.runtime.scenario import BudgetExceeded
from agenttest.runtime.trace import Trace
from agenttest.speed.records import replace


def claims(case: Case) -> bool:
    return case.scenario is not None


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    scenario = case.scenario
    assert scenario is not None
    stopped, output = "", ""
    rounds = scenario.max_steps + 1 if scenario.max_steps is not None else None
    try:
        messages = await env.messages(case)
        reply = await env.reply(messages, case.options, Limits(env.calls_left(trace), tool_rounds=rounds))
        output = reply.output
    except BudgetExceeded as exc:
        stopped = str(exc)
    except CallError as exc:
        return partial(case, trace, "error", f"agent error: {exc}")
    world = trace.world
    if world is not None:
        world.finish()
    made = tuple(in_order(trace.tool_calls))
    obs = Observation(output=output, tool_calls=made, input=case.input, case=case, judge=env.caller, **world_view(trace))
    results = await evaluate_all(expectations(case), obs)
    status: Status = "failed" if stopped else verdict(results)
    errored = next((r for r in results if r.error), None) if status == "error" else None
    result = CaseResult(name=case.name, status=status, input=case.input, output=output,
                        error=stopped or (errored.message if errored else ""), traceback=errored.traceback if errored else "",
                        assertions=results, tool_calls=made, usage=trace.agent_usage, score=score(results))
    return _recorded(result, trace)


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    result = CaseResult(status=status, name=case.name, input=case.input, error=error, tool_calls=tuple(in_order(trace.tool_calls)), usage=trace.agent_usage)
    return _recorded(result, trace)


def _recorded(result: CaseResult, trace: Trace) -> CaseResult:
    """The result with the scenario's record (identity, clock, turns, events) and its notes as warnings."""
    run_: Any = trace.world.scenario if trace.world is not None else None
    if run_ is None:
        return result
    notes = tuple(n for n in run_.notes if n not in result.warnings)
    pending = run_.record().pending
    if pending and not result.error:
        notes += ((f"{pending} scripted turn{'s were' if pending > 1 else ' was'} never delivered (the agent did not call "
                   "eval.next_turn once its when held)"),)
    return replace(result, scenario=run_.record(), warnings=(*result.warnings, *notes))


MODES.add("scenario", sys.modules[__name__])  # a mode of its own, registered as a plug-in would be
