"""Issue 51 item 7: a reply cut by its token limit is marked in every report and failed by --strict; a dynamic
case that errors keeps every turn that ran, the failing one included (issue 50 item 12 too)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from helpers import Answer, cli, report


def run(app, cases, *args, agent="bot", suffix=".json"):
    path = app.cases("cases.jsonl", cases)
    out = app.root / f"r{suffix}"
    result = cli("-i", str(path), "-n", agent, "-o", str(out), *args)
    return result, out


@pytest.fixture
def cut(app, server):
    server.responder = lambda req: Answer("The expense EXP-1 was filed and the", finish_reason="length")
    app.agent("bot")
    return app


@pytest.mark.parametrize("stream", [False, True])
def test_a_truncated_reply_is_marked_and_judged_as_it_was(cut, stream):
    cut.connector("fake", {"type": "openai", "options": {"model": "m", "host": cut_host(cut), "stream": stream}})
    result, out = run(cut, [{"id": "c", "input": "file it", "assert": {"type": "contains", "value": "EXP-1"}}])
    (r,) = report(out)["results"]
    assert r["status"] == "passed" and r["truncated"] is True
    assert any("cut at its token limit (finish_reason: length)" in w for w in r["warnings"])
    assert "cut at its token limit" in result.output


def cut_host(app):
    return json.loads((app.root / "connectors" / "fake.conn.yao").read_text())["options"]["host"]


def test_strict_fails_a_truncated_reply(cut):
    result, out = run(cut, [{"id": "c", "input": "file it", "assert": {"type": "contains", "value": "EXP-1"}}], "--strict")
    (r,) = report(out)["results"]
    assert result.exit_code == 1 and r["status"] == "failed"
    assert r["error"] == "--strict: the agent's reply was cut at its token limit (finish_reason: length)"


@pytest.mark.parametrize("suffix, mark", [(".md", "cut at its token limit"), (".xml", "cut at its token limit"),
                                          (".html", "cut at its token limit")])
def test_every_report_says_a_reply_was_cut(cut, suffix, mark):
    _, out = run(cut, [{"id": "c", "input": "file it"}], suffix=suffix)
    text = out.read_text()
    assert mark in text
    if suffix == ".xml":
        assert "cut at its token limit" in ET.parse(out).getroot().find(".//system-out").text


def test_a_whole_reply_is_not_marked(app, server):
    app.agent("bot")
    result, out = run(app, [{"id": "c", "input": "hi", "assert": {"type": "regex", "pattern": "\\S"}}], "--strict")  # a case that checks
    (r,) = report(out)["results"]
    assert r["status"] == "passed" and "truncated" not in r


# ---- a dynamic case that errors keeps its turns ---------------------------------------------------


def conversation(app, server, agent_answers, judge=None):
    app.agent("bot")
    app.agent("sim", files={"prompts.yml": "- role: system\n  content: SIM\n"})
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: JUDGE\n"})
    answers = iter(agent_answers)

    def responder(req):
        system = req["messages"][0].get("content")
        if system == "SIM":
            turn = json.loads(req["messages"][1]["content"])["turn_number"]
            return Answer(json.dumps({"message": f"user line {turn}", "goal_achieved": False}))
        if system == "JUDGE":
            return judge(req) if judge else Answer('{"passed": false, "reason": "no"}')
        return next(answers)

    server.responder = responder


def dynamic(**extra):
    return {"id": "d", "simulator": {"use": "sim"}, "max_turns": 3,
            "checkpoints": [{"id": "never", "assert": {"type": "contains", "value": "XYZZY"}}], **extra}


def test_an_agent_error_keeps_the_turns_before_it_and_the_failing_turn(app, server):
    conversation(app, server, [Answer("first answer"), Answer(status=400, error="context length exceeded")])
    result, out = run(app, [dynamic()])
    (r,) = report(out)["results"]
    assert r["status"] == "error" and r["error"].startswith("agent error at turn 2: model error 400")
    assert [t["turn"] for t in r["turns"]] == [1, 2] and r["total_turns"] == 2
    assert r["turns"][0]["output"] == "first answer" and "error" not in r["turns"][0]
    failing = r["turns"][1]
    assert failing["input"] == "user line 2" and failing["output"] is None and failing["error"] == r["error"]
    assert "error: agent error at turn 2" in result.output


def test_an_agent_error_at_the_first_turn_keeps_that_turn(app, server):
    conversation(app, server, [Answer(status=400, error="bad request")])
    _, out = run(app, [dynamic()])
    (r,) = report(out)["results"]
    assert [t["turn"] for t in r["turns"]] == [1] and r["turns"][0]["error"].startswith("agent error at turn 1")


def test_a_checkpoint_that_cannot_be_judged_keeps_the_turn_it_judged(app, server):
    conversation(app, server, [Answer("an answer to judge")], judge=lambda req: Answer("no verdict here"))
    case = dynamic(checkpoints=[{"id": "judged", "assert": {"type": "agent", "use": "agents:judge", "value": "polite"}}])
    result, out = run(app, [case])
    (r,) = report(out)["results"]
    assert r["status"] == "error" and r["error_by"] == "validator"
    assert r["error"].startswith("checkpoint judged failed: validator judge: unusable reply after one correction")
    (turn,) = r["turns"]
    assert turn["output"] == "an answer to judge" and turn["error"] == r["error"] and r["output"] == "an answer to judge"
