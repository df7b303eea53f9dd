"""The controller's side of the workers (FORMATS §15): which worker runs a case (all runs of one case on
one), and what a lost worker means for the cases it held — past its deadline a ``timeout``, else run once
more on a fresh worker, and a case that takes down two workers is ``error`` "worker lost: …".

A worker is anything with ``run(unit) → CaseResult`` that raises ``WorkerLost`` (``workers.py``: local
processes; ``ray.py``: Ray actors); ``Pool.run`` is what the scheduler calls for each unit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from agenttest.agents.caller import Caller
from agenttest.errors import AgentTestError, InputError, Problem
from agenttest.model import CaseResult, Plan
from agenttest.runner.scheduling import Unit, connector_label
from agenttest.util.durations import format_timeout


class WorkerLost(Exception):
    """A worker exited, was killed or stopped answering; ``reason`` says which, as the report does."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Worker(Protocol):
    in_flight: int
    warnings: list[str]  # what starting it said (its MCP servers)

    async def run(self, unit: Unit) -> CaseResult: ...

    async def stop(self) -> None: ...

    def alive(self) -> bool: ...


class StartFailed(Exception):
    """A worker could not get ready: its MCP servers failed (``problems``), or it could not start."""

    def __init__(self, problems: list[Problem], text: str = ""):
        super().__init__(text or f"{len(problems)} problems")
        self.problems = problems
        self.text = text


Launch = Callable[[int], Awaitable[Worker]]  # slot number (-1: a worker of its own) → a ready worker, or StartFailed


class Pool:
    """``size`` workers made by ``launch``; a lost one is replaced when a case next needs its slot."""

    def __init__(self, plan: Plan, caller: Caller, size: int, launch: Launch, after: Callable[[], Awaitable[None]] | None = None):
        self.plan = plan
        self.after = after  # what ends the executor itself (Ray: the connection)
        self.caller = caller
        self.size = max(1, size)
        self.launch = launch
        self.slots: list[Worker | None] = [None] * self.size
        self.placed: dict[tuple[str, str], int] = {}  # a case → its slot
        self.warnings: list[str] = []
        self._locks = [asyncio.Lock() for _ in range(self.size)]

    async def start(self) -> None:
        """Every worker ready before the first case (a server that cannot start is exit 2, said once)."""
        started = await asyncio.gather(*(self.launch(i) for i in range(self.size)), return_exceptions=True)
        failure = next((s for s in started if isinstance(s, BaseException)), None)
        for i, s in enumerate(started):
            if not isinstance(s, BaseException):
                self.slots[i] = s
        if failure is None:
            self.warnings = list(dict.fromkeys(w for s in self.slots if s is not None for w in s.warnings))
            return
        await self.aclose()
        if isinstance(failure, StartFailed):
            if failure.problems:
                raise InputError(failure.problems)
            raise AgentTestError(f"a worker could not start: {failure.text}")
        raise failure

    async def _worker(self, slot: int) -> Worker:
        async with self._locks[slot]:
            worker = self.slots[slot]
            if worker is None or not worker.alive():
                self.slots[slot] = None
                self.slots[slot] = worker = await self.launch(slot)
            return worker

    def _slot_for(self, unit: Unit) -> int:
        key = (unit.case.file, unit.case.id)
        if key not in self.placed:
            loads = [(w.in_flight if w is not None else 0, i) for i, w in enumerate(self.slots)]
            self.placed[key] = min(loads)[1]
        return self.placed[key]

    async def run(self, unit: Unit) -> CaseResult:
        """The unit's result, whatever happens to the workers that run it. After a loss it runs once more
        alone, in a fresh worker of its own: a case beside the culprit must not go down with it twice."""
        loop = asyncio.get_running_loop()
        deadline = unit.case.timeout or self.plan.timeout
        for attempt in (1, 2):
            started = loop.time()
            try:
                worker = await (self._worker(self._slot_for(unit)) if attempt == 1 else self.launch(-1))
            except StartFailed as exc:
                text = exc.text or "; ".join(str(p) for p in exc.problems)
                return self._lost(unit, "error", f"worker lost, and a fresh worker could not start: {text}")
            try:
                return await worker.run(unit)
            except WorkerLost as lost:
                if loop.time() - started >= deadline:
                    return self._lost(unit, "timeout", f"timeout after {format_timeout(deadline)} (worker lost: {lost.reason})")
                if attempt == 2:
                    return self._lost(unit, "error", f"worker lost: {lost.reason} (the case took down 2 workers)")
            finally:
                if attempt == 2:
                    await worker.stop()
        raise AssertionError("unreachable")

    def _lost(self, unit: Unit, status: str, error: str) -> CaseResult:
        case = unit.case
        return CaseResult(case.id, status, case.name, case.input, error=error, run=unit.run, index=unit.index,  # type: ignore[arg-type]
                            dynamic=case.dynamic, file=case.file, line=case.location.line or 0,
                            description=case.description, tags=case.tags,
                            connector=connector_label(self.plan, self.caller, case, unit.connector or self.plan.connector))

    async def aclose(self) -> None:
        """Stop every worker (each stops its MCP servers), then kill what is left of what the run started."""
        try:
            await asyncio.gather(*(w.stop() for w in self.slots if w is not None), return_exceptions=True)
        finally:
            if self.after is not None:
                await self.after()
