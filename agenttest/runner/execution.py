"""A run as a whole: the plan scheduled while the console watches, Ctrl-C and SIGTERM turned into a
stop that still lets After hooks run and the report be written, and a bug of ours outside any case kept
for after the report (exit 3)."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass
from typing import Any

from agenttest.agents.caller import Caller
from agenttest.errors import AgentTestError
from agenttest.model import Plan, Ran, SuiteResult
from agenttest.runner import scheduling, suites
from agenttest.runner.scheduling import RunState
from agenttest.runtime import usercalls


@dataclass
class Finished:
    """What a run did: its state, the signal that stopped it, and a bug of ours that ended it."""

    state: RunState
    signalled: signal.Signals | None = None
    failure: BaseException | None = None
    suites: tuple[SuiteResult, ...] = ()  # the suite checks, judged once the cases ran

    def ran(self) -> Ran:
        """What the run did, as deciding its verdicts needs it (``verdicts.outcome.decide``)."""
        state, interrupted = self.state, self.signalled is not None
        saved = sum(state.saved.values())
        return Ran(results=state.ordered(), started_at=state.started_at, duration_ms=(time.perf_counter() - state.started) * 1000,
                   tallies=state.tallies, saved=state.saved, interrupted=interrupted, terminated=self.signalled == signal.SIGTERM,
                   stopped_early=state.stopped_early,
                   not_run=max(0, state.total - len(state.results) - saved) if (state.stopped_early or interrupted) else 0,
                   suites=self.suites)


async def execute(plan: Plan, caller: Caller, watch: scheduling.Listener, signals: Signals, workers: scheduling.Executor | None = None) -> Finished:
    """Run ``plan`` (on the ``workers``, if any); ``watch`` is told of every start, result and run saved by --early-stop."""
    done = Finished(RunState())
    if workers is None:  # cases run here: their clients are made before the first (workers make their own)
        caller.catalog.import_sdks()
        caller.catalog.warm()
    task = signals.task = asyncio.create_task(scheduling.Scheduler(plan, caller, watch, workers).run(done.state))
    try:
        with usercalls.capturing():
            await task
    except asyncio.CancelledError:
        if signals.caught is None:
            raise
    except AgentTestError:  # a failed BeforeAll
        raise
    except Exception as exc:  # a bug of ours outside any case: exit 3, after writing what ran
        done.failure = exc
    done.signalled = signals.caught
    if done.signalled is None and done.failure is None and plan.streamed is None and any(c.suite is not None for c in plan.cases):
        state = done.state
        ran = state.ordered()
        done.suites = await suites.judge(plan, ran, suites.gates_of(plan, ran, state.tallies, state.saved), caller)
    return done


class Signals:
    """Ctrl-C and SIGTERM, from the start of the run until its report is written: the first stops the cases
    (After and AfterAll still run); any signal while the report is written lets the write finish."""

    def __init__(self) -> None:
        self.caught: signal.Signals | None = None
        self.task: asyncio.Task[Any] | None = None
        self._installed: list[signal.Signals] = []

    def _stop(self, sig: signal.Signals) -> None:
        if self.caught is None:
            self.caught = sig
        if self.task is not None:
            self.task.cancel()

    def __enter__(self) -> Signals:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._stop, sig)
                self._installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)
