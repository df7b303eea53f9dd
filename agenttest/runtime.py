"""The runtime of one run: the app, the agent under test, contexts, and calls to worker agents."""

from __future__ import annotations

import itertools
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

from .app import App
from .config import RunConfig
from .errors import AgentError, AgentTestError
from .jsontext import as_text
from .model import Case, Context, Message

_chat_ids = itertools.count(1)


@dataclass(frozen=True)
class AgentHandle:
    """What ``ctx.agent(id)`` returns in hooks and script tests (called from a worker thread)."""

    runtime: Runtime
    agent_id: str
    ctx: Context

    def stream(self, messages: Any, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call the agent with a message history; returns ``{content, tool_calls, output, usage}``."""
        from .messages import normalize

        coro = self.runtime.call(self.agent_id, list(normalize(messages)), self.ctx, options=options)
        reply = self.runtime.submit(coro)
        return {
            "content": reply.text,
            "output": reply.output,
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in reply.tool_calls],
            "usage": {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens, "total_tokens": reply.usage.total_tokens},
        }

    call = stream


class Runtime:
    """Calls agents for a run; implements the Judge protocol used by agent and script assertions."""

    def __init__(self, app: App, config: RunConfig, agent_id: str | None):
        self.app = app
        self.config = config
        self.agent = app.agent(agent_id) if agent_id else None
        self.loop: Any = None  # set by the runner: script tests call agents from worker threads

    # -- identity ----------------------------------------------------------------------------

    def context(self, case: Case | None = None, run: int = 1, test_mode: str = "", metadata: dict[str, Any] | None = None) -> Context:
        base = self.config.ctx
        authorized = dict(base.get("authorized") or {})
        user = self.config.user or (case.user if case else None) or authorized.get("user_id") or "test-user"
        team = self.config.team or (case.team if case else None) or authorized.get("team_id") or "test-team"
        meta = dict(base.get("metadata") or {})
        if case is not None:
            meta.update(case.metadata)
            meta.update(case.options.get("metadata") or {})
        meta.update(metadata or {})
        chat_id = base.get("chat_id") or f"test-{uuid.uuid4().hex[:12]}-{next(_chat_ids)}"
        if case is not None and base.get("chat_id"):
            chat_id = f"{base['chat_id']}-{case.id}-{run}"
        return Context(user, team, base.get("locale") or "en-us", chat_id, meta, authorized, dict(base.get("client") or {}), test_mode, self)

    def environment(self) -> dict[str, Any]:
        ctx = self.context()
        return {"user_id": ctx.user_id, "team_id": ctx.team_id, "locale": ctx.locale}

    # -- calls -------------------------------------------------------------------------------

    def connector_for(self, case: Case | None) -> str:
        """-c > the case's options.connector > package.yao."""
        assert self.agent is not None
        chosen = self.config.connector or (case.options.get("connector") if case else None)
        return self.agent.connector_id(chosen)

    async def call(self, agent_id: str, messages: list[Message], ctx: Context, connector: str | None = None, options: dict[str, Any] | None = None) -> Any:
        try:
            agent = self.app.agent(agent_id)
        except AgentTestError as exc:
            raise AgentError(str(exc)) from None
        return await agent.run(ctx, messages, connector, options)

    async def ask(self, agent_id: str, messages: list[Message], test_mode: str, metadata: dict[str, Any], connector: str | None) -> str:
        """Call a worker agent (validator, simulator, generator) and return its reply as text."""
        ctx = self.context(test_mode=test_mode, metadata=metadata)
        reply = await self.call(agent_id, messages, ctx, connector)
        return as_text(reply.output)

    def script(self, ref: str) -> Any:
        return self.app.script(ref)

    def handle(self, agent_id: str, ctx: Context) -> AgentHandle:
        return AgentHandle(self, agent_id, ctx)

    def submit(self, coro: Any) -> Any:
        """Run a coroutine on the run's loop from a worker thread and wait for it."""
        import asyncio

        if self.loop is None:
            return asyncio.run(coro)
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    # -- load-time checks ----------------------------------------------------------------------

    def prepare(self, cases: list[Case]) -> None:
        """Resolve every agent, connector and script the cases name, before the first model call;
        problems point at the case that named the thing."""
        from .assertions.judge import agent_id as judge_id
        from .assertions.script import script_ref
        from .errors import InputError, Problem

        problems: list[Problem] = []
        needs: dict[tuple[str, str | None], Any] = {}  # (agent, connector) → where it was first named
        if self.agent is not None:
            for case in cases or [None]:  # type: ignore[list-item]
                conn = self.config.connector or (case.options.get("connector") if case else None)
                needs.setdefault((self.agent.id, conn), case.location if case and not self.config.connector and conn else None)
        for case in cases:
            for spec in list(case.assertions) + [cp.assertion for cp in case.checkpoints]:
                if spec.type == "agent":
                    conn = (spec.params.get("options") or {}).get("connector")
                    needs.setdefault((judge_id(spec.params["use"]), conn), case.location)
                elif spec.type == "script":
                    try:
                        self.script(script_ref(spec.params) or "")
                    except AgentTestError as exc:
                        problems.extend(Problem(p.message, p.location or case.location, p.hint) for p in exc.problems)
            if case.dynamic:
                sim = case.simulator.use if case.simulator else (self.config.simulator or "")
                conn = case.simulator.options.get("connector") if case.simulator else None
                needs.setdefault((sim, conn), case.location)
        for (agent_id, conn), location in needs.items():
            try:
                self._prepare_agent(agent_id, conn)
            except AgentTestError as exc:
                problems.extend(Problem(p.message, p.location or location, p.hint) for p in exc.problems)
        if problems:
            raise InputError(list(dict.fromkeys(problems)))

    def _prepare_agent(self, agent_id: str, connector: str | None) -> None:
        agent = self.app.agent(agent_id)
        conn = self.app.connector(agent.connector_id(connector))
        prepare = getattr(conn, "prepare", None)  # optional: what a connector checks for an agent at load time
        if prepare is not None:
            prepare(agent.spec.path)


def read_ctx(path: str) -> dict[str, Any]:
    """``--ctx FILE``: JSON with chat_id, locale, authorized, metadata, client."""
    if not os.path.isfile(path):
        raise AgentTestError(f"--ctx: '{path}' does not exist")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        from .errors import Location

        raise AgentTestError(f"invalid JSON: {exc.msg}", Location(path, exc.lineno, exc.colno)) from None
    allowed = {"chat_id", "locale", "authorized", "metadata", "client", "user_id", "team_id"}
    if not isinstance(data, dict):
        raise AgentTestError("--ctx must hold a JSON object", hint=f"keys: {', '.join(sorted(allowed))}")
    for key in data:
        if key not in allowed:
            from .errors import did_you_mean

            raise AgentTestError(f"--ctx {path}: '{key}' is not a field", hint=did_you_mean(key, allowed) or f"keys: {', '.join(sorted(allowed))}")
    if "user_id" in data or "team_id" in data:
        auth = dict(data.get("authorized") or {})
        auth.setdefault("user_id", data.pop("user_id", None))
        auth.setdefault("team_id", data.pop("team_id", None))
        data["authorized"] = {k: v for k, v in auth.items() if v is not None}
    return data
