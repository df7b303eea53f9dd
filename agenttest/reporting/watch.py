"""Watching a run as it happens: the console (and with ``--json`` the event stream) told of the header,
each start and result, warnings, the summary and the baseline comparison."""

from __future__ import annotations

import sys
from typing import TextIO

from agenttest.config import RunConfig
from agenttest.model import CaseKey, CaseResult, Plan, ResolvedCase, RunHeader, RunReport
from agenttest.reporting.console import Console
from agenttest.reporting.events import EventStream
from agenttest.reporting.jsonfile import Spool
from agenttest.util.secrets import Secrets


class Watch:
    def __init__(self, config: RunConfig, plan: Plan, out: TextIO, events: EventStream | None, secrets: Secrets,
                 show_reply: bool, grouped: bool, spool: Spool | None = None):
        self.config = config
        self.spool = spool  # the JSON report's results, written as they come
        self.console = Console(out, config.color, config.verbose, config.parallel, progress=sys.stderr.isatty(),
                               show_reply=show_reply, secrets=secrets, quiet=config.quiet, grouped=grouped, matrix=bool(plan.matrix))
        self.events = events
        self.secrets = secrets
        # the cases whose runs differ from --runs (100,000 cases need not each have an entry)
        self.streamed = plan.streamed is not None  # its items are read as they run: its cases' runs are learnt as they start
        self._runs = {} if self.streamed else {item.key: item.runs for item in plan.items if item.runs != config.runs}
        self._running: dict[tuple[CaseKey, int], int] = {}  # (case, run) started, no result yet (→ runs): named if the run is stopped

    def header(self, header: RunHeader, started_at: str, warnings: list[str]) -> None:
        self.console.header(header, warnings)
        if self.events is not None:
            self.events.start(header, started_at, warnings)

    def warning(self, text: str) -> None:
        self.console.warning(text)
        if self.events is not None:
            self.events.warning(text)

    def started(self, item: ResolvedCase, run: int) -> None:
        self.console.started(item.case, run, item.runs, item.scheduled or "")
        self._running[(item.key, run)] = item.runs

    def finished(self, result: CaseResult) -> None:
        """A result as it came (its identity as the plan has it), shown with its secrets hidden: this hidden copy
        is the one the reports hold (``Secrets.scrub`` keeps it), so it is searched once."""
        runs = self._running.pop((result.key, result.run), None) or self._runs.get(result.key, self.config.runs)
        result = self.secrets.scrub_once(result) if self.streamed else self.secrets.scrub(result)
        self.console.finished(result, runs)
        if self.events is not None:
            self.events.result(result)
        if self.spool is not None:
            self.spool.add(result)

    def saved(self) -> None:
        self.console.saved()

    def summary(self, report: RunReport, written: list[str]) -> None:
        cut = [self.console.title(key.id, run, runs, key.connector) for (key, run), runs in self._running.items()] if report.interrupted else []
        self.console.summary(report, ", ".join(written) or None, cut)

    def lines(self, lines: list[str]) -> None:
        """More lines after the summary (--baseline: the comparison, ending with its banner)."""
        for line in lines:
            self.console.line(line)

    def closing(self, report: RunReport, code: int) -> None:
        if self.events is not None:
            self.events.summary(report, code)
