"""Scheduling: one semaphore for --parallel, per-case deadlines, runs × connectors (the model matrix),
--early-stop and --fail-fast on gates, budgets, hooks, cancellation.

Capture, don't crash: whatever happens while one case runs — the agent failing, user code raising or
hanging, a bug in agent-test — ends as that case's result; the run goes on."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from agenttest.speed.records import replace
from agenttest.util.values import fresh
from agenttest import modes
from agenttest.runtime import attachments
from agenttest.accounting import budgets
from agenttest.verdicts import gates
from agenttest.runtime import fdcapture, usercalls
from agenttest.agents.caller import Caller
from agenttest.util.durations import format_timeout
from agenttest.accounting.costs import spend_of
from agenttest.errors import CallError, HookError
from agenttest.app.hooks import data_of
from agenttest.model import AssertionResult, Budget, Case, CaseKey, CaseResult, Plan, ResolvedCase, Status
from agenttest.model.exchanges import keeps
from agenttest.reporting.codec import result_dict
from agenttest.runtime import exchanges
from agenttest.runtime.trace import Trace, current_trace
from agenttest.runtime.world import ToolWorld

AFTER_GRACE = 5.0  # seconds an After hook gets when its case ran out of time or was interrupted


@dataclass(kw_only=True)
class RunState:
    """What the run has done so far; read by the session even after Ctrl-C."""

    total: int = 0
    results: Landed = field(default_factory=lambda: Landed())
    stopped_early: bool = False
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=time.time)
    warnings: list[str] = field(default_factory=list)
    before_all_data: Any = None
    after_all_done: bool = False
    tallies: dict[CaseKey, gates.Tally] = field(default_factory=dict)  # each case × connector's runs so far
    saved: dict[CaseKey, int] = field(default_factory=dict)  # runs --early-stop did not start

    def ordered(self) -> list[CaseResult]:
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

    async def run(self, unit: Unit) -> CaseResult: ...

    async def aclose(self) -> None: ...


Listener = Callable[[CaseResult], None]
StartListener = Callable[[ResolvedCase, int], None]  # the case on its connector, its run number


def internal_error(exc: BaseException) -> tuple[str, str]:
    """The text of a bug of ours met inside a case: ``internal error: Type: message`` and the traceback."""
    return f"internal error: {type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))


async def run_case(item: ResolvedCase, run: int, index: int, plan: Plan, caller: Caller) -> CaseResult:
    """Run one case once on its connector, Before and After included. Never raises, except CancelledError
    (Ctrl-C)."""
    return await _run_case(item, run, index, plan, caller)


async def _run_case(item: ResolvedCase, run: int, index: int, plan: Plan, caller: Caller) -> CaseResult:
    case, config = item.case, plan.config
    if case.skip:
        return CaseResult(key=item.key, status="skipped", name=case.name, input=case.input, skip_reason=case.skip_reason, run=run, index=index,
                          description=case.description, tags=case.tags, dynamic=case.dynamic, line=case.location.line or 0)
    trace, capture = Trace(case=case, run=run), usercalls.Capture()
    current_trace.set(trace)
    usercalls.current_capture.set(capture)
    fdcapture.begin(capture)  # what is written below Python while it runs alone is its own
    start = time.perf_counter()
    ctx = caller.context(case, run, connector=item.scheduled or "")
    world = trace.world = ToolWorld(case, ctx.world, config.seed, run, trace.tool_calls)
    policy = attachments.app_policy(caller.catalog.app.root, config.max_attachment)
    budget = item.budget
    env = modes.CaseEnv(caller=caller, agent=plan.agent, connector=item.connector, ctx=ctx, attachments=policy, budget=budget, output_from=case.output_from)
    mode = modes.get(case)
    deadline = case.timeout or config.timeout
    loop = asyncio.get_running_loop()
    ends = loop.time() + deadline
    before_ok = not case.before
    before_data: Any = None
    try:
        try:
            async with asyncio.timeout(deadline) as trace.deadline:
                if case.before:
                    hook = item.before
                    before_data = data_of(await usercalls.call(hook, ctx, fresh(case.raw), what=f"before hook {case.before}"))
                    before_ok = True
                world.begin()
                result = await mode.run(case, env, trace)
        except TimeoutError:
            result = mode.partial(case, trace, "timeout", f"timeout after {format_timeout(deadline)}")
        except CallError as exc:  # the Before hook failed
            result = replace(mode.partial(case, trace, "error", str(exc)), traceback=exc.traceback or "")
        except asyncio.CancelledError:
            if before_ok and case.after:
                try:
                    after = await _after(item, ctx, mode.partial(case, trace, "error", "interrupted"), before_data, AFTER_GRACE)
                except asyncio.CancelledError:  # a second Ctrl-C ends the grace: the hook is left as it is
                    caller.catalog.traffic.notify(_unfinished(case))
                    raise
                if after.status == "timeout":  # its clean-up did not finish: the user must hear of it (console and report)
                    caller.catalog.traffic.notify(_unfinished(case))
            raise
        except Exception as exc:  # a bug of ours, or a plug-in's: this case's error, not the run's end
            message, tb = internal_error(exc)
            result = replace(mode.partial(case, trace, "error", message), traceback=tb)
        described: dict[str, Any] = {"description": case.description, "tags": case.tags} if case.description or case.tags else {}
        result = replace(result, key=item.key, duration_ms=(time.perf_counter() - start) * 1000, run=run, index=index,
                         line=case.location.line or 0, world=world.record(config.report_world == "full"), **described,
                         model_calls=tuple(trace.served), spend=spend_of(trace.by_connector, trace.calls, caller.catalog.prices))
        if budget is not None:
            result = over_budget(result, budget, trace, caller)
        if before_ok and case.after:
            left = ends - loop.time()
            result = await _after(item, ctx, result, before_data, max(left, AFTER_GRACE), caller.catalog.traffic.notify,
                                  deadline if left >= AFTER_GRACE else None)
            if result.status == "timeout":  # the hook's time is the case's too
                result = replace(result, duration_ms=(time.perf_counter() - start) * 1000)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # after everything above: still this case's error
        message, tb = internal_error(exc)
        result = CaseResult(key=item.key, status="error", name=case.name, input=case.input, error=message, traceback=tb, run=run, index=index,
                            dynamic=case.dynamic, line=case.location.line or 0, description=case.description, tags=case.tags)
    extra: dict[str, Any] = {}  # one replace for what only some cases have (a replace costs ~30 µs)
    if result.truncated or any(t.truncated for t in result.turns):  # a reply cut at its token limit: said, and --strict fails it
        extra.update(truncated_marks(result, config.strict))
    if trace.miss:  # --replay had no recording for a call: whatever the mode made of it, the case is that error
        extra.update(status="error", error=trace.miss)
    if trace.notes:
        extra["warnings"] = (*result.warnings, *trace.notes)
    fdcapture.end(capture, capture.ran)
    stdout, stderr = capture.text()
    if stdout or stderr:
        extra.update(stdout=stdout, stderr=stderr)
    if len(trace.served) != len(result.model_calls):  # an After hook's calls, or a result made above
        extra["model_calls"] = tuple(trace.served)
    if trace.exchanges and keeps(config.calls, extra.get("status", result.status)):  # --calls: what each model was sent and answered
        extra["calls"] = exchanges.log_of(trace.exchanges)
    if extra:
        result = replace(result, **extra)
    return result  # as it is: identity is matched on it; what shows it hides the secrets (reporting.watch)


def truncated_marks(result: CaseResult, strict: bool) -> dict[str, Any]:
    """A result one of whose replies was cut at its token limit: marked; under --strict a pass is a failure."""
    out: dict[str, Any] = {"truncated": True}
    if strict and result.status == "passed":
        cut = next((t.label for t in result.turns if t.truncated), "")
        out.update(status="failed", error=f"--strict: the agent's reply{' at ' + cut if cut else ''} was cut at its token limit "
                                          "(finish_reason: length)")
    return out


def over_budget(result: CaseResult, budget: Budget, trace: Trace, caller: Caller) -> CaseResult:
    """A passed or failed run that spent more than its budget fails with the overrun as a failed ``budget``
    assertion (a dynamic case already stopped at the turn that exceeded it)."""
    if result.status not in ("passed", "failed") or result.error.startswith(budgets.PREFIX):
        return result
    spent = budgets.spent(trace, caller.catalog.prices, len(result.turns) or 1, result.duration_ms / 1000)
    exceeded = budgets.overruns(budget, spent)
    unknown = budgets.unmeasured(budget, spent) if not exceeded else None
    if unknown:  # a limit on what nobody counted: neither a pass nor a failure of the agent
        checked = AssertionResult(type="budget", passed=False, message=unknown, expected=budget.limits(), actual=spent.as_dict(), error=True)
        return replace(result, status="error", error=unknown, assertions=(*result.assertions, checked))
    if not exceeded:
        return result
    verdict = AssertionResult(type="budget", passed=False, message=budgets.message(exceeded), expected=budget.limits(), actual=spent.as_dict())
    status: Status = "failed"
    return replace(result, status=status, error=result.error or verdict.message, assertions=(*result.assertions, verdict))


def _unfinished(case: Case) -> str:
    return (f"{case.id}: the after hook {case.after} was still running when its grace after the stop ended ({AFTER_GRACE:g}s, or a "
            "second Ctrl-C) and was left unfinished: what it cleans up may be left behind")


async def _after(item: ResolvedCase, ctx: Any, result: CaseResult, before_data: Any, timeout: float,
                 notify: Callable[[str], None] | None = None, deadline: float | None = None) -> CaseResult:
    """Run the case's After hook; its failure is a warning on the result, its hanging past the case's
    ``deadline`` (what was left of it, AFTER_GRACE at least: ``timeout``) a timeout. With ``notify``, Ctrl-C or
    SIGTERM while it runs gives it AFTER_GRACE to finish (``notify`` hears if it did not), then stops the case
    (an After run because the case was stopped has AFTER_GRACE as its ``timeout`` already)."""
    case, hook = item.case, item.after
    unfinished = (lambda: notify(_unfinished(case))) if notify is not None else None
    try:
        await usercalls.call(hook, ctx, fresh(case.raw), result_dict(result), before_data, what=f"after hook {case.after}", timeout=timeout,
                             grace=AFTER_GRACE if notify is not None else None, unfinished=unfinished)
    except usercalls.Deadline:
        status: Status = "timeout"
        within = (f"the case's deadline ({format_timeout(deadline)})" if deadline is not None
                  else f"{format_timeout(round(timeout, 1))} (an After's least time, when its case has run out of time)")
        said = f"after hook {case.after} did not return within {within}; the case was {result.status} before it"
        return replace(result, status=status, error=f"{result.error}; {said}" if result.error else said)
    except CallError as exc:
        return replace(result, warnings=(*result.warnings, str(exc)))
    return result


async def run(plan: Plan, caller: Caller, state: RunState, on_start: StartListener | None = None, on_result: Listener | None = None,
              on_saved: Callable[[], None] | None = None, executor: Executor | None = None) -> None:
    """Run every selected case (× connectors × runs), global hooks around them, in this process or on the
    ``executor``'s workers (stopped at the end). Results land in ``state``."""
    state.total = plan.total
    if executor is not None:
        state.warnings += executor.warnings
    try:
        await _run(plan, caller, state, on_start, on_result, on_saved, executor.run if executor is not None else None,
                   getattr(executor, "lookahead", 0))
    finally:
        if executor is not None:
            await executor.aclose()


