"""Each pure stage pinned fast, without the CLI (httpx tests its transports with a mock, pytest its mark
expressions without a session): resolution's plan, gates and pass^k, budgets, costs, the comparison of two
reports, the codec — values built by hand, in, and the value out. The CLI tests stay for behaviour end to end."""

from __future__ import annotations

import json

import pytest

from agenttest.accounting import budgets, costs
from agenttest.agents.catalog import Catalog
from agenttest.app.folders import App
from agenttest.config import RunConfig
from agenttest.history.comparison import compare, verdict
from agenttest.inputs.reading import parse_text
from agenttest.model import (AssertionResult, Budget, CaseKey, CaseResult, Gate, Ran, RunReport, Spend, Usage)
from agenttest.model.results import classify, needed, settled
from agenttest.reporting import codec
from agenttest.resolution.planning import plan_of
from agenttest.runtime import attachments
from agenttest.verdicts import gates, outcome

# ---- resolution ---------------------------------------------------------------------------------


@pytest.fixture
def catalog(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: ok\n"})
    offline_app.connector("other", {"type": "mock"})
    return Catalog(App(str(offline_app.root)))


def cases(root, *raw):
    return parse_text("\n".join(json.dumps(c) for c in raw), str(root / "cases.jsonl"), base_dir=str(root))


def test_the_plan_resolves_each_case_once_with_its_figures(catalog, offline_app):
    loaded = cases(offline_app.root, {"id": "a", "input": "hi"},
                   {"id": "b", "input": "hi", "runs": 3, "min_pass_rate": 0.5, "timeout": "2s", "budget": {"tokens": 10}},
                   {"id": "c", "turns": [{"input": "one"}, {"input": "two"}]})
    config = RunConfig(inputs=(), runs=2, timeout=30.0, budget=Budget(cost=0.5), max_attachment=1000, early_stop=True, parallel=4)
    plan = plan_of(list(loaded), "bot", config, catalog)
    a, b, c = plan.items
    assert (a.runs, a.min_pass_rate, a.deadline, a.budget) == (2, 1.0, 30.0, Budget(cost=0.5))  # the flags' own
    assert (b.runs, b.min_pass_rate, b.deadline, b.budget) == (3, 0.5, 2.0, Budget(tokens=10, cost=0.5))  # the case's win, limits merged
    assert a.key == CaseKey(file=str(offline_app.root / "cases.jsonl"), id="a", connector="mock")  # the agent's own connector
    assert a.mode.__name__.endswith("standard") and c.mode.__name__.endswith("scripted")
    assert a.attachments is b.attachments == attachments.app_policy(catalog.app.root, 1000)  # one policy for the run
    assert plan.total == 2 + 3 + 2 and plan.settings.parallel == 4 and plan.settings.early_stop and plan.settings.timeout == 30.0


def test_a_model_matrix_puts_every_case_on_every_connector_each_with_its_own_key(catalog, offline_app):
    loaded = cases(offline_app.root, {"id": "a", "input": "hi"}, {"id": "b", "input": "hi"})
    plan = plan_of(list(loaded), "bot", RunConfig(inputs=(), matrix=("mock", "other")), catalog)
    assert [(i.case.id, i.key.connector, i.scheduled) for i in plan.items] == [("a", "mock", "mock"), ("a", "other", "other"),
                                                                             ("b", "mock", "mock"), ("b", "other", "other")]
    assert plan.matrix == ("mock", "other") and plan.connectors == ("mock", "other") and len(plan.cases) == 2
    assert len({i.key for i in plan.items}) == 4


# ---- gates and pass^k ---------------------------------------------------------------------------

KEY = CaseKey(file="f.jsonl", id="a", connector="c")


def result(status: str, run: int = 1, ms: float = 10.0, key: CaseKey = KEY, index: int = 0) -> CaseResult:
    return CaseResult(key=key, status=status, run=run, duration_ms=ms, index=index)  # type: ignore[arg-type]


@pytest.mark.parametrize("passed, failed, planned, rate, outcome_", [
    (0, 1, 5, 1.0, False),  # the default gate: one failure settles it
    (5, 0, 5, 1.0, True),
    (3, 0, 5, 1.0, None),
    (8, 0, 10, 0.8, True),  # 0.8 of 10: eight passes
    (0, 3, 10, 0.8, False),  # or three failures
    (7, 2, 10, 0.8, None),
    (0, 0, 3, 0.0, True),  # a gate of 0 needs nothing
])
def test_settled_says_when_no_remaining_run_can_change_the_verdict(passed, failed, planned, rate, outcome_):
    assert settled(passed, failed, planned, rate) is outcome_
    assert needed(10, 0.8) == 8 and needed(3, 2 / 3) == 2 and needed(5, 0.0) == 0


def test_a_gate_of_runs_cut_short_is_incomplete_unless_settled():
    assert Gate(key=KEY, planned=2, runs=1, passed=1).verdict == "incomplete"  # the second run could still fail
    assert Gate(key=KEY, planned=2, runs=1, passed=0).verdict == "failed"  # settled by its failure
    assert Gate(key=KEY, planned=4, runs=3, passed=3, min_pass_rate=0.5).verdict == "passed"
    assert Gate(key=KEY, planned=3, runs=3, passed=2, min_pass_rate=2 / 3).verdict == "passed"  # 0.666… ≥ 0.666…
    assert Gate(key=KEY, planned=1, skipped=1).verdict == "skipped" and Gate(key=KEY, planned=1).verdict == "not run"
    assert Gate(key=KEY, planned=1, runs=1, passed=0, min_pass_rate=0.0).vacuous


def test_a_gates_figures_and_yaos_stability_class():
    runs = [result("passed", 1, 10), result("failed", 2, 30), result("error", 3, 20), result("skipped", 4)]
    g = gates.gate(KEY, runs, gates.Policy(4, 0.5))
    assert (g.runs, g.passed, g.skipped, g.verdict) == (3, 1, 1, "failed")
    assert (g.mean_ms, g.median_ms, g.min_ms, g.max_ms, g.std_ms) == (20.0, 20.0, 10.0, 30.0, 8.2)
    assert (g.percent, g.classification) == (33.3, "highly_unstable") and not g.flaky and g.pass_at_k and not g.pass_hat_k  # failed: never flaky
    assert [classify(r) for r in (100, 0, 80, 79.9, 50, 49.9)] == ["stable", "failing", "mostly_stable", "unstable", "unstable",
                                                                   "highly_unstable"]


def test_pass_k_is_the_mean_of_each_cases_unbiased_estimate():
    """4 of 5 runs passed: pass^1 = 0.8, pass^5 = 0; all 5 passed: 1 for every k. The suite's is their mean."""
    a = Gate(key=KEY, planned=5, runs=5, passed=4)
    b = Gate(key=CaseKey(id="b"), planned=5, runs=5, passed=5)
    assert a.pass_hat == (0.8, pytest.approx(0.6), pytest.approx(0.4), pytest.approx(0.2), 0.0)
    table = gates.pass_k([a, b])
    assert table is not None and table.k == (1, 2, 3, 4, 5) and table.cases == (2,) * 5
    assert table.pass_hat[0] == pytest.approx(0.9) and table.pass_hat[4] == pytest.approx(0.5) and table.pass_at[4] == 1.0
    assert gates.pass_k([Gate(key=KEY, planned=1, runs=1, passed=1)]) is None  # below two runs there is no table


def test_the_reports_groups_take_each_case_with_its_gate_and_runs_in_order():
    other = CaseKey(file="f.jsonl", id="b", connector="c")
    results = [result("passed", 1, key=KEY, index=0), result("failed", 2, key=KEY, index=1), result("passed", 1, key=other, index=2)]
    ran = Ran(results=results, started_at=0.0, duration_ms=5.0, tallies={KEY: gates.Policy(2, 1.0), other: gates.Policy(2, 1.0)}, saved={},
              interrupted=True, not_run=1)
    report = outcome.decide(gates_plan(), ran, options={"runs": 2})
    assert [(k.id, g.verdict if g else None, [r.run for r in runs]) for k, g, runs in report.groups()] == [
        ("a", "failed", [1, 2]), ("b", "incomplete", [1])]
    assert report.repeated and [g.id for g in report.stability] == ["a", "b"] and report.interrupted
    assert outcome.exit_code(report) == 130
    shuffled = RunReport(results=tuple(reversed(results)), started_at="", completed_at="", duration_ms=0.0, gates=report.gates)
    assert [(k.id, [r.run for r in runs]) for k, _, runs in shuffled.groups()] == [("a", [2, 1]), ("b", [1])]  # grouped all the same


def gates_plan():
    from agenttest.model import Plan

    return Plan(agent="bot", items=())


# ---- budgets and costs ----------------------------------------------------------------------------


def test_budgets_parse_merge_and_say_each_overrun():
    flag = budgets.parse("tokens=20000,cost=0.05,duration=2m")
    assert flag == Budget(tokens=20000, cost=0.05, duration=120.0)
    assert Budget(tokens=10, turns=2).over(flag) == Budget(tokens=10, cost=0.05, turns=2, duration=120.0)  # the case's limits win
    for bad, said in (("tokens=-1", "0 or more"), ("tokns=5", "did you mean 'tokens'"), ("turns=1.5", "whole number"), ("", "no limits")):
        with pytest.raises(ValueError, match=said):
            budgets.parse(bad)
    now = budgets.Spent(tokens=25_130, cost=0.07, tool_calls=3, turns=2, duration=150.0)
    assert budgets.overruns(flag, now) == ["tokens 25,130 > 20,000", "cost $0.07 > $0.05", "duration 2.5m > 2.0m"]
    assert budgets.overruns(Budget(cost=0.01), budgets.Spent(cost=None)) == []  # unpriced: not an overrun
    assert budgets.unmeasured(Budget(cost=0.01), budgets.Spent(cost=None)) is not None


def test_costs_price_usage_and_sum_by_role_and_connector():
    price = costs.Pricing(input=1.0, output=2.0, cached_input=0.5)
    assert price.cost(Usage(1_000_000, 1_000_000, 2_000_000, 500_000)) == pytest.approx(0.5 + 0.25 + 2.0)
    spends = costs.spend_of({("agent", "a"): Usage(10, 5, 15), ("validator", "j"): Usage(1, 1, 2)},
                            {("agent", "a"): 2, ("validator", "j"): 1}, {"a": costs.Pricing(1.0, 1.0), "j": None})
    assert [(s.role, s.connector, s.calls, s.cost) for s in spends] == [("agent", "a", 2, pytest.approx(15e-6)), ("validator", "j", 1, None)]
    t = costs.totals([CaseResult(key=KEY, status="passed", spend=spends)], generation=(Spend("generator", "a", Usage(1, 1, 2), 1, 2e-6),))
    assert t.cost == pytest.approx(17e-6) and t.unpriced_tokens == 2 and set(t.by_role) == {"agent", "validator", "generator"}
    assert costs.money(None) == "—" and costs.money(1234.5) == "$1,234.50" and costs.money(0.000105) == "$0.000105"


# ---- the comparison of two runs -----------------------------------------------------------------


def report_of(*results: CaseResult) -> RunReport:
    return RunReport(results=results, started_at="", completed_at="", duration_ms=0.0)


def test_two_reports_compared_case_by_case():
    ok = AssertionResult(type="contains", passed=True)
    bad = AssertionResult(type="contains", passed=False, message="missing 'x'")

    def r(cid: str, status: str, *checks: AssertionResult) -> CaseResult:
        return CaseResult(key=CaseKey(file="f", id=cid), status=status, assertions=checks, output="ok")  # type: ignore[arg-type]

    base = report_of(r("kept", "passed", ok), r("broke", "passed", ok), r("mended", "failed", bad), r("gone", "passed"))
    new = report_of(r("kept", "passed", ok), r("broke", "failed", bad), r("mended", "passed", ok), r("fresh", "error"))
    diff = compare(base, new, "base.json", "new.json")
    kinds = {d.id: d.kind for d in diff.cases}
    assert kinds == {"kept": "unchanged", "broke": "regressed", "mended": "fixed", "gone": "removed", "fresh": "new"}
    broke = next(d for d in diff.cases if d.id == "broke")
    assert [(c.what, c.before, c.after) for c in broke.changes] == [("assertion 1 (contains)", "passed", "failed: missing 'x'")]
    assert diff.regressions == 1 and diff.gate("any") == 1  # a new case that does not pass fails the gate too
    assert verdict([r("x", "passed"), r("x", "failed", bad)]).status == "failed"


# ---- the codec ------------------------------------------------------------------------------------


def test_the_codec_writes_a_result_by_its_shape_and_reads_it_back():
    r = CaseResult(key=CaseKey(file="t.jsonl", id="a", connector="m"), status="failed", input="hi", output="no", error="why",
                   assertions=(AssertionResult(type="contains", passed=False, message="why", expected="yes"),), usage=Usage(1, 2, 3),
                   run=2, line=4, tags=("smoke",), spend=(Spend("agent", "m", Usage(1, 2, 3), 1, 0.5),))
    written = codec.result_dict(r)
    assert list(written)[:6] == ["id", "tags", "status", "input", "output", "duration_ms"]
    assert written["error"] == "why" and written["cost"] == 0.5 and written["file"] == "t.jsonl" and written["line"] == 4
    back = codec.report_of(json.loads(json.dumps({"results": [written]}))).results[0]
    assert back.key == r.key and back == CaseResult(**{**{f: getattr(r, f) for f in ("status", "input", "output", "error", "assertions", "usage",
                                                                                   "run", "line", "tags", "spend")}, "key": r.key})
    assert codec.jsonable({"nan": float("nan"), "set": {2, 1}, "b": b"\xff"}) == {"nan": "NaN", "set": [1, 2], "b": "\\xff"}


def test_a_rate_short_of_all_is_never_shown_as_100_percent():
    """29,990 of 30,000 passed is 99.97%, and its interval's top is not rounded up to a bottom of 100% either: the
    summary said "100.0% (95% CI 100%–100%)" with 10 failures (found by a new-user trial)."""
    from agenttest.reporting.evidence import rate_text, span

    assert rate_text(29_990 / 30_000) == "99.97%" and rate_text(1.0) == "100.0%" and rate_text(0.85) == "85.0%"
    assert rate_text(1 / 30_000) == "0.003%" and rate_text(0.0) == "0.0%"
    assert span(0.9995, 1.0) == "99.95%–100%" and span(0.44, 1.0) == "44%–100%" and span(0.0, 0.0004) == "0%–0.04%"
    assert span(0.0, 1 - 1e-12) == "0%–100%"  # a bound that is all, but for float error, stays 100%


def test_the_reports_pass_rate_short_of_all_is_never_100(tmp_path):
    """The JSON's summary.pass_rate and a gate's pass_rate (percent, Yao's one decimal) take the digits it takes not
    to read 100 when some did not pass, nor 0 when some did: 29,990 of 30,000 wrote 100.0 with 10 failures."""
    import json

    from agenttest.model.results import percent_of
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    assert percent_of(29_990, 30_000) == 99.97 and percent_of(1, 30_000) == 0.003 and percent_of(8, 10) == 80.0
    assert percent_of(30_000, 30_000) == 100.0 and percent_of(0, 30_000) == 0.0 and percent_of(0, 0) == 0.0
    assert percent_of(1999, 2000) == 99.95 and percent_of(2, 3) == 66.7
    results = [CaseResult(key=CaseKey(file="c.jsonl", id=f"c{i}", connector="mock"), status="failed" if i == 7 else "passed",
                          input="q", output="a", duration_ms=1.0, index=i) for i in range(5000)]
    path = tmp_path / "r.json"
    write(make_report(results, 1795953600.0, 10.0, agent_id="bot", connector="mock", environment={}), str(path))
    summary = json.loads(path.read_text())["summary"]
    assert summary["failed"] == 1 and summary["pass_rate"] == 99.98, summary  # 100.0 before
