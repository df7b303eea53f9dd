"""``agent-test diff`` and ``--baseline`` (FORMATS §10): every class, the changed assertions and
checkpoints, the four outputs, bad input, and a run gated on its baseline."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report


def result(case_id, status, output="ok", assertions=(), run=1, tools=(), checkpoints=None, error=""):
    out = {"id": case_id, "status": status, "input": "hi", "output": output, "duration_ms": 1.0, "run": run,
           "assertions": [dict(a) for a in assertions], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
           "tool_calls": [{"name": n, "arguments": a, "result": None, "duration_ms": 0.1} for n, a in tools],
           "file": "tests/cases.jsonl"}
    if error:
        out["error"] = error
    if checkpoints is not None:
        out.update(turns=[], checkpoints=[{"id": c, "reached": t is not None, "reached_at_turn": t, "required": True, "passed": t is not None}
                                          for c, t in checkpoints], total_turns=3)
    return out


def document(results, **options):
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("passed", "failed", "skipped", "error", "timeout")}
    return {"summary": {"total": len(results), "passed": counts["passed"], "failed": counts["failed"], "skipped": counts["skipped"],
                        "errors": counts["error"], "timeouts": counts["timeout"], "duration_ms": 5.0, "agent_id": "bot",
                        "agent_path": "/app/assistants/bot", "connector": "fake", "pass_rate": 50.0},
            "environment": {"user_id": "u", "team_id": "t", "locale": "en-us"}, "results": results,
            "metadata": {"started_at": "2025-01-01T00:00:00Z", "completed_at": "2025-01-01T00:00:01Z", "input_file": "tests/cases.jsonl",
                         "output_file": "r.json", "version": "0.1.0", "options": options}}


OK = {"type": "contains", "passed": True}
BAD = {"type": "contains", "passed": False, "message": "expected 'EXP-1' in the output"}

BASE = [
    result("regressed", "passed", assertions=[OK]),
    result("fixed", "failed", assertions=[BAD], error=""),
    result("still", "failed", assertions=[BAD]),
    result("removed", "passed"),
    result("flaky", "passed", run=1), result("flaky", "passed", run=2),
    result("changed", "passed", output="Filed EXP-1", tools=[("create_expense", {"amount": 50})]),
    result("dynamic", "passed", checkpoints=[("ask", 1), ("confirm", 2)]),
    result("same", "passed", assertions=[OK]),
]
NEW = [
    result("regressed", "failed", assertions=[BAD]),
    result("fixed", "passed", assertions=[OK]),
    result("still", "error", error="agent error: model error 500"),
    result("new", "failed", assertions=[BAD]),
    result("flaky", "passed", run=1), result("flaky", "failed", run=2, assertions=[BAD]),
    result("changed", "passed", output="Filed EXP-2", tools=[("create_expense", {"amount": 70})]),
    result("dynamic", "passed", checkpoints=[("ask", 1), ("confirm", 3)]),
    result("same", "passed", assertions=[OK]),
]


@pytest.fixture
def reports(tmp_path):
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(json.dumps(document(BASE, runs=2)))
    new.write_text(json.dumps(document(NEW, runs=2, min_pass_rate=0.5)))
    report(base), report(new)  # the hand-made reports have the documented shape
    return base, new


def test_every_class_with_what_changed(reports, tmp_path):
    base, new = reports
    out = tmp_path / "diff.json"
    result_ = cli("diff", str(base), str(new), "-o", str(out))
    assert result_.exit_code == 0, result_.output  # without --fail-on-regression a diff only reports
    data = json.loads(out.read_text())
    kinds = {c["id"]: c["kind"] for c in data["cases"]}
    assert kinds == {"regressed": "regressed", "fixed": "fixed", "still": "still failing", "new": "new", "removed": "removed",
                     "flaky": "flaky", "changed": "changed", "dynamic": "changed", "same": "unchanged"}
    assert data["counts"] == {"regressed": 1, "fixed": 1, "still failing": 1, "new": 1, "not run": 0, "removed": 1, "flaky": 1, "changed": 2,
                              "unchanged": 1}
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["regressed"]["changes"][0] == {"what": "assertion 1 (contains)", "before": "passed",
                                                "after": "failed: expected 'EXP-1' in the output"}
    assert by_id["dynamic"]["changes"] == [{"what": "checkpoint confirm", "before": "reached at turn 2", "after": "reached at turn 3"}]
    assert by_id["changed"]["changes"] == [{"what": "output", "before": "Filed EXP-1", "after": "Filed EXP-2"},
                                           {"what": "tool calls", "before": 'create_expense({"amount": 50})', "after": 'create_expense({"amount": 70})'}]
    assert by_id["flaky"]["runs_after"] == "1/2 runs passed" and by_id["flaky"]["after"] == "passed"
    assert by_id["flaky"]["changes"][0] == {"what": "assertion 1 (contains)", "before": "—", "after": "failed: expected 'EXP-1' in the output"}
    assert {"what": "reason", "before": "expected 'EXP-1' in the output", "after": "agent error: model error 500"} in by_id["still"]["changes"]
    assert [c["id"] for c in data["cases"]][:3] == ["regressed", "fixed", "still"]  # the ones that need a reader first
    lines = result_.output.splitlines()
    assert "  1 regressed, 1 fixed, 1 still failing, 1 new, 1 removed, 1 flaky, 2 changed, 1 unchanged" in lines
    assert "  REGRESSED [regressed] passed → failed" in lines
    assert "    └─ assertion 1 (contains): passed → failed: expected 'EXP-1' in the output" in lines
    assert "  NEW [new] failed" in lines and "  REMOVED [removed] passed (no longer in the run)" in lines
    assert "  FLAKY [flaky] passed (2/2 runs passed) → passed (1/2 runs passed)" in lines
    assert not any("[same]" in line for line in lines)


CLEAN = [r if r["id"] not in ("still", "new") else result(r["id"], "failed" if r["id"] == "still" else "passed", assertions=[BAD if r["id"] == "still" else OK])
         for r in NEW]  # no error, no new case failing: only a regression can fail the gate


@pytest.fixture
def clean(reports, tmp_path):
    path = tmp_path / "clean.json"
    path.write_text(json.dumps(document(CLEAN, runs=2, min_pass_rate=0.5)))
    return reports[0], path


def test_fail_on_regression_any_exits_1_when_a_case_regressed(clean, tmp_path):
    base, new = clean
    assert cli("diff", str(base), str(new), "--fail-on-regression=any").exit_code == 1
    assert cli("diff", str(new), str(new), "--fail-on-regression=any").exit_code == 0
    assert cli("diff", str(new), str(base), "--fail-on-regression=any").exit_code == 1  # "fixed" reversed is a regression


def test_fail_on_regression_exits_0_on_a_regression_within_noise_and_says_so(clean):
    base, new = clean
    result_ = cli("diff", str(base), str(new), "--fail-on-regression")
    assert result_.exit_code == 0, result_.output
    lines = result_.output.splitlines()
    assert lines[-1] == ("  --fail-on-regression: passes — 1 regressed (within noise: p = 1; --fail-on-regression=any fails on any); "
                         "1 removed (removed; 1 passed in the baseline: even counted as failing now, no significant regression)")
    assert any(line.startswith("  no difference detectable — with 7 cases, 1–2 runs each, differences under 60.1 points cannot be told "
                               "from noise; observed ") for line in lines), lines


def test_fail_on_regression_fails_on_an_error_and_a_new_case_failing_whatever_the_noise(reports):
    """The gate of diff is the gate of --baseline: a case the new run could not test (error) is never 'as in the
    baseline', and a new case failing has nothing to be excused by."""
    base, new = reports
    result_ = cli("diff", str(base), str(new), "--fail-on-regression")
    assert result_.exit_code == 1, result_.output
    assert result_.output.splitlines()[-1] == (
        "  --fail-on-regression: fails — 1 new not passing (new); 1 errored or timed out (still: the run could not test them, "
        "never as in the baseline); 1 removed (removed; 1 passed in the baseline: even counted as failing now, no significant regression)")
    assert cli("diff", str(base), str(new)).exit_code == 0  # without the flag a diff only reports


