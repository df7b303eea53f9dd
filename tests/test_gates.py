"""Gates over repeated runs (FORMATS §8), end to end: a loopback server whose answers follow a pattern per
case (tests/scripted.py ``pattern:``), so every pass rate is known exactly; every figure, the verdicts, the
exit code, --early-stop (counting the requests the server saw) and every report format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from helpers import cli, report
from scripted import Scripted

OK = [{"type": "contains", "value": "ok"}]


@pytest.fixture
def bot(app, server):
    server.responder = Scripted()
    app.agent("bot")
    return app


def case(cid, pattern, **extra):
    return {"id": cid, "input": f"pattern:{pattern}:ok {cid}", "assert": OK, **extra}


def requests_for(server, cid):
    return sum(1 for b in server.bodies() if b["messages"][-1]["content"].endswith(f"ok {cid}"))


def gates_of(data):
    return {g["id"]: g for g in data["summary"]["gates"]}


FIGURES = [
    case("steady", "P"),
    case("flaky", "PF"),
    case("lenient", "PPPF", min_pass_rate=0.75),
    case("never", "F"),
    case("twice", "PF", runs=2, min_pass_rate=0.5),
]


def test_every_gate_figure_and_the_exit_code(bot, server, tmp_path):
    path = bot.cases("cases.jsonl", FIGURES)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "4", "-o", str(out))
    assert result.exit_code == 1, result.output  # two gates failed
    data = report(out)
    g = gates_of(data)
    assert [x["id"] for x in data["summary"]["gates"]] == ["steady", "flaky", "lenient", "never", "twice"]
    expect = {  # id: (runs, passed, pass_rate, min, verdict, pass^k, pass@k, flaky, class)
        "steady": (4, 4, 1.0, 1.0, "passed", True, True, False, "stable"),
        "flaky": (4, 2, 0.5, 1.0, "failed", False, True, False, "unstable"),  # failed, never flaky (one meaning, issue 51)
        "lenient": (4, 3, 0.75, 0.75, "passed", False, True, True, "unstable"),
        "never": (4, 0, 0.0, 1.0, "failed", False, False, False, "failing"),
        "twice": (2, 1, 0.5, 0.5, "passed", False, True, True, "unstable"),
    }
    for cid, (runs, passed, rate, least, verdict, hat, at, flaky, cls) in expect.items():
        got = g[cid]
        assert (got["runs"], got["planned"], got["passed"], got["pass_rate"], got["min_pass_rate"]) == (runs, runs, passed, rate, least), cid
        assert (got["verdict"], got["pass_hat_k"], got["pass_at_k"], got["flaky"], got["classification"]) == (verdict, hat, at, flaky, cls), cid
        d = got["duration"]
        assert 0 <= d["min_ms"] <= d["median_ms"] <= d["max_ms"] and d["min_ms"] <= d["mean_ms"] <= d["max_ms"] and d["std_ms"] >= 0
        assert got["tokens"] == 15 * runs  # the loopback server's usage: 10 prompt + 5 completion per call
        assert requests_for(server, cid) == runs
    s = data["summary"]
    assert (s["cases"], s["gates_passed"], s["gates_failed"]) == (5, 3, 2)
    assert s["total"] == 18 and s["passed"] == 10  # results: every run is one
    assert [r["run"] for r in data["results"] if r["id"] == "twice"] == [1, 2]
    stab = {x["id"]: x for x in s["stability"]}  # Yao's figures, kept
    assert stab["flaky"]["pass_rate"] == 50.0 and stab["flaky"]["classification"] == "unstable"
    assert s["overall_pass_rate"] == round(100 * 10 / 18, 1) and s["stable_cases"] == 1
    text = result.stdout
    assert "Gates:     3/5 passed" in text
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("    ") and line.split()}
    assert lines["flaky"].split()[1:6] == ["4", "2", "50%", "15%–85%", "≥"] and "FAILED" in lines["flaky"]  # Wilson, 2 of 4
    assert g["flaky"]["interval"] == pytest.approx([0.150039, 0.849961], abs=1e-6) and g["steady"]["interval"][1] == 1.0
    assert "PASSED (flaky)" in lines["lenient"] and "≥ 75%" in lines["lenient"]
    assert lines["twice"].split()[1:3] == ["2", "1"] and "PASSED (flaky)" in lines["twice"]
    assert "❌ 2 failed — 2 of 5 tests did not pass" in text  # by gate: lenient and twice failed runs, not their gates


def test_a_flaky_case_within_its_gate_passes_the_run(bot, server, tmp_path):
    path = bot.cases("cases.jsonl", [case("half", "PF", min_pass_rate=0.5), case("steady", "P")])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "4", "-o", str(out))
    assert result.exit_code == 0, result.output  # two runs of 'half' failed, but its gate passed
    data = report(out)
    assert data["summary"]["failed"] == 2 and data["summary"]["gates_failed"] == 0
    assert "✨ ALL TESTS PASSED ✨" in result.stdout


def test_min_pass_rate_flag_and_the_case_field_that_wins(bot, tmp_path):
    path = bot.cases("cases.jsonl", [case("half", "PF"), case("strict", "PF", min_pass_rate=1)])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "2", "--min-pass-rate", "0.5", "-o", str(out))
    assert result.exit_code == 1
    g = gates_of(report(out))
    assert (g["half"]["min_pass_rate"], g["half"]["verdict"]) == (0.5, "passed")
    assert (g["strict"]["min_pass_rate"], g["strict"]["verdict"]) == (1, "failed")
    assert report(out)["metadata"]["options"]["min_pass_rate"] == 0.5


def test_one_run_reports_as_before(bot, tmp_path):
    path = bot.cases("cases.jsonl", [case("steady", "P"), case("never", "F")])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 1
    s = report(out)["summary"]
    assert "gates" not in s and "stability" not in s  # one result per case says it all
    assert "Gates:" not in result.stdout


# ---- early stop -----------------------------------------------------------------------------------

EARLY = [
    case("default-gate", "PPF"),  # 1.0 of 10: the first failure (run 3) settles it
    case("fails-early", "FFFPPPPPPP", min_pass_rate=0.8),  # 0.8 of 10: three failures settle it
    case("passes-early", "PPPPPPPPFF", min_pass_rate=0.8),  # eight passes settle it
    case("all-pass", "P"),  # nothing to save: pass^10 needs all ten
]


def test_early_stop_stops_once_the_gate_is_settled(bot, server, tmp_path):
    path = bot.cases("cases.jsonl", EARLY)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "10", "--early-stop", "-o", str(out))
    assert result.exit_code == 1
    data = report(out)
    g = gates_of(data)
    expect = {"default-gate": (3, 2, "failed"), "fails-early": (3, 0, "failed"), "passes-early": (8, 8, "passed"), "all-pass": (10, 10, "passed")}
    for cid, (runs, passed, verdict) in expect.items():
        assert requests_for(server, cid) == runs, cid  # the server saw only the runs that ran
        assert (g[cid]["runs"], g[cid]["passed"], g[cid]["verdict"], g[cid]["planned"]) == (runs, passed, verdict, 10), cid
        assert g[cid].get("saved", 0) == 10 - runs
    assert len(server.requests) == 24
    s = data["summary"]
    assert s["runs_saved"] == 16 and s["total"] == 24 and "not_run" not in s and "stopped_early" not in s
    assert "early stop saved 16 of 40 runs (40%)" in result.stdout
    assert "FAILED (stopped early, 7 saved)" in result.stdout


def test_without_early_stop_every_run_runs_and_verdicts_agree(bot, server, tmp_path):
    path = bot.cases("cases.jsonl", EARLY)
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "--runs", "10", "-o", str(out)).exit_code == 1
    g = gates_of(report(out))
    assert len(server.requests) == 40
    assert {k: v["verdict"] for k, v in g.items()} == {"default-gate": "failed", "fails-early": "failed", "passes-early": "passed", "all-pass": "passed"}
    assert (g["passes-early"]["passed"], g["fails-early"]["passed"]) == (8, 7)


def test_early_stop_under_parallel_lets_runs_in_flight_finish(bot, server, tmp_path):
    """All ten runs start at once under --parallel 10: none can be saved, each counts; the verdict is the same."""
    path = bot.cases("cases.jsonl", [case("default-gate", "PPF")])
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "--runs", "10", "--early-stop", "--parallel", "10", "-o", str(out)).exit_code == 1
    g = gates_of(report(out))["default-gate"]
    assert requests_for(server, "default-gate") == 10 and (g["runs"], g["passed"], g["verdict"]) == (10, 7, "failed")
    assert "saved" not in g


def test_early_stop_under_parallel_saves_and_keeps_verdicts(bot, server, tmp_path):
    cases = [case(f"c{i}", "PPF") for i in range(3)] + [case(f"ok{i}", "P") for i in range(3)]
    path = bot.cases("cases.jsonl", cases)
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "--runs", "10", "--early-stop", "--parallel", "4", "-o", str(out)).exit_code == 1
    data = report(out)
    for cid, g in gates_of(data).items():
        assert requests_for(server, cid) == g["runs"] and g["runs"] + g.get("saved", 0) == 10
        assert g["verdict"] == ("failed" if cid.startswith("c") else "passed")
    assert data["summary"]["runs_saved"] == 60 - len(server.requests) > 0


def test_fail_fast_stops_at_the_first_failed_gate(bot, server, tmp_path):
    path = bot.cases("cases.jsonl", [case("half", "PF", min_pass_rate=0.5), case("never", "F"), case("later", "P")])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "2", "--fail-fast", "-o", str(out))
    assert result.exit_code == 1
    data = report(out)
    assert [r["id"] for r in data["results"]] == ["half", "half", "never"]  # 'half' failed a run but not its gate
    assert data["summary"]["stopped_early"] is True and data["summary"]["not_run"] == 3


# ---- reports --------------------------------------------------------------------------------------


def test_junit_has_one_testcase_per_case_with_rate_and_flaky(bot, tmp_path):
    path = bot.cases("cases.jsonl", FIGURES[:3])
    out = tmp_path / "r.xml"
    assert cli("-i", str(path), "-n", "bot", "--runs", "4", "-o", str(out)).exit_code == 1
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["steady", "flaky", "lenient"]
    props = {name: {p.get("name"): p.get("value") for p in c.iter("property")} for name, c in cases.items()}
    assert props["flaky"]["pass_rate"] == "0.5" and props["flaky"]["flaky"] == "false" and props["flaky"]["runs"] == "4"  # its gate failed
    assert props["lenient"]["flaky"] == "true"  # passed its gate, not every run
    assert props["steady"]["flaky"] == "false" and props["lenient"]["min_pass_rate"] == "0.75"
    failure = cases["flaky"].find("failure")
    assert failure is not None and failure.get("message") == "pass rate 50% < 100% (2 of 4 runs passed)"
    assert "run 2: output does not contain 'ok'" in (failure.text or "")
    assert cases["lenient"].find("failure") is None and cases["steady"].find("failure") is None


def test_markdown_and_html_show_the_gates(bot, tmp_path):
    path = bot.cases("cases.jsonl", FIGURES[:2])
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    for out in (md, page):
        assert cli("-i", str(path), "-n", "bot", "--runs", "4", "--early-stop", "-o", str(out)).exit_code == 1
    text = md.read_text()
    assert "## Gates" in text and "| flaky | 2/4 | 1 | 50% | 9%–91% | ≥ 100% | ✗ | ✓ |" in text
    assert "## Stability" in text and "early stop saved 2 of 8 runs" in text
    html = page.read_text()
    assert "<h2>Gates</h2>" in html and "<td>flaky</td>" in html and "early stop saved 2 of 8 runs" in html


def test_bad_gate_input_is_exit_2(bot, tmp_path):
    path = bot.cases("cases.jsonl", [case("x", "P", runs=0), case("y", "P", min_pass_rate=1.5)])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2
    assert "cases.jsonl:1:" in result.output and "'runs' must be at least 1" in result.output
    assert "cases.jsonl:2:" in result.output and "'min_pass_rate' must be at most 1" in result.output
    result = cli("-i", str(path), "-n", "bot", "--min-pass-rate", "2")
    assert result.exit_code == 2 and "--min-pass-rate" in result.output
    bad = bot.cases("typo.jsonl", [{**case("x", "P"), "min_pass_rat": 0.5}])
    result = cli("-i", str(bad), "-n", "bot")
    assert result.exit_code == 2 and "did you mean 'min_pass_rate'?" in result.output


def test_case_runs_in_a_json_report_schema(bot, tmp_path):
    path = bot.cases("cases.jsonl", [case("twice", "PF", runs=2)])
    out = tmp_path / "r.jsonl"
    assert cli("-i", str(path), "-n", "bot", "-o", str(out)).exit_code == 1
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["run"] for x in lines[:-1]] == [1, 2]
    assert lines[-1]["summary"]["gates"][0]["verdict"] == "failed"


# ---- the module ------------------------------------------------------------------------------------

from agenttest.verdicts import gates as gatemod  # noqa: E402
from agenttest.model import CaseKey, CaseResult, Gate  # noqa: E402


@pytest.mark.parametrize("passed, failed, planned, rate, outcome", [
    (0, 0, 10, 1.0, None), (9, 0, 10, 1.0, None), (10, 0, 10, 1.0, True), (3, 1, 10, 1.0, False),  # pass^k: one failure settles
    (0, 2, 10, 0.8, None), (0, 3, 10, 0.8, False), (7, 2, 10, 0.8, None), (8, 0, 10, 0.8, True), (8, 2, 10, 0.8, True),
    (0, 0, 5, 0.0, True),  # a gate of 0 passes before anything runs
    (1, 0, 3, 1 / 3, True), (0, 2, 3, 1 / 3, None), (0, 3, 3, 1 / 3, False),  # 1/3 × 3 is one pass, not two (float care)
])
def test_settled(passed, failed, planned, rate, outcome):
    assert gatemod.settled(passed, failed, planned, rate) is outcome


def test_compute_counts_skips_errors_and_not_run():
    def r(cid, status, run, ms=10.0):
        return CaseResult(key=CaseKey(file="f.jsonl", id=cid, connector="c"), status=status, run=run, duration_ms=ms)

    results = [r("a", "passed", 1, 10), r("a", "error", 2, 30), r("a", "timeout", 3, 20), r("s", "skipped", 1)]
    planned = {CaseKey("f.jsonl", "a", "c"): gatemod.Policy(3, 1 / 3), CaseKey("f.jsonl", "s", "c"): gatemod.Policy(1, 1.0),
               CaseKey("f.jsonl", "n", "c"): gatemod.Policy(2, 1.0)}
    a, s, n = gatemod.compute(results, planned, {CaseKey("f.jsonl", "n", "c"): 0})
    assert (a.runs, a.passed, a.verdict, a.median_ms, a.mean_ms, a.min_ms, a.max_ms) == (3, 1, "passed", 20.0, 20.0, 10.0, 30.0)
    assert a.pass_at_k and not a.pass_hat_k and a.flaky
    assert (s.runs, s.skipped, s.verdict) == (0, 1, "skipped") and n.verdict == "not run"
    assert gatemod.failed([a, s, n]) == [] and gatemod.shown([a, s, n])
    assert not gatemod.shown([Gate(key=CaseKey(id="x"), planned=1)]) and gatemod.shown([Gate(key=CaseKey(id="x"))], ["m1", "m2"])


def test_compute_walks_the_reports_order_and_groups_any_other_order_alike():
    """The report's results hold each case's runs together in the plan's order: gates are taken in one walk
    beside the plan (no dict of every key). Runs interleaved, out of the plan's order or of a case the plan
    does not name give the same gates as grouping them first (what merged shards are)."""
    import itertools

    def r(cid, status, run, ms=10.0):
        return CaseResult(key=CaseKey(file="f.jsonl", id=cid, connector="c"), status=status, run=run, duration_ms=ms)

    planned = {CaseKey("f.jsonl", k, "c"): gatemod.Policy(2, 0.5) for k in ("a", "b", "n", "d")}
    ordered = [r("a", "passed", 1, 10), r("a", "failed", 2, 30), r("b", "failed", 1), r("b", "failed", 2), r("d", "passed", 1)]
    walked = gatemod.compute(ordered, planned)
    assert [(g.id, g.runs, g.passed, g.verdict) for g in walked] == [("a", 2, 1, "passed"), ("b", 2, 0, "failed"), ("n", 0, 0, "not run"),
                                                                     ("d", 1, 1, "passed")]
    for shuffled in itertools.permutations(ordered):
        assert gatemod.compute(list(shuffled), planned) == walked
    stray = gatemod.compute([*ordered, r("z", "passed", 1)], planned)  # a result the plan does not name: a gate of its own
    assert stray[:4] == walked and (stray[4].id, stray[4].planned, stray[4].verdict) == ("z", 1, "passed")
    assert gatemod.compute([], planned)[0].verdict == "not run" and gatemod.compute([], {}) == ()


def test_pass_hat_k_of_an_80_percent_agent_is_33_percent():
    """The worked example of docs/gates.md: independent runs at 80% pass all five 0.8^5 = 32.8% of the time, and
    the unbiased estimate from 4 passes in 5 runs is C(4,5)/C(5,5) = 0 for k = 5 but 4/5 for k = 1."""
    from agenttest.model import CaseResult
    from agenttest.verdicts import gates as gatemod

    assert round(0.8 ** 5, 3) == 0.328 and round(1 - 0.2 ** 5, 5) == 0.99968
    runs = [CaseResult(key=CaseKey(file="f.jsonl", id="a", connector="c"), status=s, run=i) for i, s in enumerate(["passed"] * 4 + ["failed"], 1)]
    g = gatemod.gate(CaseKey("f.jsonl", "a", "c"), runs, gatemod.Policy(5, 0.8), 0)
    table = gatemod.pass_k([g])
    assert table.pass_hat[0] == 0.8 and table.pass_hat[4] == 0.0 and table.pass_at[4] == 1.0


def test_many_runs_give_every_k_in_the_json_and_a_readable_console(bot, tmp_path):
    """40 runs of a case that passes 3 in 4: the JSON report has pass^k and pass@k for each k = 1 … 40, equal to
    C(c,k)/C(n,k) and 1 - C(n-c,k)/C(n,k); the console shows k = 1–5, 10, 20 and 40, not forty columns, and says
    where the rest are. (The suite's table was once made again for each k: cubic in the runs, minutes at 1,000.)"""
    from math import comb

    path = bot.cases("cases.jsonl", [case("mostly", "PPPF", min_pass_rate=0.5)])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "40", "-o", str(out))
    assert result.exit_code == 0, result.output
    table = json.loads(out.read_text())["summary"]["pass_k"]
    assert table["k"] == list(range(1, 41)) and table["cases"] == [1] * 40
    assert table["pass_hat"] == [round(comb(30, k) / comb(40, k), 6) for k in range(1, 41)]
    assert table["pass_at"] == [round(1 - comb(10, k) / comb(40, k), 6) for k in range(1, 41)]
    header = next(line for line in result.output.splitlines() if line.split()[:1] == ["k"])
    assert header.split() == ["k", "1", "2", "3", "4", "5", "10", "20", "40"]
    assert "1 case × 40 runs; some k shown, the JSON report has each" in result.output


