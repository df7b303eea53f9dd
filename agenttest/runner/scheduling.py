"""Scheduling: the plan's units (case × connector × run) started as one semaphore for --parallel allows, in this
process or on the workers, between BeforeAll and AfterAll; --early-stop and --fail-fast on gates; cancellation.
A ``Scheduler`` holds what that takes — the plan, the caller, the executor, the listener — and a ``Listener``
(the console and the event stream) hears of every start, result and run saved.

Capture, don't crash: whatever happens while one case runs ends as that case's result (``runner/case.py``);
the run goes on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agenttest.agents.caller import Caller
from agenttest.app.hooks import data_of
from agenttest.errors import CallError, HookError
from agenttest.model import CaseKey, CaseResult, Plan, ResolvedCase
from agenttest.reporting.codec import result_dict
from agenttest.runner.case import run_case
from agenttest.runtime import usercalls
from agenttest.util.spool import Spooled
from agenttest.util.values import fresh
from agenttest.verdicts import gates


@dataclass(kw_only=True)
class RunState:
    """What the run has done so far; read by the session even after Ctrl-C."""

    total: int = 0
    results: Landed | Spooled[CaseResult] = field(default_factory=lambda: Landed())  # a streamed run's on disk
    stopped_early: bool = False
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=time.time)
    warnings: list[str] = field(default_factory=list)
    before_all_data: Any = None
    after_all_done: bool = False
    tallies: dict[CaseKey, gates.Tally] = field(default_factory=dict)  # each case × connector's runs so far
    saved: dict[CaseKey, int] = field(default_factory=dict)  # runs --early-stop did not start

    def ordered(self) -> Sequence[CaseResult]:
        return self.results.ordered()


class Landed:
    """The results so far by their unit's index: a list with a hole for each unit not (yet) run — a dict of
    100,000 results held their 100,000 indexes too."""

    def __init__(self) -> None:
        self._slots: list[CaseResult | None] = []
        self._count = 0

    def __setitem__(self, index: int, result: CaseResult) -> None:
        slots = self._slots
        if index >= len(slots):
            slots.extend([None] * (index + 1 - len(slots)))
        if slots[index] is None:
            self._count += 1
        slots[index] = result

    def __getitem__(self, index: int) -> CaseResult:
        got = self._slots[index] if 0 <= index < len(self._slots) else None
        if got is None:
            raise KeyError(index)
        return got

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and 0 <= index < len(self._slots) and self._slots[index] is not None

    def __len__(self) -> int:
        return self._count

    def ordered(self) -> list[CaseResult]:
        """The results in the units' order."""
        return [r for r in self._slots if r is not None]


class Executor(Protocol):
    """Where units run when not in this process: the workers (``runner/controller.py``'s Pool), started
    while the plan was resolved (they start the MCP servers)."""

    warnings: list[str]
    lookahead: int  # units it takes beyond --parallel (held until one of its running units ends)

    async def run(self, unit: Unit, begun: Callable[[], None] | None = None) -> CaseResult:
        """``unit``'s result; ``begun`` is called when it starts (a unit held ahead starts when one ends)."""

    async def aclose(self) -> None: ...

    async def stopped(self) -> None: ...


class Listener(Protocol):
    """Who watches a run (``reporting.watch.Watch``: the console and the event stream)."""

    def started(self, item: ResolvedCase, run: int) -> None:
        """A unit began: the case on its connector, its run number."""

    def finished(self, result: CaseResult) -> None:
        """A unit's result landed."""

    def saved(self) -> None:
        """--early-stop did not start a run: its gate was settled."""


