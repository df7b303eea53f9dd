"""Scheduling: one semaphore for --parallel, per-case deadlines, --runs, --fail-fast, hooks, cancellation."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from . import hooks
from .config import format_timeout
from .errors import AgentError, HookError
from .model import Case, CaseResult
from .runtime import Runtime


@dataclass
class RunState:
    """What the run has done so far; read by the CLI even after Ctrl-C."""

    total: int = 0
    results: dict[int, CaseResult] = field(default_factory=dict)
    stopped_early: bool = False
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=time.time)
    warnings: list[str] = field(default_factory=list)
    before_all_data: Any = None
    after_all_done: bool = False

    def ordered(self) -> list[CaseResult]:
        return [self.results[i] for i in sorted(self.results)]


@dataclass(frozen=True)
class Plan:
    cases: list[Case]
    runs: int = 1
    parallel: int = 1
    timeout: float = 300.0
    fail_fast: bool = False
    before_all: Any = None
    after_all: Any = None
    case_hooks: dict[str, Any] = field(default_factory=dict)  # ref → function


Listener = Callable[[CaseResult], None]
StartListener = Callable[[Case, int], None]


def _case_dict(case: Case) -> dict[str, Any]:
    return dict(case.raw)


async def execute(case: Case, run: int, index: int, plan: Plan, runtime: Runtime) -> CaseResult:
    """Run one case once, hooks included; never raises for the agent's failures."""
    from .reporting.data import result_dict

    start = time.perf_counter()
    if case.skip:
        return CaseResult(case.id, "skipped", case.name, case.raw.get("input"), error=case.skip_reason, run=run, index=index, dynamic=case.dynamic)
    ctx = runtime.context(case, run)
    before_data, warnings = None, []
    if case.before:
        try:
            before_data = hooks.data_of(await hooks.call(plan.case_hooks[case.before], f"before hook {case.before}", ctx, _case_dict(case)))
        except AgentError as exc:
            ms = (time.perf_counter() - start) * 1000
            return CaseResult(case.id, "error", case.name, case.raw.get("input"), error=str(exc), duration_ms=ms, run=run, index=index, dynamic=case.dynamic)
    result = await _run_mode(case, runtime, ctx, case.timeout or plan.timeout)
    result = replace(result, duration_ms=(time.perf_counter() - start) * 1000, run=run, index=index)
    if case.after:
        try:
            await hooks.call(plan.case_hooks[case.after], f"after hook {case.after}", ctx, _case_dict(case), result_dict(result), before_data)
        except AgentError as exc:
            warnings.append(str(exc))
    return replace(result, warnings=tuple(warnings)) if warnings else result


async def _run_mode(case: Case, runtime: Runtime, ctx: Any, deadline: float) -> CaseResult:
    from .modes import dynamic, standard

    if case.script is not None:
        from . import scripttest

        return await scripttest.run(case, runtime, ctx, deadline)
    if case.dynamic:
        return await dynamic.run(case, runtime, ctx, deadline)
    try:
        async with asyncio.timeout(deadline):
            return await standard.run(case, runtime, ctx)
    except TimeoutError:
        return CaseResult(case.id, "timeout", case.name, case.raw.get("input"), error=f"timeout after {format_timeout(deadline)}")
    except AgentError as exc:
        return CaseResult(case.id, "error", case.name, case.raw.get("input"), error=f"agent error: {exc}")


async def run(plan: Plan, runtime: Runtime, state: RunState, on_start: StartListener | None = None, on_result: Listener | None = None) -> None:
    """Run every selected case (× runs), global hooks around them. Results land in ``state``."""
    from .reporting.data import result_dict

    runtime.loop = asyncio.get_running_loop()
    # User code (tools, hooks, scripts, script tests) runs in threads; a script test's thread waits on
    # agent calls whose tools need threads of their own, so the pool must outgrow the parallelism.
    runtime.loop.set_default_executor(ThreadPoolExecutor(max_workers=max(32, 4 * plan.parallel), thread_name_prefix="agent-test"))
    state.total = len(plan.cases) * plan.runs
    ctx = runtime.context()
    if plan.before_all is not None:
        try:
            state.before_all_data = hooks.data_of(await hooks.call(plan.before_all, "BeforeAll", ctx, [_case_dict(c) for c in plan.cases]))
        except AgentError as exc:
            raise HookError(str(exc), hint="no case was run") from None
    try:
        await _schedule(plan, runtime, state, on_start, on_result)
    finally:
        if plan.after_all is not None and not state.after_all_done:
            state.after_all_done = True
            results = [result_dict(r) for r in state.ordered()]
            try:
                await hooks.call(plan.after_all, "AfterAll", ctx, results, state.before_all_data)
            except AgentError as exc:
                state.warnings.append(str(exc))
        await runtime.app.aclose()


async def _schedule(plan: Plan, runtime: Runtime, state: RunState, on_start: StartListener | None, on_result: Listener | None) -> None:
    sem = asyncio.Semaphore(plan.parallel)
    tasks: set[asyncio.Task[None]] = set()

    async def one(case: Case, run_no: int, index: int) -> None:
        try:
            result = await execute(case, run_no, index, plan, runtime)
            state.results[index] = result
            if on_result is not None:
                on_result(result)
            if plan.fail_fast and not result.ok:
                state.stopped_early = True
        finally:
            sem.release()

    try:
        index = 0
        for case in plan.cases:
            for run_no in range(1, plan.runs + 1):
                await sem.acquire()
                if state.stopped_early:
                    sem.release()
                    break
                if on_start is not None:
                    on_start(case, run_no)
                task = asyncio.create_task(one(case, run_no, index))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                index += 1
            if state.stopped_early:
                break
        if tasks:
            await asyncio.gather(*list(tasks))
    except asyncio.CancelledError:
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*list(tasks), return_exceptions=True)
        raise