def test_markdown_for_a_pull_request_and_html(reports, tmp_path):
    base, new = reports
    md, html = tmp_path / "diff.md", tmp_path / "diff.html"
    assert cli("diff", str(base), str(new), "-o", str(md)).exit_code == 0
    text = md.read_text()
    assert text.startswith("## agent-test: 1 regressed, 1 fixed, 1 still failing, 1 new, 1 removed, 1 flaky, 2 changed, 1 unchanged\n")
    assert "| 🔴 regressed | `regressed` | passed → failed | assertion 1 (contains): passed → failed: expected 'EXP-1' in the output |" in text
    assert "<details><summary>Details</summary>" in text and "same" not in text.split("| Case |")[1]
    assert cli("diff", str(base), str(new), "-o", str(html)).exit_code == 0
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<b>assertion 1 (contains)</b>" in page and "&#x27;EXP-1&#x27;" in page


def test_quoted_text_cannot_break_the_markdown_or_the_page(tmp_path):
    evil = "| <script>alert(1)</script> `x` [link](http://e)"
    base, new = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps(document([result("c|1", "passed", output="fine")])))
    new.write_text(json.dumps(document([result("c|1", "failed", output=evil, assertions=[{**BAD, "message": evil}])])))
    cli("diff", str(base), str(new), "-o", str(tmp_path / "d.md"))
    row = next(line for line in (tmp_path / "d.md").read_text().splitlines() if line.startswith("| 🔴"))
    assert row.count(" | ") == 3 and "<script>" not in row  # still four columns, nothing live
    cli("diff", str(base), str(new), "-o", str(tmp_path / "d.html"))
    assert "<script>alert" not in (tmp_path / "d.html").read_text()


