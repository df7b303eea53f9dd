"""A streamed run (issue 57 item 3): past AGENTTEST_STREAM_OVER lines a .jsonl file is read a part at a time — checked
whole before the first case runs, then read again as the cases run — and the results are spooled to disk. Its
reports, console summary and exit code are those of the same run held in memory; a bad line deep in the file is
still exit 2 before any case runs; a stopped run still leaves a complete report. The threshold is set low (and a
part made small) so that a few dozen cases stream: no test here needs a large file or times anything."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO, cli, report

from agenttest.inputs import streaming

RULES = """rules:
  - tool: "*"
    reply: "done: {{ tool_result }}"
  - user: "^call flip"
    tool_calls: [{name: flip}]
  - user: "^call sleeper"
    tool_calls: [{name: sleeper}]
  - user: "^call rewrite early"
    tool_calls: [{name: rewrite_early}]
  - user: "^call rewrite"
    tool_calls: [{name: rewrite}]
  - user: "^boom"
    error: "the model is down"
default: "echo: {{ user }}"
"""
TOOLS = """
import os, time
def flip(ctx):
    path = os.environ["FLIP_FILE"]  # heads, tails, heads …: across processes (a worker's or this one)
    n = int(open(path).read() or 0) if os.path.exists(path) else 0
    open(path, "w").write(str(n + 1))
    return "heads" if n % 2 == 0 else "tails"
def rewrite(ctx):
    path = os.environ["CASES_FILE"]  # the suite being run, its last case's question changed under the run
    text = open(path).read()
    open(path, "w").write(text.replace("question 23", "question XX"))
    return "rewritten"
def rewrite_early(ctx):
    path = os.environ["CASES_FILE"]  # a line the run has read already changed: found when the gates read it again
    text = open(path).read()
    open(path, "w").write(text.replace("question 0", "question Q"))
    return "rewritten"
def sleeper(ctx):
    open(os.environ["MARK_FILE"], "w").close()  # the test stops the run once a case is in here
    time.sleep(3600)
"""


@pytest.fixture
def stream_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "app"
    agent = root / "assistants" / "bot"
    (agent / "src").mkdir(parents=True)
    (root / "connectors").mkdir()
    (root / "connectors" / "mock.conn.yao").write_text(json.dumps({"type": "mock"}))
    (root / "connectors" / "other.conn.yao").write_text(json.dumps({"type": "mock"}))  # a model matrix's second
    (root / "connectors" / "unused.conn.yao").write_text(json.dumps({"type": "openai", "options": {"model": "m", "key": "$ENV.STREAM_KEY"}}))
    monkeypatch.setenv("STREAM_KEY", SECRET)  # a credential of the app: hidden in every output, streamed or not
    tools = [{"name": n, "description": n, "parameters": {"type": "object", "properties": {}}} for n in ("flip", "sleeper", "rewrite", "rewrite_early")]
    (agent / "package.yao").write_text(json.dumps({"name": "bot", "connector": "mock", "tools": tools}))
    (agent / "mock.yml").write_text(RULES)
    (agent / "src" / "tools.py").write_text(TOOLS)
    monkeypatch.setenv("FLIP_FILE", str(tmp_path / "flip"))
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    monkeypatch.delenv(streaming.OVER, raising=False)
    monkeypatch.setattr(streaming, "BLOCK", 700)  # a part of a few cases: ids, places and gates across parts
    return root


SECRET = "sk-stream-SECRET-0123456789"


def every_outcome(n: int = 24) -> list[dict[str, Any]]:
    """Passed, failed, error, skipped, a flaky case over runs, a budget overrun, a reply that holds a secret, and plain
    passing cases."""
    return [
        {"id": "secret", "input": f"my key is {SECRET}", "assertions": [{"type": "contains", "value": "my key"}]},
        {"id": "pass", "input": "hello", "assertions": [{"type": "contains", "value": "hello"}]},
        {"id": "fail", "input": "hello", "assertions": [{"type": "contains", "value": "nope"}]},
        {"id": "error", "input": "boom"},
        {"id": "skipped", "input": "x", "skip": True, "skip_reason": "not today"},
        {"id": "flaky", "input": "call flip", "runs": 3, "min_pass_rate": 0.5, "assertions": [{"type": "contains", "value": "heads"}]},
        {"id": "budget", "input": "hello", "budget": {"tokens": 1}},
        *({"id": f"case-{i}", "input": f"question {i}", "assertions": [{"type": "contains", "value": f"question {i}"}]} for i in range(n)),
    ]


def run(app: Path, cases: Path, out: Path, *extra: str, streamed: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    if streamed:
        monkeypatch.setenv(streaming.OVER, "0")
    else:
        monkeypatch.delenv(streaming.OVER, raising=False)
    (app.parent / "flip").unlink(missing_ok=True)  # both runs see the same coin
    outputs = [a for ext in ("json", "jsonl", "xml") for a in ("-o", str(out.with_suffix("." + ext)))]
    return cli("-i", str(cases), "-n", "bot", "--app", str(app), "--workers", "0", "--parallel", "1", "--no-history", *outputs, *extra)


TIMING = re.compile(r"(_ms|_at|seconds|timestamp)$")


def steady(value: Any) -> Any:
    """A report's value without what differs between two runs of the same cases: times, and where it was written."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if not TIMING.search(k) and k not in ("output_file", "duration")}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def summary_of(output: str) -> str:
    """The console's summary and banner, times left out."""
    text = re.sub(r"Duration:.*", "", output[output.index("Summary"):])
    return re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?(ms|s)\b", "T", text))