def test_last_failed_and_json_events_follow_the_gates_not_single_runs(bot, tmp_path):
    """A flaky case within its gate passed: --lf does not pick it again and --json does not list it as failed."""
    path = bot.cases("cases.jsonl", [case("within", "PF", min_pass_rate=0.5), case("never", "F")])
    result = cli("-i", str(path), "-n", "bot", "--runs", "2", "-o", str(tmp_path / "r.json"), "--json")
    assert result.exit_code == 1
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    summary = [e for e in events if e["event"] == "summary"][-1]
    assert summary["failed_ids"] == ["never"] and summary["exit_code"] == 1
    listed = cli("-i", str(path), "-n", "bot", "--lf", "--list")
    assert listed.exit_code == 0 and "never" in listed.output and "within" not in listed.output


def test_runs_saved_by_early_stop_shorten_the_progress():
    import io

    from agenttest.reporting.console import Console

    console = Console(io.StringIO(), parallel=2)
    console.total = 10
    console.saved()
    console.saved()
    assert console.total == 8


MOCK_RULES = "rules:\n  - user: outage\n    error: simulated outage\n  - user: slowly\n    delay: 3\n    reply: late\ndefault: 'echo: {{ user }}'\n"


@pytest.fixture
def mocked(offline_app):
    offline_app.agent("echo", connector="mock", files={"mock.yml": MOCK_RULES})
    return offline_app


