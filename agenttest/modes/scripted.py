"""Scripted conversations (FORMATS §14): the case writes the user's side turn by turn; each turn is sent
after the agent's actual earlier replies and checked on its own, on its observation (``observing``). A failed
check fails the case and the later turns still run; an agent error, or a selection that names no published
option, stops the conversation. The case's own assertions judge it at the end, on the last observation."""

from __future__ import annotations

import sys

from agenttest.speed.records import replace
from agenttest.plugins import MODES
from agenttest.assertions import evaluate_all
from agenttest.errors import CallError
from agenttest.model import AssertionResult, Case, CaseResult, Status
from agenttest.model.results import blocks
from agenttest.runtime import exchanges
from agenttest.runtime.trace import Trace
from agenttest.modes.base import CaseEnv, output_notes
from agenttest.modes.observing import Observing, with_selection
from agenttest.modes.conversation import BudgetStop, Conversation, agent_turn, check_budget, cut_short, final, final_reason
from agenttest.modes.standard import error_by, verdict


async def _turns(case: Case, env: CaseEnv, conv: Conversation, trace: Trace, seen: Observing) -> None:
    conv.history = list(await env.messages(case)) if case.messages else []
    for number, turn in enumerate(case.turns, start=1):
        messages, selected = turn.messages, None
        if turn.selection is not None:  # resolved against what the previous turn published: else the case's error
            selected = seen.select(turn.selection, f"turn {number}" + (f" ({turn.id})" if turn.id else ""))
            messages = with_selection(messages, selected)
        conv.history += await env.messages(replace(case, messages=messages))
        ex = await agent_turn(case, env, conv, trace, number)
        observed = seen.observe(ex.reply, ex.obs.world)
        current = {"turn": number, "id": turn.id, "input": ex.user, "selection": selected}
        with exchanges.serving(f"turn {number}"):  # its judges' calls are filed under the turn's checks
            checks = await evaluate_all(turn.assertions, replace(ex.obs, document=observed, history=tuple(seen.history), current=current))
        ex.record(conv, assertions=checks, id=turn.id)
        seen.record(current, ex.reply, observed)
        check_budget(env, trace, number)


def _result(case: Case, conv: Conversation, status: Status, error: str, assertions: tuple[AssertionResult, ...] = ()) -> CaseResult:
    return CaseResult(
        status=status, name=case.name, input=case.input,
        output=conv.turns[-1].output if conv.turns else None, error=error, assertions=assertions,
        tool_calls=tuple(conv.tool_calls), usage=conv.usage, turns=tuple(conv.turns), scripted=True,
        variants=case.variants, not_run_turns=len(case.turns) - len(conv.turns), **(output_notes(conv.last) if conv.last is not None else {}),
    )


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    conv = trace.state = Conversation(case=case)
    seen = Observing()
    try:
        await _turns(case, env, conv, trace, seen)
    except BudgetStop as stop:
        return _result(case, conv, "failed", str(stop))
    except CallError as exc:
        return partial(case, trace, "error", str(exc))
    assertions = await final(case, env, conv, trace, document=seen.last, history=tuple(seen.history))
    checks = [a for t in conv.turns for a in t.assertions] + list(assertions)
    status = verdict(tuple(checks))
    failed = next((t for t in conv.turns if any(blocks(a) for a in t.assertions)), None)
    if failed is not None:
        first = next(a for a in failed.assertions if blocks(a))
        reason = f"{failed.label}: {first.said}"
    else:
        reason = final_reason(assertions)
    result = _result(case, conv, status, reason, assertions)
    return replace(result, error_by=error_by(checks)) if status == "error" and error_by(checks) else result


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    """A conversation cut short keeps the turns it ran; the later ones are counted as not run."""
    return cut_short(case, trace, status, error, _result)


MODES.add("scripted", sys.modules[__name__])  # the built-in mode registers as a plug-in would
