"""``agent-test rescore REPORT.json`` (FORMATS §19): a recorded run's outputs judged again with today's assertions
and labels — no call to the agent under test — each run's own output, and the verdicts compared paired with the
recorded ones (as --baseline: only a significant change fails)."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report


@pytest.fixture
def recorded(app, server, tmp_path):
    """A run of 12 cases × 2 runs: the agent says 'answer <id> run <n>'; the validator passes what mentions 'answer'."""
    app.agent("bot")
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n"})
    counter: dict[str, int] = {}

    def responder(req):
        if req["messages"][0].get("content") == "You are a validator.":
            sent = json.loads(last_user(req))
            wanted = sent["criteria"].split(":")[1]
            return Answer(json.dumps({"passed": wanted in str(sent["output"]), "reason": f"looked for {wanted}"}))
        question = last_user(req)
        counter[question] = counter.get(question, 0) + 1
        return Answer(f"answer {question} run {counter[question]}")

    server.responder = responder
    cases = [{"id": f"c{i:02d}", "input": f"q{i:02d}", "assert": [{"type": "agent", "use": "agents:judge", "value": "mentions:answer"}]}
             for i in range(12)]
    path = app.cases("cases.jsonl", cases)
    base = tmp_path / "base.json"
    result = cli("-i", str(path), "-n", "bot", "--runs", "2", "-o", str(base))
    assert result.exit_code == 0, result.output
    return app, path, base, cases


def agent_calls(server):
    return [b for b in server.bodies() if b["messages"][0].get("content") != "You are a validator."]


def test_a_changed_rubric_judges_the_recorded_outputs_and_compares_them_paired(recorded, server, tmp_path):
    app, path, base, cases = recorded
    before = len(agent_calls(server))
    # today's rubric wants run 1's wording: every case's second run now fails — a real, significant change
    app.cases("cases.jsonl", [{**c, "assert": [{**c["assert"][0], "value": "mentions:run 1"}]} for c in cases])
    out = tmp_path / "rescored.json"
    result = cli("rescore", str(base), "-o", str(out), "--fail-on-regression")
    assert len(agent_calls(server)) == before  # no agent call: the recorded outputs were judged
    data = report(out)
    outputs = {(r["id"], r["run"]): r["output"] for r in data["results"]}
    assert outputs[("c03", 1)] == "answer q03 run 1" and outputs[("c03", 2)] == "answer q03 run 2"  # each run's own output
    assert [r["status"] for r in data["results"] if r["id"] == "c03"] == ["passed", "failed"]
    sent = [json.loads(last_user(b)) for b in server.bodies()[-24:]]
    assert {s["output"] for s in sent} == set(outputs.values()) and all(s["criteria"] == "mentions:run 1" for s in sent)
    assert result.exit_code == 1, result.output  # 12 of 12 cases worse: the sign-flip test says so
    assert "worse: -50.0 points" in result.output and "Baseline gate fails" in result.output
    assert data["metadata"]["options"]["baseline"] == str(base)


def test_the_same_rubric_rescored_is_no_difference(recorded, server, tmp_path):
    app, path, base, cases = recorded
    result = cli("rescore", str(base), "-i", str(path), "-o", str(tmp_path / "same.json"))
    assert result.exit_code == 0, result.output
    assert "no difference detectable — with 12 cases × 2 runs" in result.output
    assert result.output.rstrip().splitlines()[-2].startswith("  ✅ NO SIGNIFICANT REGRESSION against the baseline")


def test_labels_added_today_calibrate_the_judge_on_the_recorded_outputs(recorded, tmp_path):
    app, path, base, cases = recorded
    app.cases("cases.jsonl", [{**c, "assert": [{**c["assert"][0], "label": i % 4 != 0}]} for i, c in enumerate(cases)])
    out = tmp_path / "labelled.json"
    cli("rescore", str(base), "-o", str(out), "--judge-min-agreement", "0.9")
    (judge,) = report(out)["summary"]["judges"]
    # the judge passed all 24 outputs; people failed c00, c04, c08 (6 runs): 18 of 24 agree
    assert judge["confusion"] == {"tp": 18, "fn": 0, "fp": 6, "tn": 0} and judge["agreement"]["rate"] == 0.75
    assert judge["gate"]["passed"] is False


def test_cases_gone_from_the_files_are_said_and_a_missing_file_is_exit_2(recorded, tmp_path):
    app, path, base, cases = recorded
    app.cases("cases.jsonl", cases[:10])
    result = cli("rescore", str(base), "-o", str(tmp_path / "r.json"))
    assert "2 case(s) of" in result.output and "are no longer in the case files and were not rescored: c10, c11" in result.output
    missing = cli("rescore", str(base), "-i", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    bad = cli("rescore", str(tmp_path / "no-report.json"))
    assert bad.exit_code == 2 and "no-report.json: no such report file" in bad.output


def test_a_rescore_compares_the_judges_agreement_and_keeps_the_recorded_connector(app, server, tmp_path):
    """The trial's rescore compared pass rates only (κ 0.25 → 0.50 was not in the comparison) and said 'Connector:
    mock' and 'the runs used different connectors: local.a (base), mock (new)' though no agent was called."""
    app.agent("bot", connector="mock")  # recorded with -c fake: the agent's own connector is not the run's
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n"})
    counter: dict[str, int] = {}

    def responder(req):
        if req["messages"][0].get("content") == "You are a validator.":
            sent = json.loads(last_user(req))
            wanted = sent["criteria"].split(":")[1]
            return Answer(json.dumps({"passed": wanted in str(sent["output"]), "reason": f"looked for {wanted}"}))
        counter[last_user(req)] = counter.get(last_user(req), 0) + 1
        return Answer(f"answer {last_user(req)} run {counter[last_user(req)]}")

    server.responder = responder

    def written(criterion, label):
        return [{"id": f"c{i:02d}", "input": f"q{i:02d}", "assert": [{"type": "agent", "use": "agents:judge", "value": criterion,
                                                                      "label": label(i)}]} for i in range(12)]

    path = app.cases("cases.jsonl", written("mentions:run 1", lambda i: i % 2 == 0))
    base = tmp_path / "base.json"
    cli("-i", str(path), "-n", "bot", "-c", "fake", "--runs", "2", "-o", str(base))
    agent_calls = len([b for b in server.bodies() if b["messages"][0].get("content") != "You are a validator."])
    # by hand: even cases labelled pass, the judge passes run 1 only (tp 6, fn 6); odd labelled fail (fp 6, tn 6):
    # agreement 12/24, pₑ = ½·½ + ½·½ = ½, κ = 0. Today: the judge passes every output, 18 of 24 labelled pass: κ 0
    app.cases("cases.jsonl", written("mentions:answer", lambda i: i % 4 != 0))
    result = cli("rescore", str(base), "-o", str(tmp_path / "r.json"))
    assert len([b for b in server.bodies() if b["messages"][0].get("content") != "You are a validator."]) == agent_calls
    lines = result.output.splitlines()
    assert "  Judges against the labels (before → after):" in lines, result.output
    assert "    judge on fake: agreement 50.0% → 75.0%, κ 0.00 → 0.00 (24 → 24 labelled verdicts)" in lines
    assert "ℹ Connector: fake" in lines and "different connectors" not in result.output, result.output
    assert report(tmp_path / "r.json")["summary"]["connector"] == "fake"