def junit_counts(path):
    suite = ET.parse(path).getroot().find("testsuite")
    return {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}, suite


@pytest.mark.parametrize("extra", [["--min-pass-rate", "0"], ["--min-pass-rate", "0", "--runs", "3"]])
def test_a_gate_of_zero_passes_but_the_banner_says_no_run_passed_and_junit_agrees(mocked, tmp_path, extra):
    path = mocked.cases("cases.jsonl", [{"id": "e1", "input": "outage", "assert": {"type": "contains", "value": "x"}},
                                        {"id": "e2", "input": "hello", "assert": {"type": "contains", "value": "nope"}}])
    xml = tmp_path / "r.xml"
    result = cli("-i", str(path), "-n", "echo", "--app", str(mocked.root), "-o", str(xml), *extra)
    assert result.exit_code == 0, result.output  # what FORMATS §8 says a gate of 0 is
    assert "ALL TESTS PASSED" not in result.stdout
    assert "⚠ GATES PASSED — 2 cases passed none of their runs (min_pass_rate 0)" in result.stdout
    assert "Gates:     2/2 passed (2 with no passing run: min_pass_rate 0)" in result.stdout, result.stdout
    md = tmp_path / "r.md"
    cli("-i", str(path), "-n", "echo", "--app", str(mocked.root), "-o", str(md), *extra)
    assert "Gates 2/2 passed (2 with no passing run: min\\_pass\\_rate 0)." in md.read_text()  # _ escaped in Markdown
    counts, _ = junit_counts(xml)
    assert counts == {"tests": 2, "failures": 0, "errors": 0, "skipped": 0}  # the verdict the exit code gave