@pytest.mark.parametrize("extra", [(), ("--runs", "2"), ("--fail-fast",), ("-c", "mock,other")], ids=["once", "runs-2", "fail-fast", "matrix"])
def test_a_streamed_runs_reports_summary_and_exit_code_are_the_in_memory_runs(stream_app, tmp_path, monkeypatch, extra):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in every_outcome()))
    held = run(stream_app, cases, tmp_path / "held", *extra, streamed=False, monkeypatch=monkeypatch)
    streamed = run(stream_app, cases, tmp_path / "streamed", *extra, streamed=True, monkeypatch=monkeypatch)
    assert "Streamed:" in streamed.output and "Streamed:" not in held.output  # the header says it, once
    assert streamed.exit_code == held.exit_code == 1, streamed.output
    assert summary_of(streamed.output.replace(f"{tmp_path}/streamed", "R")) == summary_of(held.output.replace(f"{tmp_path}/held", "R"))
    a, b = report(tmp_path / "held.json"), report(tmp_path / "streamed.json")
    assert steady(b) == steady(a)
    assert {r["status"] for r in a["results"]} >= {"passed", "failed", "error", "skipped"} or extra == ("--fail-fast",)
    if not extra:
        assert next(g for g in a["summary"]["gates"] if g["id"] == "flaky")["flaky"] is True
    lines = [steady(json.loads(line)) for line in (tmp_path / "held.jsonl").read_text().splitlines()]
    assert [steady(json.loads(line)) for line in (tmp_path / "streamed.jsonl").read_text().splitlines()] == lines
    for path in tmp_path.glob("streamed.*"):
        assert SECRET not in path.read_text() and SECRET[-12:] not in path.read_text() and "my key is ***" in path.read_text()
    untimed = lambda p: re.sub(r' (time|timestamp)="[^"]*"', "", p.read_text())  # noqa: E731
    assert untimed(tmp_path / "streamed.xml") == untimed(tmp_path / "held.xml")


