"""``agent-test history``: the recorded runs as aligned console lines, newest first."""

from __future__ import annotations

from agenttest.history.store import RunRow
from agenttest.reporting.console import safe
from agenttest.reporting.figures import Table, aligned
from agenttest.util.durations import format_duration
from agenttest.util.text import shorten


def run_lines(runs: list[RunRow]) -> list[str]:
    """One line a run: id, when, inputs, connector, cases (not passing, flaky), pass rate, duration, exit code."""
    rows = []
    for r in runs:
        cases = r.cases_text() + (f" ({r.failed} not passing)" if r.failed else "") + (f" ({r.flaky} flaky)" if r.flaky else "")
        rows.append([f"#{r.id}", r.started_at, safe(shorten(r.inputs, 48)), safe(shorten(r.connector, 28)) or "—", cases,
                     r.pass_rate_text(), format_duration(r.duration_ms / 1000), str(r.exit_code)])
    return aligned(Table(["run", "when", "inputs", "connector", "cases", "pass rate", "time", "exit"], rows, []))
