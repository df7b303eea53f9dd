"""A crash is never hidden (issue 50, item 4): a case whose tool takes down its worker once and passes when run
again on a fresh worker keeps its verdict, but carries the crash — in its result's warnings (console, every
report, the ``--json`` events, the history) — and ``--strict`` makes it an error. ``python -m agenttest`` as a
subprocess: real crashes, real workers."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from helpers import REPO, report, tool_app

TOOLS = ("abort_once", "segfault_once", "fine")
TOOLS_PY = """
import ctypes, os
MARK = os.environ["MARK_DIR"]
def _first(name):
    path = os.path.join(MARK, name)
    if os.path.exists(path):
        return False
    open(path, "w").close()
    return True
def abort_once(ctx):
    if _first("aborted"):
        os.abort()
    return "fine the second time"
def segfault_once(ctx):
    if _first("segfaulted"):
        ctypes.string_at(0)
    return "fine the second time"
def fine(ctx):
    return "fine"
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    tool_app(tmp_path / "app", TOOLS, TOOLS_PY)
    (tmp_path / "marks").mkdir()
    return tmp_path / "app"


def run(app_dir: Path, cases: list[dict], *args: str) -> tuple[int, str, str]:
    path = app_dir / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK_DIR": str(app_dir.parent / "marks")}
    command = [sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "--app", str(app_dir), *args]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


DONE = {"type": "contains", "value": "done"}  # a case that checks something: --strict also fails one that checks nothing
CASES = [{"id": "flaky", "input": "call abort_once", "assert": DONE}, {"id": "other", "input": "call fine", "assert": DONE}]


def test_a_case_that_crashed_its_worker_once_passes_but_every_output_says_so(app_dir, tmp_path):
    out, md, xml, html, history = (tmp_path / f"r.{ext}" for ext in ("json", "md", "xml", "html", "sqlite"))
    code, stdout, stderr = run(app_dir, CASES, "-o", str(out), "-o", str(md), "-o", str(xml), "-o", str(html), "--history", str(history))
    assert code == 0, stdout + stderr  # the run again may stand
    results = {r["id"]: r for r in report(out)["results"]}
    assert results["flaky"]["status"] == "passed" and results["flaky"]["output"] == "done: fine the second time"
    said = "its worker was lost while it ran (signal SIGABRT): this is its run again, on a fresh worker"
    assert said in results["flaky"]["warnings"], results["flaky"]
    assert "warnings" not in results["other"]
    assert said in stdout and "PASSED" in stdout  # under the case's line, and in the summary
    assert any("flaky" in w and "signal SIGABRT" in w for w in report(out)["metadata"]["warnings"])
    for path in (md, xml, html):
        assert "signal SIGABRT" in path.read_text(), path
    with sqlite3.connect(history) as db:
        (blob,) = db.execute("SELECT report FROM runs").fetchone()
        reasons = dict(db.execute("SELECT case_id, reason FROM verdicts").fetchall())
    assert said in zlib.decompress(blob).decode()
    assert "signal SIGABRT" in reasons["flaky"] and reasons["other"] == ""


def test_the_json_events_carry_the_crash(app_dir, tmp_path):
    code, stdout, stderr = run(app_dir, [{"id": "flaky", "input": "call segfault_once"}], "--json", "-o", str(tmp_path / "r.json"))
    assert code == 0, stdout + stderr
    (result,) = [e for e in map(json.loads, stdout.splitlines()) if e["event"] == "result"]
    assert result["status"] == "passed" and any("signal SIGSEGV" in w for w in result["warnings"]), result


def test_strict_makes_a_case_that_crashed_its_worker_an_error(app_dir, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, stderr = run(app_dir, CASES, "-o", str(out), "--strict")
    assert code == 1, stdout + stderr
    results = {r["id"]: r for r in report(out)["results"]}
    assert results["flaky"]["status"] == "error", results["flaky"]
    assert results["flaky"]["error"] == ("worker lost: signal SIGABRT (it passed when run again on a fresh worker; "
                                         "--strict fails a case whose worker was lost)")
    assert results["other"]["status"] == "passed"
    assert "ERROR" in stdout and "--strict fails a case whose worker was lost" in stdout


def test_a_case_that_crashes_every_time_is_still_an_error_without_strict(app_dir, tmp_path):
    (app_dir / "assistants" / "bot" / "src" / "tools.py").write_text(TOOLS_PY.replace("if _first(\"aborted\"):", "if True:"))
    out = tmp_path / "r.json"
    code, stdout, stderr = run(app_dir, CASES, "-o", str(out))
    assert code == 1, stdout + stderr
    results = {r["id"]: r for r in report(out)["results"]}
    assert results["flaky"]["status"] == "error" and results["flaky"]["error"] == "worker lost: signal SIGABRT (the case took down 2 workers)"
