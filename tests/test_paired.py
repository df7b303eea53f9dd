"""Paired comparisons of two runs (verdicts/paired.py), without the CLI: the figures of known per-case outcomes
equal an independent computation (scipy), and a seeded simulation shows what the verdict means — two runs of the
same agent over a realistic suite say "no difference" at least 95% of the time at α = 0.05, and a real 20-point
drop on 100 cases × 3 runs is flagged."""

from __future__ import annotations

import random

import pytest

from agenttest.stats import intervals, power
from agenttest.verdicts.paired import Outcome, compare

scipy_stats = pytest.importorskip("scipy.stats")
np = pytest.importorskip("numpy")


def outcomes(pairs):
    return [Outcome(f"c{i}", "cases.jsonl", "", before, after) for i, (before, after) in enumerate(pairs)]


def test_one_run_per_case_is_mcnemar():
    # 50 cases: 8 passed → failed, 2 failed → passed, 30 passed both, 10 failed both
    pairs = [((1, 1), (0, 1))] * 8 + [((0, 1), (1, 1))] * 2 + [((1, 1), (1, 1))] * 30 + [((0, 1), (0, 1))] * 10
    paired = compare(outcomes(pairs), "a.json", "b.json")
    assert paired.test == "mcnemar" and (paired.worse, paired.better, paired.cases) == (8, 2, 50)
    assert paired.p == pytest.approx(scipy_stats.binomtest(2, 10, 0.5).pvalue, abs=1e-6)
    assert paired.difference == pytest.approx(-6 / 50) and paired.base_rate == pytest.approx(38 / 50)
    assert paired.verdict == "no difference" and not paired.regression  # p = 0.109
    assert paired.low < paired.difference < paired.high
    # σ₀² = 10/50 discordant; MDD = 2.801585 · √(0.2/50), above the floor 6/50
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    assert paired.mdd == pytest.approx(z * (0.2 / 50) ** 0.5, abs=1e-6)
    assert paired.case_floor == 1.0 and paired.tested == 0 and not paired.moved  # one run: no case can be shown to move


def test_a_significant_drop_with_one_run():
    pairs = [((1, 1), (0, 1))] * 9 + [((1, 1), (1, 1))] * 41
    paired = compare(outcomes(pairs), "a", "b")
    assert paired.p == pytest.approx(2 / 2 ** 9) and paired.verdict == "worse" and paired.regression
    assert paired.high < 0


def test_several_runs_use_the_sign_flip_test_and_fisher_per_case():
    rng = random.Random(4)
    pairs = [((b := rng.randint(0, 5), 5), (max(0, b - rng.choice([0, 0, 1, 2])), 5)) for _ in range(11)]
    pairs.append(((5, 5), (0, 5)))  # one case collapsed
    paired = compare(outcomes(pairs), "a", "b")
    d = np.array([a[0] / 5 for _, a in pairs]) - np.array([b[0] / 5 for b, _ in pairs])
    ref = scipy_stats.permutation_test((d, np.zeros_like(d)), lambda x, y: np.mean(x - y), permutation_type="samples",
                                       vectorized=False, n_resamples=10_000).pvalue
    assert paired.test == "sign-flip" and paired.p == pytest.approx(ref, abs=1e-6)
    fisher = scipy_stats.fisher_exact([[5, 0], [0, 5]]).pvalue
    assert paired.tested == 12 and paired.case_floor == pytest.approx(fisher)
    assert not paired.moved  # 5/5 → 0/5 has p = 0.0079, but 12 cases were tested: Holm makes it 0.095


def test_a_case_that_collapsed_over_ten_runs_is_flagged():
    pairs = [((7, 10), (6, 10))] * 5 + [((7, 10), (8, 10))] * 5 + [((7, 10), (7, 10))] * 9 + [((10, 10), (0, 10))]
    paired = compare(outcomes(pairs), "a", "b")
    fisher = scipy_stats.fisher_exact([[10, 0], [0, 10]]).pvalue
    (mover,) = paired.moved
    assert mover.id == "c19" and mover.worse and mover.p == pytest.approx(fisher, abs=1e-9)
    assert mover.adjusted == pytest.approx(20 * fisher, abs=1e-9) and paired.tested == 20
    assert paired.regression and paired.verdict == "no difference"  # the suite moved 5 points: not significant alone


