"""The controller's side of the workers (FORMATS §15): starting them while the plan is resolved (each
starts its MCP servers; Ctrl-C and SIGTERM meanwhile stop them all), which worker runs a case (all runs of
one case on one), and what a lost worker means for the cases it held — past its deadline a ``timeout``,
else run once more, alone, on a fresh worker; a case that takes down two workers is ``error``
"worker lost: …".

A worker is anything with ``run(unit) → CaseResult`` that raises ``WorkerLost`` (``local/worker.py``: local
processes; ``ray.py``: Ray actors); ``Pool.run`` is what the scheduler calls for each unit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from agenttest.errors import Problem
from agenttest.model import CaseResult, Plan, Status
from agenttest.model.results import LOST_ONCE
from agenttest.runner.scheduling import Unit
from agenttest.util.durations import format_timeout
from agenttest.speed.records import replace


class WorkerLost(Exception):
    """A worker exited, was killed or stopped answering; ``reason`` says which, as the report does."""

    def __init__(self, reason: str, ran: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.ran = ran  # seconds the unit had run when its worker was lost, when the worker knows (0: it had not started)


class StartFailed(Exception):
    """A worker could not get ready: its MCP servers failed (``problems``), or it could not start (``text``)."""

    def __init__(self, problems: list[Problem], text: str = ""):
        super().__init__(text or f"{len(problems)} problems")
        self.problems = problems
        self.text = text


class Worker(Protocol):
    warnings: list[str]  # what starting it said (its MCP servers)

    @property
    def in_flight(self) -> int: ...

    async def run(self, unit: Unit) -> CaseResult: ...

    async def stop(self) -> None: ...

    def alive(self) -> bool: ...


class Launcher(Protocol):
    plan: Plan | None

    async def __call__(self, slot: int) -> Worker: ...  # slot -1: a worker of its own; raises StartFailed

    async def aclose(self) -> None: ...


class Pool:
    """``size`` workers made by ``launch``; a lost one is replaced when a case next needs its slot."""

    def __init__(self, size: int, launch: Launcher):
        self.size = max(1, size)
        self.launch = launch
        self.slots: list[Worker | None] = [None] * self.size
        self.placed: dict[tuple[str, str], int] = {}  # a case → its slot
        self.warnings: list[str] = []
        self.timeout = 300.0
        self.strict = False
        self._locks = [asyncio.Lock() for _ in range(self.size)]
        self._extra: set[Worker] = set()  # the workers of cases run again alone
        self.lookahead = 0  # units beyond --parallel a worker holds, to start the moment one of its units ends
        # once a worker holding one ahead is lost, the cases it held run again alone in workers of their own, which
        # hold none: from then on each case waits here for one of --parallel places (the extra one is not run)
        self._places: asyncio.Semaphore | None = None
        self._parallel = 1
        self._halting: list[asyncio.Future[Any]] = []  # the workers told to stop (``aclose``), stopping
        self._closing: asyncio.Future[None] | None = None  # the first close's end: the launcher closed once they have

    async def start(self, plan: Plan) -> list[Problem]:
        """Start every worker before the first case; returns the problems their MCP servers met (said once).
        One worker that can hold a unit ahead (a local one) gets one beyond --parallel and runs at most
        --parallel at once itself: with --parallel 1 it no longer waits a round trip to the controller between
        cases. Not with --early-stop or --fail-fast (a unit held ahead would run where it could be saved)."""
        self.launch.plan = plan
        self.timeout = plan.settings.timeout
        self.strict = plan.settings.strict
        config = plan.settings
        self.lookahead = getattr(self.launch, "lookahead", 0) if self.size == 1 and not config.early_stop and not config.fail_fast else 0
        if self.lookahead:
            self.launch.limit = config.parallel  # type: ignore[attr-defined]
        self._parallel = config.parallel
        try:
            started = await asyncio.gather(*(self.launch(i) for i in range(self.size)), return_exceptions=True)
        except asyncio.CancelledError:  # Ctrl-C or SIGTERM while they start (session._plan): none is left behind
            await self.aclose()
            raise
        for i, s in enumerate(started):
            if not isinstance(s, BaseException):
                self.slots[i] = s
        failure = next((s for s in started if isinstance(s, BaseException)), None)
        if failure is None:
            self.warnings = list(dict.fromkeys(w for s in self.slots if s is not None for w in s.warnings))
            return []
        await self.aclose()
        if isinstance(failure, StartFailed):
            return failure.problems or [Problem(f"a worker could not start: {failure.text}")]
        raise failure

    async def _worker(self, slot: int) -> Worker:
        async with self._locks[slot]:
            worker = self.slots[slot]
            if worker is None or not worker.alive():
                self.slots[slot] = None
                self.slots[slot] = worker = await self.launch(slot)
            return worker

    def _slot_for(self, unit: Unit) -> int:
        if self.size == 1:
            return 0
        key = (unit.item.case.file, unit.item.case.id)
        if key not in self.placed:
            loads = [(w.in_flight if w is not None else 0, i) for i, w in enumerate(self.slots)]
            self.placed[key] = min(loads)[1]
        return self.placed[key]

    async def run(self, unit: Unit, begun: Callable[[], None] | None = None) -> CaseResult:
        """The unit's result, whatever happens to the workers that run it. After a loss it runs once more
        alone, in a fresh worker of its own: a case beside the culprit must not go down with it twice.
        ``begun`` (with a lookahead): called once, when the unit starts."""
        loop = asyncio.get_running_loop()
        if begun is not None:
            once = begun

            def begun() -> None:
                nonlocal once
                if once is not None:
                    call, once = once, None
                    call()
        deadline = unit.item.case.timeout or self.timeout
        crash: str | None = None  # why its first worker was lost while it ran
        for attempt in (1, 2):
            places = self._places
            if places is not None:
                await places.acquire()
            try:
                started = loop.time()
                try:
                    worker = await (self._worker(self._slot_for(unit)) if attempt == 1 else self.launch(-1))
                except StartFailed as exc:
                    text = exc.text or "; ".join(str(p) for p in exc.problems)
                    return lost(unit, "error", f"worker lost, and a fresh worker could not start: {text}")
                if attempt == 2:
                    self._extra.add(worker)
                try:
                    result = await (worker.run(unit, begun) if begun is not None else worker.run(unit))  # type: ignore[call-arg]
                    return result if crash is None else survived(result, crash, self.strict)
                except WorkerLost as gone:
                    if self.lookahead and self._places is None:
                        self._places = asyncio.Semaphore(self._parallel)
                    ran = gone.ran if gone.ran is not None else loop.time() - started
                    if ran >= deadline:
                        return lost(unit, "timeout", f"timeout after {format_timeout(deadline)} (worker lost: {gone.reason})", ran)
                    if attempt == 2:
                        return lost(unit, "error", f"worker lost: {gone.reason} (the case took down 2 workers)", ran)
                    if gone.ran != 0:  # it was running (not only held ahead): its crash stays on its result
                        crash = gone.reason
                finally:
                    if attempt == 2:
                        self._extra.discard(worker)
                        await worker.stop()
            finally:
                if places is not None:
                    places.release()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Stop every worker (each stops its MCP servers and whatever runs under it), then close the launcher. The
        pool closes twice — at the end of the run (the scheduler), then as the session closes: the first close tells
        the workers to stop and returns, their stopping (MCP servers, the process ended and reaped: ~10–40 ms) going
        on while the report is decided and written (``stopped`` waits for it: the scheduler, when the run was
        stopped or failed — an After hook cut short is said as the workers stop —, and the session before its
        summary); a later close waits for all of it. Safe to call any number of times."""
        workers = [w for w in [*self.slots, *self._extra] if w is not None]
        self.slots = [None] * self.size
        if workers:
            self._halting.append(asyncio.gather(*(w.stop() for w in workers), return_exceptions=True))
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
            return
        await self._closing
        await self.stopped()  # the workers this close found
        await self.launch.aclose()

    async def _close(self) -> None:
        await self.stopped()
        await self.launch.aclose()  # Ray: leaving begins, on a thread, once the actors are gone

    async def stopped(self) -> None:
        """Until every worker told to stop has stopped (the launcher may still be closing)."""
        waited = 0
        while waited < len(self._halting):
            waited = len(self._halting)
            await asyncio.gather(*self._halting)


