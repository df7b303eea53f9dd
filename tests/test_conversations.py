"""How conversations end and say why (FORMATS §5), scripted conversations and offline simulators (§14):
the loopback server plays the agent and the simulator agent; scripted simulators call no model."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report

TOOLS = [{"name": "lookup", "description": "look up", "parameters": {"type": "object", "properties": {}}},
         {"name": "handoff", "description": "hand over", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = "def lookup(ctx):\n    return {'found': 'the word Submitted inside a tool result'}\n\ndef handoff(ctx):\n    return 'ok'\n"


class Play:
    """The agent answers by the user's last message; the simulator says ``lines`` (dicts are sent as they are)."""

    def __init__(self, lines=()):
        self.lines = list(lines)
        self.sim_payloads: list[dict] = []
        self.agent_requests = 0

    def __call__(self, req):
        if req["messages"][0].get("content") == "SIM":
            payload = json.loads(req["messages"][1]["content"])
            self.sim_payloads.append(payload)
            line = self.lines[min(len(self.sim_payloads) - 1, len(self.lines) - 1)]
            return Answer(content=json.dumps(line if isinstance(line, dict) else {"message": line, "goal_achieved": False}))
        self.agent_requests += 1
        if req["messages"][-1]["role"] == "tool":
            return Answer(content="looked")
        text = last_user(req)
        if text.startswith("tool:"):
            return Answer(content="", tool_calls=[{"name": text[5:], "arguments": {}}])
        if text == "boom":
            return Answer(status=400, error="bad request")
        return Answer(content=f"echo: {text}")


@pytest.fixture
def conv_app(app, server):
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    app.agent("sim", files={"prompts.yml": "- role: system\n  content: SIM\n"})
    return app


def run(app, server, play, cases, *args):
    server.responder = play
    path = app.cases("c.jsonl", cases)
    out = app.root / "r.json"
    if out.exists():
        out.unlink()
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), *args)
    return result, (report(out) if out.exists() else None)


def dyn(**extra):
    return {"id": "d", "simulator": {"use": "sim"}, "max_turns": 4, **extra}


# ---- ending a dynamic conversation ----------------------------------------------------------------------------


def test_opening_goal_achieved_ends_before_the_agent_is_called(conv_app, server):
    play = Play([{"goal_achieved": True, "reasoning": "nothing to do"}])
    _, data = run(conv_app, server, play, [dyn(end="simulator", world={"a": 1}, **{"assert": {"type": "state", "unchanged": ["$.a"]}})])
    r = data["results"][0]
    assert play.agent_requests == 0 and r["total_turns"] == 0 and r["status"] == "passed", r
    assert len(play.sim_payloads) == 1  # asked once, not again after an empty message


def test_a_closing_message_is_sent_and_checked(conv_app, server):
    play = Play(["hello", {"message": "thanks, bye", "goal_achieved": True}])
    cps = [{"id": "bye", "assert": {"type": "contains", "value": "bye"}}]
    _, data = run(conv_app, server, play, [dyn(checkpoints=cps)])
    r = data["results"][0]
    assert r["status"] == "passed" and r["total_turns"] == 2 and r["turns"][1]["input"] == "thanks, bye"
    assert r["checkpoints"][0]["reached_at_turn"] == 2 and r["turns"][1]["ended"] == "goal achieved"


def test_end_simulator_goes_on_after_the_checkpoints(conv_app, server):
    play = Play(["one", "two", {"message": "three", "goal_achieved": True}])
    cps = [{"id": "said", "assert": {"type": "contains", "value": "echo"}}]
    _, default = run(conv_app, server, play, [dyn(checkpoints=cps)])
    assert default["results"][0]["total_turns"] == 1  # Yao's rule: ends once the checkpoints are reached
    _, data = run(conv_app, server, Play(["one", "two", {"message": "three", "goal_achieved": True}]),
                  [dyn(checkpoints=cps, end="simulator", **{"assert": {"type": "contains", "value": "three"}})])
    r = data["results"][0]
    assert r["status"] == "passed" and r["total_turns"] == 3 and r["output"] == "echo: three"


def test_end_simulator_fails_when_the_final_assertion_fails(conv_app, server):
    play = Play(["one", {"message": "two", "goal_achieved": True}])
    result, data = run(conv_app, server, play, [dyn(end="simulator", **{"assert": {"type": "contains", "value": "never"}})])
    r = data["results"][0]
    assert result.exit_code == 1 and r["status"] == "failed" and r["error"].startswith("final assertion failed: output does not contain 'never'")
    assert r["assertion_errors"] == [r["error"].removeprefix("final assertion failed: ")]
    assert result.stdout.count("does not contain 'never'") == 1  # the first reason is not printed twice


