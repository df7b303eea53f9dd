"""From finished results to a RunReport: ordering, stability figures for --runs, the exit code."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from .errors import ExitCode
from .model import CaseResult, RunReport, Stability


def classify(pass_rate: float) -> str:
    if pass_rate >= 100:
        return "stable"
    if pass_rate >= 80:
        return "mostly_stable"
    if pass_rate >= 50:
        return "unstable"
    return "highly_unstable"


def stability(results: list[CaseResult]) -> tuple[Stability, ...]:
    """Per case over its runs (skipped runs left out): pass rate and duration spread."""
    by_case: dict[str, list[CaseResult]] = {}
    for r in results:
        if r.status != "skipped":
            by_case.setdefault(r.id, []).append(r)
    out = []
    for case_id, runs in by_case.items():
        durations = [r.duration_ms for r in runs]
        passed = sum(1 for r in runs if r.status == "passed")
        mean = sum(durations) / len(durations)
        std = math.sqrt(sum((d - mean) ** 2 for d in durations) / len(durations))
        rate = 100.0 * passed / len(runs)
        out.append(Stability(case_id, len(runs), passed, round(rate, 1), round(mean, 1), round(min(durations), 1), round(max(durations), 1), round(std, 1), classify(rate)))
    return tuple(out)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_report(results: list[CaseResult], started_at: float, duration_ms: float, runs: int = 1, **fields: Any) -> RunReport:
    ordered = tuple(sorted(results, key=lambda r: r.index))
    return RunReport(
        results=ordered,
        started_at=iso(started_at),
        completed_at=iso(started_at + duration_ms / 1000),
        duration_ms=duration_ms,
        stability=stability(list(ordered)) if runs > 1 else (),
        **fields,
    )


def exit_code(report: RunReport) -> ExitCode:
    if report.interrupted:
        return ExitCode.TERMINATED if report.terminated else ExitCode.INTERRUPTED
    if any(r.status in ("failed", "error", "timeout") for r in report.results):
        return ExitCode.FAILED
    if report.stopped_early:
        return ExitCode.FAILED
    return ExitCode.OK
