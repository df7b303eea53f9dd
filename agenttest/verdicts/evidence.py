"""A run's evidence (FORMATS §19): each case's Wilson interval over its runs, the suite's pass rate and pass^k with
the bootstrap over cases, the connectors of a model matrix compared with the first, and every judge's calibration.
Computed once when the run's report is made (``RunReport.evidence``); for a report read back, from its results."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from agenttest.model import CaseKey, Estimate, Evidence, Gate, Paired, RunReport
from agenttest.model.evidence import Interval
from agenttest.model.results import pass_ats, pass_hats
from agenttest.stats import intervals
from agenttest.verdicts import paired as pairing
from agenttest.util.spool import is_spooled
from agenttest.verdicts.calibration import calibrations

CONFIDENCE = 0.95
ALPHA = 0.05


def of(report: RunReport) -> Evidence:
    """The report's evidence: the one its run made, else made from its results (and kept while it is the last asked)."""
    if report.evidence is not None:
        return report.evidence
    global _last
    held = _last[0]() if _last is not None else None
    if held is report and _last is not None:
        return _last[1]
    made = compute(report, level(report), alpha(report))
    _last = (weakref.ref(report), made)
    return made


_last: tuple[weakref.ReferenceType[RunReport], Evidence] | None = None


def level(report: RunReport) -> float:
    """The confidence the report's run was made with (``--confidence``)."""
    return _option(report.options, "confidence", CONFIDENCE)


def alpha(report: RunReport) -> float:
    return _option(report.options, "alpha", ALPHA)


def _option(options: dict[str, Any], name: str, default: float) -> float:
    value = options.get(name, default)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1 else default


def compute(report: RunReport, confidence: float = CONFIDENCE, alpha: float = ALPHA) -> Evidence:
    """Everything the report can say about its rates: from its gates (or, read back without them, its results)."""
    ran = outcomes(report)
    by = {c: [g for g in ran if g.connector == c] for c in report.matrix}
    each = {c: figures(by[c], confidence) for c in report.matrix}
    return Evidence(
        confidence=confidence,
        **figures(ran, confidence),
        by_connector=tuple((c, f["pass_rate"]) for c, f in each.items() if "pass_rate" in f),
        pass_k_by_connector=tuple((c, f["pass_hat"], f["pass_at"]) for c, f in each.items() if "pass_hat" in f),
        matrix=matrix(by, report.matrix, alpha),
        judges=calibrations(report.results, confidence, (_threshold(report, "judge_min_agreement"), _threshold(report, "judge_min_kappa"))),
    )


def _threshold(report: RunReport, name: str) -> float | None:
    """A judge gate's flag, as the report's options keep it (``--judge-min-agreement``, ``--judge-min-kappa``)."""
    value = report.options.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def figures(ran: Sequence[Gate], confidence: float) -> dict[str, Any]:
    """The pass rate's estimate and, with two runs or more per case, pass^k's and pass@k's intervals, from one set of
    resamples of the cases."""
    if not ran:
        return {}
    runs = sum(g.runs for g in ran)
    if runs == len(ran):  # one run each (most suites): the Wilson interval over the cases, nothing to resample, no pass^k
        passed = sum(g.passed for g in ran)
        return {"pass_rate": suite([((1, 1), passed), ((0, 1), runs - passed)], [], confidence)}
    kinds = sorted(Counter((g.passed, g.runs) for g in ran).items())
    draws = intervals.resample([n for _, n in kinds]) if len(kinds) > 1 else []
    out: dict[str, Any] = {"pass_rate": suite(kinds, draws, confidence)}
    if _fewest(ran) > 1:
        out["pass_hat"], out["pass_at"] = _k_intervals(ran, confidence, kinds, draws)
    return out


