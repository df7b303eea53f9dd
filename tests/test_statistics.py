"""The statistics package (agenttest/stats) against an independent computation: every p-value and interval
equals scipy's (a test-only dependency) or a value worked by hand to 1e-6; the minimum detectable difference
equals its closed form; the seeded bootstrap gives the same interval in another process."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from fractions import Fraction

import pytest

scipy_stats = pytest.importorskip("scipy.stats")
np = pytest.importorskip("numpy")

from agenttest.stats import agreement, exact, intervals, power

TOL = 1e-6


# -- Wilson -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_wilson_equals_scipy(confidence):
    for n in (1, 2, 3, 5, 10, 37, 200):
        for k in range(n + 1):
            low, high = intervals.wilson(k, n, confidence)
            ref = scipy_stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
            assert abs(low - ref.low) < TOL and abs(high - ref.high) < TOL, (k, n, confidence)


def test_wilson_of_three_runs_and_of_none():
    assert intervals.wilson(3, 3) == pytest.approx((0.438503, 1.0), abs=TOL)  # "3 runs: 44%–100%"
    assert intervals.wilson(0, 3)[0] == 0.0 and intervals.wilson(3, 3)[1] == 1.0
    assert intervals.wilson(0, 0) is None
    assert intervals.z_of(0.95) == pytest.approx(1.959964, abs=TOL)


# -- binomial tails, McNemar -----------------------------------------------------------------------

def test_binomial_cdf_equals_scipy():
    for m in (1, 2, 7, 20, 61, 300):
        for k in range(-1, m + 2):
            assert abs(exact.binomial_cdf(k, m) - scipy_stats.binom.cdf(k, m, 0.5)) < 1e-12, (k, m)


def test_mcnemar_equals_the_exact_binomial_test():
    for worse, better in itertools.product(range(15), repeat=2):
        if worse + better == 0:
            assert exact.mcnemar(0, 0) == 1.0
            continue
        ref = scipy_stats.binomtest(worse, worse + better, 0.5).pvalue
        assert abs(exact.mcnemar(worse, better) - ref) < TOL, (worse, better)
    assert exact.mcnemar(6, 0) == pytest.approx(0.03125)  # six cases one way: the fewest that can be significant
    assert exact.mcnemar(5, 0) == pytest.approx(0.0625)


def test_fewest_changes():
    assert exact.fewest_changes(0.05) == 6
    assert exact.fewest_changes(0.01) == 8
    assert exact.mcnemar(exact.fewest_changes(0.01), 0) < 0.01 <= exact.mcnemar(exact.fewest_changes(0.01) - 1, 0)


# -- the paired sign-flip test ----------------------------------------------------------------------

def rates(rng, cases, runs):
    """Per-case (base, new) pass rates of ``runs`` runs each, as numpy arrays and as exact differences."""
    base = [rng.randint(0, runs) for _ in range(cases)]
    new = [min(runs, max(0, b + rng.choice([-2, -1, 0, 0, 1]))) for b in base]
    return base, new


@pytest.mark.parametrize("seed", range(8))
def test_sign_flip_equals_scipys_exact_permutation_test(seed):
    rng = random.Random(seed)
    runs = rng.choice([2, 3, 5])
    base, new = rates(rng, 12, runs)  # 2^12 sign patterns: scipy enumerates them all
    ref = scipy_stats.permutation_test((np.array(new) / runs, np.array(base) / runs), lambda x, y: np.mean(x - y),
                                       permutation_type="samples", vectorized=False, n_resamples=10_000).pvalue
    got = exact.sign_flip([Fraction(n - b, runs) for b, n in zip(base, new)])
    assert abs(got - ref) < TOL, (base, new)


def brute_force(differences):
    """Every sign pattern of the nonzero differences, counted."""
    nonzero = [d for d in differences if d]
    observed = abs(sum(nonzero))
    extreme = sum(1 for signs in itertools.product((1, -1), repeat=len(nonzero))
                  if abs(sum(s * d for s, d in zip(signs, nonzero))) >= observed)
    return extreme / 2 ** len(nonzero)


def test_sign_flip_with_different_runs_per_case_equals_enumeration():
    rng = random.Random(7)
    for _ in range(20):
        diffs = []
        for _ in range(rng.randint(1, 13)):
            m, n = rng.choice([1, 2, 3, 4, 5]), rng.choice([1, 2, 3, 5])
            diffs.append(Fraction(rng.randint(0, n), n) - Fraction(rng.randint(0, m), m))
        assert abs(exact.sign_flip(diffs) - brute_force(diffs)) < 1e-12, diffs


def test_sign_flip_with_one_run_is_mcnemar():
    for worse, better in [(0, 0), (1, 0), (6, 0), (9, 3), (20, 31)]:
        assert exact.sign_flip([-1] * worse + [1] * better + [0] * 40) == exact.mcnemar(worse, better)


def test_sign_flip_past_the_exact_work_is_near_the_exact_value(monkeypatch):
    rng = random.Random(3)
    base, new = rates(rng, 300, 3)
    diffs = [Fraction(n - b, 3) for b, n in zip(base, new)]
    exact_p = exact.sign_flip(diffs)
    monkeypatch.setattr(exact, "EXACT_WORK", 10)
    approximate = exact.sign_flip(diffs)
    assert approximate != exact_p and abs(approximate - exact_p) < 0.005 + 0.05 * exact_p


# -- Fisher, Holm -----------------------------------------------------------------------------------

def test_fisher_equals_scipy():
    for m, n in [(1, 1), (3, 3), (2, 5), (5, 5), (10, 7), (20, 20)]:
        for a in range(m + 1):
            for c in range(n + 1):
                ref = scipy_stats.fisher_exact([[a, m - a], [c, n - c]]).pvalue
                assert abs(exact.fisher(a, m - a, c, n - c) - ref) < TOL, (a, m, c, n)
    assert abs(exact.fisher(300, 200, 250, 250) - scipy_stats.fisher_exact([[300, 200], [250, 250]]).pvalue) < TOL


def test_the_smallest_p_value_a_case_can_have():
    assert exact.fisher_floor(3, 3) == pytest.approx(0.1)  # 3 runs each: no case can be shown to move at 0.05
    assert exact.fisher_floor(1, 1) == 1.0
    assert exact.fisher_floor(5, 5) == pytest.approx(2 / 252)


def test_holm_worked_by_hand():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → raised to the running maximum 0.06
    assert exact.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert exact.holm([]) == [] and exact.holm([0.7, 0.9]) == pytest.approx([1.0, 1.0])


# -- the bootstrap ----------------------------------------------------------------------------------

def test_the_binomial_draw_is_an_exact_inversion():
    """Uniforms on a fine grid land on each value as often as its probability says (to one grid point)."""
    for n, p in [(1, 0.5), (7, 0.2), (20, 0.3), (60, 0.9), (500, 0.5)]:
        grid = 20_000
        counts = [0] * (n + 1)
        for i in range(grid):
            counts[intervals._binomial(n, p, (i + 0.5) / grid)] += 1
        for k in range(n + 1):
            assert abs(counts[k] - grid * scipy_stats.binom.pmf(k, n, p)) <= 1.0 + 1e-9, (n, p, k)


def test_resamples_draw_every_case():
    draws = intervals.resample([5, 0, 12, 3], times=50)
    assert all(sum(d) == 20 and d[1] == 0 for d in draws)
    assert draws == intervals.resample([5, 0, 12, 3], times=50)  # seeded


def test_the_bootstrap_is_the_naive_bootstrap():
    """The kinds-of-case resampling gives the distribution drawing cases one by one gives (its mean and spread
    within what 2,000 resamples allow)."""
    kinds = [(30, 3, 3), (8, 2, 3), (7, 1, 3), (5, 0, 3)]  # (cases, passed, runs)
    cases = [k for k in kinds for _ in range(k[0])]
    rng = random.Random(11)
    naive = []
    for _ in range(4000):
        drawn = [rng.choice(cases) for _ in cases]
        naive.append(sum(c[1] for c in drawn) / sum(c[2] for c in drawn))
    ours = [intervals.ratio(d, kinds) for d in intervals.resample([k[0] for k in kinds], times=4000, seed=5)]
    assert abs(np.mean(ours) - np.mean(naive)) < 0.01
    assert abs(np.std(ours) - np.std(naive)) < 0.006
    low, high = intervals.bootstrap(kinds)
    ref_low, ref_high = np.percentile(naive, [2.5, 97.5])
    assert abs(low - ref_low) < 0.03 and abs(high - ref_high) < 0.03


def test_the_bootstrap_quantiles_are_numpys():
    values = [random.Random(2).random() for _ in range(101)]
    for q in (0.025, 0.5, 0.975):
        assert abs(intervals.quantile(sorted(values), q) - np.percentile(values, 100 * q)) < 1e-12


def test_a_suite_whose_cases_all_passed_gets_the_wilson_interval_of_its_cases():
    assert intervals.bootstrap([(20, 3, 3)]) == pytest.approx(intervals.wilson(20, 20))
    assert intervals.bootstrap([(20, 3, 3)])[0] == pytest.approx(0.838875, abs=TOL)
    assert intervals.bootstrap([]) is None and intervals.bootstrap([(0, 1, 1)]) is None


SNIPPET = "from agenttest.stats import intervals; print(repr(intervals.bootstrap([(41, 3, 3), (6, 2, 3), (3, 1, 3), (9, 0, 3)], 0.9)))"


def test_the_bootstrap_is_the_same_in_another_process():
    here = intervals.bootstrap([(41, 3, 3), (6, 2, 3), (3, 1, 3), (9, 0, 3)], 0.9)
    there = subprocess.run([sys.executable, "-c", SNIPPET], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip()
    assert there == repr(here)
    assert here == pytest.approx((0.6949152542372882, 0.8531073446327684), abs=1e-12)  # this value, on every machine


# -- power ------------------------------------------------------------------------------------------

def test_the_minimum_detectable_difference_is_its_closed_form():
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    for cases, runs, variance in [(50, 1, 0.2), (100, 3, 0.1), (400, 5, 0.05), (1000, 1, 0.3)]:
        expected = max(z * (variance / cases) ** 0.5, 6 / (cases * runs))
        assert abs(power.min_detectable(cases, runs, variance) - expected) < TOL
    assert power.min_detectable(50, 1, 0.0) == pytest.approx(6 / 50)  # a deterministic agent: the exact test's floor
    assert power.min_detectable(0, 1, 0.1) == 1.0


def test_noise_and_spread_of_one_run_each():
    pairs = [(1, 1, 0, 1)] * 5 + [(1, 1, 1, 1)] * 40 + [(0, 1, 0, 1)] * 5  # 5 of 50 flipped
    assert power.noise(pairs) == pytest.approx(5 / 50)  # McNemar's variance: the share of discordant cases
    assert power.spread(pairs) == pytest.approx(5 / 50 / 2)
    assert power.noise([(2, 3, 1, 3)]) == pytest.approx(0.5 * 0.5 * 6 / 5 * (2 / 3))


def test_runs_needed_is_the_smallest_that_detects_the_difference():
    for cases, per_run, d in [(50, 0.1, 0.1), (100, 0.2, 0.05), (20, 0.15, 0.2), (200, 0.0, 0.01)]:
        r = power.runs_needed(d, cases, per_run)
        assert power.min_detectable(cases, r, 2 * per_run / r) <= d + 1e-12
        if r > 1:
            assert power.min_detectable(cases, r - 1, 2 * per_run / (r - 1)) > d
    assert power.runs_needed(0.001, 10, 0.25) is None  # more than --runs allows
    assert power.runs_needed(0.0, 10, 0.25) is None


# -- agreement --------------------------------------------------------------------------------------

def test_agreement_worked_by_hand():
    # 20 labelled: 8 true judged pass, 2 true judged fail, 3 false judged pass, 7 false judged fail
    a = agreement.agreement([(True, True)] * 8 + [(True, False)] * 2 + [(False, True)] * 3 + [(False, False)] * 7)
    assert (a.tp, a.fn, a.fp, a.tn, a.labelled) == (8, 2, 3, 7, 20)
    assert a.agreement == pytest.approx(15 / 20)
    pe = (10 * 11 + 10 * 9) / 400  # labelled pass · judged pass + labelled fail · judged fail, over n²
    assert a.kappa == pytest.approx((0.75 - pe) / (1 - pe)) and a.kappa == pytest.approx(0.5)
    assert (a.tpr, a.tnr, a.precision) == pytest.approx((0.8, 0.7, 8 / 11))


def test_agreement_without_a_class():
    a = agreement.agreement([(True, True)] * 5)
    assert a.agreement == 1.0 and a.kappa is None and a.tnr is None and a.tpr == 1.0
    assert agreement.Agreement().agreement is None
