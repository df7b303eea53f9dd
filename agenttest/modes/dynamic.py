"""Dynamic mode (FORMATS §5): a simulator agent plays the user turn by turn until the ordered checkpoints
are reached; the case's own assertions are then checked once against the whole conversation."""

from __future__ import annotations

import sys

import time
from dataclasses import dataclass, field, replace
from typing import Any

from agenttest.plugins import MODES
from agenttest.verdicts import budgets
from agenttest.assertions import Observation, evaluate, evaluate_all
from agenttest.errors import CallError
from agenttest.model.messages import content_text, last_user_content
from agenttest.model import AssertionResult, Case, CaseResult, CheckpointResult, Message, Reply, Status, ToolCall, Turn, Usage
from agenttest.runtime.trace import Trace
from agenttest.agents.protocols import ProtocolError, ask_json
from agenttest.modes.base import CaseEnv, world_view
from agenttest.modes.standard import expectations, verdict

PLAIN_TEXT = "(the simulator replied in plain text; it was taken as the user's message)"


class SimulatorError(Exception):
    pass


class CheckpointError(Exception):
    """A checkpoint could not be evaluated (its validator unreachable, its script raising)."""


@dataclass
class Conversation:
    """The state of one dynamic case while it runs (kept when a deadline interrupts it)."""

    case: Case
    history: list[Message] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    reached: dict[str, tuple[int, AssertionResult]] = field(default_factory=dict)
    usage: Usage = Usage()
    tool_calls: list[ToolCall] = field(default_factory=list)
    last: Reply | None = None

    def missing(self) -> list[str]:
        return [c.id for c in self.case.checkpoints if c.required and c.id not in self.reached]

    def done(self) -> bool:
        return not self.missing()


def simulator_reply(value: Any) -> dict[str, Any]:
    """Check a simulator reply: ``{"message" (or "input"): str, "goal_achieved": bool}``."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    message = value.get("message", value.get("input"))
    achieved = value.get("goal_achieved", False)
    if not isinstance(achieved, bool):
        raise ValueError(f"'goal_achieved' must be true or false, got {achieved!r}")
    if not achieved and (not isinstance(message, str) or not message.strip()):
        raise ValueError("the JSON has no 'message' (or 'input') string")
    return {"message": message if isinstance(message, str) else "", "goal_achieved": achieved, "reasoning": str(value.get("reasoning", ""))}


def plain_text_reply(text: str) -> dict[str, Any]:
    """A simulator reply with no JSON at all is the user's message (as Yao takes it)."""
    return {"message": text.strip(), "goal_achieved": False, "reasoning": PLAIN_TEXT}


def reply_text(reply: Reply) -> Any:
    """What text checkpoints see: the Next-hook data, else the reply's text — never the tool results, which
    only the tool assertions look at (a word inside a tool's JSON is not something the agent said)."""
    return reply.data if reply.has_data else reply.text


async def _checkpoints(conv: Conversation, turn: int, obs: Observation) -> list[str]:
    """Checkpoints reached this turn, in declaration order, honouring ``after`` (same turn counts)."""
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
                verdicts[cp.id] = await evaluate(cp.assertion, obs)
                if verdicts[cp.id].error:
                    raise CheckpointError(f"checkpoint {cp.id} failed: {verdicts[cp.id].message}")
            if verdicts[cp.id].passed:
                conv.reached[cp.id] = (turn, verdicts[cp.id])
                new.append(cp.id)
                changed = True
    return new


async def _ask_simulator(env: CaseEnv, case: Case, conv: Conversation, turn_number: int) -> dict[str, Any]:
    spec = case.simulator
    assert spec is not None  # a dynamic case has one (or --simulator gave one at load time)
    use, options = spec.use, spec.options
    meta = dict(options.get("metadata") or {})
    persona, goal = meta.pop("persona", ""), meta.pop("goal", "")
    payload = {
        "persona": persona,
        "goal": goal,
        "conversation": [
            {"role": m["role"], "content": content_text(m.get("content"))}
            for m in conv.history if m.get("role") in ("user", "assistant") and m.get("content")
        ],
        "turn_number": turn_number,
        "max_turns": case.max_turns,
        "checkpoints_reached": list(conv.reached),
        "checkpoints_pending": [c.id for c in case.checkpoints if c.id not in conv.reached],
        "checkpoint_descriptions": {c.id: c.description for c in case.checkpoints if c.description},
        "extra": meta,
    }
    context = {"persona": persona, "goal": goal, "turn_number": turn_number, **meta}
    try:
        return await ask_json(env.caller, use, payload, "simulator", simulator_reply, options.get("connector"), context,
                              no_json=plain_text_reply)
    except (ProtocolError, CallError) as exc:
        raise SimulatorError(f"simulator error at turn {turn_number}: simulator {use}: {exc}") from None


async def _turn(case: Case, env: CaseEnv, conv: Conversation, trace: Trace, turn: int, reasoning: str) -> None:
    """One exchange: the agent answers the history; its reply is checked against pending checkpoints."""
    start = time.perf_counter()
    trace.turn = turn
    user_text, attached = last_user_content(conv.history)
    try:
        reply = await env.reply(conv.history, case.options)
    except CallError as exc:
        raise CallError(f"agent error at turn {turn}: {exc}") from None
    conv.history += list(reply.messages)
    conv.usage += reply.usage
    conv.tool_calls += reply.tool_calls
    conv.last = reply
    obs = Observation(reply_text(reply), reply.tool_calls, user_text, case, env.caller,
                      all_tool_calls=tuple(conv.tool_calls), spent=env.spent(trace, turn), **world_view(trace))
    new = await _checkpoints(conv, turn, obs)
    conv.turns.append(Turn(turn, user_text, reply.output, reply.tool_calls, tuple(new), (time.perf_counter() - start) * 1000, reasoning,
                           tuple(attached)))


