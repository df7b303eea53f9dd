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


def test_fail_on_regression_exits_1_only_when_a_case_regressed(reports, tmp_path):
    base, new = reports
    assert cli("diff", str(base), str(new), "--fail-on-regression").exit_code == 1
    assert cli("diff", str(new), str(new), "--fail-on-regression").exit_code == 0
    assert cli("diff", str(new), str(base), "--fail-on-regression").exit_code == 1  # "fixed" reversed is a regression


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
    assert same.output.rstrip().splitlines()[-2] == "  ✅ NO REGRESSIONS against the baseline (the failures above were failing there too)"
    server.responder = lambda req: Answer("no" if last_user(req) == "two" else "yes")
    worse = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "worse.json"), "--baseline", str(base))
    assert worse.exit_code == 1
    out = worse.output
    assert out.index("Summary") < out.index(f"Compared with {base}") < out.index("REGRESSED [b] passed → failed")
    assert "  Baseline gate fails: 1 regressed, 0 new not passing, 1 still failing as in the baseline (not counted)" in out
    assert out.rstrip().splitlines()[-2] == "  ❌ REGRESSED against the baseline"
    assert report(tmp_path / "worse.json")["metadata"]["options"]["baseline"] == str(base)


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
    assert cli("diff", str(base), str(new), "-o", str(out), "--fail-on-regression").exit_code == 1
    cases = json.loads(out.read_text())["cases"]
    assert [(c["file"], c["kind"]) for c in cases] == [("tests/more.jsonl", "regressed"), ("tests/cases.jsonl", "unchanged")]