def test_the_gates_of_a_streamed_run_are_the_in_memory_runs(stream_app, tmp_path, monkeypatch):
    """pass^k, flaky, a gate below 1 and a budget: the gates read from disk beside the plan read again."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in every_outcome(6)))
    held = run(stream_app, cases, tmp_path / "held", "--runs", "3", streamed=False, monkeypatch=monkeypatch)
    streamed = run(stream_app, cases, tmp_path / "streamed", "--runs", "3", streamed=True, monkeypatch=monkeypatch)
    a, b = report(tmp_path / "held.json"), report(tmp_path / "streamed.json")
    gates = {g["id"]: g for g in a["summary"]["gates"]}
    assert gates["flaky"]["flaky"] is True and gates["flaky"]["verdict"] == "passed"  # heads, tails, heads: 2 of 3 ≥ 0.5
    assert gates["budget"]["verdict"] == "failed" and gates["skipped"]["verdict"] == "skipped"
    assert steady(b["summary"]) == steady(a["summary"]) and steady(b["results"]) == steady(a["results"])
    assert streamed.exit_code == held.exit_code == 1


def test_a_small_run_does_not_stream_and_the_threshold_is_checked(stream_app, tmp_path, monkeypatch):
    cases = tmp_path / "cases.jsonl"
    written = every_outcome(2)
    cases.write_text("".join(json.dumps(c) + "\n" for c in written))
    monkeypatch.setenv(streaming.OVER, str(len(written) - 1))  # more lines than the threshold: streamed
    assert "Streamed:" in cli("-i", str(cases), "-n", "bot", "--app", str(stream_app), "--workers", "0", "--no-history", "-o", str(tmp_path / "r.json")).output
    monkeypatch.setenv(streaming.OVER, str(len(written)))  # as many: held
    assert "Streamed:" not in cli("-i", str(cases), "-n", "bot", "--app", str(stream_app), "--workers", "0", "--no-history", "-o", str(tmp_path / "r.json")).output
    monkeypatch.setenv(streaming.OVER, "many")
    bad = cli("-i", str(cases), "-n", "bot", "--app", str(stream_app), "--workers", "0", "-o", str(tmp_path / "r.json"))
    assert bad.exit_code == 2 and "AGENTTEST_STREAM_OVER='many'" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize("flag, why", [(("-k", "case"), "-k takes the cases as a whole"),
                                       (("-o", "x.html"), "x.html is written from the whole report in memory"),
                                       (("--early-stop",), "--early-stop takes the cases as a whole")], ids=["k", "html", "early-stop"])
def test_what_takes_the_cases_whole_runs_them_held_and_says_so(stream_app, tmp_path, monkeypatch, flag, why):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in every_outcome(2)))
    monkeypatch.setenv(streaming.OVER, "0")
    args = [a if a != "x.html" else str(tmp_path / "x.html") for a in flag]
    result = cli("-i", str(cases), "-n", "bot", "--app", str(stream_app), "--workers", "0", "--no-history", *args)
    assert "Streamed:" not in result.output and result.exit_code == 1, result.output
    said = " ".join(result.output.split())  # the warning as the console wraps it
    assert "9 lines of cases are held in memory, not streamed: " in said and why in said, said


def test_a_bad_line_deep_in_a_streamed_file_is_exit_2_before_any_case_runs(stream_app, tmp_path, monkeypatch):
    cases = every_outcome(60)
    lines = [json.dumps(c) for c in cases]
    lines[40] = '{"id": "broken", "input": "hi",'  # line 41: cut short
    lines[50] = json.dumps({"id": "case-3", "input": "hi"})  # line 51: the id of line 11, some parts before
    lines[60] = json.dumps({"id": "typo", "input": "hi", "assertions": [{"type": "contans", "value": "x"}]})  # line 61
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv(streaming.OVER, "0")
    result = cli("-i", str(path), "-n", "bot", "--app", str(stream_app), "--workers", "0", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"{path}:41:" in result.output and "invalid JSON" in result.output
    assert f"{path}:51:" in result.output and "duplicate id 'case-3' (first used at line 11)" in result.output
    assert f"{path}:61:" in result.output and "did you mean 'contains'" in result.output
    assert "PASSED" not in result.output and not (tmp_path / "r.json").exists()  # no case ran, no report
    assert not (tmp_path / "flip").exists()


def test_a_stopped_streamed_run_leaves_a_complete_report(stream_app, tmp_path):
    """Ctrl-C while a case of a streamed run is in its tool: the report (every format) holds the cases that ran,
    says it was interrupted, and is whole."""
    cases = [{"id": f"case-{i}", "input": f"question {i}"} for i in range(20)] + [{"id": "stuck", "input": "call sleeper"}]
    cases += [{"id": f"late-{i}", "input": "never"} for i in range(5)]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    mark, out = tmp_path / "sleeping", tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), streaming.OVER: "0", "MARK_FILE": str(mark), "FLIP_FILE": str(tmp_path / "flip")}
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "--app", str(stream_app), "--workers", "0", "--parallel", "1",
                             "--no-history", "-o", str(out), "-o", str(tmp_path / "r.jsonl"), "-o", str(tmp_path / "r.xml")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while time.time() < deadline and not mark.exists() and proc.poll() is None:
        time.sleep(0.05)  # until the stuck case is in its tool (on a busy machine, seconds)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    reader.join(timeout=5)
    assert proc.returncode == 130, (proc.stderr.read() if proc.stderr else "")
    data = report(out)
    assert [r["id"] for r in data["results"]] == [f"case-{i}" for i in range(20)]
    assert data["summary"]["interrupted"] is True and data["summary"]["not_run"] == 6
    last = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[-1])
    assert last["summary"]["total"] == 26 and last["summary"]["interrupted"] is True
    assert (tmp_path / "r.xml").read_text().rstrip().endswith("</testsuites>")
    assert "INTERRUPTED" in "".join(lines)


def test_a_spool_gives_back_what_it_was_given_in_the_order_of_its_indexes():
    """util.spool, without the CLI: values by index (out of order, with holes), read back in order, equal to what was
    written — our frozen dataclasses rebuilt from their fields, anything else as pickle makes it."""
    from agenttest.model import CaseKey, CaseResult, Usage
    from agenttest.util.spool import Spooled

    key = CaseKey(file="cases.jsonl", id="a", connector="mock")
    results = [CaseResult(status="passed" if i % 2 else "failed", key=key, run=i, index=i, output=f"out {i}", usage=Usage(prompt_tokens=i),
                          tags=("x",), metadata={"n": {i}}) for i in range(6)]
    spooled: Spooled[CaseResult] = Spooled()
    for i in (4, 0, 2, 5):  # 1 and 3 never landed (a run stopped)
        spooled[i] = results[i]
    assert len(spooled) == 4 and 2 in spooled and 3 not in spooled and bool(spooled)
    assert list(spooled) == [results[0], results[2], results[4], results[5]]
    assert spooled[1] == results[2] and spooled[-1] == results[5] and spooled[1:3] == [results[2], results[4]]
    assert spooled.at(4) == results[4] and spooled[0].metadata == {"n": {0}} and spooled[0].key == key
    assert [r.run for r in spooled.mapped(lambda r: r)] == [0, 2, 4, 5]
    spooled[2] = results[3]  # written again: the last one counts
    assert len(spooled) == 4 and spooled.at(2) == results[3]
    with pytest.raises(KeyError):
        spooled.at(1)
    spooled.close()


def test_a_suite_past_the_threshold_streams_only_with_workers_0(stream_app, tmp_path, monkeypatch):
    """A streamed run runs its cases in this process; with worker processes (the default) the suite is held, so a
    crash in user code stays its case's (docs/safety.md), and a warning says why it was not streamed."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in every_outcome(2)))
    monkeypatch.setenv(streaming.OVER, "0")
    for workers in ("1", "auto"):
        result = cli("-i", str(cases), "-n", "bot", "--app", str(stream_app), "--workers", workers, "--no-history", "-o", str(tmp_path / "r.json"))
        said = " ".join(result.output.split())
        assert "Streamed:" not in said and result.exit_code == 1, said
        assert "held in memory, not streamed: its cases run in worker processes" in said and "--workers 0 streams them" in said, said
    streamed = cli("-i", str(cases), "-n", "bot", "--app", str(stream_app), "--workers", "0", "--no-history", "-o", str(tmp_path / "r.json"))
    assert "Streamed:" in streamed.output and "not streamed" not in streamed.output and streamed.exit_code == 1, streamed.output


