"""From finished results to a RunReport: ordering, the gates (with Yao's stability figures for --runs), the exit code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from agenttest.errors import ExitCode
from agenttest.verdicts import evidence
from agenttest.verdicts.gates import Policy, Tally, compute, policies, streamed
from agenttest.model import CaseKey, CaseResult, Plan, Ran, RunReport

__all__ = ["decide", "exit_code", "iso", "make_report"]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_report(results: list[CaseResult], started_at: float, duration_ms: float,
                policies: Mapping[CaseKey, Policy | Tally] | None = None, saved: dict[CaseKey, int] | None = None, **fields: Any) -> RunReport:
    """The report of a run; ``policies`` (planned runs and minimum pass rate per case × connector) give its gates."""
    ordered = tuple(sorted(results, key=lambda r: r.index))
    gates = compute(ordered, policies or {}, saved)
    return RunReport(
        results=ordered,
        started_at=iso(started_at),
        completed_at=iso(started_at + duration_ms / 1000),
        duration_ms=duration_ms,
        gates=gates,
        **fields,
    )


def decide(plan: Plan, ran: Ran, confidence: float = 0.95, alpha: float = 0.05, **fields: Any) -> RunReport:
    """The report of what ran: the results in input order, their gates, how the run ended, and the evidence (each
    rate's interval at ``confidence``) made once for every format to read (``fields``: what the report says of the
    run — agent, connector, inputs, options, warnings …)."""
    if plan.streamed is not None:  # results and gates on disk, read in order (inputs.streaming)
        report = RunReport(results=ran.results, gates=streamed(plan, ran.results, ran.saved), started_at=iso(ran.started_at),  # type: ignore[arg-type]
                           completed_at=iso(ran.started_at + ran.duration_ms / 1000), duration_ms=ran.duration_ms, matrix=plan.matrix,
                           interrupted=ran.interrupted, terminated=ran.terminated, stopped_early=ran.stopped_early, not_run=ran.not_run,
                           suites=ran.suites, **fields)
        return replace(report, evidence=evidence.compute(report, confidence, alpha))
    report = make_report(list(ran.results), ran.started_at, ran.duration_ms, policies=ran.tallies or policies(plan), saved=dict(ran.saved),
                         matrix=plan.matrix, interrupted=ran.interrupted, terminated=ran.terminated, stopped_early=ran.stopped_early,
                         not_run=ran.not_run, suites=ran.suites, **fields)
    return replace(report, evidence=evidence.compute(report, confidence, alpha))


def exit_code(report: RunReport) -> ExitCode:
    """0 when every gate passed; 1 when one failed (with no gates: when a result did not pass), or
    --fail-fast stopped the run, or a partial merge lacks shards, or a suite check failed; 130/143 when interrupted."""
    if report.interrupted:
        return ExitCode.TERMINATED if report.terminated else ExitCode.INTERRUPTED
    if report.gates:
        if any(g.verdict == "failed" for g in report.gates):
            return ExitCode.FAILED
    elif any(r.status in ("failed", "error", "timeout") for r in report.results):
        return ExitCode.FAILED
    if report.stopped_early or report.options.get("missing_shards"):  # a partial merge did not test every case
        return ExitCode.FAILED
    if any(not s.passed for s in report.suites):  # a suite check over the cases failed (FORMATS §18)
        return ExitCode.FAILED
    return judge_code(report)


def judge_code(report: RunReport) -> ExitCode:
    """1 when a judge is not calibrated enough: below its ``judge: {min_agreement, min_kappa}`` (or the flags)."""
    from agenttest.verdicts import evidence

    return ExitCode.FAILED if evidence.of(report).judge_gate_failed else ExitCode.OK