def test_bad_input_is_exit_2_with_the_place(tmp_path, reports):
    base, _ = reports
    missing = cli("diff", str(tmp_path / "nope.json"), str(base))
    assert missing.exit_code == 2 and "nope.json: no such report file" in missing.output
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [\n  {"id": "a",}\n]}')
    out = cli("diff", str(broken), str(base))
    assert out.exit_code == 2 and f"{broken}:2:" in out.output and "not valid JSON" in out.output
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"results": [\n  {"id": "a", "status": "ok"}\n]}')
    out = cli("diff", str(wrong), str(base))
    assert out.exit_code == 2 and f"{wrong}:2:25: not an agent-test report: 'status' must be one of" in out.output
    ext = cli("diff", str(base), str(base), "-o", str(tmp_path / "d.xml"))
    assert ext.exit_code == 2 and "diff writes .md, .html, .json" in ext.output
    assert "Traceback" not in missing.output + out.output + ext.output


# -- a run gated on its baseline -------------------------------------------------------------------------

CASES = [{"id": "a", "input": "one", "assert": {"type": "contains", "value": "yes"}},
         {"id": "b", "input": "two", "assert": {"type": "contains", "value": "yes"}},
         {"id": "known", "input": "three", "assert": {"type": "contains", "value": "never"}}]


def test_baseline_prints_the_comparison_and_fails_only_on_regressions(app, server, tmp_path):
    app.agent("bot")
    path = app.cases("cases.jsonl", CASES)
    server.responder = lambda req: Answer("yes")
    base = tmp_path / "base.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(base)).exit_code == 1  # "known" fails on purpose
    same = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "same.json"), "--baseline", str(base))
    assert same.exit_code == 0, same.output  # only the known failure: the gate passes
    assert "  Baseline gate passes: 0 regressed, 0 new not passing, 1 still failing as in the baseline (not counted)" in same.output
    assert same.output.rstrip().splitlines()[-2] == ("  ✅ NO SIGNIFICANT REGRESSION against the baseline (no difference detectable, "
                                                    "3 cases × 1 run) — 1 case still failing as in the baseline")
    server.responder = lambda req: Answer("no" if last_user(req) == "two" else "yes")
    worse = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "worse.json"), "--baseline", str(base), "--fail-on-regression=any")
    assert worse.exit_code == 1
    out = worse.output
    assert out.index("Summary") < out.index(f"Compared with {base}") < out.index("REGRESSED [b] passed → failed")
    assert "  Baseline gate fails: 1 regressed, 0 new not passing, 1 still failing as in the baseline (not counted)" in out
    assert out.rstrip().splitlines()[-2] == "  ❌ REGRESSED against the baseline"
    assert report(tmp_path / "worse.json")["metadata"]["options"]["baseline"] == str(base)
    assert report(tmp_path / "worse.json")["metadata"]["options"]["fail_on_regression"] == "any"
    # by default one case of three going red is within noise: the gate says so and passes
    noisy = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "noisy.json"), "--baseline", str(base))
    assert noisy.exit_code == 0, noisy.output
    assert ("  Baseline gate passes: 1 regressed (within noise: p = 1; --fail-on-regression=any fails on any), 0 new not passing, "
            "1 still failing as in the baseline (not counted)") in noisy.output
    # the banner says what moved and that it is not significant (it said "the failures above were failing there too")
    assert noisy.output.rstrip().splitlines()[-2] == ("  ✅ NO SIGNIFICANT REGRESSION against the baseline (no difference detectable, "
                                                     "3 cases × 1 run) — 1 case regressed, not significantly: b (passed → failed); "
                                                     "1 case still failing as in the baseline")


