"""Intervals of a rate: the Wilson score interval of one case's runs, and the bootstrap over cases for a suite's
figures (runs of one case are not independent samples of the suite: cases are). The bootstrap is seeded and
draws from Python's Mersenne Twister through ``random()`` only, whose sequence Python guarantees for a seed:
the same outcomes give the same interval on every machine."""

from __future__ import annotations

import math
import random
from operator import mul
from collections.abc import Sequence
from statistics import NormalDist

RESAMPLES = 2000  # bootstrap resamples: the percentile interval's ends move by well under a point past this
SEED = 0  # every bootstrap starts from this seed: an interval depends on the outcomes alone
CASE_BY_CASE = 10  # up to this many cases per kind of case, a resample is drawn case by case, not kind by kind

Interval = tuple[float, float]


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of a confidence level: 1.959964 for 0.95."""
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def wilson(passed: float, n: int, confidence: float = 0.95) -> Interval | None:
    """The Wilson score interval of ``passed`` out of ``n`` (``passed`` may be a share times n); None for n = 0.

    center = (p + z²/2n) / (1 + z²/n), half-width = z √(p(1−p)/n + z²/4n²) / (1 + z²/n). Unlike p ± z·se it never
    leaves 0–1 and is not empty at 0 or n passes: 3 of 3 runs give 44%–100% at 95%."""
    if n <= 0:
        return None
    z = z_of(confidence)
    p = passed / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if passed <= 0 else max(0.0, center - half)
    high = 1.0 if passed >= n else min(1.0, center + half)
    return low, high


def quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linear between order statistics (position (n − 1)·q; numpy's default)."""
    h = (len(ordered) - 1) * q
    below = math.floor(h)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (h - below) * (ordered[above] - ordered[below])


def percentile(values: Sequence[float], confidence: float) -> Interval:
    """The percentile interval of bootstrap values: their (1 − c)/2 and (1 + c)/2 quantiles."""
    ordered = sorted(values)
    tail = (1 - confidence) / 2
    return quantile(ordered, tail), quantile(ordered, 1 - tail)


def resample(counts: Sequence[int], times: int | None = None, seed: int = SEED) -> list[list[int]]:
    """``times`` bootstrap resamples of n = Σ counts cases, each case drawn with replacement, given as how many
    of each kind of case were drawn: a multinomial draw, made of one binomial draw per kind — the same as drawing
    n cases one by one, at a cost that does not grow with n — or, for a few cases of many kinds (40 runs a case),
    the n cases drawn one by one, which then costs less."""
    rng = random.Random(seed)
    uniform = rng.random
    times = RESAMPLES if times is None else times
    n = sum(counts)
    out = []
    if n <= CASE_BY_CASE * len(counts):  # few cases for their kinds: drawing them one by one costs less
        kind_of = [j for j, count in enumerate(counts) for _ in range(count)]
        for _ in range(times):
            drawn = [0] * len(counts)
            for _ in range(n):
                drawn[kind_of[int(uniform() * n)]] += 1
            out.append(drawn)
        return out
    for _ in range(times):
        left, rest, drawn = n, n, []
        for count in counts[:-1]:
            x = _binomial(left, count / rest if rest else 0.0, uniform()) if left else 0
            drawn.append(x)
            left -= x
            rest -= count
        drawn.append(left)
        out.append(drawn)
    return out


def _binomial(n: int, p: float, u: float) -> int:
    """The Binomial(n, p) value that uniform ``u`` maps to, by inversion: the values are taken outward from the
    mode (mode, mode − 1, mode + 1, …) until their probabilities exceed u — about √(n·p·(1−p)) steps."""
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    mode = min(n, int((n + 1) * p))
    odds = p / (1 - p)
    at_mode = math.exp(math.lgamma(n + 1) - math.lgamma(mode + 1) - math.lgamma(n - mode + 1)
                       + mode * math.log(p) + (n - mode) * math.log1p(-p))
    u -= at_mode
    if u < 0:
        return mode
    lo = hi = mode
    p_lo = p_hi = at_mode
    while lo > 0 or hi < n:
        if lo > 0:
            p_lo *= lo / ((n - lo + 1) * odds)
            lo -= 1
            u -= p_lo
            if u < 0:
                return lo
        if hi < n:
            p_hi *= (n - hi) / (hi + 1) * odds
            hi += 1
            u -= p_hi
            if u < 0:
                return hi
    return mode  # u was left over by rounding: the likeliest value