def test_a_case_file_changed_while_a_streamed_run_reads_it_is_exit_2_and_runs_nothing_unchecked(stream_app, tmp_path, monkeypatch):
    """The file is read again as the cases run: a part whose bytes are not those checked is not run, nor what follows;
    the run says where, keeps the cases before it in its reports, and exits 2 — never a green run of a suite nobody
    checked. Left alone, the same file runs whole."""
    cases = tmp_path / "cases.jsonl"
    lines = [{"id": "rewrite", "input": "call rewrite", "assertions": [{"type": "contains", "value": "rewritten"}]}, *every_outcome(24)[1:2],
             *({"id": f"case-{i}", "input": f"question {i}", "assertions": [{"type": "contains", "value": "question"}]} for i in range(24))]
    text = "".join(json.dumps(c) + "\n" for c in lines)
    cases.write_text(text)
    monkeypatch.setenv("CASES_FILE", str(cases))
    result = run(stream_app, cases, tmp_path / "r", streamed=True, monkeypatch=monkeypatch)
    said = " ".join(result.output.split())
    line = 1 + next(i for i, c in enumerate(lines) if c["id"] == "case-23")
    assert result.exit_code == 2 and "STOPPED EARLY" in said and "ALL TESTS PASSED" not in said, said
    assert re.search(r"Total: 26 .*Not run: \d+ runs \(stopped early\)", said), said
    assert report(tmp_path / "r.json")["summary"]["stopped_early"] is True
    where = re.search(r"cases\.jsonl:(\d+): the case file changed while the run read it", said)
    assert where is not None and 1 < int(where.group(1)) <= line, said
    ran = [r["id"] for r in report(tmp_path / "r.json")["results"]]
    assert ran[:2] == ["rewrite", "pass"] and "case-23" not in ran and len(ran) < len(lines), ran
    assert all(r["id"] in [c["id"] for c in lines[:int(where.group(1)) - 1]] for r in report(tmp_path / "r.json")["results"])
    assert any("changed while the run read it" in w for w in report(tmp_path / "r.json")["metadata"]["warnings"])
    cases.write_text(text.replace("call rewrite", "hello rewritten"))  # the same suite, nothing changing it: it runs whole
    result = run(stream_app, cases, tmp_path / "again", streamed=True, monkeypatch=monkeypatch)
    assert result.exit_code == 0 and "changed while" not in result.output, result.output
    assert len(report(tmp_path / "again.json")["results"]) == len(lines)