def test_junit_counts_a_gate_lost_to_errors_and_timeouts_as_the_console_does(mocked, tmp_path):
    """A case whose runs all timed out is an error whether it ran once or twice; so is a failed gate of errors."""
    path = mocked.cases("cases.jsonl", [{"id": "t1", "input": "slowly", "timeout": "300ms", "runs": 2},
                                        {"id": "t2", "input": "slowly", "timeout": "300ms"},
                                        {"id": "g", "input": "outage", "runs": 2},
                                        {"id": "f", "input": "hi", "runs": 2, "assert": {"type": "contains", "value": "nope"}},
                                        {"id": "ok", "input": "hi"}])
    xml = tmp_path / "r.xml"
    result = cli("-i", str(path), "-n", "echo", "--app", str(mocked.root), "-o", str(xml))
    assert result.exit_code == 1
    assert "❌ 1 failed, 2 timed out, 1 error — 4 of 5 tests did not pass" in result.stdout, result.stdout
    counts, suite = junit_counts(xml)
    assert counts == {"tests": 5, "failures": 1, "errors": 3, "skipped": 0}
    kinds = {c.get("name"): [e.tag for e in c if e.tag in ("failure", "error")] for c in suite.iter("testcase")}
    assert kinds == {"t1": ["error"], "t2": ["error"], "g": ["error"], "f": ["failure"], "ok": []}


