"""What a mode is: the protocol every mode module follows and the environment it runs a case in."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Protocol

from agenttest.speed.records import replace
from agenttest.runtime import attachments
from agenttest.accounting import budgets
from agenttest.agents.caller import Caller
from agenttest.model import Budget, Case, CaseResult, Context, Limits, Message, OutputFrom, Reply, Status
from agenttest.runtime.trace import Trace
from agenttest.runtime.world import snapshot


@dataclass(frozen=True, kw_only=True)
class CaseEnv:
    """What a mode needs to run one case: the caller, the agent under test with its connector, the ctx,
    and where the case's attachments may come from."""

    caller: Caller
    agent: str
    connector: str | None
    ctx: Context
    attachments: attachments.Policy = attachments.Policy()
    budget: Budget | None = None  # the case's limits (over --budget's)
    output_from: OutputFrom | None = None  # the case's own ``output_from`` (None: the agent's)

    def spent(self, trace: Trace, turns: int) -> budgets.Spent:
        """What the agent under test has spent so far in this case run."""
        return budgets.spent(trace, self.caller.catalog.prices, turns)

    async def reply(self, messages: list[Message], options: dict[str, Any] | None = None, limits: Limits = Limits()) -> Reply:
        """The agent under test's reply to a conversation (CallError on failure, CallLimit past the budget)."""
        reply = await self.caller.call(self.agent, messages, self.ctx, self.connector, options, limits)
        return reply if self.output_from is None or self.output_from == reply.output_from else replace(reply, output_from=self.output_from)

    def calls_left(self, trace: Trace) -> int | None:
        """The model calls ``budget.model_calls`` still allows the agent in this conversation (None: no limit)."""
        if self.budget is None or self.budget.model_calls is None:
            return None
        return max(0, self.budget.model_calls - self.spent(trace, 0).model_calls)

    async def messages(self, case: Case) -> list[Message]:
        """The case's input with its attachments read, off the event loop. A case file's own folder is
        allowed besides the app; generated cases (untrusted model output) get the app alone. Without
        content parts there is nothing to read: no thread, no path resolved."""
        if not attachments.has_parts(case.messages):
            return list(case.messages)
        policy = self.attachments
        if policy.roots and os.path.isfile(case.file):
            policy = replace(policy, roots=(*policy.roots, os.path.realpath(case.base_dir)))
        return await asyncio.to_thread(attachments.resolve, case.messages, case.base_dir, policy)


class Mode(Protocol):
    async def run(self, case: Case, env: CaseEnv, trace: Trace) -> CaseResult: ...

    def partial(self, case: Case, trace: Trace, status: Status, error: str) -> CaseResult: ...


TRUNCATED = "the agent's reply was cut at its token limit (finish_reason: length) and judged as it was (--strict fails it)"


def output_notes(reply: Reply) -> dict[str, Any]:
    """What a result says of its output (FORMATS §4): ``output_from`` when a tool's result is the output; a
    warning when the agent's last reply was empty after calling tools (its output is then empty, never the
    tools' results); ``truncated`` and a warning when the reply was cut at its token limit."""
    out: dict[str, Any] = {}
    warnings: list[str] = []
    if reply.tool_output:
        out["output_from"] = "tool_result"
    elif not reply.has_data and not reply.text and reply.tool_calls:
        names = ", ".join(dict.fromkeys(c.name for c in reply.tool_calls))
        warnings.append(f"the agent's last reply was empty after calling {names}: its output is empty (if its answer is "
                        f"the tool call, set \"output_from\": \"tool_result\" in package.yao or the case)")
    if reply.truncated:
        out["truncated"] = True
        warnings.append(TRUNCATED)
    if warnings:
        out["warnings"] = tuple(warnings)
    return out


def world_view(trace: Trace) -> dict[str, Any]:
    """The case's tool world as assertions see it (Observation fields): now, and as the agent found it (with a
    scenario's world events since: what changed by itself is not the agent's doing)."""
    world = trace.world
    if world is None:
        return {}
    return {"world": snapshot(world.state), "initial_world": world.before, "counters": dict(world.counters)}