def test_fail_on_regression_without_a_baseline_is_a_usage_error(app, server, tmp_path):
    app.agent("bot")
    path = app.cases("cases.jsonl", CASES)
    result_ = cli("-i", str(path), "-n", "bot", "--fail-on-regression")
    assert result_.exit_code == 2 and "--fail-on-regression gates a run on its --baseline REPORT" in result_.output
    assert not server.requests and "Traceback" not in result_.output


def test_cases_a_cut_short_run_did_not_reach_are_not_run_not_removed_and_never_pass_a_gate(app, server, tmp_path):
    """--fail-fast (or Ctrl-C) on a known failure left the rest of the suite unrun; diff called those cases
    'removed', and --fail-on-regression and --baseline passed on a run that compared one case."""
    app.agent("bot")
    path = app.cases("cases.jsonl", [CASES[2], CASES[0], CASES[1]])  # the known failure first
    server.responder = lambda req: Answer("yes")
    base = tmp_path / "base.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(base)).exit_code == 1
    cut = cli("-i", str(path), "-n", "bot", "-x", "-o", str(tmp_path / "cut.json"), "--baseline", str(base))
    assert cut.exit_code == 1, cut.output
    assert "NOT RUN [a] passed → not run (the run was cut short before it)" in cut.output
    assert "  Baseline gate fails: 0 regressed, 0 new not passing, 2 not run (the run was cut short: they were not compared), " \
           "1 still failing as in the baseline (not counted)" in cut.output
    assert cut.output.rstrip().splitlines()[-2] == "  ⚠ NOT COMPARED — the run was cut short before cases of the baseline"
    diffed = cli("diff", str(base), str(tmp_path / "cut.json"), "--fail-on-regression", "-o", str(tmp_path / "d.json"))
    assert diffed.exit_code == 1 and "REMOVED" not in diffed.output
    assert diffed.output.splitlines()[-1] == "  --fail-on-regression: fails — 2 not run (the new run was cut short: they were not compared)"
    kinds = {c["id"]: c["kind"] for c in json.loads((tmp_path / "d.json").read_text())["cases"]}
    assert kinds == {"known": "still failing", "a": "not run", "b": "not run"}
    # a case taken out of the suite is still 'removed', and no gate fails on it
    app.cases("cases.jsonl", [CASES[2], CASES[0]])
    fewer = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "fewer.json"), "--baseline", str(base))
    assert fewer.exit_code == 0 and "REMOVED [b] passed (no longer in the run)" in fewer.output, fewer.output
    # every case skipped: nothing was compared, which is no 'NO REGRESSIONS'
    app.cases("cases.jsonl", [{**c, "skip": True} for c in CASES])
    skipped = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "skipped.json"), "--baseline", str(base))
    assert skipped.output.rstrip().splitlines()[-2] == "  ⚠ NO TEST RAN — nothing was compared with the baseline", skipped.output


def test_baseline_that_is_not_a_report_is_exit_2_before_the_run(app, server, tmp_path):
    app.agent("bot")
    path = app.cases("cases.jsonl", CASES)
    result_ = cli("-i", str(path), "-n", "bot", "--baseline", str(tmp_path / "missing.json"))
    assert result_.exit_code == 2 and "missing.json: no such report file" in result_.output and not server.requests