def test_the_banner_of_a_run_stopped_by_fail_fast_counts_the_cases_not_run(mocked):
    cases = [{"id": "bad", "input": "hi", "assert": {"type": "contains", "value": "nope"}}] + [{"id": f"c{i}", "input": "hi"} for i in range(5)]
    path = mocked.cases("cases.jsonl", cases)
    result = cli("-i", str(path), "-n", "echo", "--app", str(mocked.root), "--runs", "2", "-x")
    assert result.exit_code == 1
    assert "1 of 1 test that ran did not pass (5 not run)" in result.stdout, result.stdout  # cases, not their 10 runs


def test_a_gate_whose_remaining_runs_could_change_it_is_incomplete_not_passed(mocked, tmp_path):
    """--early-stop runs round by round, so -x stops after run 1 of each: 'ok' passed 1 of its 2 planned runs at a
    gate of 1.0 — not settled, so not PASSED; 'lenient' needs 1 of 2 and has it — settled, so passed."""
    path = mocked.cases("cases.jsonl", [{"id": "ok", "input": "hi"}, {"id": "lenient", "input": "hi", "min_pass_rate": 0.5},
                                        {"id": "bad", "input": "hi", "assert": {"type": "contains", "value": "nope"}}])
    out, xml = tmp_path / "r.json", tmp_path / "r.xml"
    result = cli("-i", str(path), "-n", "echo", "--app", str(mocked.root), "--runs", "2", "--early-stop", "-x", "-o", str(out), "-o", str(xml))
    assert result.exit_code == 1, result.output
    verdicts = {i: g["verdict"] for i, g in gates_of(report(out)).items()}
    assert verdicts == {"ok": "incomplete", "lenient": "passed", "bad": "failed"}
    assert "1/3 passed, 1 failed, 1 incomplete" in result.stdout and "INCOMPLETE (1 of 2 runs ran)" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "INCOMPLETE (1 of 2" in line).split()
    assert row[:6] == ["ok", "1/2", "1", "100%", "21%–100%", "≥"] and row[7:10] == ["—", "—", "—"], row  # no pass^k, pass@k or class yet
    assert "(1 incomplete)" in result.stdout.splitlines()[-2]
    counts, suite = junit_counts(xml)
    assert counts == {"tests": 3, "failures": 1, "errors": 0, "skipped": 1}
    skipped = [c.find("skipped").get("message") for c in suite.iter("testcase") if c.get("name") == "ok"]
    assert skipped == ["incomplete: 1 of 2 runs ran, 1 passed; the runs not run could have changed the verdict"]


