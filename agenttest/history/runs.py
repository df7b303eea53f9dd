"""``agent-test history``: the recorded runs as aligned console lines, newest first."""

from __future__ import annotations

from agenttest.history.store import JudgeRow, RunRow
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


def judge_lines(rows: list[JudgeRow]) -> list[str]:
    """Judge agreement over the runs listed, newest first: one line a run and judge that had labels."""
    labelled = [j for j in rows if j.labelled]
    if not labelled:
        return []
    table = [[f"#{j.run_id}", j.started_at, safe(j.validator + (f" on {j.connector}" if j.connector else "")), str(j.labelled),
              _share(j.agreement), "—" if j.kappa is None else f"{j.kappa:.2f}", _share(j.flip_rate), j.gate or "—"] for j in labelled]
    return ["", "Judges against the labels:", *aligned(Table(["run", "when", "judge", "labelled", "agreement", "kappa", "flip rate", "gate"], table, []))]


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"
