"""Yao's ``Process(name, …)`` for Python script tests and hooks (FORMATS §17), as the TypeScript global does it:
``agents.<id>.Stream`` (or ``.Call``) calls an agent — ``Process("agents.expense.Stream", ctx, messages)``, the
design's own script-test example — and ``scripts.<module>.<Fn>`` calls the app's Python function. Yao's other
processes (``models.…``, ``knowledge.…``) have no counterpart here: calling one raises, naming it."""

from __future__ import annotations

import contextvars
from typing import Any

from agenttest.model import Context

current_context: contextvars.ContextVar[Context | None] = contextvars.ContextVar("agenttest_context", default=None)
AGENT_METHODS = ("Stream", "Call")


class NotSupported(RuntimeError):
    """A Yao process with no counterpart in agent-test."""


def Process(name: str, *args: Any) -> Any:  # noqa: N802  Yao's spelling
    """Run the Yao process ``name`` with ``args`` while a case runs."""
    kind, _, rest = str(name).partition(".")
    given = next((a for a in args if isinstance(a, Context)), None)
    ctx = given or current_context.get()
    if kind == "agents":
        agent_id, _, method = rest.rpartition(".")
        if not agent_id or method not in AGENT_METHODS:
            raise ValueError(f'Process("{name}"): an agent process is agents.<agent id>.Stream (or .Call)')
        rest_args = [a for a in args if a is not given]
        messages, options = (rest_args + [None, None])[:2]
        return _context(ctx, name).agent(agent_id).stream(messages, options)
    if kind == "scripts" and rest:
        return _context(ctx, name).caller.script(rest)(*args)
    raise NotSupported(f'Process("{name}"): Yao\'s {kind} processes do not run here; only Process("agents.<id>.Stream", ctx, messages) '
                       'and Process("scripts.<module>.<Fn>", …) do')


def _context(ctx: Context | None, name: str) -> Context:
    if ctx is None or ctx.caller is None:
        raise RuntimeError(f'Process("{name}") can be called only while a case runs')
    return ctx
