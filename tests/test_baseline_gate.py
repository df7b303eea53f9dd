"""What a gate on an earlier run may never call green (a new user's trial): cases the run could not test (errors),
two runs that share no case, removed cases that could hide a regression — and one rounding of an interval
everywhere. End to end: the CLI against the loopback server."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report


def cases(ids, value="yes"):
    return [{"id": i, "input": f"say {i}", "assert": {"type": "contains", "value": value}} for i in ids]


def test_a_run_whose_cases_all_error_is_never_greened_by_a_baseline_where_they_errored_too(app, server, tmp_path):
    app.agent("bot")
    path = app.cases("stat.jsonl", cases([f"c{i:02d}" for i in range(30)]))
    server.responder = lambda req: Answer(status=401, error="invalid api key")
    base = tmp_path / "base-err.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(base)).exit_code == 1
    result = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "again.json"), "--baseline", str(base))
    assert result.exit_code == 1, result.output
    lines = result.output.rstrip().splitlines()
    assert lines[-2] == "  ❌ NOT TESTED — 30 cases errored or timed out: a baseline never greens a case the run could not test"
    gate = next(line for line in lines if line.startswith("  Baseline gate"))
    assert gate.startswith("  Baseline gate fails: 0 regressed, 0 new not passing, 30 errored or timed out (c00, c01, c02, c03, c04 "
                           "and 25 more: the run could not test them, never as in the baseline)"), gate
    assert "still failing as in the baseline" not in gate and "NO SIGNIFICANT REGRESSION" not in result.output
    # and diff's gate is the same gate
    diffed = cli("diff", str(base), str(tmp_path / "again.json"), "--fail-on-regression")
    assert diffed.exit_code == 1 and diffed.output.splitlines()[-1].startswith("  --fail-on-regression: fails — 30 errored or timed out")
    # one case erroring among passing ones fails the gate as well (an error is not a known failure)
    server.responder = lambda req: Answer(status=401, error="invalid api key") if last_user(req) == "say c07" else Answer("yes")
    base_ok = tmp_path / "base-ok.json"
    cli("-i", str(path), "-n", "bot", "-o", str(base_ok))
    one = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "one.json"), "--baseline", str(base_ok))
    assert one.exit_code == 1 and "1 errored or timed out (c07: the run could not test them" in one.output, one.output


def test_two_runs_that_share_no_case_compare_nothing_and_never_pass_a_gate(app, server, tmp_path):
    app.agent("bot")
    server.responder = lambda req: Answer("yes")
    before = app.cases("a.jsonl", cases([f"old{i}" for i in range(8)]))
    after = app.cases("b.jsonl", cases([f"new{i}" for i in range(5)]))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("-i", str(before), "-n", "bot", "-o", str(a)).exit_code == 0
    result = cli("-i", str(after), "-n", "bot", "-o", str(b), "--baseline", str(a))
    assert result.exit_code == 1, result.output
    said = ("  ⚠ NO CASE RAN IN BOTH RUNS (5 new, 8 removed): nothing is paired, nothing was compared — did the case ids, files or "
            "connectors change?")
    assert said in result.output.splitlines()
    lines = result.output.rstrip().splitlines()
    assert lines[-2] == "  ❌ NOT COMPARED — no case ran in both runs: nothing was compared with the baseline"
    assert ("8 removed (old0, old1, old2, old3, old4 and 3 more; 8 passed in the baseline: counted as failing now, they would be a "
            "regression), no case ran in both runs (nothing was compared)") in result.output
    diffed = cli("diff", str(a), str(b), "--fail-on-regression")
    assert diffed.exit_code == 1 and said in diffed.output.splitlines(), diffed.output
    assert diffed.output.splitlines()[-1].endswith("no case ran in both runs (nothing was compared)")
    plain = cli("diff", str(a), str(b))  # without the flag diff only reports — but says it loudly
    assert plain.exit_code == 0 and said in plain.output.splitlines()


def test_removed_cases_that_could_hide_a_regression_fail_the_gate(app, server, tmp_path):
    """12 cases passed; the new run has 4 of them (8 were taken out): counted as failing, the 8 would be a significant
    regression (McNemar: 8 of 8 discordant pairs one way, p = 2 · 0.5⁸ = 0.0078) — so the gate cannot pass."""
    app.agent("bot")
    server.responder = lambda req: Answer("yes")
    ids = [f"c{i:02d}" for i in range(12)]
    path = app.cases("cases.jsonl", cases(ids))
    base = tmp_path / "base.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(base)).exit_code == 0
    app.cases("cases.jsonl", cases(ids[:4]))
    result = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "fewer.json"), "--baseline", str(base))
    assert result.exit_code == 1, result.output
    assert "  ⚠ only 4 cases ran in both runs (0 new, 8 removed): the comparison covers them alone" in result.output.splitlines()
    assert result.output.rstrip().splitlines()[-2] == "  ❌ NOT SHOWN — 8 cases of the baseline no longer in the run could hide a regression"
    assert 2 * 0.5 ** 8 < 0.05  # the worst case's exact test, by hand
    diffed = cli("diff", str(base), str(tmp_path / "fewer.json"), "--fail-on-regression")
    assert diffed.exit_code == 1 and "8 removed (c04, c05, c06, c07, c08 and 3 more; 8 passed in the baseline: counted as failing now, " \
                                     "they would be a regression)" in diffed.output
    # one case taken out of twelve could not hide a significant regression: said, and the gate passes
    app.cases("cases.jsonl", cases(ids[:11]))
    one = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "eleven.json"), "--baseline", str(base))
    assert one.exit_code == 0, one.output
    assert "1 removed (c11; 1 passed in the baseline: even counted as failing now, no significant regression)" in one.output
    # --fail-on-regression=any: a removed case that passed is not shown to pass now
    strict = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "strict.json"), "--baseline", str(base), "--fail-on-regression=any")
    assert strict.exit_code == 1 and "they passed there and are not shown to pass now" in strict.output, strict.output
    # a new case that fails is a failure under --baseline
    app.cases("cases.jsonl", cases(ids) + [{"id": "extra", "input": "say extra", "assert": {"type": "contains", "value": "never"}}])
    extra = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "extra.json"), "--baseline", str(base))
    assert extra.exit_code == 1 and "1 new not passing" in extra.output


def test_a_case_that_moved_within_noise_is_named_in_the_banner(app, server, tmp_path):
    """c22 from 3/3 to 2/3 runs: the banner said '(the failures above were failing there too)'; it names what moved."""
    app.agent("bot")
    ids = [f"c{i:02d}" for i in range(20, 25)]
    path = app.cases("cases.jsonl", cases(ids))
    server.responder = lambda req: Answer("yes")
    base = tmp_path / "base.json"
    assert cli("-i", str(path), "-n", "bot", "--runs", "3", "-o", str(base)).exit_code == 0
    seen: dict[str, int] = {}

    def third_of_c22_fails(req):
        seen[last_user(req)] = seen.get(last_user(req), 0) + 1
        return Answer("no" if last_user(req) == "say c22" and seen["say c22"] == 2 else "yes")

    server.responder = third_of_c22_fails
    result = cli("-i", str(path), "-n", "bot", "--runs", "3", "-o", str(tmp_path / "new.json"),
                 "--baseline", str(base))
    assert result.exit_code == 0, result.output
    banner = result.output.rstrip().splitlines()[-2]
    assert banner.startswith("  ✅ NO SIGNIFICANT REGRESSION against the baseline (no difference detectable, 5 cases × 3 runs)"), banner
    assert banner.endswith("— 1 case regressed, not significantly: c22 (3/3 → 2/3 runs passed)"), banner
    assert "failing there too" not in result.output


def test_an_interval_is_rounded_alike_on_the_console_and_in_the_history(app, server, tmp_path):
    """1 of 2 cases: Wilson 9.45%–90.55% — the console said 9%–91%, the history (10–90%): kept at 0.1 and rounded again."""
    scipy_stats = pytest.importorskip("scipy.stats")
    low, high = scipy_stats.binomtest(1, 2).proportion_ci(0.95, method="wilson")  # an independent Wilson interval
    assert (round(100 * low, 2), round(100 * high, 2)) == (9.45, 90.55)
    app.agent("bot")
    path = app.cases("cases.jsonl", cases(["a"]) + cases(["b"], value="never"))
    server.responder = lambda req: Answer("yes")
    history, md = tmp_path / "h.sqlite", tmp_path / "r.md"
    run = cli("-i", str(path), "-n", "bot", "--history", str(history), "-o", str(md), "-o", str(tmp_path / "r.json"))
    assert "  Pass Rate: 50.0% (95% CI 9%–91%; 2 cases)" in run.output.splitlines(), run.output
    assert "9%–91%" in md.read_text()
    listed = cli("history", "--history", str(history))
    assert "50.0% (9–91%)" in listed.output and "(10–90%)" not in listed.output, listed.output
    (judge_free,) = [json.loads((tmp_path / "r.json").read_text())["summary"]]
    assert judge_free["pass_rate"] == 50.0
    assert report(tmp_path / "r.json")["results"][1]["status"] == "failed"
