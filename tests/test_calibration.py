"""Judging the judge (FORMATS §19), end to end: judge-only cases (``output`` given, no agent call) with people's
labels, a validator recorded once (cassettes) and replayed; the agreement, Cohen's κ, TPR and TNR worked by hand;
the judge gate (flags and a case's ``judge:``); ``judge_runs`` and the flip rate of a noisy judge; pairwise
judging in both orders; every report and the history; bad input."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from helpers import Answer, cli, last_user, report

scipy_stats = pytest.importorskip("scipy.stats")

CRITERION = "answers the question politely"


@pytest.fixture
def judged(app, server):
    """An agent under test that must never be called, and a validator that passes an output saying GOOD."""
    app.agent("bot")
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n"})

    def responder(req):
        assert req["messages"][0].get("content") == "You are a validator.", "the agent under test was called"
        sent = json.loads(last_user(req))
        if sent.get("pairwise"):
            return Answer(json.dumps(pairwise_choice(sent)))
        good = "GOOD" in str(sent["output"])
        return Answer(json.dumps({"passed": good, "reason": "it is polite" if good else "it is curt"}))

    server.responder = responder
    return app


def pairwise_choice(sent):
    """A judge that prefers the answer saying GOOD, and knows nothing else: then it takes the first one shown."""
    a, b = "GOOD" in str(sent["a"]), "GOOD" in str(sent["b"])
    return {"choice": "a" if a and not b else "b" if b and not a else "a", "reason": "first one" if a == b else "the good one"}


def labelled(label, output, i):
    return {"id": f"c{i:02d}", "output": output, "input": "How do I file an expense?",
            "assert": [{"type": "agent", "use": "agents:judge", "value": CRITERION, "label": label}]}


# 20 labelled outputs: 8 the judge passes and people passed (tp), 2 people passed and the judge failed (fn),
# 3 the judge passed and people failed (fp), 7 both failed (tn)
SET = ([(True, f"GOOD answer {i}") for i in range(8)] + [(True, f"terse but right {i}") for i in range(2)]
       + [(False, f"GOOD-sounding but wrong {i}") for i in range(3)] + [(False, f"rude {i}") for i in range(7)])
HAND = {"tp": 8, "fn": 2, "fp": 3, "tn": 7}
AGREEMENT = 15 / 20
CHANCE = (10 * 11 + 10 * 9) / 20 ** 2  # labelled pass · judged pass + labelled fail · judged fail, over n²
KAPPA = (AGREEMENT - CHANCE) / (1 - CHANCE)  # 0.5


def calibration_set(app):
    return app.cases("calibration.jsonl", [labelled(label, output, i) for i, (label, output) in enumerate(SET)])


def test_a_recorded_judge_is_measured_against_the_labels_and_replayed_alike(judged, server, tmp_path):
    path = calibration_set(judged)
    cassettes = tmp_path / "cassettes"
    first = tmp_path / "first.json"
    recorded = cli("-i", str(path), "-n", "bot", "--record", str(cassettes), "-o", str(first))
    assert recorded.exit_code == 1, recorded.output  # the judge failed 9 outputs: those cases fail
    assert len(server.bodies()) == 20  # the validator, once per case: the agent under test was never called
    server.responder = lambda req: pytest.fail("a replayed run reached the server")
    out, md, xml = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.xml"
    replayed = cli("-i", str(path), "-n", "bot", "--replay", str(cassettes), "-o", str(out), "-o", str(md), "-o", str(xml))
    (judge,) = report(out)["summary"]["judges"]
    assert report(first)["summary"]["judges"] == [judge]  # the same figures from the recording
    assert (judge["validator"], judge["connector"], judge["labelled"], judge["judgements"]) == ("judge", "fake", 20, 20)
    assert judge["confusion"] == HAND and judge["unusable"] == 0
    wilson = scipy_stats.binomtest(15, 20).proportion_ci(0.95, method="wilson")
    assert judge["agreement"]["rate"] == AGREEMENT and judge["agreement"]["interval"] == pytest.approx([wilson.low, wilson.high], abs=1e-6)
    assert judge["kappa"] == pytest.approx(KAPPA) and judge["kappa"] == pytest.approx(0.5)
    assert (judge["tpr"], judge["tnr"], judge["precision"]) == pytest.approx((0.8, 0.7, 8 / 11), abs=1e-6)
    assert [(d["id"], d["label"], d["verdict"], d["reason"]) for d in judge["disagreements"]] == [
        ("c08", True, False, "it is curt"), ("c09", True, False, "it is curt"),
        ("c10", False, True, "it is polite"), ("c11", False, True, "it is polite"), ("c12", False, True, "it is polite")]
    assert judge["disagreements"][0]["criterion"] == CRITERION and "gate" not in judge
    result = report(out)["results"][0]
    assert result["output"] == "GOOD answer 0" and result["assertions"][0]["judged"] == {
        "validator": "judge", "connector": "fake", "verdict": True, "label": True}
    lines = replayed.output.splitlines()
    assert (f"    judge on fake: 20 labelled, agreement 75.0% (95% CI {100 * wilson.low:.0f}%–{100 * wilson.high:.0f}%), κ 0.50, "
            "TPR 0.80, TNR 0.70, precision 0.73") in lines
    assert "      labelled pass: judged pass 8, fail 2 · labelled fail: judged pass 3, fail 7" in lines
    assert f"      ✗ c08: labelled pass, judged fail — criterion: {CRITERION} — judge: it is curt" in lines
    assert "## Judges" in md.read_text() and "- judge on fake: 20 labelled, agreement 75.0%" in md.read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().find("testsuite").find("properties")}
    assert props["judge.judge@fake.agreement"] == "0.7500" and props["judge.judge@fake.kappa"] == "0.5000"


def test_the_judge_gate_fails_below_its_thresholds_and_says_by_how_much(judged, server, tmp_path):
    path = calibration_set(judged)
    failing = cli("-i", str(path), "-n", "bot", "--judge-min-kappa", "0.6", "--judge-min-agreement", "0.7", "-o", str(tmp_path / "a.json"))
    assert failing.exit_code == 1
    assert "      gate fails: κ 0.50 < 0.60 (20 labelled verdicts)" in failing.output.splitlines()
    gate = report(tmp_path / "a.json")["summary"]["judges"][0]["gate"]
    assert gate == {"min_agreement": 0.7, "min_kappa": 0.6, "passed": False, "below": ["kappa"]}
    # the outputs the judge got right, alone: a labelled judge-only case tests the judge, so every one passes (the
    # judge's 'fail' of a bad output is right), and the judge gate passes too — a correct judge is a green run
    right = [labelled(label, output, i) for i, (label, output) in enumerate(SET) if (label and "GOOD" in output) or (not label and "rude" in output)]
    path = judged.cases("right.jsonl", right)
    passing = cli("-i", str(path), "-n", "bot", "--judge-min-agreement", "0.9", "--judge-min-kappa", "0.8")
    assert passing.exit_code == 0 and "      gate passes: agreement ≥ 90%, κ ≥ 0.80" in passing.output.splitlines(), passing.output
    assert passing.output.rstrip().splitlines()[-2] == "  ✨ ALL TESTS PASSED ✨", passing.output
    # one judge-only output it gets wrong fails as a case (the judge disagrees with the label), 14 of 15 agree
    wrong = judged.cases("wrong.jsonl", [*right[:-1], labelled(True, "rude but labelled pass", 99)])
    failing = cli("-i", str(wrong), "-n", "bot", "--judge-min-agreement", "0.9", "-o", str(tmp_path / "w.json"))
    assert failing.exit_code == 1 and "      gate passes: agreement ≥ 90%" in failing.output.splitlines(), failing.output
    statuses = {r["id"]: (r["status"], r["assertions"][0]["message"]) for r in report(tmp_path / "w.json")["results"]}
    assert statuses["c99"] == ("failed", "judge disagrees with the label: the judge failed it, labelled pass (validator: it is curt)")
    assert statuses["c18"] == ("passed", "judge agrees with the label: the judge failed it, labelled fail (validator: it is curt)")
    # labels on cases the agent answers: the agent's verdict is the judge's, and only the judge gate can say the judge
    # is wrong — 15 of 16 agree
    answers = server.responder

    def responder(req):
        return answers(req) if req["messages"][0].get("content") == "You are a validator." else Answer("GOOD-sounding but wrong")

    server.responder = responder
    asked = {**labelled(False, "", 99), "input": "How do I file an expense?"}
    del asked["output"]
    path = judged.cases("asked.jsonl", [*right, asked])
    gated = cli("-i", str(path), "-n", "bot", "--judge-min-agreement", "0.99")
    assert gated.exit_code == 1 and gated.output.rstrip().splitlines()[-2] == (
        "  ❌ JUDGE GATE FAILED — judge on fake: agreement 93.8% < 99% (16 labelled verdicts)"), gated.output


def test_a_cases_judge_gate_wins_over_the_flags(judged, tmp_path):
    cases = [labelled(label, output, i) for i, (label, output) in enumerate(SET)]
    cases[0]["judge"] = {"min_agreement": 0.8}  # one case of the set is enough: the strictest written applies
    path = judged.cases("calibration.jsonl", cases)
    result = cli("-i", str(path), "-n", "bot", "--judge-min-agreement", "0.5", "-o", str(tmp_path / "r.json"))
    gate = report(tmp_path / "r.json")["summary"]["judges"][0]["gate"]
    assert gate["min_agreement"] == 0.8 and gate["below"] == ["agreement"] and result.exit_code == 1


def test_judge_runs_takes_the_majority_and_a_noisy_judge_shows_its_flip_rate(judged, server, tmp_path):
    votes = iter([True, False, True] + [False, False, False])  # the first output split 2–1, the second unanimous

    def noisy(req):
        return Answer(json.dumps({"passed": next(votes), "reason": "coin"}))

    server.responder = noisy
    case = {"type": "agent", "use": "agents:judge", "value": CRITERION, "judge_runs": 3}
    path = judged.cases("noisy.jsonl", [{"id": "split", "output": "hello", "assert": [{**case, "label": True}]},
                                        {"id": "sure", "output": "hi", "assert": [{**case, "label": False}]}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    data = report(out)
    split = data["results"][0]["assertions"][0]
    assert split["passed"] and split["judged"]["votes"] == [True, False, True] and split["judged"]["verdict"] is True
    # a labelled judge-only case tests the judge: the unanimous 'fail' agrees with its label, and the case passes
    assert data["results"][1]["assertions"][0]["message"] == ("judge agrees with the label: the judge failed it, labelled fail "
                                                              "(validator: coin (0 of 3 votes passed))")
    assert [r["status"] for r in data["results"]] == ["passed", "passed"] and result.exit_code == 0, result.output
    (judge,) = data["summary"]["judges"]
    assert (judge["repeated"], judge["flipped"], judge["flip_rate"]) == (2, 1, 0.5) and judge["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 1}
    assert "      flip rate 50% (1 of 2 repeated judgements split)" in result.output.splitlines()
    assert len(server.bodies()) == 6


def test_pairwise_judging_in_both_orders_says_when_the_order_decides(judged, server, tmp_path):
    pair = {"type": "pairwise", "use": "agents:judge", "value": "the more helpful answer"}
    path = judged.cases("pairs.jsonl", [
        {"id": "better", "output": "GOOD: file it under Travel", "assert": [{**pair, "reference": "no idea", "label": True}]},
        {"id": "worse", "output": "no idea", "assert": [{**pair, "reference": "GOOD: file it under Travel", "label": False}]},
        {"id": "alike", "output": "file it", "assert": [{**pair, "reference": "file it somewhere", "label": True}]}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    results = {r["id"]: r for r in report(out)["results"]}
    # both judged as labelled: the reference rightly preferred to a worse output is the judge right, a case passing
    assert results["better"]["status"] == "passed" and results["worse"]["status"] == "passed"
    assert results["worse"]["assertions"][0]["message"].startswith("judge agrees with the label: the judge failed it, labelled fail")
    alike = results["alike"]
    assert alike["status"] == "error" and alike["assertions"][0]["message"].startswith(
        "inconclusive: the judge chose output with the output first and reference with it second")
    sent = [json.loads(last_user(b)) for b in server.bodies()]
    assert [(s["a"], s["b"]) for s in sent[:2]] == [("GOOD: file it under Travel", "no idea"), ("no idea", "GOOD: file it under Travel")]
    (judge,) = report(out)["summary"]["judges"]
    assert (judge["pairwise"], judge["consistent"], judge["swap_consistency"]) == (3, 2, pytest.approx(2 / 3, abs=1e-6))
    assert judge["unusable"] == 1 and judge["confusion"] == {"tp": 1, "fn": 0, "fp": 0, "tn": 1}
    assert "      swap consistency 66.7% (2 of 3 pairwise judgements the same in both orders)" in result.output.splitlines()


def test_a_judge_only_case_judges_the_tool_calls_it_gives(judged, server, tmp_path):
    path = judged.cases("given.jsonl", [{
        "id": "filed", "output": "Filed.", "history": [{"role": "user", "content": "file 12 EUR"}],
        "tool_calls": [{"name": "create_expense", "arguments": {"amount": 12}}],
        "assert": [{"type": "tool_called", "value": {"name": "create_expense", "arguments": {"amount": 12}}}, {"type": "contains", "value": "Filed"}]}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 0, result.output
    (r,) = report(out)["results"]
    assert r["tool_calls"][0]["name"] == "create_expense" and r["input"] == [{"role": "user", "content": "file 12 EUR"}]
    assert not server.requests and "has no tool" not in result.output


@pytest.mark.parametrize("case, said", [
    ({"assert": [{"type": "agent", "use": "agents:judge", "value": "x", "label": "yes"}]}, "'label' must be true or false"),
    ({"assert": [{"type": "agent", "use": "agents:judge", "value": "x", "judge_runs": 0}]}, "'judge_runs'"),
    ({"checkpoints": [{"id": "a", "assert": "contains"}], "simulator": {"script": ["hi"]}}, "a judge-only case (with 'output') cannot have 'checkpoints'"),
    ({"judge": {"min_kappa": 2}}, "min_kappa"),
    ({"assert": [{"type": "pairwise", "use": "agents:judge", "value": "x"}]}, "a 'pairwise' assertion needs 'reference'"),
])
def test_bad_judge_input_is_exit_2_at_its_place(judged, server, tmp_path, case, said):
    path = judged.cases("bad.jsonl", [{"id": "a", "output": "hi", **case}])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2 and said in result.output and f"{path}:1:" in result.output, result.output
    assert not server.requests and "Traceback" not in result.output


def test_tool_calls_without_an_output_is_a_load_problem(judged, tmp_path):
    path = judged.cases("bad.jsonl", [{"id": "a", "input": "hi", "tool_calls": [{"name": "x"}]}])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2 and "'tool_calls' belongs to a judge-only case: give its 'output' too" in result.output


def test_the_history_keeps_each_judges_agreement_over_runs(judged, tmp_path):
    path = calibration_set(judged)
    history = tmp_path / "h.sqlite"
    for _ in range(2):
        cli("-i", str(path), "-n", "bot", "--history", str(history))
    from agenttest.history.store import History

    with History(str(history)) as h:
        rows = h.judges()
    assert [(r.run_id, r.validator, r.connector, r.labelled, r.agreement) for r in rows] == [(2, "judge", "fake", 20, 0.75), (1, "judge", "fake", 20, 0.75)]
    assert rows[0].kappa == pytest.approx(0.5)
    listed = cli("history", "--history", str(history))
    judge_line = next(line for line in listed.output.splitlines() if line.startswith("#2") and "judge on fake" in line)
    assert "Judges against the labels:" in listed.output and judge_line.split()[-4:] == ["75.0%", "0.50", "—", "—"], listed.output
