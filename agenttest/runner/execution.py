"""A run as a whole: the plan scheduled while the console watches, Ctrl-C and SIGTERM turned into a
stop that still lets After hooks run and the report be written, and a bug of ours outside any case kept
for after the report (exit 3)."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass

from agenttest.agents.caller import Caller
from agenttest.errors import AgentTestError
from agenttest.model import Plan, Ran, SuiteResult
from agenttest.runner import scheduling, suites
from agenttest.runner.signals import Signals
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
