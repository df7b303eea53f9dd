"""Exact tests on counts: binomial tails (McNemar's test), the paired sign-flip test of a mean difference,
Fisher's exact test of a 2×2 table, and Holm's correction over many tests. Every tail is a sum of whole
numbers divided once, so a p-value is as exact as one float holds; two-sided p-values are the sum of the
tables as unlikely as the observed one, as scipy.stats computes them."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist

EXACT_WORK = 20_000_000  # the sign-flip test's exact distribution costs cases × lattice steps; past this, the normal approximation


def binomial_cdf(k: int, m: int) -> float:
    """P(X ≤ k) for X ~ Binomial(m, ½), exactly: Σ C(m, i) for i ≤ k, over 2^m."""
    if k < 0:
        return 0.0
    if k >= m:
        return 1.0
    total, term = 0, 1
    for i in range(k + 1):
        total += term
        term = term * (m - i) // (i + 1)
    return total / (1 << m)


def mcnemar(worse: int, better: int) -> float:
    """McNemar's exact test, two-sided: of the cases whose verdict changed, ``worse`` went from pass to fail and
    ``better`` from fail to pass; under no difference each is Binomial(worse + better, ½). 1 when none changed."""
    changed = worse + better
    if changed == 0:
        return 1.0
    return min(1.0, 2 * binomial_cdf(min(worse, better), changed))


def sign_flip(differences: Sequence[Fraction | int]) -> float:
    """The paired permutation test of a mean difference, two-sided: under no difference, each case's difference
    (new pass rate − base pass rate) is as likely to have either sign, so the p-value is the share of the 2^n sign
    patterns whose sum is at least as far from 0 as the observed one. Exact (the distribution of the sum, built
    on the lattice of the differences), unless cases × lattice steps exceed EXACT_WORK: then the normal
    approximation with a continuity correction. With one run per case it is McNemar's exact test."""
    nonzero = [Fraction(d) for d in differences if d]
    if not nonzero:
        return 1.0
    scale = math.lcm(*(d.denominator for d in nonzero))
    steps = [int(d * scale) for d in nonzero]  # whole numbers on the lattice of the differences
    observed = abs(sum(steps))
    sizes = Counter(abs(s) for s in steps)
    reach = sum(size * count for size, count in sizes.items())
    if len(sizes) == 1:  # one size (always so with one run per case): the number of + signs is Binomial(n, ½)
        (size, count), = sizes.items()
        return mcnemar(*_split(observed // size, count))
    if len(steps) * reach > EXACT_WORK:
        return _normal_tail(observed, steps)
    plus = _subset_sums(sizes, reach)  # P(the + signs sum to s), s = 0 … reach; the total is then 2s − reach
    return min(1.0, sum(p for s, p in enumerate(plus) if abs(2 * s - reach) >= observed))


def _split(excess: int, count: int) -> tuple[int, int]:
    """``count`` changes of one size whose signs add up to ``excess`` steps: how many went each way."""
    fewer = (count - excess) // 2
    return fewer, count - fewer


def _subset_sums(sizes: Counter[int], reach: int) -> list[float]:
    """The distribution of the sum of the sizes whose sign is +, each sign a fair coin: each size's count of +
    signs is binomial, and the sizes' distributions are convolved."""
    dist = [1.0]
    for size, count in sorted(sizes.items()):
        weights = [math.comb(count, x) / (1 << count) for x in range(count + 1)]
        new = [0.0] * (len(dist) + size * count)
        for x, w in enumerate(weights):
            if w:
                offset = x * size
                for s, p in enumerate(dist):
                    if p:
                        new[s + offset] += p * w
        dist = new
    return dist


def _normal_tail(observed: int, steps: Sequence[int]) -> float:
    """The sign-flip p-value for many cases: the sum is near normal with variance Σ d²; the sum moves in steps of
    twice the lattice's common divisor, hence the continuity correction of one divisor."""
    sd = math.sqrt(sum(s * s for s in steps))
    grain = math.gcd(*steps)
    return min(1.0, 2 * (1 - NormalDist().cdf(max(0.0, observed - grain) / sd)))


def fisher(a: int, b: int, c: int, d: int) -> float:
    """Fisher's exact test of the 2×2 table [[a, b], [c, d]], two-sided (rows: the two runs; columns: passed,
    not passed): the probability, with the margins fixed, of every table no more likely than the observed one
    (compared as whole numbers: tables exactly as likely count, with no tolerance needed)."""
    rows, passes = a + b, a + c
    n = a + b + c + d
    low, high = max(0, passes - (c + d)), min(rows, passes)
    weight = [math.comb(rows, x) * math.comb(n - rows, passes - x) for x in range(low, high + 1)]
    seen = weight[a - low]
    tail = sum(w for w in weight if w <= seen)
    return min(1.0, tail / math.comb(n, passes))


def fisher_floor(runs_a: int, runs_b: int) -> float:
    """The smallest p-value Fisher's test can give a case with these runs (every run passed in one, none in the
    other): with 3 runs each, 0.1 — no single case can then be shown to have moved at α = 0.05."""
    if not runs_a or not runs_b:
        return 1.0
    return min(fisher(runs_a, 0, 0, runs_b), fisher(0, runs_a, runs_b, 0))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the family-wise error stays at α over all the tests; a test is significant
    when its adjusted p-value is below α."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def fewest_changes(alpha: float) -> int:
    """The fewest cases that, all moving the same way, the sign-flip (or McNemar) test can find significant
    at ``alpha``: the smallest k with 2 · 2⁻ᵏ < alpha (6 at 0.05)."""
    k = 1
    while 2.0 ** (1 - k) >= alpha:
        k += 1
    return k