async def _loop(case: Case, env: CaseEnv, conv: Conversation, trace: Trace) -> str:
    """Returns the failure reason, or "" when every required checkpoint was reached."""
    if case.messages:
        conv.history = await env.messages(case)
        reasoning = ""
    else:
        trace.turn = 1
        first = await _ask_simulator(env, case, conv, 1)
        conv.history = [{"role": "user", "content": first["message"]}]
        reasoning = first["reasoning"]
    for turn in range(1, case.max_turns + 1):
        await _turn(case, env, conv, trace, turn, reasoning)
        if overrun := _over_budget(env, trace, turn):
            return overrun
        if conv.done():
            return ""
        if turn == case.max_turns:
            break
        trace.turn = turn + 1
        answer = await _ask_simulator(env, case, conv, turn + 1)
        reasoning = answer["reasoning"]
        if answer["goal_achieved"]:
            if answer["message"].strip():  # the closing message is still sent and checked
                conv.history.append({"role": "user", "content": answer["message"]})
                await _turn(case, env, conv, trace, turn + 1, reasoning)
                if overrun := _over_budget(env, trace, turn + 1):
                    return overrun
            if conv.done():
                return ""
            return f"simulator reported goal achieved but checkpoints missing: {', '.join(conv.missing())}"
        conv.history.append({"role": "user", "content": answer["message"]})
    return f"max turns ({case.max_turns}) exceeded; missing checkpoints: {', '.join(conv.missing())}"


def _over_budget(env: CaseEnv, trace: Trace, turn: int) -> str:
    """The conversation stops at the turn that exceeds the case's budget (FORMATS §8)."""
    if env.budget is None:
        return ""
    exceeded = budgets.overruns(env.budget, env.spent(trace, turn))
    return f"{budgets.message(exceeded)} (at turn {turn})" if exceeded else ""


def _checkpoint_results(conv: Conversation) -> tuple[CheckpointResult, ...]:
    out = []
    for cp in conv.case.checkpoints:
        hit = conv.reached.get(cp.id)
        verdict_ = hit[1] if hit else None
        tool = None
        if verdict_ is not None and cp.assertion.type in ("tool_called", "tool_args") and isinstance(verdict_.actual, dict):
            tool = verdict_.actual.get("name")
        message = "" if hit else ("not reached" + (f" (after {', '.join(cp.after)})" if cp.after else ""))
        out.append(CheckpointResult(cp.id, hit is not None, cp.required, hit[0] if hit else None, cp.description, message, tool,
                                    verdict_ if cp.assertion.type == "agent" else None))
    return tuple(out)


def _result(case: Case, conv: Conversation, status: Status, error: str, assertions: tuple[AssertionResult, ...] = ()) -> CaseResult:
    return CaseResult(
        id=case.id, status=status, name=case.name, input=case.input,
        output=conv.turns[-1].output if conv.turns else None, error=error, assertions=assertions,
        tool_calls=tuple(conv.tool_calls), usage=conv.usage, turns=tuple(conv.turns),
        checkpoints=_checkpoint_results(conv), dynamic=True, simulator=_simulator(case),
    )


def _simulator(case: Case) -> dict[str, Any] | None:
    """Who played the user: the simulator agent, its persona and goal."""
    if case.simulator is None:
        return None
    meta = case.simulator.options.get("metadata") or {}
    return {k: v for k, v in (("use", case.simulator.use), ("persona", meta.get("persona")), ("goal", meta.get("goal"))) if v}


async def _final(case: Case, env: CaseEnv, conv: Conversation, trace: Trace) -> tuple[AssertionResult, ...]:
    """The case's own assertions (or its ``expected``), once, against the last reply, every tool call of
    the conversation and the final world."""
    specs = expectations(case)
    if not specs:
        return ()
    last = conv.last
    output = (last.data if last.has_data else last.output) if last is not None else None
    first_input = conv.turns[0].input if conv.turns else case.input
    obs = Observation(output, conv.tool_calls, first_input, case, env.caller, all_tool_calls=tuple(conv.tool_calls),
                      spent=env.spent(trace, len(conv.turns)), **world_view(trace))
    return await evaluate_all(specs, obs)


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    conv = trace.state = Conversation(case)
    try:
        reason = await _loop(case, env, conv, trace)
    except (SimulatorError, CallError, CheckpointError) as exc:
        return partial(case, trace, "error", str(exc))
    assertions = await _final(case, env, conv, trace)
    status: Status = "failed" if reason else verdict(assertions)
    if not reason and status != "passed":
        failed = next(a for a in assertions if not a.passed)
        reason = ("final assertion could not be evaluated: " if status == "error" else "final assertion failed: ") + failed.message
    return _result(case, conv, status, reason, assertions)


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    """A conversation cut short keeps its turns; the agent's calls in an unfinished turn come from the trace."""
    conv = trace.state if isinstance(trace.state, Conversation) else Conversation(case)
    if status == "timeout":
        error += f" (during turn {len(conv.turns) + 1}); missing checkpoints: {', '.join(conv.missing())}"
    result = _result(case, conv, status, error)
    return replace(result, tool_calls=tuple(trace.tool_calls), usage=trace.agent_usage)


MODES.add("dynamic", sys.modules[__name__])  # the built-in mode registers as a plug-in would
