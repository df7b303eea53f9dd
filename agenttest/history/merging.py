"""Shard reports joined into one run (FORMATS §10): every result once, in file and line order, with the
totals and stability figures recomputed from the results — as if one machine had run them all."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agenttest.verdicts import gates
from agenttest.errors import AgentTestError, InputError, Problem
from agenttest.model import CaseKey, CaseResult, RunReport


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


def _inputs(report: RunReport) -> str | None:
    """The case files a run was given, when written relative (an absolute path differs from machine to
    machine, so it says nothing)."""
    files = [os.path.normpath(f.strip()) for f in report.input_source.split(",") if f.strip()]
    return None if any(os.path.isabs(f) for f in files) else ", ".join(files)


# what shards of one selection share: a shard of another suite, agent, connector or --runs is another run
_SAME: dict[str, Callable[[RunReport], Any]] = {
    "-i": _inputs, "-n": lambda r: r.agent_id, "-c": lambda r: r.options.get("connector") or r.options.get("connectors"),
    "--run": lambda r: r.options.get("run"), "-k": lambda r: r.options.get("k"), "--lf": lambda r: r.options.get("last_failed"),
    "--runs": lambda r: r.options.get("runs", 1), "--min-pass-rate": lambda r: r.options.get("min_pass_rate"),
}


def _shown(value: Any) -> str:
    return "not given" if value in (None, False, "") else str(value) if isinstance(value, (int, float)) else repr(value)


def _shard(report: RunReport) -> tuple[int, int] | None:
    text = report.options.get("shard")
    try:
        k, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        return None
    return (k, n) if text else None


def shard_problems(reports: list[tuple[str, RunReport]], partial: bool = False) -> tuple[list[Problem], list[str]]:
    """What stops shard reports from making one run — a missing shard (unless ``partial``: then a warning),
    shards of different N, a report that is no shard beside shards, shards of different selections — and
    the warnings of a partial merge. Reports that are none of them shards are joined as they are."""
    shards = [(path, report, _shard(report)) for path, report in reports]
    if all(s is None for _, _, s in shards):
        return [], []
    problems: list[Problem] = []
    hint = "merge the reports of --shard 1/N … N/N of one run"
    for path, _, s in shards:
        if s is None:
            problems.append(Problem(f"{path} is not a shard report (it was run without --shard) but the others are", hint=hint))
    counted = [(path, s) for path, _, s in shards if s is not None]
    sizes = sorted({n for _, (_, n) in counted})
    if len(sizes) > 1:
        problems.append(Problem("the shards are of different runs: " + ", ".join(f"{p} is {k}/{n}" for p, (k, n) in counted), hint=hint))
    first_path, first = next((p, r) for p, r, s in shards if s is not None)
    for name, get in _SAME.items():
        for path, report, s in shards:
            if s is not None and get(report) != get(first) and (name != "-i" or None not in (get(report), get(first))):
                problems.append(Problem(f"{path} and {first_path} are shards of different runs: {name} was "
                                        f"{_shown(get(report))} in one, {_shown(get(first))} in the other", hint=hint))
                break
    warnings: list[str] = []
    if len(sizes) == 1:
        n = sizes[0]
        missing = [k for k in range(1, n + 1) if k not in {k for _, (k, _) in counted}]
        if missing:
            text = (f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{k}/{n}' for k in missing)} "
                    f"{'are' if len(missing) > 1 else 'is'} missing: these reports hold {n - len(missing)} of {n} shards")
            if partial:
                warnings.append(f"partial merge: {text}, so their cases are in no total")
            else:
                problems.append(Problem(text, hint="merge every shard's report, or pass --partial to join what there is "
                                                   "(the merged report then says which shards it lacks)"))
    return problems, warnings


def missing_shards(reports: list[tuple[str, RunReport]]) -> list[str]:
    """``["3/3"]``: the shards of N that none of these reports is."""
    counted = {s for _, r in reports if (s := _shard(r)) is not None}
    sizes = {n for _, n in counted}
    return [f"{k}/{n}" for n in sorted(sizes) for k in range(1, n + 1) if (k, n) not in counted] if len(sizes) == 1 else []


def merge(reports: list[tuple[str, RunReport]], partial: bool = False) -> RunReport:
    """One report from shard reports (``(path, report)`` pairs, at least one); every shard 1/N … N/N of one
    selection, unless ``partial``."""
    if not reports:
        raise AgentTestError("merge needs at least one report")
    problems, partial_warnings = shard_problems(reports, partial)
    try:
        _check_unique(reports)
    except AgentTestError as exc:
        problems += exc.problems
    if problems:
        raise InputError(problems)
    results = tuple(replace(r, index=i) for i, r in enumerate(_order(reports)))
    first = reports[0][1]
    options: dict[str, Any] = {k: v for k, v in first.options.items() if k != "shard"}
    options["merged"] = [path for path, _ in reports]
    if partial and (lacking := missing_shards(reports)):
        options["missing_shards"] = lacking  # a partial merge: never a green run (verdicts.outcome.exit_code)
    warnings = tuple(dict.fromkeys([*partial_warnings, *(w for _, rep in reports for w in rep.warnings)]))
    # each case's gate is recomputed from its runs, held to what its shard held it to (runs planned, minimum rate)
    policies = {g.key: gates.Policy(g.planned, g.min_pass_rate) for _, rep in reports for g in rep.gates}
    saved = {g.key: g.saved for _, rep in reports for g in rep.gates}
    first_at: dict[CaseKey, int] = {}
    for i, r in enumerate(results):
        first_at.setdefault(r.key, i)
    planned_order = {key: policies[key] for key in sorted(policies, key=lambda k: first_at.get(k, len(results)))}  # merged order
    return RunReport(
        results=results,
        started_at=min(rep.started_at for _, rep in reports),
        completed_at=max(rep.completed_at for _, rep in reports),
        duration_ms=max(rep.duration_ms for _, rep in reports),  # the shards ran side by side: the slowest is the wall time
        agent_id=first.agent_id, agent_path=first.agent_path,
        connector=", ".join(dict.fromkeys(rep.connector for _, rep in reports if rep.connector)),
        simulator=first.simulator, input_source=first.input_source, environment=first.environment, options=options,
        interrupted=any(rep.interrupted for _, rep in reports), stopped_early=any(rep.stopped_early for _, rep in reports),
        not_run=sum(rep.not_run for _, rep in reports), warnings=warnings,
        terminated=any(rep.terminated for _, rep in reports),
        gates=gates.compute(results, planned_order, saved) if policies else (),
        matrix=first.matrix, generation=tuple(s for _, rep in reports for s in rep.generation),
    )

