"""A scenario's run (FORMATS §18, seed format B): its virtual clock, the pack tools and ``eval.next_turn`` the
agent is offered, the user turns released when their ``when`` holds, world events at their virtual times, and
the budgets in steps and virtual time.

The virtual clock starts at ``meta.start_time`` and moves only by rule, never by the wall clock: each model call
of the agent under test takes MODEL_SECONDS and each tool call TOOL_SECONDS (a call's ``vt`` is the clock when it
starts). World events happen once the clock reaches their time: before the tool call that finds the clock past
it, and at the end of the run. The same file and the same replies give the same journal on every machine."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agenttest.errors import CallError, CallLimit
from agenttest.model import ToolCall
from agenttest.model.scenario import PulledTurn, Scenario, ScenarioRecord, WorldEvent, WorldTool, model_name
from agenttest.runtime import cel, packs, usercalls
from agenttest.runtime.journal import TURN_NOT_READY, context

MODEL_SECONDS = 5.0  # a model call of the agent under test, in virtual time
TOOL_SECONDS = 1.0  # a tool call
NEXT_TURN = "eval.next_turn"
BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
NEXT_TURN_TOOL = WorldTool(
    name=NEXT_TURN, op="", description=("Receive the user's next message. Answers {\"status\": \"OK\", \"user\": …} with the "
                                        "message, {\"status\": \"TURN_NOT_READY\"} when the user has nothing to say yet (call "
                                        "again after more work), or {\"status\": \"NO_MORE_TURNS\"}."),
    parameters={"type": "object", "properties": {}})


class BudgetExceeded(CallLimit):
    """``budgets.max_steps`` or ``max_duration`` ran out: the run ends (``BUDGET_EXCEEDED``)."""


def iso(seconds: float) -> str:
    """A virtual time as ISO 8601 in UTC: ``2025-03-14T13:00:08Z``."""
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    text = moment.isoformat(timespec="milliseconds" if seconds % 1 else "seconds")
    return text.replace("+00:00", "Z")


@dataclass(frozen=True)
class PackTool:
    """A tool of the world as the agent's tool loop calls it (the shape of ``agents.agent.Tool``)."""

    name: str
    schema: dict[str, Any]
    call: Callable[[Any, dict[str, Any]], Awaitable[Any]]
    server: str | None = None


