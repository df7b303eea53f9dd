"""End to end: the CLI as users run it, against the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from helpers import REPO, cli, report
from scripted import scripted

TOOLS = [{"name": "whoami", "description": "who is asking", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = "def whoami(ctx):\n    return {'user': ctx.user_id, 'team': ctx.team_id, 'locale': ctx.locale, 'meta': ctx.metadata}\n"


@pytest.fixture
def bot(app, server):
    server.responder = scripted
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    return app


def case(cid, text, **extra):
    return {"id": cid, "input": text, **extra}


MIXED = [
    case("pass", "say:Expense submitted", assert_=None, assertions=[{"type": "contains", "value": "submitted"}]),
    case("fail", "say:Expense filed", assertions=[{"type": "contains", "value": "approved"}, {"type": "regex", "value": "filed"}]),
    case("error", "fail:500"),
    case("timeout", "slow:60:late", timeout="0.5s"),
    case("skip", "say:x", skip=True, skip_reason="not today"),
]
for c in MIXED:
    c.pop("assert_", None)


def test_mixed_verdicts_console_json_and_exit_code(bot, server):
    path = bot.cases("assistants/bot/tests/inputs.jsonl", MIXED)
    out = bot.root / "report.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 1, result.output
    assert server.left() == 1  # the 60 s reply was interrupted at its 0.5 s deadline: its connection closed, not waited out
    text = result.stdout
    assert "Agent Test" in text and "ℹ Agent: bot" in text and "ℹ Connector: fake" in text
    assert "ℹ Input: " in text and "(5 test cases)" in text and "ℹ Timeout: 5m0s" in text
    assert "► [pass] say:Expense submitted PASSED (" in text
    assert "► [fail] say:Expense filed FAILED (" in text
    assert "  └─ output does not contain 'approved': Expense filed" in text
    assert "► [error] fail:500 ERROR (" in text and "model error 500" in text
    assert "► [timeout] slow:60:late TIMEOUT (" in text and "timeout after 0.5s" in text
    assert "► [skip] say:x SKIPPED" in text and "not today" in text
    assert "❌ 1 failed, 1 timed out, 1 error — 3 of 5 tests did not pass" in text
    assert "\x1b[" not in text  # not a terminal: no colour
    data = report(out)
    assert set(data) == {"summary", "environment", "results", "metadata"}
    s = data["summary"]
    assert (s["total"], s["passed"], s["failed"], s["errors"], s["timeouts"], s["skipped"]) == (5, 1, 1, 1, 1, 1)
    assert s["agent_id"] == "bot" and s["connector"] == "fake" and s["agent_path"].endswith(os.path.join("assistants", "bot"))
    assert data["environment"] == {"user_id": "test-user", "team_id": "test-team", "locale": "en-us"}
    assert [r["id"] for r in data["results"]] == ["pass", "fail", "error", "timeout", "skip"]
    assert [r["status"] for r in data["results"]] == ["passed", "failed", "error", "timeout", "skipped"]
    failed = data["results"][1]
    assert [a["passed"] for a in failed["assertions"]] == [False, True]  # every assertion evaluated
    assert failed["assertions"][0]["expected"] == "approved" and failed["output"] == "Expense filed"
    assert data["results"][0]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert s["usage"]["total_tokens"] == 15 * 2  # the passed and the failed case answered; the others did not
    assert "Tokens:    30 (20 prompt + 10 completion)" in text
    assert data["metadata"]["input_file"] == str(path) and data["metadata"]["version"]
    assert "sk-test-SECRET" not in out.read_text() and "sk-test-SECRET" not in result.output


def test_tool_calls_context_and_verbose(bot, tmp_path):
    ctx = tmp_path / "ctx.json"
    ctx.write_text(json.dumps({"locale": "fr-fr", "authorized": {"user_id": "ctx-user", "team_id": "ctx-team"}, "metadata": {"tenant": "t1"}}))
    cases = [case("who", 'tool:whoami:{}', assertions=[
        {"type": "tool_called", "name": "whoami"},
        {"type": "tool_result", "value": {"tool": "whoami", "result": {"user": "alice", "team": "ctx-team", "locale": "fr-fr", "meta": {"tenant": "t1", "k": 1}}}}],
        options={"metadata": {"k": 1}})]
    path = bot.cases("cases.jsonl", cases)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-u", "alice", "--ctx", str(ctx), "-v", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "tool whoami({}) →" in result.stdout and "output: done:" in result.stdout
    assert "│  ✓ tool_called" in result.stdout and "│  ✓ tool_result" in result.stdout
    r = report(out)
    assert r["environment"] == {"user_id": "alice", "team_id": "ctx-team", "locale": "fr-fr"}
    assert r["results"][0]["tool_calls"][0]["name"] == "whoami"


def test_parallel_gives_the_same_verdicts_in_input_order(bot, tmp_path):
    cases = [case(f"c{i:02d}", f"slow:{(7 - i % 7) * 0.03}:{'yes' if i % 3 else 'no'}", assertions=[{"type": "contains", "value": "yes"}]) for i in range(14)]
    path = bot.cases("cases.jsonl", cases)
    seq, par = tmp_path / "seq.json", tmp_path / "par.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(seq)).exit_code == 1
    result = cli("-i", str(path), "-n", "bot", "-o", str(par), "--parallel", "5")
    assert result.exit_code == 1
    assert "Parallel: 5 concurrent" in result.stdout
    verdicts = lambda p: [(r["id"], r["status"]) for r in report(p)["results"]]  # noqa: E731
    assert verdicts(seq) == verdicts(par)
    assert [i for i, _ in verdicts(par)] == [c["id"] for c in cases]


@pytest.mark.parametrize("parallel, n", [(3, 9), (1, 4)])
def test_parallel_really_overlaps_and_is_bounded(bot, server, tmp_path, parallel, n):
    """The worker holds one case beyond --parallel (to start it the moment one ends): never one more in flight."""
    path = bot.cases("cases.jsonl", [case(f"c{i}", "slow:0.3:ok") for i in range(n)])
    assert cli("-i", str(path), "-n", "bot", "--parallel", str(parallel), "-o", str(tmp_path / "r.json")).exit_code == 0
    assert server.peak_in_flight == parallel  # the server saw that many requests at once, never more


@pytest.mark.parametrize("parallel", ["1", "2"])
def test_fail_fast_stops_scheduling_and_writes_the_report(bot, tmp_path, parallel):
    cases = [case("a", "say:ok"), case("b", "say:bad", assertions=[{"type": "contains", "value": "ok"}])]
    cases += [case(f"later{i}", "slow:0.2:ok") for i in range(6)]
    path = bot.cases("cases.jsonl", cases)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--fail-fast", "--parallel", parallel, "-o", str(out))
    assert result.exit_code == 1
    data = report(out)
    ran = [r["id"] for r in data["results"]]
    assert ran[:2] == ["a", "b"] and len(ran) <= 2 + int(parallel)
    assert data["summary"]["stopped_early"] is True and data["summary"]["not_run"] == 8 - len(ran)


def test_runs_report_stability(bot, tmp_path):
    path = bot.cases("cases.jsonl", [case("steady", "say:ok", assertions=[{"type": "contains", "value": "ok"}]),
                                     case("flaky", "flaky:ok", assertions=[{"type": "contains", "value": "ok"}])])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "4", "-o", str(out))
    assert result.exit_code == 1  # the flaky case misses its gate (the default: every run passes)
    data = report(out)
    assert len(data["results"]) == 8 and [r["run"] for r in data["results"][:4]] == [1, 2, 3, 4]
    stab = {s["id"]: s for s in data["summary"]["stability"]}
    assert stab["steady"]["pass_rate"] == 100.0 and stab["steady"]["classification"] == "stable"
    assert stab["flaky"]["pass_rate"] == 50.0 and stab["flaky"]["classification"] == "unstable"
    assert stab["flaky"]["min_ms"] <= stab["flaky"]["avg_ms"] <= stab["flaky"]["max_ms"] and stab["flaky"]["std_ms"] >= 0
    assert data["summary"]["overall_pass_rate"] == 75.0
    row = next(line.split() for line in result.stdout.splitlines() if line.strip().startswith("flaky "))
    assert row[:6] == ["flaky", "4", "2", "50%", "15%–85%", "≥"] and "unstable" in row and row[-1] == "FAILED"
    assert "Overall:   75.0% of runs passed; 1/2 cases stable" in result.stdout


def test_every_report_format(bot, tmp_path):
    path = bot.cases("cases.jsonl", MIXED[:3] + MIXED[4:])
    outs = {ext: tmp_path / f"r{ext}" for ext in (".jsonl", ".md", ".html", ".xml")}
    for out in outs.values():
        assert cli("-i", str(path), "-n", "bot", "-o", str(out)).exit_code == 1
    lines = [json.loads(x) for x in outs[".jsonl"].read_text().splitlines()]
    assert [x.get("id") for x in lines[:-1]] == ["pass", "fail", "error", "skip"] and lines[-1]["summary"]["total"] == 4
    md = outs[".md"].read_text()
    assert "| Total | Passed |" in md and "## Failures" in md and "output does not contain 'approved'" in md
    page = outs[".html"].read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "output does not contain &#x27;approved&#x27;" in page
    assert "<script src" not in page and "<link" not in page and "://" not in page.split("<body>")[0]  # self-contained
    root = ET.parse(outs[".xml"]).getroot()
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "1")
    cases_ = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases_["fail"].find("failure") is not None and cases_["error"].find("error") is not None
    assert cases_["skip"].find("skipped") is not None and cases_["pass"].find("failure") is None
    assert float(cases_["pass"].get("time")) >= 0


def test_default_output_in_the_reports_folder_and_literal_message(bot, tmp_path):
    path = bot.cases("assistants/bot/tests/inputs.jsonl", [case("a", "say:hi")])
    assert cli("-i", str(path)).exit_code == 0  # no -n: the agent above the file
    assert not list(path.parent.glob("output-*.json"))
    written = list((bot.root / "reports").glob("output-*.json"))
    assert len(written) == 1 and report(written[0])["summary"]["passed"] == 1
    result = cli("-i", 'tool:whoami:{}', "-n", "bot", cwd=bot.root)
    assert result.exit_code == 0
    assert "tool whoami({}) →" in result.stdout and "output: done:" in result.stdout
    assert not list(bot.root.glob("output-*.json"))


def test_run_filter_and_usage_errors(bot, tmp_path):
    path = bot.cases("cases.jsonl", [case("alpha", "say:a"), case("beta", "say:b")])
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "--run", "^al", "-o", str(out)).exit_code == 0
    assert [r["id"] for r in report(out)["results"]] == ["alpha"]
    r = cli("-i", str(path), "-n", "bot", "--run", "gamma")
    assert r.exit_code == 2 and "matches no case" in r.stderr
    r = cli("-i", str(path), "-n", "bto")
    assert r.exit_code == 2 and "did you mean 'bot'?" in r.stderr
    r = cli("-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.pdf"))
    assert r.exit_code == 2 and "unknown report format '.pdf'" in r.stderr
    r = cli("-i", str(path), "-n", "bot", "--timeout", "soon")
    assert r.exit_code == 2 and "'soon' is not a duration" in r.stderr
    r = cli("-i", str(path), "-n", "bot", "--parallel", "0")
    assert r.exit_code == 2
    r = cli("-i", str(path), "-n", "bot", "-c", "nowhere")
    assert r.exit_code == 2 and "unknown connector 'nowhere'" in r.stderr
    assert "Traceback" not in r.output


def test_missing_attachment_is_an_error_result_not_a_crash(bot, tmp_path):
    msg = [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": "file://./missing.png"}]}]
    path = bot.cases("cases.jsonl", [case("img", msg), case("ok", "say:fine")])
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(out)).exit_code == 1
    first, second = report(out)["results"]
    assert first["status"] == "error" and "missing.png" in first["error"] and second["status"] == "passed"


def test_help_and_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "agenttest", "--help"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0
    for flag in ("--input", "--name", "--output", "--connector", "--user", "--team", "--verbose", "--ctx", "--simulator",
                 "--before", "--after", "--timeout", "--parallel", "--runs", "--run", "--fail-fast", "--dry-run", "--app"):
        assert flag in r.stdout
    assert "[default: 5m]" in r.stdout


def test_ctrl_c_writes_the_report_of_what_ran(bot, server, tmp_path):
    done = tmp_path / "after-all.txt"
    bot.file("assistants/bot/src/env_test.py", f"def AfterAll(ctx, results, data):\n    open({str(done)!r}, 'w').write(str(len(results)))\n")
    cases = [case("quick", "say:ok")] + [case(f"slow{i}", "slow:600:ok") for i in range(3)]  # only the signal ends the run
    path = bot.cases("cases.jsonl", cases)
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "-o", str(out), "--after", "env_test.AfterAll"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 120
    while time.time() < deadline and len(server.requests) < 2:  # "quick" done, the first slow one in flight
        time.sleep(0.05)
    time.sleep(0.2)
    try:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    data = report(out)
    assert [r["id"] for r in data["results"]] == ["quick"]
    assert data["summary"]["interrupted"] is True
    assert "INTERRUPTED" in stdout and "Traceback" not in stderr
    assert done.read_text() == "1"  # AfterAll ran, with the one result


@pytest.mark.parametrize("content, message", [
    ("{not json", "invalid JSON: Expecting property name enclosed in double quotes"),
    ('{"locale": "fr", "autorized": {}}', "'autorized' is not a field; did you mean 'authorized'?"),
    ("[1, 2]", "--ctx must hold a JSON object"),
])
def test_bad_ctx_file_is_exit_2(bot, tmp_path, content, message):
    ctx = tmp_path / "ctx.json"
    ctx.write_text(content)
    path = bot.cases("cases.jsonl", [case("a", "say:ok")])
    result = cli("-i", str(path), "-n", "bot", "--ctx", str(ctx))
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output
    missing = cli("-i", str(path), "-n", "bot", "--ctx", str(tmp_path / "none.json"))
    assert missing.exit_code == 2 and "does not exist" in missing.stderr


def test_cases_outside_any_agent_in_an_app_of_two_agents_say_which_to_choose(offline_app):
    """-n left out: the app's only agent is taken; with two, the error names them (a new user added a second
    agent and ``agent-test -i tests`` stopped working with only "no package.yao above it")."""
    rules = {"mock.yml": "rules:\n  - user: '.*'\n    reply: hello\n"}
    offline_app.agent("support", connector="mock", files=rules)
    path = offline_app.cases("tests/cases.jsonl", [{"id": "a", "input": "hi"}])
    one = cli("-i", str(path), "--app", str(offline_app.root), "-o", str(offline_app.root / "r.json"))
    assert one.exit_code in (0, 1), one.output
    offline_app.agent("hooky", connector="mock", files=rules)
    two = cli("-i", str(path), "--app", str(offline_app.root))
    assert two.exit_code == 2 and "Traceback" not in two.output + two.stderr
    assert "the app has 2 agents (hooky, support)" in two.stderr and "-n hooky" in two.stderr, two.stderr


def test_min_pass_rate_nan_is_refused():
    """click's FloatRange lets nan through, and no comparison with it is true: it ended green-bannered with exit 1."""
    from helpers import cli

    result = cli("-i", "hi", "-n", "expense", "--min-pass-rate", "nan")
    assert result.exit_code == 2 and "nan is not a rate" in result.output, result.output
