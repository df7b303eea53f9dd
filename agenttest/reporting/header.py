"""What the console header and the report say about a run before it starts (``RunHeader``)."""

from __future__ import annotations

from agenttest.agents.catalog import Catalog
from agenttest.config import RunConfig
from agenttest.errors import AgentTestError
from agenttest.model import Plan, RunHeader


def header_of(plan: Plan, config: RunConfig, described: str, catalog: Catalog, selected: int) -> RunHeader:
    """The header of ``plan`` (run with ``config``): its agent, connector(s), simulators, input (``described``), limits and notes."""
    per_case = not config.connector and any(c.options.get("connector") for c in plan.cases)
    try:
        connector = "per case" if per_case else catalog.agent(plan.agent).connector_id(config.connector)
    except AgentTestError:
        connector = ""
    if plan.matrix:
        connector = ", ".join(plan.matrix)
    simulators = sorted({c.simulator.use or "scripted user (offline)" for c in plan.cases if c.dynamic and c.simulator})
    if config.shard is not None:
        described += f", shard {config.shard[0]}/{config.shard[1]} of {selected}"
    modes = {c.dynamic for c in plan.cases}
    notes = []
    if config.replay:
        notes.append(("Replay", f"{config.replay} ({', '.join(config.replay_roles) if config.replay_roles else 'every role'}"
                                f"{'; misses called live and recorded' if config.record else ''})"))
    if config.record:
        notes.append(("Record", config.record))
    return RunHeader(agent=config.agent or plan.agent, connector=connector, simulator=", ".join(simulators), input=described,
                     timeout=config.timeout, total=plan.total, runs=config.runs, parallel=config.parallel,
                     dynamic=modes == {True}, mixed=len(modes) > 1, notes=tuple(notes))
