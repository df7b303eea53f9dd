"""Issue 50, item 11: labels never contradict the verdict — a run that errored reads ERROR across runs, a case
that failed every run is not "stable", a diff says when the runs used other connectors or models, a failed
negated assertion reads "expected not …". (The matrix cell's output is checked in a browser: test_viewer.py.)"""

from __future__ import annotations

import json
import sqlite3
import urllib.request

from helpers import Answer, cli, last_user, report

from agenttest.history import server as viewer_server


def test_the_case_across_runs_page_says_error_for_a_run_that_errored(app, server, tmp_path, monkeypatch):
    history = tmp_path / "h.sqlite"
    monkeypatch.setenv("AGENTTEST_HISTORY", str(history))
    app.connector("brittle", {"type": "openai", "options": {"model": "m", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY", "max_retries": 0}})
    app.agent("bot", connector="brittle")
    server.responder = lambda req: Answer(status=400, error="no such thing") if "boom" in last_user(req) else Answer("hi")
    path = app.cases("assistants/bot/tests/t.jsonl", [{"id": "boom", "input": "boom"}, {"id": "fine", "input": "fine"},
                                                      {"id": "wrong", "input": "fine", "assert": {"type": "contains", "value": "bye"}}])
    for runs in ("1", "2"):
        assert cli("-i", str(path), "--runs", runs).exit_code == 1
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT case_id, verdict FROM verdicts ORDER BY run_id, rowid").fetchall()
    assert rows == [("boom", "error"), ("fine", "passed"), ("wrong", "failed")] * 2
    httpd, _ = viewer_server.start(viewer_server.Pages(history=str(history)))
    try:
        page = urllib.request.urlopen(viewer_server.url_of(httpd) + "case?id=boom").read().decode()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert page.count("<td>error</td>") == 2 and "<td>failed</td>" not in page  # the page without JavaScript
    assert page.count('"verdict":"error"') == 2  # what the viewer draws its badges and strip from


def test_a_case_that_failed_every_run_is_failing_not_stable(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [
        {"id": "never", "input": "x", "assert": {"type": "contains", "value": "bye"}},
        {"id": "always", "input": "x", "assert": {"type": "contains", "value": "hi"}}])
    result = cli("-i", str(path), "--runs", "3", "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.md"))
    got = report(tmp_path / "r.json")["summary"]
    assert result.exit_code == 1
    assert {s["id"]: s["classification"] for s in got["stability"]} == {"never": "failing", "always": "stable"}
    assert {g["id"]: g["classification"] for g in got["gates"]} == {"never": "failing", "always": "stable"}
    assert got["stable_cases"] == 1 and "1/2 cases stable" in result.output
    assert "| never | 3 | 0.0% |" in (tmp_path / "r.md").read_text() and "ms | failing |" in (tmp_path / "r.md").read_text()


def test_diff_and_baseline_say_when_the_runs_used_other_connectors_and_models(app, server, tmp_path):
    app.connector("other", {"type": "openai", "options": {"model": "other-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY"}})
    app.agent("bot")
    server.responder = lambda req: Answer("hi")
    path = app.cases("assistants/bot/tests/t.jsonl", [{"id": "greets", "input": "hello", "assert": {"type": "contains", "value": "hi"}}])
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    assert cli("-i", str(path), "-o", str(base)).exit_code == 0
    assert cli("-i", str(path), "-c", "other", "-o", str(new)).exit_code == 0
    notes = ["the runs used different connectors: fake (base), other (new)", "the runs used different models: fake-model (base), other-model (new)"]
    outs = [tmp_path / f"d{ext}" for ext in (".md", ".json", ".html")]
    diff = cli("diff", str(base), str(new), *[a for o in outs for a in ("-o", str(o))])
    assert diff.exit_code == 0
    assert all(f"⚠ {n}" in diff.output for n in notes), diff.output
    assert all(f"> ⚠ {n}" in outs[0].read_text() for n in notes)
    assert json.loads(outs[1].read_text())["notes"] == notes
    assert all(n in outs[2].read_text() for n in notes)
    gated = cli("-i", str(path), "-c", "other", "--baseline", str(base))
    assert gated.exit_code == 0 and all(f"⚠ {n}" in gated.output for n in notes)
    same = cli("diff", str(base), str(base))
    assert "different" not in same.output


def test_a_failed_negated_assertion_reads_expected_not(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi there\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [
        {"id": "rude", "input": "x", "assert": {"type": "contains", "value": "hi", "negate": True}},
        {"id": "polite", "input": "x", "assert": {"type": "contains", "value": "bye", "negate": True}}])
    outs = [tmp_path / f"r{ext}" for ext in (".json", ".md", ".html")]
    result = cli("-i", str(path), *[a for o in outs for a in ("-o", str(o))])
    assert result.exit_code == 1
    said = "expected not: contains value=hi (it held)"
    (rude, polite) = report(outs[0])["results"]
    assert rude["assertions"][0]["message"] == said and rude["assertions"][0]["negated"] is True and rude["error"] == said
    assert polite["status"] == "passed" and polite["assertions"][0]["negated"] is True
    assert said in result.output
    assert "  - expected not: hi" in outs[1].read_text()
    assert '<span class="meta">expected not</span> <code>hi</code>' in outs[2].read_text()
