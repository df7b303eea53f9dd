"""What one case has done so far — model usage by role, the tool calls of the agent under test, the
mode's own progress, its tool world — recorded as it happens, so that a case cut short by an error, a timeout or
Ctrl-C keeps its work in the report. The runner sets the current trace for each case it runs."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agenttest.model import Case, Completion, ModelCall, Role, ToolCall, Usage


@dataclass(kw_only=True)
class Trace:
    """Mutable accounting of one run of one case."""

    usage: dict[str, Usage] = field(default_factory=dict)  # by role: agent, simulator, validator, generator
    tool_calls: list[ToolCall] = field(default_factory=list)  # of the agent under test
    model_calls: int = 0
    state: Any = None  # the mode's progress (a dynamic conversation, a script test's ``t``)
    world: Any = None  # the case's tool world (world.ToolWorld): state, mocks, faults
    by_connector: dict[tuple[str, str], Usage] = field(default_factory=dict)  # (role, connector) → usage, for costs
    calls: dict[tuple[str, str], int] = field(default_factory=dict)  # (role, connector) → model calls
    served: list[ModelCall] = field(default_factory=list)  # every model call: who asked, through what, which model answered
    started: float = field(default_factory=time.perf_counter)
    case: Case | None = None  # which case and run this is (cassettes file calls under it)
    run: int = 1
    turn: int = 1  # the conversation's turn now (dynamic mode advances it)
    miss: str = ""  # the first call that --replay had no recording for: the case's error
    notes: list[str] = field(default_factory=list)  # said under the case as warnings (e.g. a replay that ended early)
    exchanges: list[Any] = field(default_factory=list)  # --calls: each model call as it was made (runtime/exchanges.Pending)
    volatile: dict[str, str] = field(default_factory=dict)  # prompt values that change every run → their placeholders
    deadline: asyncio.Timeout | None = None  # the case's deadline (the runner's), paused while throttled
    _paused: int = 0
    _paused_since: float = 0.0
    _ends: float | None = None

    def add_usage(self, role: str, usage: Usage, connector: str = "") -> None:
        before = self.usage.get(role)  # a first call's usage is kept as it is (a Usage is immutable)
        self.usage[role] = usage if before is None else before + usage
        self.model_calls += 1
        key = (role, connector)
        before = self.by_connector.get(key)
        self.by_connector[key] = usage if before is None else before + usage
        self.calls[key] = self.calls.get(key, 0) + 1

    @property
    def agent_usage(self) -> Usage:
        return self.usage.get("agent", Usage())


current_trace: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("agenttest_trace", default=None)
current_role: contextvars.ContextVar[Role] = contextvars.ContextVar("agenttest_role", default="agent")


def record_call(connector: str, completion: Completion, duration_ms: float) -> None:
    """A model call finished: its usage under the current role and the connector that answered, and which
    model the endpoint says answered."""
    trace = current_trace.get()
    if trace is not None:
        role = current_role.get()
        trace.add_usage(role, completion.usage, connector)
        # to a tenth of a millisecond, as every report writes it: 100,000 calls of a mock or a cassette then repeat a
        # handful of values, and arrive in the controller as one object each (runner/local/wire.py)
        trace.served.append(ModelCall(role, connector, completion.model, round(duration_ms, 1)))


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


def note(text: str) -> None:
    """Say ``text`` under the current case as a warning (once per case)."""
    trace = current_trace.get()
    if trace is not None and text not in trace.notes:
        trace.notes.append(text)


def record_tool_call(call: ToolCall) -> None:
    trace = current_trace.get()
    if trace is not None and current_role.get() == "agent":
        trace.tool_calls.append(call)


def tool_world() -> Any:
    """The tool world that the current call's tools act in: the case's, for the agent under test only
    (validators, simulators and generators call their tools for real)."""
    trace = current_trace.get()
    return trace.world if trace is not None and current_role.get() == "agent" else None


VOLATILE_MIN = 8  # shorter values ("10" for $SYS.HOUR) would be found in unrelated text


def note_volatile(value: str, placeholder: str) -> None:
    """A prompt variable's value that differs from run to run (``$SYS.DATETIME``, ``$CTX.CHAT_ID``):
    cassettes record and look up requests with the placeholder in its place."""
    trace = current_trace.get()
    if trace is not None and len(value) >= VOLATILE_MIN and any(ch.isdigit() for ch in value):  # dates, times, ids
        trace.volatile[value] = placeholder
