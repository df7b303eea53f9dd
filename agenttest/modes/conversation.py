"""What the two conversation modes (dynamic, scripted) share: the state of a conversation while it runs,
one agent turn, the budget check after a turn, and the final assertions judged as the conversation ended."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agenttest.speed.records import replace
from agenttest.accounting import budgets
from agenttest.assertions import Observation, evaluate_all
from agenttest.errors import CallError, CallLimit
from agenttest.model.messages import last_user_content
from agenttest.model import AssertionResult, AssertionSpec, Case, CaseResult, Limits, Message, Reply, Status, ToolCall, Turn, Usage
from agenttest.model.results import blocks
from agenttest.runtime.trace import Trace
from agenttest.modes import observing
from agenttest.modes.base import CaseEnv, world_view
from agenttest.modes.standard import expectations


class BudgetStop(Exception):
    """The conversation stopped at a turn that went past its budget: the case fails with this reason."""


@dataclass(kw_only=True)
class Conversation:
    """One conversation while it runs (kept when a deadline interrupts it)."""

    case: Case
    history: list[Message] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    reached: dict[str, tuple[int, AssertionResult]] = field(default_factory=dict)
    attempts: dict[str, list[tuple[int, AssertionResult]]] = field(default_factory=dict)  # checkpoint → its failed checks
    usage: Usage = Usage()
    tool_calls: list[ToolCall] = field(default_factory=list)
    last: Reply | None = None
    said: int = 0  # lines of a scripted simulator said so far

    def missing(self) -> list[str]:
        return [c.id for c in self.case.checkpoints if c.required and c.id not in self.reached]


Result = Callable[[Case, Conversation, Status, str], CaseResult]


def cut_short(case: Case, trace: Trace, status: Status, error: str, result: Result, missing: bool = False) -> CaseResult:
    """A conversation cut short (timeout, error) keeps its turns; the agent's calls in an unfinished turn come
    from the trace. A timeout says the turn it interrupted (and, with ``missing``, the checkpoints not reached)."""
    conv = trace.state if isinstance(trace.state, Conversation) else Conversation(case=case)
    if status == "timeout":
        error += f" (during turn {len(conv.turns) + 1})" + (f"; missing checkpoints: {', '.join(conv.missing())}" if missing else "")
    return replace(result(case, conv, status, error), tool_calls=tuple(trace.tool_calls), usage=trace.agent_usage)


def reply_text(reply: Reply) -> Any:
    """What a turn shows and text checks see: the Next-hook data, else the reply's text — never the tool
    results, which only the tool assertions look at (a word inside a tool's JSON is not something the agent
    said; an empty reply is shown as empty), unless the agent's answer is its tool call (``output_from``)."""
    return reply.output


@dataclass(frozen=True, kw_only=True)
class Exchange:
    """One turn as it happened: what the user said, the agent's reply, what checks of this turn see."""

    turn: int
    user: str
    attachments: tuple[str, ...]
    reply: Reply
    obs: Observation
    started: float

    def record(self, conv: Conversation, **extra: Any) -> Turn:
        """The turn as the reports keep it, added to the conversation."""
        done = Turn(turn=self.turn, input=self.user, output=reply_text(self.reply), tool_calls=self.reply.tool_calls,
                    duration_ms=(time.perf_counter() - self.started) * 1000, attachments=self.attachments,
                    truncated=self.reply.truncated, **extra)
        conv.turns.append(done)
        return done


async def agent_turn(case: Case, env: CaseEnv, conv: Conversation, trace: Trace, turn: int) -> Exchange:
    """The agent answers the history (CallError names the turn; BudgetStop past ``budget.model_calls``)."""
    start = time.perf_counter()
    trace.turn = turn
    user_text, attached = last_user_content(conv.history)
    try:
        reply = await env.reply(conv.history, case.options, Limits(env.calls_left(trace), frozenset(case.end_tools)))
    except CallLimit:
        assert env.budget is not None and env.budget.model_calls is not None
        raise BudgetStop(f"{budgets.PREFIX}model_calls > {env.budget.model_calls} (at turn {turn})") from None
    except CallError as exc:  # the turn that failed is kept, with the calls it made
        error = f"agent error at turn {turn}: {exc}"
        conv.turns.append(Turn(turn=turn, input=user_text, output=None, tool_calls=tuple(trace.tool_calls[len(conv.tool_calls):]), attachments=tuple(attached),
                               duration_ms=(time.perf_counter() - start) * 1000, error=error))
        raise CallError(error) from None
    conv.history += list(reply.messages)
    conv.usage += reply.usage
    conv.tool_calls += reply.tool_calls
    conv.last = reply
    obs = Observation(output=reply_text(reply), tool_calls=reply.tool_calls, input=user_text, case=case, judge=env.caller,
                      all_tool_calls=tuple(conv.tool_calls), spending=env.spent(trace, turn), **world_view(trace))
    return Exchange(turn=turn, user=user_text, attachments=tuple(attached), reply=reply, obs=obs, started=start)


def check_budget(env: CaseEnv, trace: Trace, turn: int) -> None:
    """The conversation stops at the turn that exceeds the case's budget (FORMATS §8)."""
    if env.budget is None:
        return
    exceeded = budgets.overruns(env.budget, env.spent(trace, turn))
    if exceeded:
        raise BudgetStop(f"{budgets.message(exceeded)} (at turn {turn})")


async def final(case: Case, env: CaseEnv, conv: Conversation, trace: Trace,
                specs: tuple[AssertionSpec, ...] | None = None, **observed: Any) -> tuple[AssertionResult, ...]:
    """The case's own assertions (or its ``expected``), once, against the last reply, every tool call of
    the conversation and the world as the conversation left it; ``observed``: the last observation and the
    history (a scripted conversation's), else the observation is made of the last reply."""
    specs = expectations(case) if specs is None else specs
    if not specs:
        return ()
    last = conv.last
    output = last.output if last is not None else None
    first_input = conv.turns[0].input if conv.turns else case.input
    seen = world_view(trace)
    if "document" not in observed and last is not None:
        observed["document"] = lambda: observing.single(last, seen.get("world"))
    obs = Observation(output=output, tool_calls=conv.tool_calls, input=first_input, case=case, judge=env.caller, all_tool_calls=tuple(conv.tool_calls),
                      spending=env.spent(trace, len(conv.turns)), **seen, **observed)
    return await evaluate_all(specs, obs)


def final_reason(assertions: tuple[AssertionResult, ...]) -> str:
    """Why the final assertions did not pass ("" when they did)."""
    failed = next((a for a in assertions if blocks(a)), None)
    if failed is None:
        return ""
    return ("final assertion could not be evaluated: " if failed.error else "final assertion failed: ") + failed.said
