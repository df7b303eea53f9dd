"""Budgets (FORMATS §8) and the ``budget`` assertion (§4), end to end against the loopback server: every
call costs 15 tokens (10 prompt + 5 completion), so every figure is known."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, report
from scripted import Scripted

TOOLS = [{"name": "whoami", "description": "who is asking", "parameters": {"type": "object", "properties": {}}}]
OK = [{"type": "contains", "value": "ok"}]
PRICE = {"input": 1.0, "output": 2.0}  # a call: (10 × 1 + 5 × 2) / 1e6 = $0.00002


@pytest.fixture
def bot(app, server):
    server.responder = Scripted()
    app.connector("priced", {"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                            "max_retries": 0, "pricing": PRICE}})
    app.agent("bot", connector="priced", tools=TOOLS, files={"src/tools.py": "def whoami(ctx):\n    return {'user': ctx.user_id}\n"})
    return app


def run(app, cases, *args):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), *args)
    return result, report(out) if out.exists() else None


def by_id(data):
    return {r["id"]: r for r in data["results"]}


def test_budget_flag_fails_the_case_that_spends_too_much(bot):
    cases = [{"id": "small", "input": "say:ok"}, {"id": "two-calls", "input": 'tool:whoami:{}'}]
    result, data = run(bot, cases, "--budget", "tokens=20")
    assert result.exit_code == 1
    r = by_id(data)
    assert r["small"]["status"] == "passed"
    big = r["two-calls"]
    assert big["status"] == "failed" and big["error"] == "budget exceeded: tokens 30 > 20"
    verdict = big["assertions"][-1]
    assert verdict["type"] == "budget" and verdict["expected"] == {"tokens": 20}
    assert verdict["actual"]["tokens"] == 30 and verdict["actual"]["tool_calls"] == 1 and verdict["actual"]["cost"] == pytest.approx(40 / 1e6)
    assert "└─ budget exceeded: tokens 30 > 20" in result.stdout
    assert data["metadata"]["options"]["budget"] == {"tokens": 20}


def test_a_case_budget_wins_limit_by_limit(bot):
    cases = [{"id": "own", "input": 'tool:whoami:{}', "budget": {"tokens": 100}}]
    result, data = run(bot, cases, "--budget", "tokens=20,tool_calls=0")
    assert result.exit_code == 1
    assert by_id(data)["own"]["error"] == "budget exceeded: tool_calls 1 > 0"  # tokens 30 ≤ 100; tool_calls from --budget


@pytest.mark.parametrize("budget, error", [
    ({"cost": 0.00003}, "budget exceeded: cost $0.00004 > $0.00003"),
    ({"turns": 0}, "budget exceeded: turns 1 > 0"),
    ({"tool_calls": 0, "tokens": 29}, "budget exceeded: tokens 30 > 29; tool_calls 1 > 0"),
])
def test_each_limit(bot, budget, error):
    result, data = run(bot, [{"id": "c", "input": 'tool:whoami:{}', "budget": budget}])
    assert result.exit_code == 1
    assert data["results"][0]["error"] == error


def test_duration_budget(bot):
    result, data = run(bot, [{"id": "slow", "input": "slow:0.3:ok", "budget": {"duration": "100ms"}},
                             {"id": "quick", "input": "say:ok", "budget": {"duration": "5s"}}])
    r = by_id(data)
    assert r["slow"]["status"] == "failed" and r["slow"]["error"].startswith("budget exceeded: duration ")
    assert r["slow"]["error"].endswith(" > 100ms") and r["quick"]["status"] == "passed"


def test_within_budget_a_failing_case_keeps_its_own_reason(bot):
    result, data = run(bot, [{"id": "c", "input": 'tool:whoami:{}', "assert": OK, "budget": {"tokens": 20}}])
    r = data["results"][0]
    assert r["status"] == "failed"
    assert [a["type"] for a in r["assertions"] if not a["passed"]] == ["contains", "budget"]
    assert "budget exceeded: tokens 30 > 20" in result.stdout


# ---- dynamic: the conversation stops at the turn that exceeds the budget ------------------------


class Talk:
    """The agent never finishes (its checkpoint needs 'omega'); the simulator (system prompt SIM) goes on."""

    def __call__(self, req):
        if req["messages"][0].get("content") == "SIM":
            return Answer(json.dumps({"message": "more", "goal_achieved": False}))
        return Answer(f"turn {sum(1 for m in req['messages'] if m.get('role') == 'user')}")


@pytest.fixture
def talk(bot, server):
    server.responder = Talk()
    bot.agent("sim", connector="priced", files={"prompts.yml": "- role: system\n  content: SIM\n"})
    return bot


def dyn(**extra):
    return {"id": "d", "input": "hi", "simulator": {"use": "sim"}, "max_turns": 10,
            "checkpoints": [{"id": "end", "assert": {"type": "contains", "value": "omega"}}], **extra}


def agent_requests(server):
    return sum(1 for b in server.bodies() if b["messages"][0].get("content") != "SIM")


@pytest.mark.parametrize("budget, error, turns", [
    ({"turns": 2}, "budget exceeded: turns 3 > 2 (at turn 3)", 3),
    ({"tokens": 40}, "budget exceeded: tokens 45 > 40 (at turn 3)", 3),
    ({"cost": 0.00005}, "budget exceeded: cost $0.00006 > $0.00005 (at turn 3)", 3),
])
def test_a_dynamic_case_stops_at_the_turn_that_exceeds_its_budget(talk, server, budget, error, turns):
    result, data = run(talk, [dyn(budget=budget)])
    assert result.exit_code == 1
    r = data["results"][0]
    assert r["status"] == "failed" and r["error"] == error and r["total_turns"] == turns
    assert agent_requests(server) == turns  # not the 10 turns max_turns allows
    assert len(server.requests) - agent_requests(server) == turns - 1  # the simulator, between turns


def test_a_dynamic_case_under_the_budget_flag(talk, server):
    result, data = run(talk, [dyn()], "--budget", "turns=1")
    assert data["results"][0]["error"] == "budget exceeded: turns 2 > 1 (at turn 2)" and agent_requests(server) == 2


# ---- the budget assertion ----------------------------------------------------------------------


@pytest.mark.parametrize("assertion, status, message", [
    ({"type": "budget", "tokens": 30, "tool_calls": 1}, "passed", None),
    ({"type": "budget", "tokens": 20}, "failed", "budget exceeded: tokens 30 > 20"),
    ({"type": "budget", "cost": 0.00001}, "failed", "budget exceeded: cost $0.00004 > $0.00001"),
    ({"type": "budget", "tokens": 20, "negate": True}, "passed", None),
    ({"type": "budget", "tokens": 30, "negate": True}, "failed", "expected not: budget tokens=30 (it held)"),
])
def test_budget_assertion(bot, assertion, status, message):
    result, data = run(bot, [{"id": "c", "input": 'tool:whoami:{}', "assert": [assertion]}])
    r = data["results"][0]
    assert r["status"] == status, r
    if message:
        assert r["assertions"][0]["message"] == message
    assert r["assertions"][0]["actual"]["tokens"] == 30


def test_budget_assertion_as_a_checkpoint(talk, server):
    """A checkpoint sees the spending up to its turn: within 20 tokens only at turn 1."""
    case = dyn(checkpoints=[{"id": "lean", "assert": {"type": "budget", "tokens": 20}},
                            {"id": "end", "after": ["lean"], "assert": {"type": "contains", "value": "turn 2"}}])
    result, data = run(talk, [case])
    assert result.exit_code == 0, result.output
    assert [c["reached_at_turn"] for c in data["results"][0]["checkpoints"]] == [1, 2]


def test_budget_assertion_with_cost_on_an_unpriced_connector_is_an_error(app, server):
    server.responder = Scripted()
    app.agent("bot")  # the 'fake' connector has no pricing
    path = app.cases("cases.jsonl", [{"id": "c", "input": "say:ok", "assert": [{"type": "budget", "cost": 1}]}])
    out = app.root / "r.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(out)).exit_code == 1
    r = report(out)["results"][0]
    assert r["status"] == "error" and "a cost limit needs the connector's 'pricing'" in r["error"]


# ---- bad input -----------------------------------------------------------------------------------


def test_a_cost_budget_on_an_unpriced_connector_is_exit_2(app, server):
    app.agent("bot")  # 'fake' has no pricing
    path = app.cases("cases.jsonl", [{"id": "c", "input": "say:ok", "budget": {"cost": 0.01}}])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2
    assert "cases.jsonl:1:" in result.output and "case 'c': connector fake has no pricing" in result.output
    path = app.cases("plain.jsonl", [{"id": "c", "input": "say:ok"}])
    result = cli("-i", str(path), "-n", "bot", "--budget", "cost=0.01")
    assert result.exit_code == 2 and "--budget cost: connector fake has no pricing" in result.output
    assert "\"pricing\": {\"input\"" in result.output  # the hint shows how


@pytest.mark.parametrize("flag, message", [
    ("tokens=abc", "tokens must be a number, not 'abc'"),
    ("tokenz=5", "'tokenz' is not a budget limit (did you mean 'tokens'?)"),
    ("tokens", "'tokens' is not NAME=LIMIT"),
    ("duration=soon", "'soon' is not a duration"),
    ("tokens=1.5", "tokens must be a whole number"),
    ("cost=-1", "cost must be a number of 0 or more"),
    ("", "no limits given"),
])
def test_bad_budget_flag_is_exit_2(bot, flag, message):
    path = bot.cases("cases.jsonl", [{"id": "c", "input": "say:ok"}])
    result = cli("-i", str(path), "-n", "bot", "--budget", flag)
    assert result.exit_code == 2 and "--budget" in result.output and message in result.output, result.output


@pytest.mark.parametrize("budget, message", [
    ({"tokenz": 5}, "'tokenz' is not a field; did you mean 'tokens'?"),
    ({}, "'budget' must not be empty"),
    ({"duration": "soon"}, "bad 'duration'"),
    ({"tokens": -1}, "'tokens' must be at least 0"),
    ({"cost": "cheap"}, "'cost' must be a number"),
])
def test_bad_case_budget_is_exit_2(bot, budget, message):
    path = bot.cases("cases.jsonl", [{"id": "c", "input": "say:ok", "budget": budget}])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2 and "cases.jsonl:1:" in result.output and message in result.output, result.output


def test_a_budget_assertion_needs_a_limit(bot):
    path = bot.cases("cases.jsonl", [{"id": "c", "input": "say:ok", "assert": [{"type": "budget"}]}])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2 and "a 'budget' assertion needs a limit" in result.output


# ---- the module ------------------------------------------------------------------------------------

from agenttest.accounting import budgets  # noqa: E402
from agenttest.model import Budget  # noqa: E402


def test_parse_and_merge():
    assert budgets.parse("tokens=20000, cost=0.05,duration=2m,turns=3,tool_calls=0") == Budget(tokens=20000, cost=0.05, tool_calls=0, turns=3, duration=120.0)
    assert Budget(tokens=5).over(Budget(tokens=1, cost=0.1)) == Budget(tokens=5, cost=0.1)
    assert Budget(tokens=5).over(None) == Budget(tokens=5)


def test_overruns_and_messages():
    spent = budgets.Spent(tokens=25130, cost=0.0612, tool_calls=4, turns=3, duration=31.5)
    assert budgets.overruns(Budget(tokens=20000), spent) == ["tokens 25,130 > 20,000"]
    assert budgets.message(budgets.overruns(Budget(cost=0.05, duration=30), spent)) == "budget exceeded: cost $0.0612 > $0.05; duration 31.5s > 30.0s"
    assert budgets.overruns(Budget(tokens=25130, tool_calls=4, turns=3), spent) == []  # a limit may be reached, not passed
    assert budgets.overruns(Budget(cost=0.01), budgets.Spent(cost=None)) == []
    assert budgets.unmeasured(Budget(cost=0.01), budgets.Spent(cost=None)) and budgets.unmeasured(Budget(tokens=1), budgets.Spent(cost=None)) is None
