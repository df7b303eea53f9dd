"""The plan of a run: every selected case resolved once — the connector it runs on and the label its
results carry, its runs, gate, budget and hooks — so that the runner, the gates, the budgets and the
reports read one answer instead of each working it out again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agenttest.config import RunConfig
from agenttest.model.cases import Budget, Case
from agenttest.model.keys import CaseKey


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedCase:
    """One case on one connector, with everything the run needs to know about it."""

    key: CaseKey  # the case on its connector: its results and its gate carry this very object
    case: Case
    scheduled: str | None  # the connector the run puts it on (the matrix's or -c); None: its own
    runs: int
    min_pass_rate: float
    budget: Budget | None  # the case's limits over --budget's
    before: Any = None  # the case's Before and After hook functions
    after: Any = None

    @property
    def connector(self) -> str | None:
        """What the case calls: the scheduled connector, else the case's own (None: the agent's)."""
        return self.scheduled or self.case.options.get("connector")


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A resolved run: the agent under test, each case × connector resolved, the global hooks and the flags."""

    agent: str  # the agent under test
    items: tuple[ResolvedCase, ...]  # case by case, connector by connector (the report's order)
    config: RunConfig = field(default_factory=lambda: RunConfig(inputs=()))
    before_all: Any = None  # --before: a resolved hook function
    after_all: Any = None

    @property
    def cases(self) -> tuple[Case, ...]:
        """The selected cases, each once, in order."""
        seen: dict[int, Case] = {}  # by identity: a case holds dicts, so it has no hash
        for item in self.items:
            seen.setdefault(id(item.case), item.case)
        return tuple(seen.values())

    @property
    def connectors(self) -> tuple[str | None, ...]:
        """The connectors every case runs on: the matrix, else the one override (or None: the case's own)."""
        return self.config.matrix or (self.config.connector,)

    @property
    def matrix(self) -> tuple[str, ...]:
        return self.config.matrix

    @property
    def total(self) -> int:
        """Scheduled results: cases × runs × connectors."""
        return sum(item.runs for item in self.items)
