"""The plan of a run: every selected case resolved once — the connector it runs on and the key its results
carry, its runs, gate, budget, deadline, mode, attachment policy and hooks — and the few settings running it
needs, so that the runner, the gates, the budgets and the reports read one answer instead of each working it
out again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    deadline: float = 300.0  # seconds: the case's timeout, else --timeout
    mode: Any = None  # the mode that runs it (modes.Mode: a built-in, or a plug-in that claims it)
    attachments: Any = None  # where its file:// parts may come from (runtime.attachments.Policy)
    before: Any = None  # the case's Before and After hook functions
    after: Any = None

    @property
    def connector(self) -> str | None:
        """What the case calls: the scheduled connector, else the case's own (None: the agent's)."""
        return self.scheduled or self.case.options.get("connector")

    @property
    def checks_nothing(self) -> bool:
        """Passes whenever the agent answers: the case checks nothing and has no budget to keep."""
        return self.budget is None and self.case.checks_nothing


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What running a plan needs of the flags (the rest of ``RunConfig`` is the session's): how many cases at once,
    the global hooks' deadline, when to stop early, the faults' seed, what the reports keep of a tool world."""

    parallel: int = 1
    timeout: float = 300.0  # the global hooks' deadline (a case's is its ResolvedCase's)
    runs: int = 1  # --runs
    early_stop: bool = False
    fail_fast: bool = False
    seed: int = 0  # faults given with a rate
    strict: bool = False  # --strict: a reply cut at its token limit fails its case
    full_world: bool = True  # --report-world full: the initial and final world beside the changes
    calls: str = "failed"  # --calls none|failed|all: which results keep their model calls
    connector: str | None = None  # -c, one connector
    matrix: tuple[str, ...] = ()  # -c a,b: every case on each
    allow_external_writes: bool = False  # cases whose write_policy is external run (else skipped, saying why)


@dataclass(frozen=True)
class Streamed:
    """What the pass that checked a streamed run's cases counted: its cases and its scheduled results."""

    cases: int
    total: int


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A resolved run: the agent under test, each case × connector resolved, the global hooks and the settings."""

    agent: str  # the agent under test
    items: tuple[ResolvedCase, ...]  # case by case, connector by connector (the report's order)
    settings: RunSettings = field(default_factory=RunSettings)
    before_all: Any = None  # --before: a resolved hook function
    after_all: Any = None
    # a streamed run's (inputs.streaming): its items are read again from the case files each time they are taken,
    # and what a pass over them would give is known from the pass that checked them — the cases, the results scheduled
    streamed: Streamed | None = None

    @property
    def cases(self) -> tuple[Case, ...]:
        """The selected cases, each once, in order."""
        if self.streamed is not None:
            raise TypeError("a streamed plan's cases are read as they run: count them with case_count()")
        seen: dict[int, Case] = {}  # by identity: a case holds dicts, so it has no hash
        for item in self.items:
            seen.setdefault(id(item.case), item.case)
        return tuple(seen.values())

    def case_count(self) -> int:
        """The selected cases."""
        return self.streamed.cases if self.streamed is not None else len(self.cases)

    @property
    def connectors(self) -> tuple[str | None, ...]:
        """The connectors every case runs on: the matrix, else the one override (or None: the case's own)."""
        return self.settings.matrix or (self.settings.connector,)

    @property
    def matrix(self) -> tuple[str, ...]:
        return self.settings.matrix

    @property
    def total(self) -> int:
        """Scheduled results: cases × runs × connectors."""
        if self.streamed is not None:
            return self.streamed.total
        return sum(item.runs for item in self.items)