class ScenarioRun:
    """One run of a scenario: the clock, the steps taken, the turns delivered and the events due."""

    def __init__(self, scenario: Scenario, state: dict[str, Any], initial: Callable[[], Any], calls: list[ToolCall]):
        self.scenario = scenario
        self.state = state
        self.initial = initial  # the world as the agent found it (JSON), read when the first event happens
        self.calls = calls  # the case's tool calls so far: the journal that ``when`` reads
        self.now = scenario.start
        self.steps = 0
        self.call_vt = scenario.start
        self.delivered: list[dict[str, Any]] = []
        self.happened: list[dict[str, Any]] = []
        self.due: list[tuple[float, int, WorldEvent]] = []
        self.baseline: Any = None  # the world as it would be without the agent: the initial one, plus the events
        self.code = ""
        self.notes: list[str] = []
        self.tools = {t.name: t for t in (*scenario.tools, *scenario.events)}
        self._offered = {model_name(t.name): self._tool(t) for t in scenario.tools}

    # -- the clock and the budgets

    def model_turn(self) -> None:
        """Before each model call of the agent: the budget of virtual time, then the call's time."""
        self._check_duration()
        self.now += MODEL_SECONDS

    def enter(self) -> str:
        """Before each tool call: the budgets, the events now due; the call's virtual time."""
        if self.scenario.max_steps is not None and self.steps >= self.scenario.max_steps:
            self._exceeded(f"max_steps {self.scenario.max_steps} reached: tool call {self.steps + 1} refused")
        self._check_duration()
        self.happen()
        self.steps += 1
        self.call_vt = self.now
        self.now += TOOL_SECONDS
        return iso(self.call_vt)

    def _check_duration(self) -> None:
        limit = self.scenario.max_duration
        if limit is not None and self.now - self.scenario.start > limit:
            self._exceeded(f"max_duration {_seconds(limit)} of virtual time passed (the clock reads {iso(self.now)})")

    def _exceeded(self, why: str) -> None:
        self.code = BUDGET_EXCEEDED
        raise BudgetExceeded(f"{BUDGET_EXCEEDED}: {why}")

    # -- the tools

    def offered(self) -> tuple[dict[str, Any], ...]:
        """The function schemas of the tools the world offers the agent."""
        return tuple(t.schema for t in self._offered.values())

    def tool(self, name: str) -> PackTool | None:
        """The world's tool the model called, by the name it sees (``email__send``) or its dotted name."""
        found = self._offered.get(name)
        if found is None and name in self.tools:
            found = self._offered.get(model_name(name))
        return found

    def canonical(self, name: str) -> str:
        """A called name as the journal writes it: ``email__send`` → ``email.send``."""
        tool = self.scenario.tool(name)
        return tool.name if tool is not None else name

    def _tool(self, tool: WorldTool) -> PackTool:
        seen = model_name(tool.name)
        if tool.name == NEXT_TURN:
            async def next_turn(ctx: Any, arguments: dict[str, Any]) -> Any:
                return self.next_turn()

            return PackTool(seen, packs.schema(tool, seen), next_turn)
        if tool.function is not None:
            fn = tool.function

            async def python(ctx: Any, arguments: dict[str, Any]) -> Any:
                packs.validate(tool, arguments)
                return await usercalls.call(fn, ctx, what=f"tool {tool.name}", kwargs=arguments)

            return PackTool(seen, packs.schema(tool, seen), python)

        async def data(ctx: Any, arguments: dict[str, Any]) -> Any:
            return packs.run(tool, self.state, arguments)

        return PackTool(seen, packs.schema(tool, seen), data)

    # -- the turns

    def next_turn(self) -> dict[str, Any]:
        """``eval.next_turn``: the next turn's message when its ``when`` holds, else TURN_NOT_READY."""
        turns = self.scenario.turns
        number = len(self.delivered) + 1
        if number > len(turns):
            return {"status": "NO_MORE_TURNS"}
        turn = turns[number - 1]
        if turn.when and not self._holds(turn, number):
            return {"status": TURN_NOT_READY, "turn": number}
        self.delivered.append({"turn": number, "vt": iso(self.call_vt), "user": turn.user})
        for event in turn.events:
            at = self.call_vt + event.at if event.relative else event.at
            self.due.append((at, len(self.due), event))
        self.due.sort(key=lambda d: (d[0], d[1]))
        return {"status": "OK", "turn": number, "user": turn.user}

    def _holds(self, turn: PulledTurn, number: int) -> bool:
        assert turn.when is not None
        scope = context(copy.deepcopy(self.state), self.before(), list(self.calls), "", self.canonical)
        try:
            return cel.evaluate(turn.when, scope) is True
        except cel.CelError as exc:
            note = f"turn {number}: its when ({turn.when}) could not be evaluated, taken as not yet: {exc}"
            if note not in self.notes:
                self.notes.append(note)
            return False

    # -- the world's own events

    def happen(self) -> None:
        """Every event whose time the clock has reached, in order."""
        while self.due and self.due[0][0] <= self.now:
            at, _, event = self.due.pop(0)
            self._apply(at, event)

    def _apply(self, at: float, event: WorldEvent) -> None:
        tool = self.tools.get(event.op)
        record = {"op": event.op, "vt": iso(at), "data": event.data}
        if tool is None or not tool.op:
            self.notes.append(f"world event {event.op} at {iso(at)}: no such operation of a data pack")
            return
        if self.baseline is None:
            self.baseline = copy.deepcopy(self.initial())
        try:
            done = packs.run(tool, self.state, copy.deepcopy(event.data))
            mirrored = {**event.data, tool.key: done[tool.key]} if tool.op == "create" and isinstance(done, dict) else event.data
            packs.run(tool, self.baseline, copy.deepcopy(mirrored))
        except CallError as exc:
            self.notes.append(f"world event {event.op} at {iso(at)} failed: {exc}")
            return
        self.happened.append(record)

    def before(self) -> Any:
        """The world the agent's changes are measured from: as it found it, plus what the world did itself."""
        return self.baseline if self.baseline is not None else self.initial()

    def record(self) -> ScenarioRecord:
        return ScenarioRecord(identity=self.scenario.identity, code=self.code, started=iso(self.scenario.start), ended=iso(self.now),
                              steps=self.steps, turns=tuple(self.delivered), events=tuple(self.happened),
                              pending=len(self.scenario.turns) - len(self.delivered))


def _seconds(value: float) -> str:
    from agenttest.util.durations import format_timeout

    return format_timeout(value)
