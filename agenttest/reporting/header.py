"""What the console header and the report say about a run before it starts (``RunHeader``): its agent, input
and limits, and who plays each role on which connector — a judge or simulator left on the mock while ``-c``
moves the agent under test to a model is said, not hidden."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agenttest import assertions
from agenttest.agents.catalog import Catalog
from agenttest.config import RunConfig
from agenttest.connectors.files import spec_for
from agenttest.errors import AgentTestError
from agenttest.model import Case, Plan, Player, ResolvedCase, RunHeader


def header_of(plan: Plan, config: RunConfig, described: str, catalog: Catalog, selected: int) -> RunHeader:
    """The header of ``plan`` (run with ``config``): its agent, connector(s), simulators, input (``described``), limits and notes."""
    per_case = not config.connector and any(c.options.get("connector") for c in plan.cases)
    try:
        connector = "per case" if per_case else catalog.agent(plan.agent).connector_id(config.connector)
    except AgentTestError:
        connector = ""
    if plan.matrix:
        connector = ", ".join(plan.matrix)
    players = players_of(plan, catalog)
    judges = [p for p in players if p.role == "validator"]
    on = {(p.role, p.agent): p.connector for p in players}
    simulators = sorted({c.simulator.use + (f" on {on[('simulator', c.simulator.use)]}" if ("simulator", c.simulator.use) in on else "")
                         if c.simulator.use else "scripted user (offline)" for c in plan.cases if c.dynamic and c.simulator})
    if config.shard is not None:
        described += f", shard {config.shard[0]}/{config.shard[1]} of {selected}"
    modes = {c.dynamic for c in plan.cases}
    notes = []
    if judges:
        notes.append(("Judges", ", ".join(f"{p.agent} on {p.connector}" for p in judges)))
    if config.replay:
        notes.append(("Replay", f"{config.replay} ({', '.join(config.replay_roles) if config.replay_roles else 'every role'}"
                                f"{'; misses called live and recorded' if config.record else ''})"))
    if config.record:
        notes.append(("Record", config.record))
    return RunHeader(agent=config.agent or plan.agent, connector=connector, simulator=", ".join(simulators), input=described,
                     timeout=config.timeout, total=plan.total, runs=config.runs, parallel=config.parallel,
                     dynamic=modes == {True}, mixed=len(modes) > 1, notes=tuple(notes),
                     players=players if len(players) > sum(p.role == "agent" for p in players) else (), warnings=tuple(mocked(players)))


def players_of(plan: Plan, catalog: Catalog) -> tuple[Player, ...]:
    """Each role's agent on each connector it runs on: the agent under test (per connector of the run), the
    simulator agents and the validator agents the cases name (``-c`` moves only the agent under test)."""
    seen: dict[tuple[str, str, str], Player] = {}
    asked: set[tuple[str, str, str | None]] = set()  # each role, agent and override once (10,000 cases name one or two)

    def add(role: str, agent: str, override: str | None) -> None:
        if (role, agent, override) in asked:
            return
        asked.add((role, agent, override))
        try:
            connector = catalog.agent(agent).connector_id(override)
        except AgentTestError:  # said by resolution already
            return
        if (role, agent, connector) not in seen:
            seen[(role, agent, connector)] = Player(role, agent, connector, _is_mock(catalog, connector))  # type: ignore[arg-type]

    for item in plan.items:
        if item.case.mode != "script" and plan.agent:
            add("agent", plan.agent, item.connector)
    for case in plan.cases:
        for role, agent, override in _named(case):
            add(role, agent, override)
    return tuple(sorted(seen.values(), key=lambda p: ("agent", "simulator", "validator").index(p.role)))


def kind_of(item: ResolvedCase) -> tuple[Any, ...]:
    """What the header tells of an item (a streamed run's header is made from one item of each kind)."""
    case = item.case
    simulator = (case.simulator.use, case.simulator.script is None, case.simulator.options.get("connector")) if case.simulator else None
    return (case.options.get("connector"), item.connector, case.mode == "script", case.dynamic, bool(case.simulator), simulator,
            tuple(_named(case)))


def _named(case: Case) -> Iterator[tuple[str, str, str | None]]:
    """The simulator agent and the validator agents a case calls, with the connector it names for each."""
    if case.dynamic and case.simulator is not None and case.simulator.script is None and case.simulator.use:
        yield "simulator", case.simulator.use, case.simulator.options.get("connector")
    specs = [*case.assertions, *(cp.assertion for cp in case.checkpoints), *(a for t in case.turns for a in t.assertions)]
    for spec in specs:
        for need in assertions.needs(spec.params):
            if need.kind == "agent":
                yield "validator", need.ref, need.connector


def _is_mock(catalog: Catalog, connector: str) -> bool:
    try:
        return spec_for(catalog.app, connector, catalog.secrets, offline=True).type == "mock"
    except AgentTestError:
        return False


def mocked(players: tuple[Player, ...]) -> list[str]:
    """A judge or simulator on a mock while the agent under test runs on a model: its verdicts (its user) are
    the mock's canned rules, whatever the model under test does."""
    real = [p.connector for p in players if p.role == "agent" and not p.mock]
    if not real:
        return []
    under = f"'{real[0]}'" if len(real) == 1 else f"{', '.join(real)}"
    out = []
    for p in players:
        if p.mock and p.role == "validator":
            out.append(f"the validator {p.agent} runs on the mock connector '{p.connector}' while the agent under test runs on {under}: "
                       "its verdicts are the mock's canned rules, not a model's judgement — give it a connector of its own "
                       "(\"options\": {\"connector\": …} on the assertion, or its package.yao)")
        elif p.mock and p.role == "simulator":
            out.append(f"the simulator {p.agent} runs on the mock connector '{p.connector}' while the agent under test runs on {under}: "
                       "the user it plays follows the mock's canned rules — give it a connector of its own "
                       "(simulator.options.connector, or its package.yao)")
    return out
