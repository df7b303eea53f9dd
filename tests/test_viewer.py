"""The viewer in a real browser (headless Chromium, tests/browser.py): reports, a model matrix, a diff and
``agent-test view``, all made by the CLI on the offline app of ``agent-test init`` (tests/viewer_demo.py).
One browser for the module; each test opens its own page."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser import chromium, expect
from viewer_demo import build

from agenttest.model import CaseKey
from agenttest.history import server


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build(tmp_path_factory.mktemp("viewer") / "app")


def gated(folder: Path) -> Path:
    """A ``--runs 3`` report: a flaky case within its gate, a broken one (whose tools changed the world and
    whose hook printed), a steady one — nine results."""
    from dataclasses import replace

    from agenttest.model import AssertionResult, CaseKey, CaseResult, WorldChange, WorldRecord
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    def run(cid: str, k: int, passed: bool) -> CaseResult:
        check = AssertionResult(type="contains", passed=passed, message="" if passed else "output does not contain 'ok'", expected="ok", actual=f"answer {k}")
        return CaseResult(key=CaseKey(id=cid, connector="mock"), status="passed" if passed else "failed", input=f"ask {cid}", output=f"answer {k} of {cid}", run=k,
                          assertions=(check,), duration_ms=10.0 * k)

    plan = {"broken": (False, False, False), "flaky": (True, False, True), "steady": (True, True, True)}
    results = [run(cid, k + 1, ok) for cid, oks in plan.items() for k, ok in enumerate(oks)]
    world = WorldRecord({"budget": 100}, {"budget": 40, "spent": [60]},
                        (WorldChange("$.budget", "changed", 100, 40), WorldChange("$.spent", "added", after=[60])))
    results[0] = replace(results[0], world=world, stdout="hook: seeded the budget\n", traceback="Traceback (most recent call last):\nValueError: boom")
    policies = {CaseKey("", cid, "mock"): Policy(3, 0.5 if cid == "flaky" else 1.0) for cid in plan}
    report = make_report(results, 1795953600.0, 900.0, policies=policies, agent_id="bot", connector="mock", options={"runs": 3})
    write(report, str(folder / "gated.html"))
    return folder / "gated.html"


@pytest.fixture(scope="module")
def browser(demo):  # after the demo: Playwright's sync API keeps an event loop running, and the CLI starts its own
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, errors  # the viewer never throws


def rows(page):
    return page.eval_on_selector_all("#cases tbody tr", "rs => rs.map(r => [r.dataset.id, r.dataset.verdict])")


def test_the_failing_cases_are_the_first_rows(page, demo):
    page.goto(demo["b_html"].as_uri())
    listed = rows(page)
    assert listed[:2] == [["greets", "failed"], ["asks-number", "failed"]] and {v for _, v in listed[2:]} == {"passed"}
    assert "null" not in page.inner_text("#app") and "undefined" not in page.inner_text("#app")  # nothing missing drawn as a word
    cards = page.inner_text("#cards")
    assert "Cases\n8" in cards and "Failed\n2" in cards and "Passed\n6" in cards


def test_a_chip_hides_the_passing_cases(page, demo):
    page.goto(demo["b_html"].as_uri())
    page.click("[data-chip=failed]")
    assert rows(page) == [["greets", "failed"], ["asks-number", "failed"]]
    assert page.get_attribute("[data-chip=failed]", "aria-pressed") == "true"
    page.click("[data-chip=failed]")  # pressed again: every case is back
    assert len(rows(page)) == 8


def test_search_finds_a_case_by_a_word_of_its_output(page, demo):
    page.goto(demo["b_html"].as_uri())
    page.fill("#search", "packed")
    expect(page.locator("#cases tbody tr")).to_have_count(1)  # the search waits for typing to pause
    assert rows(page) == [["judged", "passed"]]
    page.fill("#search", "no-such-word-anywhere")
    expect(page.locator("#cases tbody tr")).to_have_count(0)
    assert "0 of 8 cases" in page.inner_text("#shown")


def test_a_dynamic_case_shows_its_tool_call_in_its_turn_and_its_checkpoints(page, demo):
    page.goto(demo["a_html"].as_uri() + "#order-status")
    assert page.is_hidden("#overview") and "order-status" in page.inner_text("#case h1")
    turn1, turn2 = page.locator(".turn[data-turn='1']"), page.locator(".turn[data-turn='2']")
    assert turn1.locator(".call").count() == 0 and turn2.locator(".call[data-tool=lookup_order]").count() == 1
    assert '"order_id": "1042"' in turn2.locator(".call").inner_text()
    assert turn1.locator(".cp").all_inner_texts() == ["✓ asks"] and turn2.locator(".cp").all_inner_texts() == ["✓ looks-up", "✓ answers"]
    simulator = page.inner_text(".sim")
    assert "A customer waiting for a parcel" in simulator and "Learn the status of order 1042" in simulator
    assert page.locator(".reasoning").count() == 2 and page.locator("#missing").count() == 0


def test_a_model_matrix_shows_both_connectors_outputs_side_by_side(page, demo):
    page.goto(demo["matrix_html"].as_uri())
    assert page.eval_on_selector_all("#cases thead th", "hs => hs.map(h => h.textContent)")[2:] == ["mock", "terse"]
    assert "Gates passed\n7/10" in page.inner_text("#cards") and "null" not in page.inner_text("#app")
    greets = page.locator("#cases tr[data-id=greets] td")
    assert "What would you like to know?" in greets.nth(2).inner_text() and "Hi. Orders only." in greets.nth(3).inner_text()
    assert len(rows(page)) == 5
    page.check("#different")  # looks-up and judged answer the same on both
    assert sorted(i for i, _ in rows(page)) == ["asks-number", "greets", "unknown-order"]
    page.goto(demo["matrix_html"].as_uri() + "#greets")
    assert page.eval_on_selector_all(".connector", "cs => cs.map(c => c.dataset.connector)") == ["mock", "terse"]
    assert "Hi. Orders only." in page.inner_text(".connector[data-connector=terse] .msg.assistant")


def test_a_link_opens_that_case_and_prev_next_walk_the_failures(page, demo):
    page.goto(demo["b_html"].as_uri() + "#greets")
    assert "greets" in page.inner_text("#case h1") and "failing 1 of 2" in page.inner_text(".nav")
    assert "expected" in page.inner_text(".assertions") and "refund" in page.inner_text(".ea")
    page.click("#next")
    assert page.evaluate("location.hash") == "#asks-number" and "asks-number" in page.inner_text("#case h1")
    page.click("#back")  # the hash changes first; the overview is drawn by the hashchange handler after it
    page.wait_for_selector("#overview", state="visible")
    assert len(rows(page)) == 8
    page.goto(demo["b_html"].as_uri() + "#unknown-order")  # a tool that raised: its error where the call happened
    call = page.locator(".chat .call.err[data-tool=lookup_order]")
    assert "LookupError: no order 9999" in call.inner_text() and '"order_id": "9999"' in call.inner_text()


def test_model_and_tool_text_is_shown_never_run(page, demo):
    page.goto(demo["b_html"].as_uri() + "#echo")
    agent = page.inner_text(".msg.assistant")
    assert '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script> done' in agent
    assert page.evaluate("window.__pwned") is None and page.locator("#app img").count() == 0
    assert page.locator("script").count() == 2  # the data and the viewer: nothing a value smuggled in


def test_without_javascript_the_report_is_still_readable(browser, demo):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(demo["b_html"].as_uri())
        text = page.inner_text("body")
        assert "output does not contain 'refund'" in text and "FAILED" in text and page.is_visible("#static")
    finally:
        context.close()


def test_bidi_overrides_and_control_characters_are_shown_as_their_code_not_obeyed(browser, page, tmp_path):
    """A reply "FAKE PASSED \u202edeliaf" read as "... failed" in the viewer (U+202E reverses what follows);
    ESC, BEL and NUL showed as boxes. Both views show the codes, as the console and Markdown do."""
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    said = "FAKE PASSED \u202edeliaf \x1b[31mred\x07 ok"
    results = [CaseResult(key=CaseKey(id="odd", connector="mock"), status="failed", input="odd", output=said, error=f"missing 'x' in {said}")]
    report = make_report(results, 1795953600.0, 900.0, agent_id="bot", connector="mock",
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    write(report, str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri() + "#odd")
    text = page.inner_text("#case")
    assert "FAKE PASSED \\u202edeliaf \\x1b[31mred\\x07 ok" in text and "\u202e" not in text and "\x1b" not in text
    context = browser.new_context(java_script_enabled=False)
    try:
        static = context.new_page()
        static.goto((tmp_path / "r.html").as_uri())
        text = static.inner_text("body")
        assert "\\u202edeliaf" in text and "\u202e" not in text and "\x07" not in text
    finally:
        context.close()


def test_the_diff_page_shows_a_regression_first(page, demo):
    page.goto(demo["diff_html"].as_uri())
    kinds = page.eval_on_selector_all("#entries tr", "rs => rs.map(r => r.dataset.kind)")
    assert kinds == ["regressed", "regressed", "new"]  # the 4 unchanged cases have no entry
    page.click("#entries tr[data-kind=regressed] a")
    assert "REGRESSED" in page.inner_text("#entry h1") and page.locator("#entry .side").count() == 1
    assert page.inner_text("#entry .side > div:nth-child(1) h3").startswith("Before") and "PASSED" in page.inner_text("#entry .side > div:nth-child(1) h3")
    assert "FAILED" in page.inner_text("#entry .side > div:nth-child(2) h3")
    before, after = page.locator("#entry .side > div:nth-child(1) pre.output"), page.locator("#entry .side > div:nth-child(2) pre.output")
    assert before.inner_text() == "Hello! I can help with your orders. What would you like to know?"
    assert "Hello!" in before.locator("del").all_inner_texts() and "number?" in after.locator("ins").all_inner_texts()
    assert after.inner_text() == "Sure — what is your order number?"


def test_agent_test_view_lists_the_runs_and_compares_two(page, demo):
    httpd, _ = server.start(server.Pages(history=str(demo["history"])))
    try:
        assert httpd.server_address[0] == "127.0.0.1"
        page.goto(server.url_of(httpd))
        assert page.eval_on_selector_all("#runs tbody tr", "rs => rs.map(r => r.dataset.run)") == ["3", "2", "1"]
        assert page.locator("#trend circle").count() == 3
        page.check("input[name=a][value='1']")
        page.check("input[name=b][value='2']")
        page.click("#compare-button")
        page.wait_for_selector("#entries tr")
        assert page.eval_on_selector_all("#entries tr", "rs => rs.map(r => r.dataset.kind)")[:2] == ["regressed", "regressed"]
        page.goto(server.url_of(httpd) + "run/2#greets")
        assert "greets" in page.inner_text("#case h1")
        page.click("#case-history")
        page.wait_for_selector("#verdicts")
        assert page.inner_text("#verdicts") == "✓✗✗✓"  # runs 1, 2 and the matrix's two connectors
        assert "first failing run #2" in page.inner_text("#facts") and "last green run #3" in page.inner_text("#facts")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_runs_page_says_a_run_was_cut_short(page, tmp_path):
    """An interrupted run that passed the 9 cases it ran reads "9 of 200" and "interrupted", not a green 100%."""
    from agenttest.history.store import History
    from agenttest.model import CaseResult, RunReport

    path = str(tmp_path / "h.sqlite")
    ran = tuple(CaseResult(key=CaseKey(file="t.jsonl", id=f"c{i}"), status="passed") for i in range(9))
    with History(path) as history:
        history.record(RunReport(results=ran, started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:01Z", duration_ms=1000.0,
                                 agent_id="bot", connector="mock", interrupted=True, not_run=191), 130, ["t.jsonl"])
        history.record(RunReport(results=ran, started_at="2026-12-01T11:00:00Z", completed_at="2026-12-01T11:00:01Z", duration_ms=1000.0,
                                 agent_id="bot", connector="mock"), 0, ["t.jsonl"])
    httpd, _ = server.start(server.Pages(history=path))
    try:
        page.goto(server.url_of(httpd))
        cells = page.eval_on_selector_all("#runs tbody tr", "rs => rs.map(r => [...r.cells].slice(6).map(c => c.innerText))")
        assert cells == [["9 (0 not passing)", "100.0% (70–100%)", "0"], ["9 of 200 (0 not passing)", "100.0% (70–100%) (interrupted)", "130"]]
        assert page.locator("#runs tbody tr[data-run='1'] td.failed").count() == 1  # marked as not green
        assert page.locator("#trend circle title").nth(0).text_content() == "#1 2026-12-01T10:00:00Z: 100.0% (70–100%) (interrupted), 9 of 200 cases"
        assert page.locator("#trend polygon.band").count() == 1  # the interval over cases, as a band
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("terminated, said", [(False, "Ctrl-C"), (True, "SIGTERM")])
def test_an_interrupted_report_says_which_signal_stopped_it(page, tmp_path, terminated, said):
    from agenttest.reporting.codec import read
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    report = make_report([CaseResult(key=CaseKey(id="a"), status="passed", input="hi", output="hello")], 1795953600.0, 900.0, agent_id="bot", connector="mock",
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"},
                         interrupted=True, terminated=terminated, not_run=2)
    write(report, str(tmp_path / "r.json"))
    write(read(str(tmp_path / "r.json")), str(tmp_path / "r.html"))  # as the history serves it: read back from the JSON
    page.goto((tmp_path / "r.html").as_uri())
    assert page.locator(".banner").all_inner_texts() == [f"Interrupted ({said}): the report holds the results that finished.", "Not run: 2"]


def test_an_interrupted_run_with_runs_says_runs_not_run_and_its_unrun_gates_are_not_green(page, tmp_path):
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    results = [CaseResult(key=CaseKey(id="a", connector="mock"), status="passed", input="hi", output="hello", run=r, index=r - 1) for r in (1, 2)]
    policies = {CaseKey("", cid, "mock"): Policy(2, 1.0) for cid in ("a", "b", "c")}
    report = make_report(results, 1795953600.0, 900.0, policies=policies, agent_id="bot", connector="mock", interrupted=True, not_run=4,
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    write(report, str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    assert page.locator(".banner").all_inner_texts()[1] == "Not run: 4 runs"  # beside cards that count cases
    gates = page.locator("#cards .card", has_text="Gates passed")
    assert gates.inner_text().split() == ["Gates", "passed", "1/3"] and gates.locator("b").get_attribute("class") == ""  # 2 never ran


def test_a_gated_run_is_one_row_per_case_with_its_runs_nested(page, tmp_path):
    page.goto(gated(tmp_path).as_uri())
    assert rows(page) == [["broken", "failed"], ["flaky", "flaky"], ["steady", "passed"]]  # 9 results, 3 cases
    flaky = page.locator("#cases tr[data-id=flaky] td")
    assert flaky.nth(2).inner_text() == "✓✗✓" and flaky.nth(3).inner_text() == "66.7%\n21%–94%" and flaky.nth(4).inner_text() == "≥ 50%"
    cards = page.inner_text("#cards")
    assert "Cases\n3" in cards and "Failed\n1" in cards and "Flaky\n1" in cards and "Gates passed\n2/3" in cards and "Runs\n9" in cards
    page.click("[data-chip=flaky]")
    assert rows(page) == [["flaky", "flaky"]]
    page.click("#cases tr[data-id=flaky] a")
    assert "run 2" in page.inner_text(".connector") and "answer 2 of flaky" in page.inner_text(".msg.assistant")  # its failing run first
    page.click(".connector .strip button >> nth=0")
    assert "answer 1 of flaky" in page.inner_text(".msg.assistant") and page.locator(".reasons").count() == 0
    page.goto(page.url.split("#")[0] + "#broken")
    run = page.inner_text(".run")
    assert "~ $.budget: 100 → 40" in run and "+ $.spent = [60]" in run  # the world's changes
    assert "hook: seeded the budget" in run and "ValueError: boom" in run  # stdout and the traceback


def test_a_passed_check_shows_what_it_looked_at_and_a_negated_one_says_not(page, tmp_path):
    """A passed assertion's line is what it checked — ``not: name=delete_expense`` for a negated one — not
    ``expected delete_expense``, which would read as if the tool had been called (a new user's finding)."""
    from agenttest.model import AssertionResult, CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    checks = (AssertionResult(type="tool_called", passed=True, message="", expected="delete_expense", actual=[], checked="not: name=delete_expense"),
              AssertionResult(type="contains", passed=True, message="", expected="type", checked="value=type"))
    result = CaseResult(key=CaseKey(id="turn1", connector="mock"), status="passed", input="hi", output="What type?", assertions=checks)
    write(make_report([result], 1795953600.0, 10.0, agent_id="bot", connector="mock"), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri() + "#turn1")
    shown = page.inner_text(".assertions")
    assert "not: name=delete_expense" in shown and "value=type" in shown and "expected delete_expense" not in shown


def test_a_value_that_is_not_a_number_does_not_stop_the_viewer(page, tmp_path):
    """NaN and the infinities from a tool or a model are written as text: the page's data is JSON the browser
    parses (a bare NaN made ``JSON.parse`` throw and the viewer never started — a new user's finding)."""
    from agenttest.model import AssertionResult, CaseResult, ToolCall
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    call = ToolCall(name="measure", arguments={"x": float("inf")}, id="c1", result={"ratio": float("nan"), "low": float("-inf")})
    judged = AssertionResult(type="judge", passed=True, message="", expected=None, actual=None, score=float("nan"))
    result = CaseResult(key=CaseKey(id="odd", connector="mock"), status="passed", input="hi", output={"value": float("nan")}, tool_calls=(call,), assertions=(judged,))
    write(make_report([result], 1795953600.0, 10.0, agent_id="bot", connector="mock"), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri() + "#odd")
    assert rows(page) == [["odd", "passed"]]
    shown = page.inner_text(".run")
    assert "NaN" in shown and "Infinity" in shown


def test_a_failed_gates_row_shows_the_output_of_the_run_its_reason_is_from(page, tmp_path):
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    results = [CaseResult(key=CaseKey(id="g", connector="mock"), status="passed", input="hi", output="result good", run=1, index=0),
               CaseResult(key=CaseKey(id="g", connector="mock"), status="failed", input="hi", output="result bad", error="missing 'good'", run=2, index=1)]
    report = make_report(results, 1795953600.0, 900.0, policies={CaseKey("", "g", "mock"): Policy(2, 1.0)}, agent_id="bot", connector="mock",
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    write(report, str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    row = page.locator("#cases tr[data-id=g]")
    assert "missing 'good'" in row.inner_text() and row.locator("td.out").inner_text() == "result bad"


def test_a_gate_cut_short_before_its_runs_decided_it_is_incomplete_not_skipped(page, tmp_path):
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    results = [CaseResult(key=CaseKey(id="a", connector="mock"), status="passed", input="hi", output="hello", run=1, index=0),
               CaseResult(key=CaseKey(id="b", connector="mock"), status="passed", input="hi", output="hello", run=1, index=2),
               CaseResult(key=CaseKey(id="b", connector="mock"), status="passed", input="hi", output="hello", run=2, index=3)]
    policies = {CaseKey("", "a", "mock"): Policy(2, 1.0), CaseKey("", "b", "mock"): Policy(2, 1.0)}
    report = make_report(results, 1795953600.0, 900.0, policies=policies, agent_id="bot", connector="mock", interrupted=True, not_run=1,
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    assert [g.verdict for g in report.gates] == ["incomplete", "passed"]
    write(report, str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    assert sorted(rows(page)) == [["a", "incomplete"], ["b", "passed"]]
    cards = page.inner_text("#cards")
    assert "Incomplete\n1" in cards and "Skipped\n0" in cards
    page.click("[data-chip=incomplete]")
    assert rows(page) == [["a", "incomplete"]]
    badge = page.locator("#cases tr[data-id=a] .badge")
    assert badge.evaluate("b => getComputedStyle(b).color") == "rgb(255, 255, 255)"  # readable on its amber
    assert page.locator("#cases tr[data-id=a] td").nth(5).inner_text() == "—"  # no stability class on runs cut short


def test_a_gate_of_zero_that_passed_with_no_passing_run_is_said_in_a_banner(page, tmp_path):
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    results = [CaseResult(key=CaseKey(id="z", connector="mock"), status="failed", input="hi", output="no", error="missing 'x'", run=r, index=r - 1) for r in (1, 2)]
    report = make_report(results, 1795953600.0, 900.0, policies={CaseKey("", "z", "mock"): Policy(2, 0.0)}, agent_id="bot", connector="mock",
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    write(report, str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    assert "1 case passed its gate with no passing run (min_pass_rate 0)." in page.locator(".banner").all_inner_texts()


def test_a_partial_merge_is_said_in_a_banner(page, tmp_path):
    from dataclasses import replace

    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    report = make_report([CaseResult(key=CaseKey(id="a", connector="mock"), status="passed", input="hi", output="ok")], 1795953600.0, 900.0,
                         agent_id="bot", connector="mock", environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    write(replace(report, options={"merged": ["s1.json", "s2.json"], "missing_shards": ["3/3"]}), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    assert page.locator(".banner").all_inner_texts() == ["Partial merge: shard 3/3 missing — their cases are in no figure here."]


def test_times_below_10_ms_are_shown_to_the_tenth_of_a_millisecond(page, tmp_path):
    """A fast run's cases read 0.3ms and 4.2ms (the 0.1 ms a report keeps), not 0ms."""
    from agenttest.model import CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    times = {"quick": (0.3, "0.3ms"), "short": (4.2, "4.2ms"), "slow": (350.0, "350ms"), "none": (0.0, "0ms"), "long": (2500.0, "2.5s")}
    results = [CaseResult(key=CaseKey(id=cid, connector="mock"), status="passed", input="q", output="a", duration_ms=t) for cid, (t, _) in times.items()]
    write(make_report(results, 1795953600.0, 900.0, agent_id="bot", connector="mock"), str(tmp_path / "fast.html"))
    page.goto((tmp_path / "fast.html").as_uri())
    shown = page.eval_on_selector_all("#cases tbody tr", "rs => rs.map(r => [r.dataset.id, r.innerText])")
    assert len(shown) == len(times)
    for cid, text in shown:
        assert times[cid][1] in text.split("\t"), (cid, text)


def test_the_calibration_panel_links_each_disagreement_to_its_case(page, tmp_path):
    """A run with labelled judge verdicts (FORMATS §19): the Judges panel's figures, its confusion matrix, and a
    disagreement that opens its case."""
    from agenttest.model import AssertionResult, CaseResult, Judged
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    def judged(cid: str, label: bool, verdict: bool) -> CaseResult:
        check = AssertionResult(type="agent", passed=verdict, message="" if verdict else "validator: curt", expected="is polite", actual="curt" if not verdict else "polite",
                                judged=Judged(validator="judge", connector="fake", verdict=verdict, label=label))
        return CaseResult(key=CaseKey(id=cid), status="passed" if verdict else "failed", output=f"answer {cid}", assertions=(check,), index=int(cid[1:]))

    outcomes = [(True, True)] * 6 + [(True, False)] + [(False, True)] * 2 + [(False, False)] * 3
    report = make_report([judged(f"c{i}", *o) for i, o in enumerate(outcomes)], 1795953600.0, 10.0, agent_id="bot", connector="fake")
    path = tmp_path / "judged.html"
    write(report, str(path))
    page.goto(path.as_uri())
    row = page.locator("#judges tbody tr[data-judge='judge@fake']")
    cells = row.locator("td").all_inner_texts()
    assert cells[:2] == ["judge on fake", "12"] and cells[2].startswith("75%") and cells[3] == "0.47"  # 9 of 12; κ by hand below
    # κ: pₒ = 9/12, pₑ = (7·8 + 5·4)/144 = 76/144 → (0.75 − 0.5278)/(1 − 0.5278) = 0.4706
    assert "labelled pass: judged pass 6, fail 1 · labelled fail: judged pass 2, fail 3" in page.inner_text("#judges")
    links = page.locator("#judges .disagreements a")
    assert links.all_inner_texts() == ["c6", "c7", "c8"]
    links.first.click()
    expect(page.locator("#case h1")).to_contain_text("c6")


def test_the_diff_page_says_whether_the_difference_is_real(page, tmp_path):
    from agenttest.history.comparison import compare
    from agenttest.history import diffs
    from agenttest.model import CaseResult, RunReport

    def run(statuses):
        return RunReport(results=tuple(CaseResult(key=CaseKey(id=f"c{i}"), status=s, index=i) for i, s in enumerate(statuses)), started_at="", completed_at="",
                         duration_ms=1.0)

    base, new = run(["passed"] * 30), run(["failed"] * 9 + ["passed"] * 21)
    path = tmp_path / "diff.html"
    path.write_text(diffs.to_html(compare(base, new, "base.json", "new.json"), base, new))
    page.goto(path.as_uri())
    box = page.locator("#paired")
    assert box.locator("b").inner_text().startswith("worse: -30.0 points (95% CI ") and "McNemar's exact test" in box.inner_text()
    assert "worse" in box.get_attribute("class")


def test_a_failed_matrix_cell_shows_the_output_of_the_run_that_failed(page, app, server, tmp_path):
    """Issue 50: the cell said FAILED beside the output of the run that passed (its first)."""
    import os
    import subprocess
    import sys

    from helpers import REPO, Answer

    app.connector("fake-b", {"type": "openai", "options": {"model": "model-b", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY"}})
    app.agent("bot")
    said = iter(["good on b", "bad on b"])
    server.responder = lambda req: Answer(next(said) if req["model"] == "model-b" else "good on a")
    path = app.cases("assistants/bot/tests/t.jsonl", [{"id": "g", "input": "hi", "assert": {"type": "contains", "value": "good"}}])
    out = tmp_path / "r.html"
    args = ["-i", str(path), "-c", "fake,fake-b", "--runs", "2", "--parallel", "1", "--workers", "0", "-o", str(out)]
    # in a process of its own: Playwright's event loop runs in this one
    ran = subprocess.run([sys.executable, "-m", "agenttest", *args], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                         cwd=app.root, timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    page.goto(out.as_uri())
    cells = page.eval_on_selector_all("#cases tr[data-id=g] td", "ts => ts.slice(2).map(t => t.innerText)")
    assert "PASSED" in cells[0].upper() and "good on a" in cells[0]
    assert "FAILED" in cells[1].upper() and "bad on b" in cells[1] and "good on b" not in cells[1]


def test_a_rate_short_of_all_is_never_shown_as_100_percent_in_the_viewer(page, tmp_path):
    """1,999 of 2,000 passed: the card says 99.95% and its interval 99.7%–99.99% (Wilson, computed here by hand),
    never "100%" and never "CI 100%–100%", an interval that excluded its own estimate (as the console did)."""
    import math
    from statistics import NormalDist

    from agenttest.model import CaseKey, CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    results = [CaseResult(key=CaseKey(id=f"c{i}", connector="mock"), status="failed" if i == 7 else "passed", input="hi", output="ok", run=1)
               for i in range(2000)]
    report = make_report(results, 1795953600.0, 900.0, agent_id="bot", connector="mock")
    write(report, str(tmp_path / "r.html"))
    n, p, z = 2000, 1999 / 2000, NormalDist().inv_cdf(0.975)
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert 0.997 <= centre - half < 0.998 and 0.9999 <= centre + half < 0.99995  # so 99.7% and 99.99%, shown to the digit that differs from 100
    page.goto((tmp_path / "r.html").as_uri())
    card = page.locator(".card", has_text="Runs passed").inner_text()
    assert "99.95%" in card and "95% CI 99.7%–99.99%" in card and "100%–100%" not in card, card