class Unheard:
    """A listener that hears nothing (a library caller's run)."""

    def started(self, item: ResolvedCase, run: int) -> None:
        pass

    def finished(self, result: CaseResult) -> None:
        pass

    def saved(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Unit:
    """One scheduled run: a case on a connector, run number ``run``; ``index`` orders the report."""

    item: ResolvedCase
    run: int
    index: int


def units(plan: Plan) -> Iterator[Unit]:
    """Case by case, connector by connector, run by run (the report's order), made as they are taken (100,000
    units made at once would be held until the last starts). With --early-stop they start round by round —
    every case's run 1, then every run 2, … — so that a case's next run starts, as a rule, after its last
    one finished and the verdict it may have settled is known."""
    made = (Unit(item, run, i) for i, (item, run) in enumerate((item, run) for item in plan.items for run in range(1, item.runs + 1)))
    return iter(sorted(made, key=lambda u: (u.run, u.index))) if plan.settings.early_stop else made


class Scheduler:
    """Runs a plan: BeforeAll, every unit as the semaphore allows (in this process, or on the ``executor``'s
    workers, stopped at the end), AfterAll; results land in the run's ``RunState``."""

    def __init__(self, plan: Plan, caller: Caller, listener: Listener | None = None, executor: Executor | None = None):
        self.plan, self.caller, self.executor = plan, caller, executor
        self.listener: Listener = listener or Unheard()
        self.lookahead = getattr(executor, "lookahead", 0) if executor is not None else 0  # units held ahead on a worker

    async def run(self, state: RunState) -> None:
        """Run every selected case (× connectors × runs), the global hooks around them."""
        state.total = self.plan.total
        if self.plan.streamed is not None:  # results spooled to disk as they land (inputs.streaming)
            state.results = Spooled()
        if self.executor is not None:
            state.warnings += self.executor.warnings
        ended = False
        try:
            ctx = self.caller.context()
            await self._before_all(state, ctx)
            try:
                await self._schedule(state)
            finally:
                await self._after_all(state, ctx)
            ended = True
        finally:
            if self.executor is not None:
                await self.executor.aclose()  # the workers told to stop: they stop while the report is written —
                if not ended:  # unless the run was stopped (Ctrl-C, SIGTERM) or failed: what they say as they stop
                    await self.executor.stopped()  # (an After hook cut short) is the report's

    async def _before_all(self, state: RunState, ctx: Any) -> None:
        plan = self.plan
        if plan.before_all is None:
            return
        try:
            with usercalls.no_exit():
                returned = await usercalls.call(plan.before_all, ctx, [fresh(c.raw) for c in plan.cases], what="BeforeAll",
                                                timeout=plan.settings.timeout)
        except CallError as exc:
            raise HookError(str(exc), hint="no case was run") from None
        state.before_all_data = data_of(returned)

    async def _after_all(self, state: RunState, ctx: Any) -> None:
        plan = self.plan
        if plan.after_all is None or state.after_all_done:
            return
        state.after_all_done = True
        results = [result_dict(r) for r in state.ordered()]
        try:
            with usercalls.no_exit():
                await usercalls.call(plan.after_all, ctx, results, state.before_all_data, what="AfterAll", timeout=plan.settings.timeout)
        except CallError as exc:
            state.warnings.append(str(exc))

    async def _one(self, unit: Unit, state: RunState, sem: asyncio.Semaphore) -> None:
        """One unit to its result, which lands in ``state``, is heard, and counts toward its gate."""
        try:
            if self.executor is None:
                result = await run_case(unit.item, unit.run, unit.index, self.plan, self.caller)
            elif self.lookahead:  # the unit may be held: it is said to start when it does
                result = await self.executor.run(unit, lambda: self.listener.started(unit.item, unit.run))
            else:
                result = await self.executor.run(unit)
            state.results[unit.index] = result
            key = unit.item.key
            tally = state.tallies[key]
            tally.add(result)
            if self.plan.streamed is not None and tally.landed == tally.policy.planned:  # a streamed run holds no finished case
                del state.tallies[key]
            self.listener.finished(result)
            if self.plan.settings.fail_fast and tally.outcome is False:
                state.stopped_early = True
        finally:
            sem.release()

    async def _schedule(self, state: RunState) -> None:
        """Start units as the semaphore allows. --early-stop skips the runs of a case whose gate is settled
        (runs already in flight finish and count); --fail-fast stops everything once a gate has failed. Units the
        executor holds ahead (``lookahead``) wait on a worker until one of its running units ends: the next case
        is there when one ends, not a round trip to the controller later."""
        settings = self.plan.settings
        sem = asyncio.Semaphore(settings.parallel + self.lookahead)
        tasks: set[asyncio.Task[None]] = set()
        streamed = self.plan.streamed is not None
        state.tallies = {} if streamed else {k: gates.Tally(p) for k, p in gates.policies(self.plan).items()}
        shared: dict[tuple[int, float], gates.Policy] = {}
        try:
            for unit in units(self.plan):
                if streamed and unit.run == 1:  # its tally made as it starts (and dropped once its runs landed)
                    held = (unit.item.runs, unit.item.min_pass_rate)
                    state.tallies[unit.item.key] = gates.Tally(shared.get(held) or shared.setdefault(held, gates.Policy(*held)))
                await sem.acquire()
                if state.stopped_early:
                    sem.release()
                    break
                key = unit.item.key
                if settings.early_stop and state.tallies[key].outcome is not None:
                    state.saved[key] = state.saved.get(key, 0) + 1
                    sem.release()
                    self.listener.saved()
                    continue
                if not self.lookahead:
                    self.listener.started(unit.item, unit.run)
                task = asyncio.create_task(self._one(unit, state, sem))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*list(tasks))
        except asyncio.CancelledError:
            # Ctrl-C, SIGTERM: every unit is stopped once. The gather above ends at the first unit that ends cancelled
            # while the others are still stopping (a worker's case waits for its After hook): one asked already is
            # not asked again, which would cut that wait short — and the After hook with it, the worker stopped under it
            for task in list(tasks):
                if not task.cancelling():
                    task.cancel()
            await asyncio.gather(*list(tasks), return_exceptions=True)
            raise
