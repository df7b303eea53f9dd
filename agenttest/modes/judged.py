"""Judge-only cases (FORMATS §19): the case gives the agent's output — and, if it matters, its tool calls and the
conversation before it — instead of calling the agent, and its assertions judge what is given. A labelled
calibration set is a file of such cases; ``agent-test rescore`` makes them of a recorded run, each run's own."""

from __future__ import annotations

import sys
from functools import partial as partial_of

from agenttest.assertions import Observation, evaluate_all
from agenttest.model import Case, CaseResult, Status
from agenttest.modes.base import CaseEnv, world_view
from agenttest.modes.standard import expectations, verdict
from agenttest.plugins import MODES
from agenttest.runtime.trace import Trace


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    assert case.given is not None
    output, calls = case.given.of_run(trace.run, env.connector or "")
    said = case.input if case.input not in (None, "", []) else list(case.given.history) or None  # what led to the output
    obs = Observation(output=output, tool_calls=calls, input=said, case=case, judge=env.caller, spending=partial_of(env.spent, trace, 0), **world_view(trace))
    results = await evaluate_all(expectations(case), obs)
    status = verdict(results)
    errored = next((r for r in results if r.error), None) if status == "error" else None
    return CaseResult(name=case.name, status=status, input=said, output=output, error=errored.message if errored else "",
                      traceback=errored.traceback if errored else "", assertions=results, tool_calls=calls)


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    output = case.given.output if case.given is not None else None
    return CaseResult(status=status, name=case.name, input=case.input, output=output, error=error)


MODES.add("judged", sys.modules[__name__])  # the built-in mode registers as a plug-in would
