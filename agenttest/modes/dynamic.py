"""Dynamic mode (FORMATS §5): a simulator plays the user turn by turn; each reply is checked against the
ordered checkpoints. The conversation ends as the case's ``end`` says — once every required checkpoint is
reached (Yao's rule), or only when the simulator ends it — or on ``max_turns``, an ``end_tools`` call or the
budget; the case's own assertions then judge it once, as it ended."""

from __future__ import annotations

import sys
from typing import Any

from agenttest.speed.records import replace
from agenttest.plugins import MODES
from agenttest.assertions import Observation, evaluate
from agenttest.errors import CallError
from agenttest.model import AssertionResult, Case, CaseResult, CheckpointResult, Status
from agenttest.runtime import exchanges
from agenttest.runtime.trace import Trace
from agenttest.modes import simulator
from agenttest.modes.base import CaseEnv, output_notes
from agenttest.modes.conversation import BudgetStop, Conversation, agent_turn, check_budget, cut_short, final, final_reason
from agenttest.modes.simulator import SimulatorError
from agenttest.modes.standard import error_by, verdict


class CheckpointError(Exception):
    """A checkpoint could not be evaluated (its validator unreachable or unusable, its script raising)."""

    def __init__(self, message: str, by: str = ""):
        super().__init__(message)
        self.by = by  # "validator": the judge's fault


async def _checkpoints(conv: Conversation, turn: int, obs: Observation) -> list[str]:
    """Checkpoints reached this turn, in declaration order, honouring ``after`` (same turn counts); the
    failed checks are kept as attempts, to say later why a checkpoint was missed."""
    pending = [c for c in conv.case.checkpoints if c.id not in conv.reached]
    verdicts: dict[str, AssertionResult] = {}
    new: list[str] = []
    changed = True
    while changed:
        changed = False
        for cp in pending:
            if cp.id in conv.reached or not all(dep in conv.reached for dep in cp.after):
                continue
            if cp.id not in verdicts:
                with exchanges.serving(f"checkpoint {cp.id}"):  # its judge's calls are filed under it
                    verdicts[cp.id] = await evaluate(cp.assertion, obs)
                if verdicts[cp.id].error:
                    raise CheckpointError(f"checkpoint {cp.id} failed: {verdicts[cp.id].message}", error_by((verdicts[cp.id],)))
            if verdicts[cp.id].passed:
                conv.reached[cp.id] = (turn, verdicts[cp.id])
                new.append(cp.id)
                changed = True
    for cp_id, v in verdicts.items():
        if not v.passed:
            conv.attempts.setdefault(cp_id, []).append((turn, v))
    return new


async def _turn(case: Case, env: CaseEnv, conv: Conversation, trace: Trace, turn: int, reasoning: str) -> str:
    """One exchange, checked against the pending checkpoints; the end tool it called, if any."""
    ex = await agent_turn(case, env, conv, trace, turn)
    try:
        new = await _checkpoints(conv, turn, ex.obs)
    except CheckpointError as exc:  # the turn ran: it is kept, with why it could not be judged
        ex.record(conv, simulator_reasoning=reasoning, error=str(exc))
        raise
    ended = next((c.name for c in ex.reply.tool_calls if c.name in case.end_tools), "")
    ex.record(conv, checkpoints=tuple(new), simulator_reasoning=reasoning, ended=f"end tool {ended}" if ended else "")
    check_budget(env, trace, turn)
    return ended


def _ended(conv: Conversation, why: str) -> None:
    """Say on the last turn why the conversation ended."""
    if conv.turns and not conv.turns[-1].ended:
        conv.turns[-1] = replace(conv.turns[-1], ended=why)


def _closing(case: Case, conv: Conversation, why: str) -> str:
    """The verdict when the conversation ends before max_turns: required checkpoints missing fail it."""
    _ended(conv, why)
    if not conv.missing():
        return ""
    if case.end == "checkpoints" and why == "goal achieved":
        return f"simulator reported goal achieved but checkpoints missing: {', '.join(conv.missing())}"
    return f"the conversation ended ({why}) with checkpoints missing: {', '.join(conv.missing())}"