def test_end_tools_end_the_conversation_after_the_tool_result(conv_app, server):
    play = Play(["tool:handoff", "never sent"])
    _, data = run(conv_app, server, play, [dyn(end="simulator", end_tools=["handoff"], **{"assert": {"type": "tool_called", "name": "handoff"}})])
    r = data["results"][0]
    assert r["status"] == "passed" and r["total_turns"] == 1 and play.agent_requests == 1  # not asked again after the result
    assert r["turns"][0]["output"] == "" and r["turns"][0]["ended"] == "end tool handoff"
    assert len(play.sim_payloads) == 1


def test_budget_model_calls_stops_the_agent(conv_app, server):
    play = Play(["tool:lookup", "tool:lookup", "tool:lookup"])
    result, data = run(conv_app, server, play, [dyn(end="simulator", budget={"model_calls": 3})])
    r = data["results"][0]
    assert r["status"] == "failed" and r["error"] == "budget exceeded: model_calls > 3 (at turn 2)", r["error"]
    assert play.agent_requests == 3 and result.exit_code == 1


def test_hide_checkpoints_keeps_ids_and_descriptions_from_the_simulator(conv_app, server):
    cps = [{"id": "says-23553", "description": "says the code 23553", "assert": {"type": "contains", "value": "23553"}}]
    play = Play(["hi"])
    run(conv_app, server, play, [dyn(max_turns=2, checkpoints=cps, simulator={"use": "sim", "hide_checkpoints": True})])
    assert play.sim_payloads and all("23553" not in json.dumps(p) for p in play.sim_payloads)
    assert set(play.sim_payloads[0]) == {"persona", "goal", "conversation", "turn_number", "max_turns", "extra"}
    shown = Play(["hi"])
    run(conv_app, server, shown, [dyn(max_turns=2, checkpoints=cps)])
    assert shown.sim_payloads[0]["checkpoints_pending"] == ["says-23553"]


def test_a_missed_checkpoint_names_its_closest_attempt(conv_app, server):
    cps = [{"id": "confirm", "assert": {"type": "contains", "value": "Submitted"}}]
    result, data = run(conv_app, server, Play(["tool:lookup", "hi"]), [dyn(max_turns=2, checkpoints=cps)])
    cp = data["results"][0]["checkpoints"][0]
    # the word is inside the tool result only: not something the agent said
    assert cp["message"] == "not reached; closest attempt at turn 2: output does not contain 'Submitted': echo: hi"
    assert "✗ checkpoint not reached: confirm — closest attempt at turn 2" in result.stdout


def test_a_scripted_simulator_needs_no_model(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": 'default: "echo: {{ user }}"\n'})
    path = offline_app.cases("c.jsonl", [{"id": "s", "simulator": {"script": ["first", "second"]}, "end": "simulator",
                                          "assert": {"type": "contains", "value": "second"}}])
    out = offline_app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), "--app", str(offline_app.root))
    r = report(out)["results"][0]
    assert result.exit_code == 0, result.output
    assert [t["input"] for t in r["turns"]] == ["first", "second"] and r["turns"][1]["ended"] == "goal achieved"
    assert {c["role"] for c in r["model_calls"]} == {"agent"}
    assert "Simulator: scripted user (offline)" in result.stdout


def test_a_transcript_with_tool_calls_and_no_content_is_valid_input(conv_app, server):
    history = [{"role": "user", "content": "find it"},
               {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "{}"},
               {"role": "assistant", "refusal": "I cannot"},
               {"role": "user", "content": "again"}]
    result, data = run(conv_app, server, Play(), [{"id": "t", "input": history, "assert": {"type": "contains", "value": "echo: again"}}])
    assert result.exit_code == 0, result.output
    assert data["results"][0]["status"] == "passed"


# ---- scripted conversations -------------------------------------------------------------------------------------


def scripted(**extra):
    return {"id": "s", "turns": [{"id": "greet", "input": "hi", "assert": {"type": "contains", "value": "echo: hi"}},
                                 {"input": "tool:lookup", "assert": [{"type": "tool_called", "name": "lookup"}]},
                                 {"input": "bye", "assert": {"type": "contains", "value": "bye"}}], **extra}


def test_scripted_turns_see_the_agents_actual_replies(conv_app, server):
    result, data = run(conv_app, server, Play(), [scripted(world={"n": 1}, **{"assert": {"type": "contains", "value": "echo: bye"}})])
    r = data["results"][0]
    assert result.exit_code == 0 and r["status"] == "passed", result.output
    assert [t["output"] for t in r["turns"]] == ["echo: hi", "looked", "echo: bye"]
    assert r["turns"][0]["id"] == "greet" and all(t["passed"] for t in r["turns"])
    assert "Turn 1 (greet): \"hi\" → \"echo: hi\"" in result.stdout and "3 turns, 3/3 turn checks" in result.stdout


