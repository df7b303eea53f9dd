"""How big a difference a paired comparison of this size can find: the minimum detectable difference at a
given power, and how many runs per case a difference needs. A normal approximation of the paired test of the
mean per-case difference, bounded below by what the exact test can ever find (docs/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from agenttest.stats.exact import fewest_changes

POWER = 0.8
MOST_RUNS = 1000  # --runs' own limit: a difference that needs more is said to need more than this

Pair = tuple[int, int, int, int]  # one case: (passed, runs) in the base run, then (passed, runs) in the new one


def spread(pairs: Sequence[Pair]) -> float:
    """The mean over cases of p(1 − p), one run's variance, p each case's pass rate over both runs pooled (with the
    small-sample factor N/(N − 1) of N pooled runs, which makes it unbiased): how noisy a run of a case is."""
    if not pairs:
        return 0.0
    total = 0.0
    for a, m, b, n in pairs:
        runs = m + n
        p = (a + b) / runs
        total += p * (1 - p) * runs / (runs - 1) if runs > 1 else 0.0
    return total / len(pairs)


def noise(pairs: Sequence[Pair]) -> float:
    """σ₀²: the variance of one case's difference (new rate − base rate) when nothing changed, the mean over
    cases of p(1 − p)(1/m + 1/n) for m and n runs. With one run each, the share of cases whose verdict flipped."""
    if not pairs:
        return 0.0
    total = 0.0
    for a, m, b, n in pairs:
        runs = m + n
        p = (a + b) / runs
        total += p * (1 - p) * runs / (runs - 1) * (1 / m + 1 / n) if runs > 1 else 0.0
    return total / len(pairs)


def min_detectable(cases: int, runs: int, variance: float, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest difference (0–1) the paired test finds with probability ``power`` at two-sided ``alpha``:
    (z₁₋α/₂ + z_power) · σ₀ / √n for n cases — and never below k / (n · r), k the fewest cases moving one way the
    exact test can find (6 at α = 0.05), r the runs per case (each case moves in steps of 1/r)."""
    if cases <= 0 or runs <= 0:
        return 1.0
    normal = _z(alpha, power) * math.sqrt(variance / cases)
    return min(1.0, max(normal, fewest_changes(alpha) / (cases * runs)))


def runs_needed(difference: float, cases: int, per_run: float, alpha: float = 0.05, power: float = POWER) -> int | None:
    """The fewest runs per case (in each of the two runs compared) at which ``difference`` is the minimum detectable
    one: r ≥ 2·s·(z₁₋α/₂ + z_power)² / (n·d²) and r ≥ k / (n·d), s the one-run variance (``spread``). None past
    MOST_RUNS (or for no difference)."""
    if difference <= 0 or cases <= 0:
        return None
    z = _z(alpha, power)
    needed = max(2 * per_run * z * z / (cases * difference * difference), fewest_changes(alpha) / (cases * difference), 1.0)
    runs = math.ceil(needed - 1e-9)
    return runs if runs <= MOST_RUNS else None


def _z(alpha: float, power: float) -> float:
    """z₁₋α/₂ + z_power: 1.959964 + 0.841621 = 2.801585 at α = 0.05 and 80% power."""
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)