def bootstrap(groups: Sequence[tuple[int, float, float]], confidence: float = 0.95, times: int | None = None,
              seed: int = SEED) -> Interval | None:
    """The percentile bootstrap interval over cases of a ratio Σ numerator / Σ denominator, for cases given in
    kinds ``(cases, numerator, denominator)`` — a pass rate: (cases with these runs, passed runs, runs); a mean
    of per-case values: (cases, value, 1). None without cases. When every case has the same value, resampling
    has no spread to show: the interval is then the Wilson interval of that value over the cases (20 cases
    that all passed: 84%–100%, not 100%–100%)."""
    kinds = [g for g in groups if g[0] > 0]
    if len({g[1] / g[2] for g in kinds}) < 2:
        return from_draws([], kinds, confidence)
    return from_draws(resample([g[0] for g in groups], times, seed), groups, confidence)


def from_draws(draws: Sequence[Sequence[int]], groups: Sequence[tuple[int, float, float]], confidence: float) -> Interval | None:
    """``bootstrap`` on resamples already drawn for these kinds of case (``resample`` of their counts): several
    figures of the same cases (pass^k for every k) share one set of resamples."""
    kinds = [g for g in groups if g[0] > 0]
    if not kinds:
        return None
    values = {g[1] / g[2] for g in kinds}
    if len(values) == 1:
        cases = sum(g[0] for g in kinds)
        return wilson(values.pop() * cases, cases, confidence)
    numerators, denominators = [g[1] for g in groups], [g[2] for g in groups]
    if all(d == 1 for d in denominators):  # a mean of per-case values: the denominator is the number of cases
        cases = sum(g[0] for g in groups)
        return percentile([sum(map(mul, d, numerators)) / cases for d in draws], confidence)
    return percentile([sum(map(mul, d, numerators)) / sum(map(mul, d, denominators)) for d in draws], confidence)


def bootstrap_mean(values: Sequence[tuple[int, float]], confidence: float = 0.95, times: int | None = None,
                   seed: int = SEED) -> Interval | None:
    """The percentile bootstrap interval over cases of a mean of per-case values that may be negative (a paired
    difference), for cases given as ``(cases, value)``. When every case has the same value v, resampling has no
    spread: the interval is v ± u for v = 0 (u = 1 − ((1 − c)/2)^(1/n), the Clopper–Pearson bound on the share of
    the n cases that could have moved with none seen moving: 50 cases, ±7.1 points at 95%), else v alone."""
    kinds = [(count, value, 1.0) for count, value in values if count > 0]
    if not kinds:
        return None
    cases = sum(k[0] for k in kinds)
    distinct = {k[1] for k in kinds}
    if len(distinct) == 1:
        v = distinct.pop()
        u = 1 - ((1 - confidence) / 2) ** (1 / cases) if v == 0 else 0.0
        return v - u, v + u
    values_of = [k[1] for k in kinds]
    return percentile([sum(map(mul, d, values_of)) / cases for d in resample([k[0] for k in kinds], times, seed)], confidence)


def ratio(drawn: Sequence[int], kinds: Sequence[tuple[int, float, float]]) -> float:
    """A resample's Σ numerator / Σ denominator, ``drawn[j]`` cases of kind j (what ``from_draws`` computes, kept
    plain for the tests)."""
    return sum(x * k[1] for x, k in zip(drawn, kinds)) / sum(x * k[2] for x, k in zip(drawn, kinds))