def test_a_run_whose_every_case_is_skipped_is_not_the_green_banner(mocked):
    path = mocked.cases("cases.jsonl", [{"id": "a", "input": "hi", "skip": True}, {"id": "b", "input": "hi", "skip": True, "skip_reason": "later"}])
    result = cli("-i", str(path), "-n", "echo", "--app", str(mocked.root))
    assert result.exit_code == 0  # the cases asked for it
    assert "ALL TESTS PASSED" not in result.stdout and "⚠ NO TEST RAN — 2 skipped" in result.stdout


def test_a_rate_and_a_gate_that_round_alike_get_the_digits_that_tell_them_apart(bot, tmp_path):
    """2 of 3 runs at --min-pass-rate 0.667 read "66.7% ≥ 66.7% … FAILED" and "pass rate 66.7% < 66.7%"."""
    path = bot.cases("cases.jsonl", [case("close", "PPF")])
    out = tmp_path / "r.xml"
    result = cli("-i", str(path), "-n", "bot", "--runs", "3", "--min-pass-rate", "0.667", "-o", str(out))
    assert result.exit_code == 1
    line = next(x for x in result.output.splitlines() if x.lstrip().startswith("close") and "FAILED" in x)
    assert "66.67%" in line and "≥ 66.70%" in line, line
    failure = ET.parse(out).getroot().find("testsuite").find("testcase").find("failure")
    assert failure.get("message") == "pass rate 66.67% < 66.70% (2 of 3 runs passed)"
