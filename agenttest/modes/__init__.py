"""Test modes — how one case runs: ``standard`` (one call), ``dynamic`` (a simulator-driven conversation),
``script`` (a Python ``Test*`` function). Each mode module has ``run(case, env, trace)`` and
``partial(case, trace, status, error)``, the result of a run cut short (it keeps the work done)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..caller import Caller
from ..model import Case, CaseResult, Context, Message, Reply, Status
from ..tracking import Trace


@dataclass(frozen=True)
class CaseEnv:
    """What a mode needs to run one case: the caller, the agent under test with its connector, the ctx."""

    caller: Caller
    agent: str
    connector: str | None
    ctx: Context

    async def reply(self, messages: list[Message], options: dict[str, Any] | None = None) -> Reply:
        """The agent under test's reply to a conversation (CallError on failure)."""
        return await self.caller.call(self.agent, messages, self.ctx, self.connector, options)


class Mode(Protocol):
    async def run(self, case: Case, env: CaseEnv, trace: Trace) -> CaseResult: ...

    def partial(self, case: Case, trace: Trace, status: Status, error: str) -> CaseResult: ...


def get(case: Case) -> Mode:
    from . import dynamic, scripttest, standard

    modes: dict[str, Any] = {"standard": standard, "dynamic": dynamic, "script": scripttest}
    return modes[case.mode]