async def _run(plan: Plan, caller: Caller, state: RunState, on_start: StartListener | None, on_result: Listener | None,
               on_saved: Callable[[], None] | None, execute: Callable[[Unit], Awaitable[CaseResult]] | None, lookahead: int = 0) -> None:
    ctx = caller.context()
    if plan.before_all is not None:
        try:
            with usercalls.no_exit():
                returned = await usercalls.call(plan.before_all, ctx, [fresh(c.raw) for c in plan.cases], what="BeforeAll", timeout=plan.config.timeout)
        except CallError as exc:
            raise HookError(str(exc), hint="no case was run") from None
        state.before_all_data = data_of(returned)
    try:
        await _schedule(plan, caller, state, on_start, on_result, on_saved, execute, lookahead)
    finally:
        if plan.after_all is not None and not state.after_all_done:
            state.after_all_done = True
            results = [result_dict(r) for r in state.ordered()]
            try:
                with usercalls.no_exit():
                    await usercalls.call(plan.after_all, ctx, results, state.before_all_data, what="AfterAll", timeout=plan.config.timeout)
            except CallError as exc:
                state.warnings.append(str(exc))


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
    return iter(sorted(made, key=lambda u: (u.run, u.index))) if plan.config.early_stop else made


async def _schedule(plan: Plan, caller: Caller, state: RunState, on_start: StartListener | None, on_result: Listener | None,
                    on_saved: Callable[[], None] | None = None, execute: Callable[[Unit], Awaitable[CaseResult]] | None = None,
                    lookahead: int = 0) -> None:
    """Start units as the semaphore allows. --early-stop skips the runs of a case whose gate is settled
    (runs already in flight finish and count); --fail-fast stops everything once a gate has failed.
    ``lookahead``: units the executor takes beyond --parallel, held until one of its running units ends
    (the next case is there when one ends, not a round trip to the controller later)."""
    config = plan.config
    sem = asyncio.Semaphore(config.parallel + lookahead)
    tasks: set[asyncio.Task[None]] = set()
    state.tallies = {k: gates.Tally(p) for k, p in gates.policies(plan).items()}

    async def one(unit: Unit) -> None:
        try:
            if execute is None:
                result = await run_case(unit.item, unit.run, unit.index, plan, caller)
            elif lookahead:  # the unit may be held: it is said to start when it does
                began = (lambda: on_start(unit.item, unit.run)) if on_start is not None else (lambda: None)
                result = await execute(unit, began)  # type: ignore[call-arg]
            else:
                result = await execute(unit)
            state.results[unit.index] = result
            tally = state.tallies[unit.item.key]
            tally.add(result)
            if on_result is not None:
                on_result(result)
            if config.fail_fast and tally.outcome is False:
                state.stopped_early = True
        finally:
            sem.release()

    try:
        for unit in units(plan):
            await sem.acquire()
            if state.stopped_early:
                sem.release()
                break
            key = unit.item.key
            if config.early_stop and state.tallies[key].outcome is not None:
                state.saved[key] = state.saved.get(key, 0) + 1
                sem.release()
                if on_saved is not None:
                    on_saved()
                continue
            if on_start is not None and not lookahead:
                on_start(unit.item, unit.run)
            task = asyncio.create_task(one(unit))
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
