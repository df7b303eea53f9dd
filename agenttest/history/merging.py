"""Shard reports joined into one run (FORMATS §10): every result once, in file and line order, with the
totals and stability figures recomputed from the results — as if one machine had run them all."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agenttest.verdicts import gates
from agenttest.errors import AgentTestError
from agenttest.model import CaseResult, RunReport
from agenttest.verdicts.outcome import stability


def _order(reports: list[tuple[str, RunReport]]) -> list[CaseResult]:
    """All results: files in the order they first appear, then by line (their order in the file), then
    run; results without a line keep their report's order."""
    first: dict[str, tuple[int, int]] = {}
    keyed = []
    for n, (_, report) in enumerate(reports):
        for i, r in enumerate(report.results):
            first.setdefault(r.file, (n, i))
            keyed.append(((first[r.file], r.line, (n, i) if not r.line else (0, 0), r.run), r))
    keyed.sort(key=lambda t: t[0])
    return [r for _, r in keyed]


def _check_unique(reports: list[tuple[str, RunReport]]) -> None:
    """A case (and run) in two reports means the shards overlap: merging them would count it twice."""
    seen: dict[tuple[str, str, int], str] = {}
    for path, report in reports:
        for r in report.results:
            key = (r.file, r.id, r.run)
            if key in seen:
                where = f" of {r.file}" if r.file else ""
                run = f" (run {r.run})" if r.run > 1 else ""
                raise AgentTestError(f"case {r.id}{where}{run} is in both {seen[key]} and {path}",
                                     hint="merge reports of disjoint shards (--shard 1/N … N/N of the same selection)")
            seen[key] = path


def merge(reports: list[tuple[str, RunReport]]) -> RunReport:
    """One report from shard reports (``(path, report)`` pairs, at least one)."""
    if not reports:
        raise AgentTestError("merge needs at least one report")
    _check_unique(reports)
    results = tuple(replace(r, index=i) for i, r in enumerate(_order(reports)))
    first = reports[0][1]
    runs = max(int(rep.options.get("runs", 1) or 1) for _, rep in reports)
    options: dict[str, Any] = {k: v for k, v in first.options.items() if k != "shard"}
    options["merged"] = [path for path, _ in reports]
    warnings = tuple(dict.fromkeys(w for _, rep in reports for w in rep.warnings))
    # each case's gate is recomputed from its runs, held to what its shard held it to (runs planned, minimum rate)
    policies = {(g.file, g.id, g.connector): gates.Policy(g.planned, g.min_pass_rate) for _, rep in reports for g in rep.gates}
    saved = {(g.file, g.id, g.connector): g.saved for _, rep in reports for g in rep.gates}
    first_at: dict[gates.Key, int] = {}
    for i, r in enumerate(results):
        first_at.setdefault(gates.key_of(r), i)
    planned_order = {key: policies[key] for key in sorted(policies, key=lambda k: first_at.get(k, len(results)))}  # merged order
    return RunReport(
        results=results,
        started_at=min(rep.started_at for _, rep in reports),
        completed_at=max(rep.completed_at for _, rep in reports),
        duration_ms=max(rep.duration_ms for _, rep in reports),  # the shards ran side by side: the slowest is the wall time
        agent_id=first.agent_id, agent_path=first.agent_path,
        connector=", ".join(dict.fromkeys(rep.connector for _, rep in reports if rep.connector)),
        simulator=first.simulator, input_source=first.input_source, environment=first.environment, options=options,
        stability=stability(list(results)) if runs > 1 or any(p.planned > 1 for p in policies.values()) else (),  # --runs or a case's runs
        interrupted=any(rep.interrupted for _, rep in reports), stopped_early=any(rep.stopped_early for _, rep in reports),
        not_run=sum(rep.not_run for _, rep in reports), warnings=warnings,
        terminated=any(rep.terminated for _, rep in reports),
        gates=gates.compute(results, planned_order, saved) if policies else (),
        matrix=first.matrix, generation=tuple(s for _, rep in reports for s in rep.generation),
    )

