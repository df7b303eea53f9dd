"""A run's evidence (verdicts/evidence.py, FORMATS §19): on reports built with known per-case outcomes, every
interval equals an independent computation (scipy, or the naive bootstrap drawn case by case); the seeded
bootstrap gives the same report in another process; a model matrix compares its connectors; every format
says a rate with its interval and sample size."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from agenttest.model import CaseKey, CaseResult, Gate, RunReport
from agenttest.stats import intervals
from agenttest.verdicts import evidence

from helpers import REPO, cli, report
from scripted import Scripted

scipy_stats = pytest.importorskip("scipy.stats")
np = pytest.importorskip("numpy")


def built(outcomes, connector=""):
    """A report of cases with these (passed, runs): each run a result, each case a gate."""
    results, gates = [], []
    for i, (passed, runs) in enumerate(outcomes):
        for r in range(runs):
            results.append(CaseResult(key=CaseKey(file="t.jsonl", id=f"c{i}", connector=connector), status="passed" if r < passed else "failed", run=r + 1,
                                      index=len(results)))
        gates.append(Gate(key=CaseKey(file="t.jsonl", id=f"c{i}", connector=connector), planned=runs, runs=runs, passed=passed))
    return RunReport(results=tuple(results), started_at="", completed_at="", duration_ms=1.0, gates=tuple(gates))


def test_one_run_per_case_is_wilson_over_the_cases():
    e = evidence.compute(built([(1, 1)] * 14 + [(0, 1)] * 6), 0.9).pass_rate
    ref = scipy_stats.binomtest(14, 20).proportion_ci(0.9, method="wilson")
    assert (e.method, e.cases, e.runs, e.rate) == ("wilson", 20, 20, 0.7)
    assert (e.low, e.high) == pytest.approx((ref.low, ref.high), abs=1e-6)


def test_several_runs_are_the_bootstrap_over_cases():
    outcomes = [(3, 3)] * 30 + [(2, 3)] * 8 + [(1, 3)] * 4 + [(0, 3)] * 6
    e = evidence.compute(built(outcomes)).pass_rate
    assert (e.method, e.cases, e.runs) == ("bootstrap", 48, 144) and e.rate == pytest.approx((90 + 16 + 4) / 144)
    assert (e.low, e.high) == intervals.bootstrap([(6, 0, 3), (4, 1, 3), (8, 2, 3), (30, 3, 3)])  # the documented computation
    rng = random.Random(1)  # and the naive bootstrap, drawn case by case, agrees within its own noise
    naive = sorted(sum(p for p, _ in d) / sum(r for _, r in d) for d in ([rng.choice(outcomes) for _ in outcomes] for _ in range(4000)))
    assert abs(e.low - np.percentile(naive, 2.5)) < 0.02 and abs(e.high - np.percentile(naive, 97.5)) < 0.02


def test_pass_k_intervals_are_bootstraps_of_each_cases_unbiased_estimate():
    outcomes = [(4, 4)] * 10 + [(3, 4)] * 5 + [(1, 4)] * 5
    known = evidence.compute(built(outcomes))
    assert len(known.pass_hat) == len(known.pass_at) == 4
    for k in range(1, 5):
        # kinds in the order of (passed, runs): 1 of 4, 3 of 4, 4 of 4; each case's C(c,k)/C(n,k) from scipy's hypergeometric
        hat = [(5, scipy_stats.hypergeom.pmf(k, 4, 1, k), 1.0), (5, scipy_stats.hypergeom.pmf(k, 4, 3, k), 1.0), (10, 1.0, 1.0)]
        at = [(5, 1 - scipy_stats.hypergeom.pmf(0, 4, 1, k), 1.0), (5, 1 - scipy_stats.hypergeom.pmf(0, 4, 3, k), 1.0), (10, 1.0, 1.0)]
        assert known.pass_hat[k - 1] == pytest.approx(intervals.bootstrap(hat), abs=1e-9)
        assert known.pass_at[k - 1] == pytest.approx(intervals.bootstrap(at), abs=1e-9)


def test_a_case_interval_is_wilson_over_its_runs():
    g = Gate(key=CaseKey(id="a"), runs=7, passed=5, planned=7)
    ref = scipy_stats.binomtest(5, 7).proportion_ci(0.95, method="wilson")
    assert evidence.case_interval(g, 0.95) == pytest.approx((ref.low, ref.high), abs=1e-6)
    assert evidence.case_interval(Gate(key=CaseKey(id="b")), 0.95) is None


def test_a_report_read_back_says_the_same():
    """Evidence is derived: a report read back (no evidence field) gets it from its results and options."""
    made = built([(3, 3)] * 5 + [(1, 3)] * 3)
    again = replace(made, options={"confidence": 0.8})
    assert evidence.of(again).confidence == 0.8 and evidence.of(again) == evidence.compute(made, 0.8)


SNIPPET = """
import json, sys
sys.path.insert(0, 'tests')
from test_evidence import built
from agenttest.reporting.codec import summary_dict
s = summary_dict(built([(3, 3)] * 9 + [(2, 3)] * 4 + [(0, 3)] * 2))
print(json.dumps([s["pass_rate_interval"], s["pass_k"]["pass_hat_interval"]]))
"""


def test_the_same_outcomes_give_the_same_intervals_in_another_process():
    from agenttest.reporting.codec import summary_dict

    s = summary_dict(built([(3, 3)] * 9 + [(2, 3)] * 4 + [(0, 3)] * 2))
    here = json.dumps([s["pass_rate_interval"], s["pass_k"]["pass_hat_interval"]])
    there = subprocess.run([sys.executable, "-c", SNIPPET], capture_output=True, text=True, check=True, cwd=REPO,
                           env={"PYTHONHASHSEED": "7", "PATH": ""}).stdout.strip()
    assert there == here


# -- end to end: a matrix run -------------------------------------------------------------------------

@pytest.fixture
def two(app, server):
    server.responder = Scripted()
    for name, model in (("fake-a", "model-a"), ("fake-b", "model-b")):
        app.connector(name, {"type": "openai", "options": {"model": model, "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY", "max_retries": 0}})
    app.agent("bot", connector="fake-a")
    return app


def test_a_matrix_run_says_each_rate_with_its_interval_and_compares_the_connectors(two, tmp_path):
    # model-b fails 8 of 10 cases that model-a passes: McNemar, 8 against 0
    cases = [{"id": f"c{i}", "input": f"pattern:model-a=P;model-b={'F' if i < 8 else 'P'}:ok c{i}", "assert": {"type": "contains", "value": "ok"}}
             for i in range(10)]
    path = two.cases("cases.jsonl", cases)
    out, md, xml = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.xml"
    result = cli("-i", str(path), "-n", "bot", "-c", "fake-a,fake-b", "-o", str(out), "-o", str(md), "-o", str(xml))
    assert result.exit_code == 1, result.output
    s = report(out)["summary"]
    assert s["confidence"] == 0.95 and s["pass_rate_interval"]["method"] == "wilson" and s["pass_rate_interval"]["cases"] == 20
    ref = scipy_stats.binomtest(12, 20).proportion_ci(0.95, method="wilson")
    assert s["pass_rate_interval"]["interval"] == pytest.approx([ref.low, ref.high], abs=1e-6)
    assert s["pass_rate_by_connector"]["fake-b"]["rate"] == 0.2
    (paired,) = s["matrix_comparisons"]
    assert (paired["base"], paired["new"], paired["verdict"], paired["worse"], paired["better"]) == ("fake-a", "fake-b", "worse", 8, 0)
    assert paired["p"] == pytest.approx(scipy_stats.binomtest(0, 8).pvalue, abs=1e-9)
    lines = result.output.splitlines()
    assert f"  Pass Rate: 60.0% (95% CI {ref.low * 100:.0f}%–{ref.high * 100:.0f}%; 20 cases)" in lines
    assert "    fake-b: 20.0% (95% CI 6%–51%; 10 cases)" in lines
    assert any(line.startswith("    fake-b vs fake-a: worse: -80.0 points (95% CI ") and line.endswith("p = 0.0078 — 10 cases × 1 run, "
                                                                                                     "McNemar's exact test") for line in lines)
    text = md.read_text()
    assert "Pass rate 60.0% (95% CI 39%–78%; 20 cases)." in text and "- fake-b vs fake-a: worse: -80.0 points" in text
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().find("testsuite").find("properties")}
    assert props["pass_rate_interval"] == f"{ref.low:.4f}-{ref.high:.4f}" and props["cases"] == "20"


def test_confidence_is_a_flag_and_bad_values_are_usage_errors(two, tmp_path):
    path = two.cases("cases.jsonl", [{"id": f"c{i}", "input": "pattern:P:ok", "assert": {"type": "contains", "value": "ok"}} for i in range(3)])
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "--confidence", "0.8", "-o", str(out)).exit_code == 0
    s = report(out)["summary"]
    assert s["confidence"] == 0.8 and s["pass_rate_interval"]["interval"] == pytest.approx(list(intervals.wilson(3, 3, 0.8)), abs=1e-6)
    for bad in ("1", "0", "1.5", "nan", "x"):
        wrong = cli("-i", str(path), "-n", "bot", "--confidence", bad)
        assert wrong.exit_code == 2 and "--confidence" in wrong.output and "Traceback" not in wrong.output, bad