def test_the_interval_of_no_change_at_all():
    paired = compare(outcomes([((1, 1), (1, 1))] * 50), "a", "b")
    u = 1 - 0.025 ** (1 / 50)  # Clopper–Pearson: the share of 50 cases that could have moved with none seen moving
    assert (paired.low, paired.high) == pytest.approx((-u, u)) and paired.p == 1.0
    assert paired.mdd == pytest.approx(6 / 50)  # a repeatable agent: the exact test's floor, 12 points
    assert dict(paired.runs_needed)[0.10] == 2  # 6 / (50 · 0.1) = 1.2 → 2 runs per case


def test_cases_that_did_not_run_are_not_paired():
    assert compare(outcomes([((0, 0), (1, 1))]), "a", "b") is None
    paired = compare(outcomes([((0, 0), (1, 1)), ((1, 1), (1, 1))]), "a", "b")
    assert paired.cases == 1


# -- the simulation --------------------------------------------------------------------------------

def suite(rng, cases):
    """Per-case pass probabilities of a realistic suite: most cases reliable, some flaky, some broken."""
    out = []
    for _ in range(cases):
        kind = rng.random()
        out.append(rng.uniform(0.9, 1.0) if kind < 0.6 else rng.uniform(0.3, 0.9) if kind < 0.85 else rng.uniform(0.0, 0.1))
    return out


def run(rng, probabilities, runs):
    return [(sum(rng.random() < p for _ in range(runs)), runs) for p in probabilities]


@pytest.mark.parametrize("cases, runs", [(50, 1), (100, 3)])
def test_two_runs_of_the_same_agent_say_no_difference(cases, runs, monkeypatch):
    monkeypatch.setattr(intervals, "RESAMPLES", 200)  # the interval does not decide the verdict
    rng = random.Random(55)
    quiet = alarms = 0
    trials = 300
    for _ in range(trials):
        probabilities = suite(rng, cases)
        paired = compare(outcomes(list(zip(run(rng, probabilities, runs), run(rng, probabilities, runs)))), "a", "b")
        quiet += paired.verdict == "no difference"
        alarms += paired.regression
    assert quiet / trials >= 0.95
    assert alarms / trials <= 0.05  # the gate's false alarms (the suite's test and the cases' together)


def test_a_real_twenty_point_drop_is_flagged(monkeypatch):
    monkeypatch.setattr(intervals, "RESAMPLES", 200)
    rng = random.Random(56)
    flagged = 0
    trials = 100
    for _ in range(trials):
        before = suite(rng, 100)
        after = [max(0.0, p - 0.2) for p in before]
        paired = compare(outcomes(list(zip(run(rng, before, 3), run(rng, after, 3)))), "a", "b")
        flagged += paired.verdict == "worse" and paired.regression
    assert flagged / trials >= 0.99


def test_the_minimum_detectable_difference_is_what_the_simulation_detects(monkeypatch):
    """At the MDD the test finds the difference about 80% of the time (a normal approximation: 70–95% here)."""
    monkeypatch.setattr(intervals, "RESAMPLES", 200)
    rng = random.Random(57)
    probabilities = [0.5] * 100  # every case a coin: σ₀² = 0.5 · 0.5 · (1/3 + 1/3)
    mdd = power.min_detectable(100, 3, 0.25 * 2 / 3)
    found = 0
    for _ in range(200):
        paired = compare(outcomes(list(zip(run(rng, probabilities, 3), run(rng, [p - mdd for p in probabilities], 3)))), "a", "b")
        found += paired.verdict == "worse"
    assert 0.7 <= found / 200 <= 0.95