async def _loop(case: Case, env: CaseEnv, conv: Conversation, trace: Trace) -> str:
    """Returns the failure reason, or "" when the conversation ended well (final assertions still judge it)."""
    until_checkpoints = case.end == "checkpoints"
    turn, reasoning = 1, ""
    if case.messages:
        conv.history = await env.messages(case)
    else:
        answer = await _ask(env, case, conv, trace, 1)
        reasoning = answer["reasoning"]
        if answer["goal_achieved"] and not answer["message"].strip():  # nothing to send: the agent is not called
            return _closing(case, conv, "goal achieved")
        conv.history = [{"role": "user", "content": answer["message"]}]
        if answer["goal_achieved"]:  # an opening closing message is still sent and checked
            await _turn(case, env, conv, trace, 1, reasoning)
            return _closing(case, conv, "goal achieved")
    while True:
        if await _turn(case, env, conv, trace, turn, reasoning):
            return _closing(case, conv, conv.turns[-1].ended)
        if until_checkpoints and not conv.missing():
            _ended(conv, "checkpoints reached")
            return ""
        if turn == case.max_turns:
            _ended(conv, "max turns")
            if until_checkpoints or conv.missing():
                return f"max turns ({case.max_turns}) exceeded; missing checkpoints: {', '.join(conv.missing())}"
            return ""
        turn += 1
        answer = await _ask(env, case, conv, trace, turn)
        reasoning = answer["reasoning"]
        if answer["goal_achieved"] and not answer["message"].strip():
            return _closing(case, conv, "goal achieved")
        conv.history.append({"role": "user", "content": answer["message"]})
        if answer["goal_achieved"]:  # the closing message is still sent and checked
            await _turn(case, env, conv, trace, turn, reasoning)
            return _closing(case, conv, "goal achieved")


async def _ask(env: CaseEnv, case: Case, conv: Conversation, trace: Trace, turn: int) -> dict[str, Any]:
    """The simulator's message for ``turn`` (its calls are filed under that turn)."""
    trace.turn = turn
    answer = await simulator.ask(env, case, conv.history, turn, list(conv.reached), conv.said)
    conv.said += 1
    return answer


def _missed(cp_id: str, after: tuple[str, ...], conv: Conversation) -> str:
    """Why a checkpoint was not reached: what it waited for, or its closest attempt and why it did not match."""
    waiting = [dep for dep in after if dep not in conv.reached]
    attempts = conv.attempts.get(cp_id, [])
    if not attempts:
        return "not reached" + (f" (waiting for {', '.join(waiting)})" if waiting else "")
    turn, v = max(attempts, key=lambda a: (a[1].score if a[1].score is not None else 0.0, a[0]))
    return f"not reached; closest attempt at turn {turn}: {v.message or 'did not match'}"


def _checkpoint_results(conv: Conversation) -> tuple[CheckpointResult, ...]:
    out = []
    for cp in conv.case.checkpoints:
        hit = conv.reached.get(cp.id)
        verdict_ = hit[1] if hit else None
        tool = None
        if verdict_ is not None and cp.assertion.type in ("tool_called", "tool_args") and isinstance(verdict_.actual, dict):
            tool = verdict_.actual.get("name")
        message = "" if hit else _missed(cp.id, cp.after, conv)
        out.append(CheckpointResult(id=cp.id, reached=hit is not None, required=cp.required, reached_at_turn=hit[0] if hit else None, description=cp.description, message=message, tool=tool,
                                    verdict=verdict_ if cp.assertion.type == "agent" else None))
    return tuple(out)


def _result(case: Case, conv: Conversation, status: Status, error: str, assertions: tuple[AssertionResult, ...] = ()) -> CaseResult:
    return CaseResult(
        status=status, name=case.name, input=case.input,
        output=conv.turns[-1].output if conv.turns else None, error=error, assertions=assertions,
        tool_calls=tuple(conv.tool_calls), usage=conv.usage, turns=tuple(conv.turns),
        checkpoints=_checkpoint_results(conv), dynamic=True, simulator=_simulator(case), **(output_notes(conv.last) if conv.last is not None else {}),
    )


def _simulator(case: Case) -> dict[str, Any] | None:
    """Who played the user: the simulator agent, its persona and goal."""
    if case.simulator is None:
        return None
    meta = case.simulator.options.get("metadata") or {}
    return {k: v for k, v in (("use", case.simulator.use), ("persona", meta.get("persona")), ("goal", meta.get("goal"))) if v}


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    conv = trace.state = Conversation(case=case)
    try:
        reason = await _loop(case, env, conv, trace)
    except BudgetStop as stop:
        return _result(case, conv, "failed", str(stop))
    except SimulatorError as exc:  # the simulator's fault, not the agent's
        return replace(partial(case, trace, "error", str(exc)), error_by="simulator")
    except CheckpointError as exc:
        return replace(partial(case, trace, "error", str(exc)), error_by=exc.by)
    except CallError as exc:
        return partial(case, trace, "error", str(exc))
    assertions = await final(case, env, conv, trace)
    status: Status = "failed" if reason else verdict(assertions)
    result = _result(case, conv, status, reason or final_reason(assertions), assertions)
    return replace(result, error_by=error_by(assertions)) if status == "error" and error_by(assertions) else result


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    """A conversation cut short keeps its turns (and a timeout names the checkpoints missing)."""
    return cut_short(case, trace, status, error, _result, missing=True)


MODES.add("dynamic", sys.modules[__name__])  # the built-in mode registers as a plug-in would
