"""One case run once on its connector: Before → mode → After, each phase through one primitive (``capture``)
that turns what it raised into data, under the case's deadline; the result made by the mode gets the case's
identity, timing, world and spend once, its budget checked, and what user code printed. Capture, don't crash:
whatever happens ends as this case's result — only a stop (Ctrl-C, SIGTERM) goes through, after the After hook
had its grace."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from agenttest.accounting import budgets
from agenttest.accounting.costs import spend_of
from agenttest.agents.caller import Caller
from agenttest.app.hooks import data_of
from agenttest.errors import CallError
from agenttest.model import AssertionResult, Budget, Case, CaseResult, Plan, ResolvedCase, Status
from agenttest.model.exchanges import keeps
from agenttest.modes import CaseEnv
from agenttest.reporting.codec import result_dict
from agenttest.runner.capture import Captured, capture, internal_error
from agenttest.runtime import exchanges, fdcapture, processes, usercalls
from agenttest.runtime.trace import Trace, current_trace
from agenttest.runtime.world import ToolWorld
from agenttest.speed.records import replace
from agenttest.util.durations import format_timeout
from agenttest.util.values import fresh

AFTER_GRACE = 5.0  # seconds an After hook gets when its case ran out of time or was interrupted
EXTERNAL_WRITES = "write_policy external: the case may create or change external records; run it with --allow-external-writes"


async def run_case(item: ResolvedCase, run: int, index: int, plan: Plan, caller: Caller) -> CaseResult:
    """Run one case once on its connector, Before and After included. Never raises, except CancelledError."""
    case = item.case
    if case.skip or (case.external_writes and not plan.settings.allow_external_writes):
        why = case.skip_reason if case.skip else EXTERNAL_WRITES
        return CaseResult(key=item.key, status="skipped", name=case.name, input=case.input, skip_reason=why, run=run, index=index,
                          description=case.description, tags=case.tags, dynamic=case.dynamic, line=case.location.line or 0,
                          metadata=case.metadata or None)
    try:
        one = CaseRun(item, run, plan, caller)
    except Exception as exc:  # a bug of ours setting the run up: this case's error, not a run that waits for it forever
        return _errored(item, run, index, exc)
    try:
        result = one.stamped(await one.before_and_mode(), index)
        if item.budget is not None:
            result = over_budget(result, item.budget, one.trace, caller)
        if one.before_ok and item.case.after:
            result = await one.after(result)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # after everything above: still this case's error
        result = _errored(item, run, index, exc)
    return one.settled(result)


def _errored(item: ResolvedCase, run: int, index: int, exc: Exception) -> CaseResult:
    message, tb = internal_error(exc)
    case = item.case
    return CaseResult(key=item.key, status="error", name=case.name, input=case.input, error=message, traceback=tb, run=run, index=index,
                      dynamic=case.dynamic, line=case.location.line or 0, description=case.description, tags=case.tags)


class CaseRun:
    """What one run of a case holds while it runs: its trace, its user's context, its tool world, what user code
    prints, and the Before hook's data."""

    def __init__(self, item: ResolvedCase, run: int, plan: Plan, caller: Caller):
        case = item.case
        self.item, self.run, self.caller = item, run, caller
        self.trace, self.printed = Trace(case=case, run=run), usercalls.Capture()
        current_trace.set(self.trace)
        usercalls.current_capture.set(self.printed)
        self.start = time.perf_counter()
        self.ctx = caller.context(case, run, connector=item.scheduled or "")
        processes.current_context.set(self.ctx)  # Process("scripts.…") in the case's Python hooks and tests
        self.world = self.trace.world = ToolWorld(case, self.ctx.world, plan.settings.seed, run, self.trace.tool_calls, counters=self.ctx.metrics)
        self.settings = plan.settings
        self.env = CaseEnv(caller=caller, agent=plan.agent, connector=item.connector, ctx=self.ctx, attachments=item.attachments,
                           budget=item.budget, output_from=case.output_from)
        self.ends = asyncio.get_running_loop().time() + item.deadline
        self.before_ok = not case.before  # the After hook runs only after a Before that returned
        self.before_data: Any = None
        fdcapture.begin(self.printed)  # what is written below Python while it runs alone is its own (last: nothing after it raises)

    async def before_and_mode(self) -> CaseResult:
        """The Before hook, then the mode, under the case's deadline: the mode's result, or the partial one of a
        run cut short (its deadline, a hook's failure, a bug)."""
        item, case, mode = self.item, self.item.case, self.item.mode
        try:
            async with asyncio.timeout(item.deadline) as self.trace.deadline:
                if case.before:
                    before = await capture("before", self._before)
                    if not before.ok:
                        return self._cut(before)
                    self.before_ok = True
                self.world.begin()
                ran: Captured[CaseResult] = await capture("mode", lambda: mode.run(case, self.env, self.trace))
        except TimeoutError:
            return self._timed_out()
        except asyncio.CancelledError:
            await self._stopped()
            raise
        finally:  # the deadline holds this task, whose context holds the trace: a cycle per case the collector had to find
            self.trace.deadline = None
        return ran.value if ran.ok else self._cut(ran)  # type: ignore[return-value]

    async def _before(self) -> None:
        case = self.item.case
        self.before_data = data_of(await usercalls.call(self.item.before, self.ctx, fresh(case.raw), what=f"before hook {case.before}"))

    def _cut(self, phase: Captured[Any]) -> CaseResult:
        """The partial result of a phase that raised: a timeout, a hook's failure (with its traceback), a bug of ours."""
        exc, mode, case = phase.raised, self.item.mode, self.item.case
        if isinstance(exc, TimeoutError):
            return self._timed_out()
        if isinstance(exc, CallError):
            return replace(mode.partial(case, self.trace, "error", str(exc)), traceback=exc.traceback or "")
        message, tb = internal_error(exc)  # type: ignore[arg-type]
        return replace(mode.partial(case, self.trace, "error", message), traceback=tb)

    def _timed_out(self) -> CaseResult:
        return self.item.mode.partial(self.item.case, self.trace, "timeout", f"timeout after {format_timeout(self.item.deadline)}")  # type: ignore[no-any-return]

    async def _stopped(self) -> None:
        """Ctrl-C or SIGTERM: the After hook (of a case whose Before returned) still runs, within AFTER_GRACE; one
        left unfinished is said (on the console and in the report)."""
        if not (self.before_ok and self.item.case.after):
            return
        notify = self.caller.catalog.traffic.notify
        try:
            after = await _after(self.item, self.ctx, self.item.mode.partial(self.item.case, self.trace, "error", "interrupted"),
                                 self.before_data, AFTER_GRACE)
        except asyncio.CancelledError:  # a second Ctrl-C ends the grace: the hook is left as it is
            notify(_unfinished(self.item.case))
            raise
        if after.status == "timeout":  # its clean-up did not finish: the user must hear of it
            notify(_unfinished(self.item.case))

    def stamped(self, result: CaseResult, index: int) -> CaseResult:
        """The mode's result with the case's identity (the plan's key), timing, tool world and spend: one copy."""
        case, trace = self.item.case, self.trace
        described: dict[str, Any] = {"description": case.description, "tags": case.tags} if case.description or case.tags else {}
        if case.metadata:
            described["metadata"] = case.metadata
        return replace(result, key=self.item.key, duration_ms=(time.perf_counter() - self.start) * 1000, run=self.run, index=index,
                       line=case.location.line or 0, world=self.world.record(self.settings.full_world), **described,
                       model_calls=tuple(trace.served), spend=spend_of(trace.by_connector, trace.calls, self.caller.catalog.prices),
                       checked_nothing=self.item.checks_nothing)

    async def after(self, result: CaseResult) -> CaseResult:
        """The After hook, with what is left of the case's deadline (AFTER_GRACE at least); a Ctrl-C meanwhile
        gives it AFTER_GRACE to finish."""
        left = self.ends - asyncio.get_running_loop().time()
        result = await _after(self.item, self.ctx, result, self.before_data, max(left, AFTER_GRACE), self.caller.catalog.traffic.notify,
                              self.item.deadline if left >= AFTER_GRACE else None)
        if result.status == "timeout":  # the hook's time is the case's too
            result = replace(result, duration_ms=(time.perf_counter() - self.start) * 1000)
        return result

    def settled(self, result: CaseResult) -> CaseResult:
        """What only some runs have, in one copy: a replay miss (the case's error), the trace's notes, what user
        code printed, the model calls of an After hook."""
        trace = self.trace
        extra: dict[str, Any] = {}
        if result.truncated or any(t.truncated for t in result.turns):  # a reply cut at its token limit: said, and --strict fails it
            extra.update(truncated_marks(result, self.settings.strict))
        if trace.miss:  # --replay had no recording for a call: whatever the mode made of it, the case is that error
            extra.update(status="error", error=trace.miss)
        if trace.notes:
            extra["warnings"] = (*result.warnings, *trace.notes)
        fdcapture.end(self.printed, self.printed.ran)
        if self.item.checks_nothing:
            if not result.checked_nothing:  # a result stamped carries it already; one made above (an error of ours) not
                extra["checked_nothing"] = True
            if self.settings.strict and result.status == "passed" and "status" not in extra:
                extra.update(status="failed", error=UNCHECKED)
        stdout, stderr = self.printed.text()
        if stdout or stderr:
            extra.update(stdout=stdout, stderr=stderr)
        if len(trace.served) != len(result.model_calls):  # an After hook's calls, or a result made above
            extra["model_calls"] = tuple(trace.served)
        if trace.exchanges and keeps(self.settings.calls, extra.get("status", result.status)):  # --calls: what each model was sent and answered
            extra["calls"] = exchanges.log_of(trace.exchanges)
        return replace(result, **extra) if extra else result  # as it is: identity is matched on it; what shows it hides the secrets


UNCHECKED = ("checks nothing but that the agent answered (no assertion, expected, required checkpoint or budget), "
             "which --strict does not pass: add assertions to the case")


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
