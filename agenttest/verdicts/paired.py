"""Two runs compared case by case as a paired experiment (FORMATS §19): per-case pass counts in, a ``Paired`` out —
the difference of the mean per-case pass rates with its bootstrap interval, the exact paired test (McNemar with
one run per case, the sign-flip test with several), Fisher's test per case with Holm's correction, the minimum
detectable difference and the runs a difference needs. Pure: the mathematics is ``agenttest.stats``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

from agenttest.model.evidence import Mover, Paired
from agenttest.stats import exact, intervals, power

DIFFERENCES = (0.05, 0.10)  # the differences whose runs-needed every comparison reports, beside the one observed


class Outcome(NamedTuple):
    """One case (× connector) in both runs: (passed, runs) before and after."""

    id: str
    file: str
    connector: str
    before: tuple[int, int]
    after: tuple[int, int]


def compare(cases: Sequence[Outcome], base: str, new: str, alpha: float = 0.05) -> Paired | None:
    """The paired comparison of the cases that ran in both runs; None when none did."""
    cases = [c for c in cases if c.before[1] > 0 and c.after[1] > 0]
    if not cases:
        return None
    n = len(cases)
    differences = [Fraction(c.after[0], c.after[1]) - Fraction(c.before[0], c.before[1]) for c in cases]
    one_run = all(c.before[1] == 1 and c.after[1] == 1 for c in cases)
    worse, better = sum(1 for d in differences if d < 0), sum(1 for d in differences if d > 0)
    p = exact.mcnemar(worse, better) if one_run else exact.sign_flip(differences)
    interval = agreeing(intervals.bootstrap_mean([(count, value) for value, count in sorted(Counter(float(d) for d in differences).items())],
                                                 1 - alpha), p, alpha)
    pairs = [(*c.before, *c.after) for c in cases]
    runs = max(max(c.before[1], c.after[1]) for c in cases)
    noise, spread = power.noise(pairs), power.spread(pairs)
    difference = float(sum(differences) / n)
    moved, tested, floor = movers(cases, alpha)
    return Paired(
        base=base, new=new, cases=n, base_runs=max(c.before[1] for c in cases), new_runs=max(c.after[1] for c in cases),
        fewest_runs=min(min(c.before[1], c.after[1]) for c in cases),
        base_rate=sum(c.before[0] / c.before[1] for c in cases) / n, new_rate=sum(c.after[0] / c.after[1] for c in cases) / n,
        difference=difference, low=interval[0], high=interval[1], p=p, alpha=alpha, test="mcnemar" if one_run else "sign-flip",
        worse=worse, better=better, mdd=power.min_detectable(n, runs, noise, alpha), noise=noise, spread=spread,
        runs_needed=tuple((d, power.runs_needed(d, n, spread, alpha)) for d in _asked(difference, p, alpha)),
        moved=moved, tested=tested, case_floor=floor,
    )


def agreeing(interval: tuple[float, float] | None, p: float, alpha: float) -> tuple[float, float]:
    """The difference's bootstrap interval, reaching 0 when the exact test finds no difference: with few cases
    moved the percentile bootstrap is too narrow (4 of 44 cases one run worse: the interval leaves out 0 while the
    exact test's p is 0.125), and an interval must never claim what the test does not."""
    assert interval is not None
    low, high = interval
    return (min(low, 0.0), max(high, 0.0)) if p >= alpha else (low, high)


def _asked(difference: float, p: float, alpha: float) -> list[float]:
    """The differences to say the runs-needed of: 5 and 10 points, and the one observed when it was not shown
    significant (rounded to a tenth of a point; below one point it is noise whatever the runs)."""
    observed = round(abs(difference), 3)
    extra = [observed] if p >= alpha and observed >= 0.01 and observed not in DIFFERENCES else []
    return sorted({*DIFFERENCES, *extra})


def movers(cases: Sequence[Outcome], alpha: float) -> tuple[tuple[Mover, ...], int, float]:
    """The cases that moved (Fisher's exact test on their runs, Holm-adjusted over the cases tested), how many were
    tested, and the smallest p-value any case's runs allow. Only cases whose runs could show a move at ``alpha``
    (every run passing in one run, none in the other, below alpha) are tested: which they are depends on the runs
    alone, not on the outcomes, so leaving the others out keeps the error rate and does not dilute Holm."""
    floors = [exact.fisher_floor(c.before[1], c.after[1]) for c in cases]
    testable = [c for c, f in zip(cases, floors) if f < alpha]
    if not testable:
        return (), 0, min(floors)
    raw = [exact.fisher(c.before[0], c.before[1] - c.before[0], c.after[0], c.after[1] - c.after[0]) for c in testable]
    adjusted = exact.holm(raw)
    moved = tuple(Mover(id=c.id, file=c.file, connector=c.connector, before=c.before, after=c.after, p=p, adjusted=a)
                  for c, p, a in zip(testable, raw, adjusted) if a < alpha)
    return moved, len(testable), min(floors)
