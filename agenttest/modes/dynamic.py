"""Dynamic mode: a simulator agent plays the user turn by turn until the ordered checkpoints are reached."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..assertions import Observation, evaluate
from ..errors import CallError
from ..messages import content_text, last_user_text
from ..model import AssertionResult, Case, CaseResult, CheckpointResult, Message, Status, ToolCall, Turn, Usage
from ..tracking import Trace
from ..workerprotocol import ProtocolError, ask_json
from .base import CaseEnv, world_view
from .standard import agent_options


class SimulatorError(Exception):
    pass


@dataclass
class Conversation:
    """The state of one dynamic case while it runs (kept when a deadline interrupts it)."""

    case: Case
    history: list[Message] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    reached: dict[str, tuple[int, AssertionResult]] = field(default_factory=dict)
    usage: Usage = Usage()
    tool_calls: list[ToolCall] = field(default_factory=list)

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
            if verdicts[cp.id].passed:
                conv.reached[cp.id] = (turn, verdicts[cp.id])
                new.append(cp.id)
                changed = True
    return new


def turn_output(reply: Any) -> Any:
    """What checkpoints see: the reply, and for a text reply the tool results of the turn after it."""
    from ..texts import as_text

    results = [as_text(c.result) for c in reply.tool_calls if c.error is None and c.result is not None]
    if not results or not isinstance(reply.output, str) or reply.has_data:
        return reply.output
    return "\n".join([reply.output, *results]) if reply.output else "\n".join(results)


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
        "checkpoints_pending": [{"id": c.id, "description": c.description} for c in case.checkpoints if c.id not in conv.reached],
        "extra": meta,
    }
    try:
        return await ask_json(env.caller, use, payload, "simulator", simulator_reply, options.get("connector"), {"persona": persona, "goal": goal, **meta})
    except (ProtocolError, CallError) as exc:
        raise SimulatorError(f"simulator {use}: {exc}") from None


async def _loop(case: Case, env: CaseEnv, conv: Conversation, trace: Trace) -> str:
    """Returns the failure reason, or "" when every required checkpoint was reached."""
    options = agent_options(case)
    if case.messages:
        conv.history = await env.messages(case)
    else:
        first = await _ask_simulator(env, case, conv, 1)
        conv.history = [{"role": "user", "content": first["message"]}]
    reasoning = ""
    for turn in range(1, case.max_turns + 1):
        start = time.perf_counter()
        user_text = last_user_text(conv.history)
        try:
            reply = await env.reply(conv.history, options)
        except CallError as exc:
            raise CallError(f"agent error at turn {turn}: {exc}") from None
        conv.history += list(reply.messages)
        conv.usage += reply.usage
        conv.tool_calls += reply.tool_calls
        obs = Observation(turn_output(reply), reply.tool_calls, user_text, case, env.caller,
                          all_tool_calls=tuple(conv.tool_calls), **world_view(trace))
        new = await _checkpoints(conv, turn, obs)
        conv.turns.append(Turn(turn, user_text, reply.output, reply.tool_calls, tuple(new), (time.perf_counter() - start) * 1000, reasoning))
        if conv.done():
            return ""
        if turn == case.max_turns:
            break
        try:
            answer = await _ask_simulator(env, case, conv, turn + 1)
        except SimulatorError as exc:
            raise SimulatorError(f"simulator error at turn {turn + 1}: {exc}") from None
        if answer["goal_achieved"]:
            return f"simulator reported goal achieved but checkpoints missing: {', '.join(conv.missing())}"
        reasoning = answer["reasoning"]
        conv.history.append({"role": "user", "content": answer["message"]})
    return f"max turns ({case.max_turns}) exceeded; missing checkpoints: {', '.join(conv.missing())}"


def _checkpoint_results(conv: Conversation) -> tuple[CheckpointResult, ...]:
    out = []
    for cp in conv.case.checkpoints:
        hit = conv.reached.get(cp.id)
        verdict = hit[1] if hit else None
        tool = None
        if verdict is not None and cp.assertion.type in ("tool_called", "tool_args") and isinstance(verdict.actual, dict):
            tool = verdict.actual.get("name")
        message = "" if hit else ("not reached" + (f" (after {', '.join(cp.after)})" if cp.after else ""))
        out.append(CheckpointResult(cp.id, hit is not None, cp.required, hit[0] if hit else None, cp.description, message, tool,
                                    verdict if cp.assertion.type == "agent" else None))
    return tuple(out)


def _result(case: Case, conv: Conversation, status: Status, error: str) -> CaseResult:
    return CaseResult(
        id=case.id, status=status, name=case.name, input=case.input,
        output=conv.turns[-1].output if conv.turns else None, error=error,
        tool_calls=tuple(conv.tool_calls), usage=conv.usage, turns=tuple(conv.turns),
        checkpoints=_checkpoint_results(conv), dynamic=True,
    )


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    conv = trace.state = Conversation(case)
    try:
        reason = await _loop(case, env, conv, trace)
    except (SimulatorError, CallError) as exc:
        return partial(case, trace, "error", str(exc))
    return _result(case, conv, "failed" if reason else "passed", reason)


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    """A conversation cut short keeps its turns; the agent's calls in an unfinished turn come from the trace."""
    conv = trace.state if isinstance(trace.state, Conversation) else Conversation(case)
    if status == "timeout":
        error += f" (during turn {len(conv.turns) + 1}); missing checkpoints: {', '.join(conv.missing())}"
    result = _result(case, conv, status, error)
    return replace(result, tool_calls=tuple(trace.tool_calls), usage=trace.agent_usage)