def test_ids_repeated_across_files_are_told_apart_by_file(tmp_path):
    def twice(status_b):
        return [result("c01", "passed"), {**result("c01", status_b, assertions=[BAD] if status_b == "failed" else [OK]), "file": "tests/more.jsonl"}]

    base, new = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps(document(twice("passed"))))
    new.write_text(json.dumps(document(twice("failed"))))
    out = tmp_path / "d.json"
    assert cli("diff", str(base), str(new), "-o", str(out), "--fail-on-regression=any").exit_code == 1
    cases = json.loads(out.read_text())["cases"]
    assert [(c["file"], c["kind"]) for c in cases] == [("tests/more.jsonl", "regressed"), ("tests/cases.jsonl", "unchanged")]


# -- is the difference real? (FORMATS §19) ---------------------------------------------------------------


def suite_report(path, verdicts, runs=1):
    """A report of len(verdicts) cases, each with ``runs`` runs; ``verdicts[i]`` is how many of case i's runs passed."""
    results = [result(f"case{i:02d}", "passed" if r < passed else "failed", run=r + 1, assertions=[OK] if r < passed else [BAD])
               for i, passed in enumerate(verdicts) for r in range(runs)]
    path.write_text(json.dumps(document(results, runs=runs)))
    return path


def test_a_significant_drop_fails_the_diff_and_says_how_much(tmp_path):
    scipy_stats = pytest.importorskip("scipy.stats")
    base = suite_report(tmp_path / "base.json", [1] * 60)
    new = suite_report(tmp_path / "new.json", [0] * 12 + [1] * 48)
    out, md = tmp_path / "d.json", tmp_path / "d.md"
    result_ = cli("diff", str(base), str(new), "--fail-on-regression", "-o", str(out), "-o", str(md))
    assert result_.exit_code == 1, result_.output
    paired = json.loads(out.read_text())["paired"]
    p = scipy_stats.binomtest(0, 12, 0.5).pvalue  # McNemar: 12 cases passed → failed, none the other way
    assert paired["test"] == "mcnemar" and paired["p"] == pytest.approx(p, abs=1e-9) and paired["verdict"] == "worse"
    assert (paired["worse"], paired["better"], paired["cases"], paired["difference"]) == (12, 0, 60, -0.2)
    assert paired["interval"][1] < 0 and paired["regression"] is True and paired["confidence"] == 0.95
    assert "  worse: -20.0 points (95% CI " in result_.output and "p < 0.001 — 60 cases × 1 run, McNemar's exact test" in result_.output
    assert result_.output.splitlines()[-1] == "  --fail-on-regression: fails — worse (p < 0.001), -20.0 points"
    assert "**worse: -20.0 points (95% CI" in md.read_text()
    # the same drop judged by --alpha 0.0001: still worse (p = 0.00049)? No: not below 0.0001
    strict = cli("diff", str(base), str(new), "--fail-on-regression", "--alpha", "0.0001")
    assert strict.exit_code == 0 and "no difference detectable — with 60 cases × 1 run" in strict.output


def test_several_runs_per_case_use_the_sign_flip_test_and_flag_the_case_that_collapsed(tmp_path):
    base = suite_report(tmp_path / "base.json", [8] * 20 + [10], runs=10)
    new = suite_report(tmp_path / "new.json", [7, 9] * 10 + [0], runs=10)
    out = tmp_path / "d.json"
    result_ = cli("diff", str(base), str(new), "--fail-on-regression", "-o", str(out))
    assert result_.exit_code == 1, result_.output  # the suite did not move, one case did
    paired = json.loads(out.read_text())["paired"]
    assert paired["test"] == "sign-flip" and paired["verdict"] == "no difference" and paired["regression"] is True
    (moved,) = paired["moved"]
    assert moved["id"] == "case20" and moved["before"] == [10, 10] and moved["after"] == [0, 10] and moved["direction"] == "worse"
    assert "    1 case moved beyond noise:" in result_.output
    assert "      case20: 10/10 → 0/10 runs passed (worse; Fisher p = 1.1e-05, 0.00023 after Holm)" in result_.output
    assert result_.output.splitlines()[-1] == "  --fail-on-regression: fails — 1 case worse beyond noise"
