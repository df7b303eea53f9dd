"""Where cases run: ``--workers 0`` in this process, ``--workers N`` in N local worker processes (the
default is one), ``--executor ray`` in Ray actors (FORMATS §15)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agenttest.config import RunConfig
from agenttest.errors import AgentTestError

if TYPE_CHECKING:  # imported when a run makes its pool: parsing --workers (every command line) needs neither
    from agenttest.agents.caller import Caller
    from agenttest.runner.controller import Pool


def parse(text: str) -> int:
    """``--workers N|auto``: auto is the cores this process may use. Raises ValueError."""
    if text.strip().lower() == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 256:
        raise ValueError(f"{text!r}: give a number of worker processes (0 runs the cases in this process) or 'auto'")
    return value


def pool_for(config: RunConfig, caller: Caller) -> Pool | None:
    """The workers a run uses (started by ``Pool.start`` once the plan is resolved); None when its cases
    run in this process. Called in the event loop as the run opens: Ray actors on a cluster joined by its
    address start being created at once."""
    from agenttest.runner.controller import Pool

    if config.executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise AgentTestError("--executor ray: Ray is not installed", hint="pip install 'agent-test[ray]'") from None
        from agenttest.runner.ray import Actors

        actors = Actors(config, caller)
        actors.begin(config.workers or 1)  # a cluster joined by its address: the actors start while the cases load
        return Pool(config.workers or 1, actors)
    if config.workers == 0:
        return None
    from agenttest.runner.local.worker import Local

    return Pool(config.workers, Local(caller))