def test_a_failed_turn_fails_the_case_and_later_turns_still_run(conv_app, server):
    case = scripted()
    case["turns"][0]["assert"] = {"type": "contains", "value": "nope"}
    result, data = run(conv_app, server, Play(), [case])
    r = data["results"][0]
    assert r["status"] == "failed" and r["total_turns"] == 3
    assert r["error"] == "turn 1 (greet): output does not contain 'nope': echo: hi"
    assert r["turns"][0]["passed"] is False and r["turns"][2]["passed"] is True
    assert "✗ contains: output does not contain 'nope'" in result.stdout and "2/3 turn checks" in result.stdout


def test_an_agent_error_stops_the_conversation(conv_app, server):
    case = scripted()
    case["turns"][1]["input"] = "boom"
    _, data = run(conv_app, server, Play(), [case])
    r = data["results"][0]
    assert r["status"] == "error" and r["error"].startswith("agent error at turn 2:")
    assert r["total_turns"] == 2 and r["turns_not_run"] == 1  # the failing turn ran: it is kept, with its error (issue 51)
    assert r["turns"][1]["input"] == "boom" and r["turns"][1]["error"] == r["error"] and r["turns"][1]["output"] is None


def test_variants_make_a_cartesian_product_of_cases(conv_app, server):
    case = {"id": "v", "turns": [{"variants": [{"id": "en", "input": "hello"}, {"id": "fr", "input": "bonjour"}]},
                                 {"input": "ok", "assert": {"type": "contains", "value": "echo: ok"}},
                                 {"variants": [{"id": "a", "input": "tool:lookup"}, {"id": "b", "input": "again"}]}]}
    result, data = run(conv_app, server, Play(), [case], "--runs", "2")
    ids = [r["id"] for r in data["results"]]
    assert ids == ["v[en,a]", "v[en,a]", "v[en,b]", "v[en,b]", "v[fr,a]", "v[fr,a]", "v[fr,b]", "v[fr,b]"]
    fr_b = next(r for r in data["results"] if r["id"] == "v[fr,b]")
    assert fr_b["variants"] == ["fr", "b"] and [t["input"] for t in fr_b["turns"]] == ["bonjour", "ok", "again"]
    assert result.exit_code == 0


# ---- bad input: exit 2, located, with a hint ---------------------------------------------------------------------