def survived(result: CaseResult, crash: str, strict: bool) -> CaseResult:
    """The result of a unit run again after its worker was lost while it ran: the run again stands, with the
    crash said on it — and with --strict, a pass after a crash is an error."""
    note = f"{LOST_ONCE} ({crash}): this is its run again, on a fresh worker"
    if strict and result.status == "passed":
        error = f"worker lost: {crash} (it passed when run again on a fresh worker; --strict fails a case whose worker was lost)"
        return replace(result, status="error", error=error, warnings=(*result.warnings, note))
    return replace(result, warnings=(*result.warnings, note))


def crashes(results: Iterable[CaseResult]) -> list[str]:
    """The run's warnings for the results run again after a crash (said once more in the summary)."""
    hit = [r for r in results if r.warnings and any(w.startswith(LOST_ONCE) for w in r.warnings)]
    if not hit:
        return []
    named = ", ".join(f"'{r.id}'" + (f" run {r.run}" if r.run > 1 else "") for r in hit[:10]) + (f" and {len(hit) - 10} more" if len(hit) > 10 else "")
    reasons = sorted({w[len(LOST_ONCE):].split(":")[0].strip(" ()") for r in hit for w in r.warnings if w.startswith(LOST_ONCE)})
    return [f"{len(hit)} case run(s) took down their worker ({', '.join(reasons)}) and were run again on a fresh worker: {named}"]


def lost(unit: Unit, status: Status, error: str, ran: float = 0.0) -> CaseResult:
    """The result of a unit whose worker was lost (``ran``: seconds it had run, in its last attempt)."""
    case = unit.item.case
    return CaseResult(key=unit.item.key, status=status, name=case.name, input=case.input, error=error, run=unit.run, index=unit.index,
                      dynamic=case.dynamic, duration_ms=round(ran * 1000, 1), line=case.location.line or 0, description=case.description,
                      tags=case.tags)
