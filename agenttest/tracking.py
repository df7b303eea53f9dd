"""What one case has done so far — model usage by role, the tool calls of the agent under test, the
mode's own progress — recorded as it happens, so that a case cut short by an error, a timeout or
Ctrl-C keeps its work in the report. The runner sets the current trace for each case it runs."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .model import Completion, ModelCall, Role, ToolCall, Usage


@dataclass
class Trace:
    """Mutable accounting of one run of one case."""

    usage: dict[str, Usage] = field(default_factory=dict)  # by role: agent, simulator, validator, generator
    tool_calls: list[ToolCall] = field(default_factory=list)  # of the agent under test
    model_calls: int = 0
    state: Any = None  # the mode's progress (a dynamic conversation, a script test's ``t``)
    calls: list[ModelCall] = field(default_factory=list)
    deadline: asyncio.Timeout | None = None  # the case's deadline (the runner's), paused while throttled
    _paused: int = 0
    _paused_since: float = 0.0
    _ends: float | None = None

    def add_usage(self, role: str, usage: Usage) -> None:
        self.usage[role] = self.usage.get(role, Usage()) + usage
        self.model_calls += 1

    @property
    def agent_usage(self) -> Usage:
        return self.usage.get("agent", Usage())


current_trace: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("agenttest_trace", default=None)
current_role: contextvars.ContextVar[Role] = contextvars.ContextVar("agenttest_role", default="agent")


def record_usage(usage: Usage) -> None:
    trace = current_trace.get()
    if trace is not None:
        trace.add_usage(current_role.get(), usage)


def record_call(connector: str, completion: Completion, duration_ms: float) -> None:
    """A model call finished: its usage, and which model the endpoint says answered."""
    trace = current_trace.get()
    if trace is not None:
        role = current_role.get()
        trace.add_usage(role, completion.usage)
        trace.calls.append(ModelCall(role, connector, completion.model, duration_ms))


@contextmanager
def deadline_paused() -> Iterator[None]:
    """While agent-test itself holds a call back (waiting for a slot under a rate limit, or out a
    ``Retry-After``), the case's deadline stands still: a case's timeout measures the agent, not the queue."""
    trace = current_trace.get()
    timeout = trace.deadline if trace is not None else None
    if trace is None or timeout is None or (not trace._paused and (timeout.expired() or timeout.when() is None)):
        yield
        return
    loop = asyncio.get_running_loop()
    if not trace._paused:  # the first of possibly several concurrent waits of this case
        trace._paused_since, trace._ends = loop.time(), timeout.when()
        timeout.reschedule(None)
    trace._paused += 1
    try:
        yield
    finally:
        trace._paused -= 1
        if not trace._paused and trace._ends is not None and not timeout.expired():
            timeout.reschedule(trace._ends + (loop.time() - trace._paused_since))


def record_tool_call(call: ToolCall) -> None:
    trace = current_trace.get()
    if trace is not None and current_role.get() == "agent":
        trace.tool_calls.append(call)