def test_counts_past_a_thousand_are_written_alike_in_the_header_and_the_summary(stream_app, tmp_path, monkeypatch):
    """'3,000 lines of cases' beside '(3000 test cases)' and 'Total: 3000' (found by a new-user trial): every count is
    written with its thousands separated."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": f"q {i}", "assertions": [{"type": "contains", "value": "q"}]}) + "\n"
                             for i in range(1200)))
    result = run(stream_app, cases, tmp_path / "r", streamed=False, monkeypatch=monkeypatch)
    assert result.exit_code == 0 and "(1,200 test cases)" in result.output, result.output[:600]
    assert "Total:     1,200" in result.output and "Passed:    1,200" in result.output and "1,200 cases)" in result.output


def test_a_case_file_changed_after_its_cases_ran_is_exit_2_and_keeps_every_result(stream_app, tmp_path, monkeypatch):
    """Changed once every part was read for the run, the file is found changed when it is read again for the gates:
    every result is kept (gated by its own runs from the changed part on) in every report, the failure among them —
    it was exit 0 with 'Failed: 1' and a JUnit report without the failure (found by a new-user trial)."""
    cases = tmp_path / "cases.jsonl"
    lines = [*({"id": f"case-{i}", "input": f"question {i}", "assertions": [{"type": "contains", "value": "nope" if i == 20 else "question"}]}
               for i in range(24)),
             {"id": "last", "input": "call rewrite early", "assertions": [{"type": "contains", "value": "rewritten"}]}]
    cases.write_text("".join(json.dumps(c) + "\n" for c in lines))
    monkeypatch.setenv("CASES_FILE", str(cases))
    result = run(stream_app, cases, tmp_path / "r", streamed=True, monkeypatch=monkeypatch)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "cases.jsonl:1: the case file changed after its cases ran" in said, said
    assert "Failed: 1" in said and "1 of 25 tests did not pass" in said and "ALL TESTS PASSED" not in said, said
    json_report = report(tmp_path / "r.json")
    assert json_report["summary"]["stopped_early"] is True
    assert [r["id"] for r in json_report["results"]] == [c["id"] for c in lines] and json_report["summary"]["failed"] == 1
    junit = (tmp_path / "r.xml").read_text()
    assert 'tests="25"' in junit and 'failures="1"' in junit and 'name="case-20"' in junit, junit[:400]
