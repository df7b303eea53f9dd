"""The viewer's model-call cards in a real browser (headless Chromium, tests/browser.py), on a failing dynamic case
run through the openai connector against the loopback server (tests/calls_demo.py): what the agent, the judge and
the simulator were sent and answered, on the case's own page; the copy buttons make a request the server answers
as it did; two calls compared; no secret anywhere in the page."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from typing import Any

import pytest

from browser import chromium, expect
from calls_demo import JUDGE, KEY, SAID, SIMULATOR, SYSTEM, build
from openai_server import OpenAIServer


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    with OpenAIServer() as srv:
        made = build(tmp_path_factory.mktemp("calls") / "app", srv)
        yield made, srv


@pytest.fixture(scope="module")
def browser(demo):  # after the demo's runs: Playwright's sync API keeps an event loop running, and the CLI starts its own
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, errors  # the viewer never throws


def opened(page, selector):
    """The first card at ``selector``, opened (its content is drawn when it opens)."""
    card = page.locator(selector).first
    card.locator("summary").click()
    card.locator(".minside").wait_for()
    return card


def test_the_cards_are_closed_and_filed_under_the_turn_and_check_they_served(page, demo):
    made, _ = demo
    page.goto(made["html"].as_uri() + "#order-status")
    cards = page.locator("details.mcall")
    assert cards.count() == 8 and page.locator("details.mcall[open]").count() == 0  # collapsed by default
    for turn, roles in ((1, ["simulator", "agent"]), (2, ["simulator", "agent", "agent"]), (3, ["simulator", "agent"])):
        assert page.eval_on_selector_all(f".turn[data-turn='{turn}'] details.mcall", "cs => cs.map(c => c.dataset.role)") == roles
    for turn in (1, 2, 3):  # the simulator's call right under the user message it wrote, before the agent's reply
        follows = page.eval_on_selector(f".turn[data-turn='{turn}'] details.mcall[data-role=simulator]",
                                        "c => c.parentElement.previousElementSibling.className")
        assert follows == "msg user", follows
    judge = page.locator("tr[data-assertion='assertion 1'] details.mcall")
    assert judge.count() == 1 and judge.get_attribute("data-role") == "validator" and "JUDGE" in judge.locator(".badge").inner_text()
    assert "never says when the order arrives" in page.inner_text("tr[data-assertion='assertion 1']")
    assert "empty reply" in page.locator(".turn[data-turn='3'] details.mcall[data-role=agent] summary").inner_text()
    assert page.locator(".turn[data-turn='3'] .msg.assistant[data-empty]").count() == 1  # the empty final reply said as such


def test_an_opened_card_shows_the_request_beside_the_response(page, demo):
    made, server = demo
    page.goto(made["html"].as_uri() + "#order-status")
    card = opened(page, ".turn[data-turn='2'] details.mcall[data-role=agent] >> nth=1")  # after the tool ran
    request, response = card.locator(".mreq").inner_text(), card.locator(".mres").inner_text()
    assert SYSTEM in card.locator("pre.system").inner_text() and f"POST {server.url}/chat/completions" in request
    assert "temperature" in request and "0.2" in request and "shop-large" in request
    assert "lookup_order" in card.locator(".mschemas summary").inner_text()
    assert "as in the call before" in card.locator(".mprior summary").inner_text()  # the repeated history, referenced
    assert '"status": "shipped"' in request.replace("'", '"') or "shipped" in request
    assert "Order 1042 has shipped and is on its way." in response and "stop" in response
    assert "96 prompt + 12 completion = 108" in response and "measured by the endpoint" in response
    assert "queued" in card.locator(".mtiming").inner_text() and "total" in card.locator(".mtiming").inner_text()
    simulator = opened(page, ".turn[data-turn='2'] details.mcall[data-role=simulator]")
    assert SIMULATOR in simulator.locator("pre.system").inner_text() and SAID[2] in simulator.locator(".mres").inner_text()


def copied(page, card, which):
    card.locator(f"[data-copy={which}]").click()
    page.wait_for_function("c => c.querySelector('.copied').textContent.trim() === 'copied'", arg=card.element_handle())
    return page.evaluate("navigator.clipboard.readText()")


def test_copy_as_curl_and_as_json_make_a_request_the_server_answers_as_it_did(page, demo):
    made, server = demo
    report = json.loads(made["json"].read_text())["results"][0]["calls"]
    page.goto(made["html"].as_uri() + "#order-status")
    card = opened(page, ".turn[data-turn='2'] details.mcall[data-role=agent]")  # the call that asked for the tool
    recorded = report["exchanges"][int(card.get_attribute("data-call"))]
    curl = copied(page, card, "curl")
    assert KEY not in curl
    assert "$OPENAI_API_KEY" in curl and curl.startswith(f"curl '{server.url}/chat/completions' ")
    before = len(server.bodies())
    done = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": KEY}, check=True)
    answer = json.loads(done.stdout)["choices"][0]["message"]
    assert answer["tool_calls"][0]["function"]["name"] == "lookup_order" and answer["tool_calls"][0]["id"] == recorded["response"]["tool_calls"][0]["id"]
    assert json.loads(answer["tool_calls"][0]["function"]["arguments"]) == recorded["response"]["tool_calls"][0]["arguments"]
    sent = server.bodies()[before]
    assert sent == next(b for b in server.bodies()[:before] if b["messages"] == sent["messages"])  # the very body the run sent
    as_json = json.loads(copied(page, card, "json"))
    assert as_json["headers"]["Authorization"] == "Bearer $OPENAI_API_KEY" and KEY not in json.dumps(as_json)
    request = urllib.request.Request(as_json["url"], data=json.dumps(as_json["body"]).encode(), method="POST",
                                     headers={**as_json["headers"], "Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(request) as r:
        again = json.loads(r.read())["choices"][0]["message"]
    assert again == answer and server.bodies()[-1] == sent


def test_two_calls_on_two_connectors_are_compared(page, demo):
    made, _ = demo
    page.goto(made["matrix"].as_uri() + "#order-status")
    for side in ("shop", "mini"):
        card = opened(page, f".connector[data-connector={side}] .turn[data-turn='3'] details.mcall[data-role=agent]")
        card.locator("[data-pick]").click()
    diff = page.locator("#call-diff")
    assert "lines differ" in diff.inner_text()
    removed, added = diff.locator("pre.mdiff del").all_inner_texts(), diff.locator("pre.mdiff ins").all_inner_texts()
    assert any('"model": "shop-large"' in x for x in removed) and any('"model": "shop-mini"' in x for x in added)
    assert any("I'm not sure." in x for x in added)
    diff.locator("button.link").click()
    assert diff.is_hidden()


def test_the_same_call_in_two_runs_is_compared_on_the_diff_page(page, demo):
    made, _ = demo
    page.goto(made["diff"].as_uri() + "#order-status")
    before, after = page.locator("#entry .side > div:nth-child(1)"), page.locator("#entry .side > div:nth-child(2)")
    for side in (before, after):
        card = side.locator(".turn[data-turn='1'] details.mcall[data-role=agent]").first
        card.locator("summary").click()
        card.locator("[data-pick]").click()
    diff = page.locator("#call-diff")
    assert "before · order-status" in diff.inner_text() and "after · order-status" in diff.inner_text()
    assert any('"model": "shop-large"' in x for x in diff.locator("del").all_inner_texts())
    assert any("What is your order number?" in x for x in diff.locator("ins").all_inner_texts())


def test_no_secret_anywhere_in_the_page(page, demo):
    made, _ = demo
    for name in ("html", "json", "matrix", "diff"):
        text = made[name].read_text()
        assert KEY not in text and KEY[:14] not in text, name
    page.goto(made["html"].as_uri() + "#order-status")
    for i in range(page.locator("details.mcall").count()):
        page.locator("details.mcall").nth(i).locator("summary").click()
    expect(page.locator("details.mcall .minside")).to_have_count(8)  # every card drawn
    assert "Bearer ***" in page.inner_text(".turn[data-turn='2']")  # the tool's result, as the next request sent it: hidden
    assert KEY not in page.content() and KEY[:14] not in page.content()


def test_the_pass_k_table_shows_with_javascript_on(page, tmp_path):
    from agenttest.model import CaseKey, CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    plan = {"a": (True, True, True), "b": (True, False, True), "c": (False, False, True)}
    keys = {cid: CaseKey(id=cid, connector="mock") for cid in plan}
    results = [CaseResult(key=keys[cid], status="passed" if ok else "failed", input="q", output="a", run=k + 1, index=i)
               for i, (cid, oks) in enumerate(plan.items()) for k, ok in enumerate(oks)]
    report = make_report(results, 1795953600.0, 900.0, policies={keys[cid]: Policy(planned=3, min_pass_rate=0.5) for cid in plan},
                         agent_id="bot", connector="mock", options={"runs": 3})
    write(report, str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    table = page.locator("#pass-k table")
    assert table.locator("thead th").all_inner_texts() == ["k", "1", "2", "3"]
    hat = table.locator("tr[data-row=pass_hat] td").all_inner_texts()
    assert hat[1].startswith("0.667") and hat[3].startswith("0.333")  # (1 + 2/3 + 1/3) / 3 and (1 + 0 + 0) / 3
    assert "3 cases that ran 3 times" in page.inner_text("#pass-k")
    assert "CI" in hat[0] and "–" in hat[1]  # each with its interval


def test_a_scripted_turns_checks_are_shown_in_its_turn(page, tmp_path):
    from agenttest.model import AssertionResult, CaseKey, CaseResult, Turn, Usage
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    turns = (Turn(turn=1, input="hi", output="Hello!", assertions=(AssertionResult(type="contains", passed=True, expected="Hello"),)),
             Turn(turn=2, input="book it", output="Done",
                  assertions=(AssertionResult(type="contains", passed=False, message="output does not contain 'booked'", expected="booked", actual="Done"),)))
    result = CaseResult(key=CaseKey(id="trip", connector="mock"), status="failed", input="hi", output="Done", turns=turns, scripted=True,
                        error="turn 2: output does not contain 'booked'", usage=Usage(10, 2, 12, source="estimated"))
    write(make_report([result], 1795953600.0, 10.0, agent_id="bot", connector="mock"), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri() + "#trip")
    first, second = page.locator(".turn[data-turn='1'] .turn-checks"), page.locator(".turn[data-turn='2'] .turn-checks")
    assert "✓" in first.inner_text() and "✗" in second.inner_text() and "output does not contain 'booked'" in second.inner_text()
    assert "(estimated)" in page.inner_text(".run .meta")  # estimated usage said as such


def test_the_generators_calls_are_on_the_overview(page, tmp_path):
    from dataclasses import replace

    from agenttest.model import Answer, CallLog, CaseKey, CaseResult, Exchange
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    log = CallLog(messages=({"role": "system", "content": "You write test cases."}, {"role": "user", "content": '{"count": 1}'}),
                  exchanges=(Exchange(role="generator", connector="mock", messages=(0, 1), parameters={"model": "mock"}, duration_ms=3.0,
                                      response=Answer(content='[{"id": "g1", "input": "hi"}]')),))
    failed = CaseResult(key=CaseKey(id="g1", connector="mock"), status="failed", input="hi", output="no", error="missing 'x'")
    report = make_report([failed], 1795953600.0, 10.0, agent_id="bot", connector="mock")
    write(replace(report, generation_calls=log), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri())
    section = page.locator("section", has_text="How the cases were generated")
    card = section.locator("details.mcall[data-role=generator]")
    assert card.count() == 1 and "GENERATOR" in card.locator(".badge").inner_text()
    card.locator("summary").click()
    assert "You write test cases." in card.locator("pre.system").inner_text()
    assert card.locator("[data-copy=curl]").is_disabled()  # the mock has no endpoint to send it to


def test_flaky_means_one_thing_in_the_viewer_the_json_and_junit(page, tmp_path):
    import xml.etree.ElementTree as ET

    from agenttest.model import CaseKey, CaseResult
    from agenttest.reporting import write
    from agenttest.verdicts.gates import Policy
    from agenttest.verdicts.outcome import make_report

    # wobbly passed its gate with a failed run: flaky; shaky failed its gate though a run passed: failed, never flaky
    plan = {"wobbly": (True, False, True), "shaky": (True, False, False), "steady": (True, True, True)}
    keys = {cid: CaseKey(id=cid, connector="mock") for cid in plan}
    results = [CaseResult(key=keys[cid], status="passed" if ok else "failed", input="q", output="a", run=k + 1, index=i)
               for i, (cid, oks) in enumerate(plan.items()) for k, ok in enumerate(oks)]
    report = make_report(results, 1795953600.0, 900.0, policies={keys[cid]: Policy(planned=3, min_pass_rate=0.6) for cid in plan},
                         agent_id="bot", connector="mock", options={"runs": 3})
    for ext in (".html", ".json", ".xml"):
        write(report, str(tmp_path / ("r" + ext)))
    gates = {g["id"]: g["flaky"] for g in json.loads((tmp_path / "r.json").read_text())["summary"]["gates"]}
    junit = {tc.get("name").split(" ")[0]: p.get("value") == "true" for tc in ET.parse(tmp_path / "r.xml").iter("testcase")
             for p in tc.iter("property") if p.get("name") == "flaky"}
    page.goto((tmp_path / "r.html").as_uri())
    shown = dict(page.eval_on_selector_all("#cases tbody tr", "rs => rs.map(r => [r.dataset.id, r.dataset.verdict])"))
    assert gates == junit == {cid: shown[cid] == "flaky" for cid in plan} == {"wobbly": True, "shaky": False, "steady": False}
    assert shown == {"wobbly": "flaky", "shaky": "failed", "steady": "passed"}


def test_a_truncated_reply_and_estimated_usage_are_shown_as_such(page, tmp_path):
    from agenttest.model import CaseKey, CaseResult, Usage
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    cut = CaseResult(key=CaseKey(id="long", connector="mock"), status="failed", input="tell me everything", output="Once upon a",
                     truncated=True, error="output does not contain 'end'", usage=Usage(40, 4, 44, source="estimated"))
    write(make_report([cut], 1795953600.0, 10.0, agent_id="bot", connector="mock"), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri() + "#long")
    assert "reply cut at its token limit" in page.inner_text(".run [data-truncated]")
    assert "agent (cut at its token limit)" in page.inner_text(".msg.assistant")
    assert "(estimated)" in page.inner_text(".run .meta")


def test_each_judges_call_is_under_what_it_served_and_a_retry_is_said(page, tmp_path):
    from agenttest.model import Answer, AssertionResult, CallLog, CaseKey, CaseResult, CheckpointResult, Exchange, Turn, Usage
    from agenttest.model.exchanges import Retry
    from agenttest.reporting import write
    from agenttest.verdicts.outcome import make_report

    def call(role: str, turn: int, served: str = "", said: str = "ok", **more: Any) -> Exchange:
        return Exchange(role=role, connector="mock", turn=turn, served=served, messages=(0,), parameters={"model": "m"},
                        response=Answer(content=said, usage=Usage(5, 1, 6)), duration_ms=2.0, **more)

    log = CallLog(messages=({"role": "user", "content": "hi"},), exchanges=(
        call("agent", 1, said="Hello!"), call("validator", 1, "checkpoint greets", '{"passed": true}'),
        call("agent", 2, said="Done", retries=(Retry(kind="rate_limit", status=429, waited_ms=1500.0),)),
        call("validator", 2, "turn 2 assertion 1", '{"passed": false}'), call("validator", 0, "a hook's own judge")))
    turns = (Turn(turn=1, input="hi", output="Hello!"),
             Turn(turn=2, input="book it", output="Done", assertions=(AssertionResult(type="agent", passed=False, message="not booked"),)))
    result = CaseResult(key=CaseKey(id="trip", connector="mock"), status="failed", input="hi", output="Done", turns=turns, scripted=True,
                        checkpoints=(CheckpointResult(id="greets", reached=True, required=True, reached_at_turn=1),), dynamic=True,
                        error="turn 2: not booked", calls=log)
    write(make_report([result], 1795953600.0, 10.0, agent_id="bot", connector="mock"), str(tmp_path / "r.html"))
    page.goto((tmp_path / "r.html").as_uri() + "#trip")
    placed = "cs => cs.map(c => c.dataset.role + ':' + (c.dataset.for || ''))"
    assert page.eval_on_selector_all(".turn[data-turn='1'] details.mcall", placed) == ["agent:", "validator:checkpoint greets"]
    assert page.eval_on_selector_all(".turn[data-turn='2'] .turn-checks details.mcall", placed) == ["validator:turn 2 assertion 1"]
    assert "1 retry" in page.inner_text(".turn[data-turn='2'] details.mcall[data-role=agent] summary")
    opened(page, ".turn[data-turn='2'] details.mcall[data-role=agent]")
    assert "rate_limit 429" in page.inner_text(".retries") and "waited 1.5" in page.inner_text(".retries")
    other = page.locator("section", has_text="Other model calls")
    assert other.locator("details.mcall").count() == 1 and other.locator("details.mcall").get_attribute("data-for") == "a hook's own judge"


def test_agent_test_view_shows_a_recorded_runs_calls(page, demo, tmp_path):
    from agenttest.history import server
    from agenttest.history.store import History
    from agenttest.reporting.codec import read

    made, _ = demo
    with History(str(tmp_path / "h.sqlite")) as history:
        history.record(read(str(made["json"])), 1, ["tests"])
    httpd, _ = server.start(server.Pages(history=str(tmp_path / "h.sqlite")))
    try:
        page.goto(server.url_of(httpd) + "run/1#order-status")
        assert page.locator("details.mcall").count() == 8
        judge = opened(page, "tr[data-assertion='assertion 1'] details.mcall")
        assert JUDGE in judge.locator("pre.system").inner_text() and "the assistant never says when the order arrives" in judge.locator(".mres").inner_text()
        assert KEY not in page.content()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_copied_curl_keeps_a_query_string_and_a_quote_for_the_shell(page, demo):
    made, server = demo
    page.goto(made["html"].as_uri())
    url = f"{server.url}/chat/completions?api-version=2024-10-21&deployment=shop"
    body = {"model": "shop-large", "messages": [{"role": "user", "content": "it's 'quoted' & $HOME `here`"}]}
    curl = page.evaluate("([url, body]) => agentTestCalls({}).curl(url, body)", [url, body])
    subprocess.run(["bash", "-c", curl], capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": KEY}, check=True)
    sent = server.requests[-1]
    assert sent["path"].endswith("/chat/completions?api-version=2024-10-21&deployment=shop")  # all of it reached the server
    assert sent["body"] == body and sent["headers"]["Authorization"] == "Bearer " + KEY
