"""Calls agents for a run: the agent under test, the worker agents (validator, simulator, generator)
and agents that hooks and script tests reach through ``ctx.agent(id)``. Implements the Judge protocol
that agent and script assertions use, so assertions stay free of I/O."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, cast

from agenttest.agents.catalog import Catalog
from agenttest.agents.protocols import Said
from agenttest.errors import AgentTestError, CallError
from agenttest.runtime.context import Identity
from agenttest.model import Case, Context, Limits, Message, Reply, Role
from agenttest.util.text import as_text
from agenttest.runtime.trace import current_role


@dataclass(frozen=True)
class AgentHandle:
    """What ``ctx.agent(id)`` returns in hooks and script tests (called from a worker thread)."""

    caller: Caller
    agent_id: str
    ctx: Context

    def stream(self, messages: Any, options: dict[str, Any] | None = None) -> Response:
        """Call the agent with a message history; returns its ``content``, ``tool_calls``, ``output`` and
        ``usage`` — as keys (``reply["content"]``) or, as in Yao, attributes (``reply.content``)."""
        from agenttest.model.messages import normalize

        reply = self.caller.submit(self.caller.call(self.agent_id, list(normalize(messages)), self.ctx, options=options))
        return Response(content=reply.text, output=reply.output, tool_calls=[Response(c.as_dict()) for c in reply.tool_calls],
                        usage=Response(reply.usage.as_dict()))

    call = Stream = Call = stream  # Yao spells it Stream


class Response(dict):  # type: ignore[type-arg]
    """A dict whose keys read as attributes too: ``reply.content``, ``reply.tool_calls[0].name``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Caller:
    def __init__(self, catalog: Catalog, identity: Identity):
        self.catalog = catalog
        self.identity = identity
        self.loop: asyncio.AbstractEventLoop | None = None  # the run's loop, for calls from worker threads

    def context(self, case: Case | None = None, run: int = 1, test_mode: str = "", metadata: dict[str, Any] | None = None,
                connector: str = "") -> Context:
        return self.identity.context(case, run, test_mode, metadata, self, connector)

    async def call(self, agent_id: str, messages: list[Message], ctx: Context, connector: str | None = None,
                   options: dict[str, Any] | None = None, limits: Limits = Limits()) -> Reply:
        """One agent's reply to a conversation; any failure is a CallError."""
        try:
            agent = await self.catalog.ready(agent_id)
        except AgentTestError as exc:
            raise CallError(str(exc)) from None
        return await agent.run(ctx, messages, connector, options, limits)

    async def ask(self, agent_id: str, messages: list[Message], test_mode: str, metadata: dict[str, Any], connector: str | None) -> str:
        """Call a worker agent (validator, simulator, generator) and return its reply as text."""
        ctx = self.context(test_mode=test_mode, metadata=metadata)
        token = current_role.set(cast(Role, test_mode) if test_mode in ("validator", "simulator", "generator") else "agent")
        try:
            reply = await self.call(agent_id, messages, ctx, connector)
        finally:
            current_role.reset(token)
        return Said(as_text(reply.output), reply.truncated)

    def script(self, ref: str) -> Any:
        return self.catalog.script(ref)

    def connector_of(self, agent_id: str, connector: str | None = None) -> str:
        """The connector an agent runs on: ``connector``, else its own (a judge is named by it: FORMATS §19)."""
        return self.catalog.agent(agent_id).connector_id(connector)

    def handle(self, agent_id: str, ctx: Context) -> AgentHandle:
        return AgentHandle(self, agent_id, ctx)

    def submit(self, coro: Any) -> Any:
        """Run a coroutine on the run's loop from a worker thread and wait for it."""
        if self.loop is None:
            coro.close()
            raise RuntimeError("agents can be called only while a run is going on")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()