def outcomes(report: RunReport) -> list[Gate]:
    """Each case (× connector) that ran, as its gate: the report's, or (a report read back without gates: one run
    per case and no matrix) made from its results."""
    if is_spooled(report.gates):  # a streamed run's: what the figures read of each, not a million gates held
        kept: dict[str, str] = {}
        matrix = bool(report.matrix)
        return [Ran(g.passed, g.runs, kept.setdefault(g.connector, g.connector), g.file if matrix else "", g.id if matrix else "")  # type: ignore[misc]
                for g in report.gates if g.runs]
    if report.gates:
        return [g for g in report.gates if g.runs]
    by: dict[CaseKey, list[int]] = {}
    for r in report.results:
        if r.status != "skipped":
            tally = by.setdefault(r.key, [0, 0])
            tally[0] += r.status == "passed"
            tally[1] += 1
    return [Gate(key=key, planned=n, runs=n, passed=passed) for key, (passed, n) in by.items()]


class Ran(NamedTuple):
    """A gate that ran, as the figures read it (a streamed run's gates stay on disk)."""

    passed: int
    runs: int
    connector: str
    file: str
    id: str


def suite(kinds: Sequence[tuple[tuple[int, int], int]], draws: Sequence[Sequence[int]], confidence: float) -> Estimate:
    """The pass rate over every run that ran, with the bootstrap over cases (``kinds``: (passed, runs) → cases, sorted;
    ``draws``: their resamples) — or, when every case ran once, the Wilson interval over the cases: each case is then
    one pass or fail, and resampling 0s and 1s is the crude percentile interval of a proportion (5 cases, 2 passing:
    0%–80%, against Wilson's 12%–77%)."""
    cases = sum(n for _, n in kinds)
    passed, runs = sum(p * n for (p, _), n in kinds), sum(r * n for (_, r), n in kinds)
    if runs == cases:
        interval = intervals.wilson(passed, runs, confidence)
        method = "wilson"
    else:
        interval = intervals.from_draws(draws, [(n, p, r) for (p, r), n in kinds], confidence)
        method = "bootstrap"
    assert interval is not None
    return Estimate(rate=passed / runs, low=interval[0], high=interval[1], cases=cases, runs=runs, method=method)  # type: ignore[arg-type]


def _fewest(ran: Sequence[Gate]) -> int:
    return min((g.runs for g in ran), default=0)


def _k_intervals(ran: Sequence[Gate], confidence: float, kinds: Sequence[tuple[tuple[int, int], int]],
                 draws: Sequence[Sequence[int]]) -> tuple[tuple[Interval, ...], tuple[Interval, ...]]:
    """The bootstrap intervals of the suite's pass^k and pass@k for k = 1 … the fewest runs a case had: one set of
    resamples for every k (each a mean over the cases of C(c, k)/C(n, k), and of 1 − C(n − c, k)/C(n, k))."""
    hats: list[Interval] = []
    ats: list[Interval] = []
    for k in range(1, _fewest(ran) + 1):
        for out, table in ((hats, pass_hats), (ats, pass_ats)):
            interval = intervals.from_draws(draws, [(count, table(n, p)[k - 1], 1.0) for (p, n), count in kinds], confidence)
            assert interval is not None
            out.append(interval)
    return tuple(hats), tuple(ats)


def matrix(by: dict[str, list[Gate]], connectors: Sequence[str], alpha: float) -> tuple[Paired, ...]:
    """Each connector of a model matrix compared with the first, paired by case."""
    if len(connectors) < 2:
        return ()
    first = {(g.file, g.id): g for g in by[connectors[0]]}
    out = []
    for other in connectors[1:]:
        pairs = [pairing.Outcome(g.id, g.file, "", (a.passed, a.runs), (g.passed, g.runs)) for g in by[other]
                 if (a := first.get((g.file, g.id))) is not None]
        compared = pairing.compare(pairs, connectors[0], other, alpha)
        if compared is not None:
            out.append(compared)
    return tuple(out)


_WILSON: dict[tuple[int, int, float], Interval | None] = {}


def case_interval(g: Gate, confidence: float) -> Interval | None:
    """A case's Wilson interval over its runs (None when none ran); most cases share a few (passed, runs)."""
    key = (g.passed, g.runs, confidence)
    if key not in _WILSON:
        interval = intervals.wilson(g.passed, g.runs, confidence)
        if len(_WILSON) >= 4096:
            return interval
        _WILSON[key] = interval
    return _WILSON[key]
