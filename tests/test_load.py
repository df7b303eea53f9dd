"""Under load, from the CLI (FORMATS §13, §7): a rate-limited endpoint loses no case and the summary says
how many 429s were absorbed; an unreachable one fails fast; ``--json`` streams events that match the report."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from helpers import REPO, Answer, cli, report
from scripted import scripted


def cases(n: int, text: str = "say:ok") -> list[dict]:
    return [{"id": f"c{i:03d}", "input": f"{text} #{i}", "assert": {"type": "contains", "value": "ok"}} for i in range(n)]


def test_a_rate_limited_run_loses_no_case_and_says_how_many_429s_it_absorbed(app, server):
    server.limit(2, "0.1")
    server.responder = lambda req: Answer("ok", delay=0.1)
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(30))
    out = app.root / "r.json"
    # 30 cases × 0.1 s through 2 slots is ≥ 1.5 s of queueing: with a 1 s timeout per case, only a deadline
    # that stands still while agent-test holds a call back lets every case pass
    result = cli("-i", str(path), "-o", str(out), "--parallel", "10", "--timeout", "1s")
    assert result.exit_code == 0, result.output
    data = report(out)
    assert data["summary"]["passed"] == 30
    rejected = sum(1 for r in server.requests if r["rejected"])
    load = data["summary"]["load"]
    assert rejected > 0 and load["rate_limited"] == load["absorbed"] == rejected
    conn = load["connectors"]["fake"]
    assert conn["lowest_limit"] <= 2 and conn["peak_in_flight"] == 10 and conn["requests"] == len(server.requests)
    assert 1 <= conn["found"] <= 2 and conn["timeline"][0] == [0.0, 10] and [t for t, _ in conn["timeline"]] == sorted(t for t, _ in conn["timeline"])
    assert min(level for _, level in conn["timeline"]) == conn["lowest_limit"] and conn["timeline"][-1][1] == conn["limit"]
    assert f"Load:      {rejected} × 429 absorbed; fake: concurrency found {conn['found']} (lowest {conn['lowest_limit']}" in result.stdout


def test_retry_after_ms_is_honoured_before_retry_after_and_the_json_summary_says_what_was_found(app, server):
    server.limit(2)
    server.retry_headers = {"retry-after": "1", "retry-after-ms": "100"}  # as OpenAI answers: both
    server.responder = lambda req: Answer("ok", delay=0.05)
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(12))
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--parallel", "6", "--calls", "all", "--json")
    assert result.exit_code == 0, result.output
    data = report(out)
    waits = [retry["waited_ms"] for r in data["results"] for call in r["calls"]["exchanges"] for retry in call.get("retries", ())]
    rejected = sum(1 for r in server.requests if r["rejected"])
    assert rejected and len(waits) == rejected and set(waits) == {100.0}  # 100 ms each, not Retry-After's second
    summary = events_of(result.stdout)[-1]
    assert summary["event"] == "summary" and summary["load"] == data["summary"]["load"]
    conn = summary["load"]["connectors"]["fake"]
    assert summary["load"]["rate_limited"] == rejected and conn["timeline"][0] == [0.0, 6]
    # the level held longest is one the timeline shows, below the start: how far down depends on how requests overlap
    # (on a loaded machine three may pass where the server allows two), so no exact level is asserted
    levels = [level for _, level in conn["timeline"]]
    assert conn["found"] in levels and 1 <= conn["found"] < 6 and min(levels) < 6


def test_without_rate_limits_the_console_says_nothing_of_load(app, server):
    server.responder = scripted
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(2))
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 0
    assert report(out)["summary"]["load"]["absorbed"] == 0 and "Load:" not in result.stdout


def test_the_load_line_names_429s_only_when_there_were_any():
    from agenttest.reporting.console import load_line

    one = {"connectors": {"fake": {"rate_limited": 3, "limit": 4, "lowest_limit": 2, "found": 4}}}
    assert load_line({"absorbed": 3, "rate_limited": 3, "retries": 1, **one}) == "3 × 429 absorbed, 1 retries; fake: concurrency found 4 (lowest 2)"
    assert load_line({"absorbed": 0, "rate_limited": 2, "retries": 0, **one}) == "0 × 429 absorbed; fake: concurrency found 4 (lowest 2)"
    probing = {"connectors": {"fake": {"rate_limited": 3, "limit": 5, "lowest_limit": 2, "found": 4}}}
    assert load_line({"absorbed": 3, "rate_limited": 3, "retries": 0, **probing}) == "3 × 429 absorbed; fake: concurrency found 4 (lowest 2, at the end 5)"
    older = {"connectors": {"fake": {"rate_limited": 3, "limit": 4, "lowest_limit": 2}}}  # a report from before 'found'
    assert load_line({"absorbed": 3, "rate_limited": 3, "retries": 0, **older}) == "3 × 429 absorbed; fake: concurrency found 4 (lowest 2)"
    assert load_line({"absorbed": 0, "rate_limited": 0, "retries": 20, "connectors": {"fake": {"rate_limited": 0}}}) == "20 retries"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_fails_the_remaining_cases_at_once(app):
    port = closed_port()
    app.connector("down", {"type": "openai", "options": {"model": "m", "host": f"http://127.0.0.1:{port}", "max_retries": 5}})
    app.agent("bot", connector="down")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(8))
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 1
    # 3 connection attempts marked it down; the other cases failed at once: not 8 cases × 6 attempts (counted, not timed)
    assert report(out)["summary"]["load"]["connectors"]["down"]["requests"] == 3
    errors = [r["error"] for r in report(out)["results"]]
    assert errors == [f"agent error: endpoint unreachable: 127.0.0.1:{port}"] * 8
    assert result.stdout.count(f"endpoint unreachable: 127.0.0.1:{port} (3 connection attempts in a row failed") == 2  # live, and in the summary
    assert report(out)["summary"]["load"]["connectors"]["down"]["unreachable"] is True


# ---- --json ------------------------------------------------------------------------------------


def events_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_json_streams_events_that_match_the_report(app, server):
    server.responder = scripted
    app.agent("bot")
    mixed = [{"id": "ok", "input": "say:fine", "assert": {"type": "contains", "value": "fine"}},
             {"id": "bad", "input": "say:fine", "assert": {"type": "contains", "value": "missing"}},
             {"id": "err", "input": "fail:400"},
             {"id": "skip", "input": "x", "skip": True}]
    path = app.cases("assistants/bot/tests/inputs.jsonl", mixed)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--json", "--parallel", "2")
    assert result.exit_code == 1
    events = events_of(result.stdout)  # every stdout line is JSON
    assert [e["event"] for e in events] == ["start", "result", "result", "result", "result", "summary"]
    start, *results, summary = events
    assert start["total"] == 4 and start["agent"] == "bot" and start["connector"] == "fake" and start["parallel"] == 2
    data = report(out)
    by_id = {r["id"]: r for r in data["results"]}
    for event in results:
        body = {k: v for k, v in event.items() if k != "event"}
        assert body == by_id[body["id"]]  # the report's result object, as is
    assert summary["failed_ids"] == ["bad", "err"] and summary["exit_code"] == 1 == result.exit_code
    assert {k: summary[k] for k in ("total", "passed", "failed", "errors", "skipped")} == \
        {k: data["summary"][k] for k in ("total", "passed", "failed", "errors", "skipped")}
    assert summary["output_file"] == str(out)
    assert "Agent Test" in result.stderr and "Agent Test" not in result.stdout  # the console went to stderr


def test_json_when_the_run_cannot_start_is_one_error_event(app, server):
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(1))
    result = cli("-i", str(path), "-n", "bto", "--json")
    assert result.exit_code == 2
    (event,) = events_of(result.stdout)
    assert event["event"] == "error" and event["exit_code"] == 2 and "unknown agent 'bto'" in event["message"]


def test_json_reports_an_endpoint_going_down_as_a_warning_event(app):
    port = closed_port()
    app.connector("down", {"type": "openai", "options": {"model": "m", "host": f"http://127.0.0.1:{port}", "max_retries": 2}})
    app.agent("bot", connector="down")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(3))
    result = cli("-i", str(path), "--json", "-o", str(app.root / "r.json"))
    events = events_of(result.stdout)
    assert [e["event"] for e in events] == ["start", "warning", "result", "result", "result", "summary"]
    assert "endpoint unreachable" in events[1]["message"]
    assert events[-1]["failed_ids"] == ["c000", "c001", "c002"] and events[-1]["exit_code"] == 1


def test_json_from_a_real_process_is_line_buffered_ndjson(app, server, tmp_path):
    """As a program reads it: a subprocess whose stdout is a pipe; each line parses on its own."""
    server.responder = scripted
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases(3))
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "--json", "-o", str(tmp_path / "r.json")],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    events = events_of(proc.stdout)
    assert proc.returncode == 0 and events[-1]["exit_code"] == 0 and events[-1]["failed_ids"] == []
    assert [e["event"] for e in events].count("result") == 3 and "ALL TESTS PASSED" in proc.stderr
