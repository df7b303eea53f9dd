"""Scheduling: one semaphore for --parallel, per-case deadlines, --runs, --fail-fast, hooks, cancellation.

Capture, don't crash: whatever happens while one case runs — the agent failing, user code raising or
hanging, a bug in agent-test — ends as that case's result; the run goes on."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from . import modes, usercode
from .caller import Caller
from .config import format_timeout
from .errors import CallError, HookError
from .hooks import data_of
from .model import Case, CaseResult, Plan, Status
from .records import result_dict
from .tracking import Trace, current_trace

AFTER_GRACE = 5.0  # seconds an After hook gets when its case ran out of time or was interrupted


@dataclass
class RunState:
    """What the run has done so far; read by the session even after Ctrl-C."""

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


Listener = Callable[[CaseResult], None]
StartListener = Callable[[Case, int], None]


def internal_error(exc: BaseException) -> tuple[str, str]:
    """The text of a bug of ours met inside a case: ``internal error: Type: message`` and the traceback."""
    return f"internal error: {type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))


async def run_case(case: Case, run: int, index: int, plan: Plan, caller: Caller) -> CaseResult:
    """Run one case once, Before and After included. Never raises, except CancelledError (Ctrl-C)."""
    if case.skip:
        return CaseResult(case.id, "skipped", case.name, case.input, error=case.skip_reason, run=run, index=index,
                          dynamic=case.dynamic, file=case.file)
    trace, capture = Trace(), usercode.Capture()
    current_trace.set(trace)
    usercode.current_capture.set(capture)
    start = time.perf_counter()
    ctx = caller.context(case, run)
    connector = plan.connector or case.options.get("connector")
    env = modes.CaseEnv(caller, plan.agent, connector, ctx)
    mode = modes.get(case)
    deadline = case.timeout or plan.timeout
    loop = asyncio.get_running_loop()
    ends = loop.time() + deadline
    before_ok = not case.before
    before_data: Any = None
    try:
        try:
            async with asyncio.timeout(deadline) as trace.deadline:
                if case.before:
                    hook = plan.hooks[case.before]
                    before_data = data_of(await usercode.call(hook, ctx, dict(case.raw), what=f"before hook {case.before}"))
                    before_ok = True
                result = await mode.run(case, env, trace)
        except TimeoutError:
            result = mode.partial(case, trace, "timeout", f"timeout after {format_timeout(deadline)}")
        except CallError as exc:  # the Before hook failed
            result = replace(mode.partial(case, trace, "error", str(exc)), traceback=exc.traceback or "")
        except asyncio.CancelledError:
            if before_ok and case.after:
                await _after(case, plan, ctx, mode.partial(case, trace, "error", "interrupted"), before_data, AFTER_GRACE)
            raise
        except Exception as exc:  # a bug of ours, or a plug-in's: this case's error, not the run's end
            message, tb = internal_error(exc)
            result = replace(mode.partial(case, trace, "error", message), traceback=tb)
        result = replace(result, duration_ms=(time.perf_counter() - start) * 1000, run=run, index=index, file=case.file)
        if before_ok and case.after:
            result = await _after(case, plan, ctx, result, before_data, max(ends - loop.time(), AFTER_GRACE))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # after everything above: still this case's error
        message, tb = internal_error(exc)
        result = CaseResult(case.id, "error", case.name, case.input, error=message, traceback=tb, run=run, index=index,
                            dynamic=case.dynamic, file=case.file)
    stdout, stderr = capture.text()
    if trace.calls:
        result = replace(result, model_calls=tuple(trace.calls))
    return replace(result, stdout=stdout, stderr=stderr) if stdout or stderr else result


async def _after(case: Case, plan: Plan, ctx: Any, result: CaseResult, before_data: Any, timeout: float) -> CaseResult:
    """Run the case's After hook; its failure is a warning on the result, its hanging a timeout."""
    hook = plan.hooks[case.after]  # type: ignore[index]
    try:
        await usercode.call(hook, ctx, dict(case.raw), result_dict(result), before_data, what=f"after hook {case.after}", timeout=timeout)
    except usercode.Deadline as exc:
        status: Status = "timeout"
        return replace(result, status=status, error=result.error or str(exc), warnings=(*result.warnings, str(exc)))
    except CallError as exc:
        return replace(result, warnings=(*result.warnings, str(exc)))
    return result


async def run(plan: Plan, caller: Caller, state: RunState, on_start: StartListener | None = None, on_result: Listener | None = None) -> None:
    """Run every selected case (× runs), global hooks around them. Results land in ``state``."""
    state.total = len(plan.cases) * plan.runs
    ctx = caller.context()
    if plan.before_all is not None:
        try:
            returned = await usercode.call(plan.before_all, ctx, [dict(c.raw) for c in plan.cases], what="BeforeAll", timeout=plan.timeout)
        except CallError as exc:
            raise HookError(str(exc), hint="no case was run") from None
        state.before_all_data = data_of(returned)
    try:
        await _schedule(plan, caller, state, on_start, on_result)
    finally:
        if plan.after_all is not None and not state.after_all_done:
            state.after_all_done = True
            results = [result_dict(r) for r in state.ordered()]
            try:
                await usercode.call(plan.after_all, ctx, results, state.before_all_data, what="AfterAll", timeout=max(plan.timeout, AFTER_GRACE))
            except CallError as exc:
                state.warnings.append(str(exc))


async def _schedule(plan: Plan, caller: Caller, state: RunState, on_start: StartListener | None, on_result: Listener | None) -> None:
    sem = asyncio.Semaphore(plan.parallel)
    tasks: set[asyncio.Task[None]] = set()

    async def one(case: Case, run_no: int, index: int) -> None:
        try:
            result = await run_case(case, run_no, index, plan, caller)
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
