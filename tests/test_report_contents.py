"""What the Markdown and HTML reports say beyond the results (FORMATS §6): interrupted, stopped early and
not run; run numbers and the stability table with --runs; warnings (the run's and After hooks');
expected vs actual for failed assertions; counts of zero not painted red."""

from __future__ import annotations

import re

import pytest

from agenttest.model import CaseKey, CaseResult, RunReport
from agenttest.reporting import render
from helpers import cli
from scripted import Scripted

HOOKS = "def After(ctx, case, result, before):\n    raise ValueError('cleanup broke')\n"


@pytest.fixture
def bot(app, server):
    server.responder = Scripted()
    app.agent("bot", files={"src/env_test.py": HOOKS})
    return app


CASES = [
    {"id": "good", "input": "say:ok", "assert": [{"type": "contains", "value": "ok"}], "after": "env_test.After"},
    {"id": "bad", "input": "say:nope", "assert": [{"type": "contains", "value": "ok"}]},
    {"id": "later", "input": "say:ok"},
]


def both(app, *args):
    path = app.cases("cases.jsonl", CASES)
    md, page = app.root / "r.md", app.root / "r.html"
    for out in (md, page):
        assert cli("-i", str(path), "-n", "bot", "-o", str(out), *args).exit_code == 1
    return md.read_text(), page.read_text()


def test_stopped_early_not_run_warnings_and_expected_vs_actual(bot):
    md, page = both(bot, "--fail-fast")
    assert "> ⚠ **Stopped early** (--fail-fast)" in md and "> **Not run:** 1" in md
    assert "<b>Stopped early</b> (--fail-fast)" in page and "<b>Not run:</b> 1" in page
    assert "## Warnings" in md and re.search(r"- good: after hook env\\_test\.After.*cleanup broke", md)
    assert "<h2>Warnings</h2>" in page and "cleanup broke" in page.split("<h2>Warnings</h2>")[1]
    assert "**Expected vs actual**" in md and "  - expected: ok\n  - actual: nope" in md
    assert '<span class="meta">expected</span> <code>ok</code> <span class="meta">actual</span> <code>nope</code>' in page


def test_run_numbers_and_stability_with_runs(bot):
    md, page = both(bot, "--runs", "2")
    assert "| | ID | Run | Input |" in md and "| ❌ | bad | 2 | say:nope |" in md
    assert "## Stability" in md and "| bad | 2 | 0.0% |" in md and "### ❌ bad (run 2) — failed" in md
    assert "<h2>Stability</h2>" in page and '<span class="meta">(run 2)</span>' in page


def test_zero_counts_are_not_red(bot):
    _, page = both(bot)
    cards = dict(re.findall(r'<span class="meta">(\w+)</span><b class="(\w*)">', page))
    assert cards["Errors"] == "" and cards["Timeouts"] == "" and cards["Failed"] == "failed"


def test_interrupted_is_said_in_both():
    report = RunReport(results=(CaseResult(key=CaseKey(id="a"), status="passed", run=1),), started_at="2026-01-01T00:00:00Z", completed_at="2026-01-01T00:00:01Z", duration_ms=1000.0,
                       interrupted=True, not_run=3)
    md = "".join(render(report, "r.md"))
    page = "".join(render(report, "r.html"))
    assert "> ⚠ **Interrupted** (Ctrl-C)" in md and "> **Not run:** 3" in md
    assert "<b>Interrupted</b> (Ctrl-C)" in page and "<b>Not run:</b> 3" in page
    plain = "".join(render(RunReport(results=(), started_at="2026-01-01T00:00:00Z", completed_at="2026-01-01T00:00:00Z", duration_ms=0.0), "r.md"))
    assert "Interrupted" not in plain and "Not run" not in plain and "## Warnings" not in plain