@pytest.mark.parametrize("case, message", [
    (dyn(end="simulatr"), "c.jsonl:1:65: 'end' cannot be 'simulatr'; did you mean 'simulator'?\n"),
    (dyn(end="simulator", end_tools=["hand_off"]), "end_tools[0]: the agent has no tool 'hand_off'; did you mean 'handoff'?"),
    ({"id": "v", "turns": [{"variants": [{"input": "x"}]}]}, "missing required field 'id' in 'variants'"),
    ({"id": "v", "turns": [{"variants": [{"id": "a", "input": "x"}, {"id": "a", "input": "y"}]}]}, "duplicate variant id 'a'"),
    ({"id": "v", "turns": [{"assert": {"type": "contains", "value": "x"}}]}, "turn 1 needs an 'input' (or 'variants')"),
    ({"id": "v", "turns": [{"input": "x"}], "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "x"}}]},
     "a case has 'turns' (a scripted conversation) or 'checkpoints'"),
    (dyn(simulator={"use": "sim", "script": ["x"]}, end="simulator"), "give a simulator 'use' (an agent) or 'script' (its lines), not both"),
    ({"id": "d", "simulator": {"use": "sim"}}, "a dynamic case needs 'checkpoints' as well as 'simulator'; or \"end\": \"simulator\" to let the simulator end it"),
    ({"id": "s", "input": "x", "end_tools": ["handoff"]}, "'end_tools' applies only to dynamic cases"),
    (dyn(end="simulator", budget={"model_calls": 0}), "'model_calls' must be at least 1"),
])
def test_bad_conversation_input_is_exit_2_before_any_call(conv_app, server, case, message):
    play = Play(["x"])
    result, _ = run(conv_app, server, play, [case])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "c.jsonl:1:" in result.stderr, result.stderr
    assert play.agent_requests == 0 and not play.sim_payloads
    assert "Traceback" not in result.stderr


def test_a_failed_scripted_turn_is_in_markdown_and_html(conv_app, server, tmp_path):
    case = scripted()
    case["turns"][2]["assert"] = {"type": "contains", "value": "nope"}
    server.responder = Play()
    path = conv_app.cases("c.jsonl", [case])
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    cli("-i", str(path), "-n", "bot", "-o", str(md), "-o", str(html))
    text = md.read_text()
    assert "- Turn 1 (greet): “hi” → “echo: hi”" in text and "  - ✗ `contains`: output does not contain 'nope': echo: bye" in text
    assert "✗ output does not contain &#x27;nope&#x27;: echo: bye" in html.read_text()


def test_dry_run_writes_each_case_of_a_product_loadable_back(conv_app, server):
    case = {"id": "v", "turns": [{"variants": [{"id": "en", "input": "hello"}, {"id": "fr", "input": "bonjour"}],
                                  "assert": {"type": "contains", "value": "echo"}}]}
    path = conv_app.cases("c.jsonl", [case])
    dry = conv_app.root / "dry.jsonl"
    assert cli("-i", str(path), "-n", "bot", "--dry-run", "-o", str(dry)).exit_code == 0
    rows = [json.loads(line) for line in dry.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["v[en]", "v[fr]"] and rows[1]["turns"][0]["input"] == [{"role": "user", "content": "bonjour"}]
    listed = cli("-i", str(dry), "-n", "bot", "--list")
    assert "v[en]  scripted" in listed.stdout and "v[fr]  scripted" in listed.stdout


def test_pass_hat_k_estimator_is_the_papers():
    from math import comb

    from agenttest.model import CaseKey, Gate
    from agenttest.verdicts.gates import pass_k

    g = Gate(key=CaseKey(id="a"), runs=5, passed=3, planned=5)
    assert g.pass_hat == pytest.approx(tuple(comb(3, k) / comb(5, k) for k in range(1, 6)))
    assert g.pass_at == pytest.approx(tuple(1 - comb(2, k) / comb(5, k) for k in range(1, 6)))
    assert g.pass_hat[-1] == 0 and Gate(key=CaseKey(id="b"), runs=5, passed=5).pass_hat[-1] == 1  # pass^N is "every run passed"
    table = pass_k([g, Gate(key=CaseKey(id="b"), runs=5, passed=5), Gate(key=CaseKey(id="c"), runs=0, skipped=5)])  # a case that never ran counts nowhere
    assert table is not None and table.k == (1, 2, 3, 4, 5) and table.cases == (2,) * 5
    assert table.pass_hat[1] == pytest.approx((3 / 10 + 1) / 2)
    assert pass_k([Gate(key=CaseKey(id="a"), runs=1, passed=1)]) is None  # one run: nothing beyond the pass rate


def test_state_failure_on_an_object_names_the_differing_fields():
    from agenttest.assertions.state import fields_differing

    message = fields_differing("$.user", {"name": "Mia", "balance": 100, "trips": ["A"]}, {"name": "Mia", "balance": 40, "trips": ["A", "B"]})
    assert message == "$.user differs in 2 fields: $.user.balance: expected 100, got 40; $.user.trips[1]: expected absent, got B"
    assert fields_differing("$.n", 1, 2) == ""  # plain values keep json_path's message


def test_budget_model_calls_bounds_a_standard_case_too(conv_app, server):
    play = Play()
    server.responder = lambda req: Answer(content="", tool_calls=[{"name": "lookup", "arguments": {}}]) if play(req) else None
    path = conv_app.cases("c.jsonl", [{"id": "s", "input": "loop", "budget": {"model_calls": 2}}])
    out = conv_app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    r = report(out)["results"][0]
    assert result.exit_code == 1 and r["status"] == "failed" and r["error"] == "budget exceeded: model_calls > 2"
    assert play.agent_requests == 2 and len(r["tool_calls"]) == 2


def test_end_simulator_cases_take_the_simulator_flag(conv_app, server):
    play = Play([{"message": "hello", "goal_achieved": True}])
    case = {"id": "d", "end": "simulator", "assert": {"type": "contains", "value": "echo: hello"}}
    result, data = run(conv_app, server, play, [case], "--simulator", "sim")
    assert result.exit_code == 0 and data["results"][0]["total_turns"] == 1, result.output
    refused, _ = run(conv_app, server, Play(), [case])
    assert refused.exit_code == 2 and "\"end\": \"simulator\" needs a 'simulator'" in refused.stderr


def test_a_timeout_stops_a_scripted_conversation(offline_app):
    rules = 'rules:\n  - user: "slow"\n    delay: 600\n    reply: "late"\ndefault: "echo: {{ user }}"\n'
    offline_app.agent("bot", connector="mock", files={"mock.yml": rules})  # turn 1 has its 2 s on a loaded machine; turn 2 never ends
    path = offline_app.cases("c.jsonl", [{"id": "t", "timeout": "2s", "turns": [{"input": "hi"}, {"input": "slow"}, {"input": "bye"}]}])
    out = offline_app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), "--app", str(offline_app.root))
    r = report(out)["results"][0]
    assert result.exit_code == 1 and r["status"] == "timeout" and r["error"] == "timeout after 2s (during turn 2)"
    assert r["total_turns"] == 1 and r["turns_not_run"] == 2 and "1 turn, 2 not run" in result.stdout
