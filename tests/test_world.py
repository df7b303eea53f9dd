"""The tool world (FORMATS §11): the world and its difference, mocks and faults through the real tool
loop against the loopback server (the model's next request carries what they answered), --seed, the
marks in the trace, reports and console, and bad input."""

from __future__ import annotations

import json

import pytest

from agenttest.model import Case, Fault, Mock, WorldChange
from agenttest.runtime.world import MALFORMED, ToolWorld, diff, draw
from helpers import Answer, cli, last_user, report

TOOLS = [
    {"name": "create_expense", "description": "file", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}},
    {"name": "lookup", "description": "count", "parameters": {"type": "object", "properties": {}}},
    {"name": "send_email", "description": "declared, not implemented", "parameters": {"type": "object", "properties": {}}},
]
TOOLS_PY = """
def create_expense(ctx, amount, type="travel"):
    ctx.world.setdefault("expenses", []).append({"amount": amount, "type": type})
    return {"id": f"EXP-{len(ctx.world['expenses'])}", "amount": amount}

def lookup(ctx):
    return {"found": len(ctx.world.get("expenses", []))}
"""


def brain(req):
    """The model: the user message lists the tool calls to make in one round; then it repeats the results."""
    messages = req["messages"]
    if messages[-1]["role"] == "tool":
        return Answer("done: " + " | ".join(m["content"] for m in messages if m["role"] == "tool"))
    return Answer("", tool_calls=json.loads(last_user(req)))


def asking(*calls):
    """An input that makes ``brain`` call these tools: ``("create_expense", {"amount": 1}), ...``."""
    return json.dumps([{"name": n, "arguments": a} for n, a in calls])


@pytest.fixture
def bot(app, server):
    server.responder = brain
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    return app


def run(app, cases, *args):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), *args)
    return result, report(out)


def tool_messages(server):
    """The tool results the model was sent in the request after the tool round."""
    return [m["content"] for m in server.bodies()[1]["messages"] if m["role"] == "tool"]


# ---- the world ------------------------------------------------------------------------------------


def test_tools_change_the_world_and_the_report_keeps_the_difference(bot, server):
    world = {"expenses": [{"amount": 5, "type": "meals"}], "budget": 100}
    result, data = run(bot, [{"id": "a", "input": asking(("create_expense", {"amount": 12})), "world": world,
                              "assert": [{"type": "state", "path": "$.expenses[1].amount", "value": 12},
                                         {"type": "state", "unchanged": ["$.expenses[0]", "$.budget"]}]}])
    assert result.exit_code == 0, result.output
    (r,) = data["results"]
    assert r["world"]["initial"] == world
    assert r["world"]["final"] == {"expenses": [{"amount": 5, "type": "meals"}, {"amount": 12, "type": "travel"}], "budget": 100}
    assert r["world"]["changes"] == [{"path": "$.expenses[1]", "op": "added", "after": {"amount": 12, "type": "travel"}}]


def test_every_run_starts_from_a_fresh_copy_and_the_case_is_untouched(bot, server):
    case = {"id": "a", "input": asking(("create_expense", {"amount": 1})), "world": {"expenses": []},
            "assert": {"type": "state", "path": "$.expenses.`len`", "value": 1}}
    result, data = run(bot, [case], "--runs", "3")
    assert result.exit_code == 0, result.output
    assert [len(r["world"]["final"]["expenses"]) for r in data["results"]] == [1, 1, 1]
    assert all(r["world"]["initial"] == {"expenses": []} for r in data["results"])


def test_no_world_and_no_change_means_no_world_in_the_report(bot, server):
    result, data = run(bot, [{"id": "quiet", "input": asking(("lookup", {}))},
                             {"id": "busy", "input": asking(("create_expense", {"amount": 3}))}])
    assert result.exit_code == 0, result.output
    quiet, busy = data["results"]
    assert "world" not in quiet and quiet["tool_calls"][0]["result"] == {"found": 0}
    assert busy["world"]["initial"] == {} and busy["world"]["changes"][0]["path"] == "$.expenses"


def test_hooks_see_the_world_and_initial_is_what_the_agent_found(bot, server):
    hooks = """
    SEEN = []

    def Before(ctx, case):
        ctx.world["seeded"] = case["id"]

    def After(ctx, case, result, before_data):
        print("after saw", result["world"]["final"]["seeded"], len(result["world"]["changes"]))
    """
    bot.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY, "src/env_test.py": hooks})
    result, data = run(bot, [{"id": "a", "input": asking(("lookup", {})), "world": {}, "before": "env_test.Before", "after": "env_test.After",
                              "assert": {"type": "state", "unchanged": ["$.seeded"]}}])
    assert result.exit_code == 0, result.output
    (r,) = data["results"]
    assert r["world"]["initial"] == {"seeded": "a"} and r["world"]["changes"] == []
    assert r["stdout"] == "after saw a 0\n"


def test_state_assertions_fail_with_the_world_in_the_message(bot, server):
    result, data = run(bot, [{"id": "a", "input": asking(("create_expense", {"amount": 7})), "world": {"budget": 10},
                              "assert": [{"type": "state", "unchanged": ["$.expenses"]}, {"type": "state", "path": "$.budget", "value": 3}]}])
    assert result.exit_code == 1
    messages = [a.get("message") for a in data["results"][0]["assertions"]]
    assert messages == ['world changed at $.expenses: (absent) → [{"amount":7,"type":"travel"}]', "world $.budget: expected 3, got 10"]


# ---- mocks ----------------------------------------------------------------------------------------


def test_a_mock_answers_instead_of_the_tool_and_the_model_sees_its_answer(bot, server):
    mock = {"tool": "create_expense", "match": {"amount": "regex:^12$"}, "returns": {"id": "EXP-MOCK"}}
    result, data = run(bot, [{"id": "a", "input": asking(("create_expense", {"amount": 12}), ("create_expense", {"amount": 13})),
                              "world": {}, "mocks": [mock]}])
    assert result.exit_code == 0, result.output
    assert tool_messages(server) == ['{"id": "EXP-MOCK"}', '{"id": "EXP-1", "amount": 13}']  # the second ran for real
    first, second = data["results"][0]["tool_calls"]
    assert first["mocked"] is True and first["result"] == {"id": "EXP-MOCK"} and "mocked" not in second
    assert data["results"][0]["world"]["final"] == {"expenses": [{"amount": 13, "type": "travel"}]}  # the mock changed nothing


def test_mocks_are_tried_in_order_with_uses_errors_and_delays(bot, server):
    mocks = [{"tool": "lookup", "times": 1, "returns": {"found": 99}, "delay": "50ms"}, {"tool": "lookup", "error": "lookup is down"}]
    result, data = run(bot, [{"id": "a", "input": asking(("lookup", {}), ("lookup", {}), ("lookup", {})), "mocks": mocks,
                              "assert": {"type": "tool_count", "tool": "lookup", "min": 3, "max": 3}}])
    assert result.exit_code == 0, result.output
    assert tool_messages(server) == ['{"found": 99}', '{"error": "lookup is down"}', '{"error": "lookup is down"}']
    calls = data["results"][0]["tool_calls"]
    assert calls[0]["duration_ms"] >= 50 and all(c["mocked"] for c in calls)
    assert [c.get("error") for c in calls] == [None, "lookup is down", "lookup is down"]


def test_a_declared_tool_without_a_function_is_an_error_result_unless_mocked(bot, server):
    result, data = run(bot, [{"id": "real", "input": asking(("send_email", {}))},
                             {"id": "mocked", "input": asking(("send_email", {})), "mocks": [{"tool": "send_email", "returns": "sent"}]}])
    assert result.exit_code == 0, result.output
    assert "⚠ agent bot: tool 'send_email' has no function in" in result.stdout  # said once, at load time
    real, mocked = data["results"]
    assert real["tool_calls"][0]["error"] == "agent bot has no implementation of tool 'send_email' (give the case a mock for it)"
    assert real["output"] == 'done: {"error": "agent bot has no implementation of tool \'send_email\' (give the case a mock for it)"}'
    assert mocked["tool_calls"][0] == {"name": "send_email", "arguments": {}, "result": "sent", "duration_ms": mocked["tool_calls"][0]["duration_ms"],
                                       "id": "call_0", "mocked": True}
    assert mocked["output"] == "done: sent"


def test_tools_py_missing_is_a_warning_and_mocks_still_answer(app, server):
    server.responder = brain
    app.agent("bot", tools=TOOLS)
    result, data = run(app, [{"id": "a", "input": asking(("lookup", {})), "mocks": [{"tool": "lookup", "returns": {"found": 1}}]}])
    assert result.exit_code == 0, result.output
    assert "tools.py does not exist: tools 'create_expense', 'lookup', 'send_email' cannot run; a call is an error result unless" in result.stdout
    assert data["results"][0]["output"] == 'done: {"found": 1}'


# ---- faults ---------------------------------------------------------------------------------------

KINDS = [
    ("error", None, '{"error": "create_expense failed: internal server error"}'),
    ("error", "HTTP 503", '{"error": "HTTP 503"}'),
    ("timeout", None, '{"error": "create_expense timed out"}'),
    ("malformed", None, MALFORMED),
    ("malformed", "<html>502</html>", "<html>502</html>"),
    ("empty", None, ""),
]


@pytest.mark.parametrize("kind, message, seen", KINDS, ids=[f"{k}-{m is not None}" for k, m, _ in KINDS])
def test_a_fault_reaches_the_model_in_place_of_the_tool_result(bot, server, kind, message, seen):
    fault = {"tool": "create_expense", "kind": kind, "at": [2], **({"message": message} if message else {})}
    calls = [("create_expense", {"amount": n}) for n in (1, 2, 3)]
    result, data = run(bot, [{"id": "a", "input": asking(*calls), "world": {}, "faults": [fault]}])
    assert result.exit_code == 0, result.output
    assert tool_messages(server) == ['{"id": "EXP-1", "amount": 1}', seen, '{"id": "EXP-2", "amount": 3}']
    marks = [c.get("fault") for c in data["results"][0]["tool_calls"]]
    assert marks == [None, kind, None]
    assert [e["amount"] for e in data["results"][0]["world"]["final"]["expenses"]] == [1, 3]  # the faulted call did not run


def test_star_faults_count_every_call_and_come_before_mocks(bot, server):
    faults = [{"tool": "*", "kind": "error", "at": [1, 3], "message": "down"}]
    mocks = [{"tool": "lookup", "returns": {"found": 42}}]
    result, data = run(bot, [{"id": "a", "input": asking(("lookup", {}), ("create_expense", {"amount": 1}), ("lookup", {})),
                              "faults": faults, "mocks": mocks}])
    assert result.exit_code == 0, result.output
    assert tool_messages(server) == ['{"error": "down"}', '{"id": "EXP-1", "amount": 1}', '{"error": "down"}']
    assert [(c.get("fault"), c.get("mocked", False)) for c in data["results"][0]["tool_calls"]] == [("error", False), (None, False), ("error", False)]


def test_a_fault_with_neither_at_nor_rate_fails_every_call_and_a_recovery_can_be_checked(bot, server):
    case = {"id": "a", "input": asking(("create_expense", {"amount": 1})), "world": {"expenses": []},
            "faults": [{"tool": "create_expense", "kind": "timeout"}],
            "assert": [{"type": "contains", "value": "timed out"}, {"type": "state", "unchanged": ["$"]},
                       {"type": "tool_result", "value": {"tool": "create_expense"}, "negate": True}]}
    result, data = run(bot, [case])
    assert result.exit_code == 0, result.output


def fault_pattern(data):
    return {(r["id"], r["run"]): [c.get("fault") for c in r["tool_calls"]] for r in data["results"]}


def test_the_same_seed_gives_the_same_faults_whatever_the_parallelism(bot, server):
    calls = [("create_expense", {"amount": n}) for n in range(1, 5)]
    cases = [{"id": f"c{i}", "input": asking(*calls), "faults": [{"tool": "create_expense", "kind": "error", "rate": 0.5}]} for i in range(10)]
    patterns = {}
    for parallel, seed in (("1", "7"), ("8", "7"), ("8", "8")):
        result, data = run(bot, cases, "--runs", "2", "--parallel", parallel, "--seed", seed)
        assert result.exit_code == 0, result.output
        patterns[parallel, seed] = fault_pattern(data)
    assert patterns["1", "7"] == patterns["8", "7"]
    assert patterns["8", "7"] != patterns["8", "8"]
    marks = [m for calls in patterns["1", "7"].values() for m in calls]
    assert len(marks) == 80 and 20 < marks.count("error") < 60  # a rate, not all or nothing
    assert patterns["1", "7"]["c0", 1] != patterns["1", "7"]["c0", 2] or patterns["1", "7"]["c1", 1] != patterns["1", "7"]["c1", 2]
    data = report(bot.root / "r.json")
    assert data["metadata"]["options"]["seed"] == 8


def test_worker_agents_call_their_tools_for_real(bot, server):
    bot.agent("judge", tools=TOOLS[1:2], files={"src/tools.py": TOOLS_PY, "prompts.yml": "- role: system\n  content: JUDGE\n"})

    def both(req):
        if req["messages"][0].get("content") == "JUDGE":
            last = req["messages"][-1]
            if last["role"] == "tool":
                return Answer(json.dumps({"passed": "found" in last["content"], "reason": last["content"]}))
            return Answer("", tool_calls=[{"name": "lookup", "arguments": {}}])
        return brain(req)

    server.responder = both
    case = {"id": "a", "input": asking(("lookup", {})), "faults": [{"tool": "*", "kind": "error"}],
            "assert": {"type": "agent", "use": "agents:judge", "value": "anything"}}
    result, data = run(bot, [case])
    assert result.exit_code == 0, result.output  # the judge's own lookup was not faulted
    assert data["results"][0]["tool_calls"][0]["fault"] == "error"  # the agent's was


# ---- console, HTML, dynamic ------------------------------------------------------------------------


def test_verbose_console_shows_mocks_faults_and_the_world(bot, server, tmp_path):
    path = bot.cases("cases.jsonl", [{"id": "a", "input": asking(("create_expense", {"amount": 2}), ("lookup", {})), "world": {"n": 1},
                                      "faults": [{"tool": "create_expense", "kind": "empty", "at": [2]}], "mocks": [{"tool": "lookup", "returns": 5}]}])
    html = tmp_path / "r.html"
    result = cli("-i", str(path), "-n", "bot", "-v", "-o", str(html))
    assert result.exit_code == 0, result.output
    assert '  │  tool create_expense({"amount":2}) → {"id":"EXP-1","amount":2}\n' in result.stdout
    assert "  │  tool lookup({}) → 5 [mocked]\n" in result.stdout
    assert '  │  world: 1 change\n  │    + $.expenses = [{"amount":2,"type":"travel"}]\n' in result.stdout
    page = html.read_text()
    assert "<b>World</b> <span class=\"meta\">1 change</span>" in page and "[mocked]" in page
    quiet = cli("-i", str(path), "-n", "bot", "-o", str(html))
    assert "[mocked]" not in quiet.stdout and "world:" not in quiet.stdout


def test_verbose_console_marks_faults(bot, server):
    path = bot.cases("cases.jsonl", [{"id": "a", "input": asking(("lookup", {})), "faults": [{"tool": "lookup", "kind": "timeout"}]}])
    result = cli("-i", str(path), "-n", "bot", "-v", "-o", str(bot.root / "r.json"))
    assert "  │  tool lookup({}) → error: lookup timed out [fault: timeout]\n" in result.stdout


def test_state_and_trajectory_checkpoints_in_a_dynamic_case(bot, server):
    bot.agent("sim", files={"prompts.yml": "- role: system\n  content: SIM\n"})
    lines = [asking(("lookup", {})), asking(("create_expense", {"amount": 50})), asking(("lookup", {}))]

    def both(req):
        if req["messages"][0].get("content") == "SIM":
            turn = json.loads(req["messages"][1]["content"])["turn_number"]
            return Answer(json.dumps({"message": lines[min(turn, 3) - 1], "goal_achieved": False}))
        return brain(req)

    server.responder = both
    checkpoints = [
        {"id": "filed", "assert": {"type": "state", "path": "$.expenses[0].amount", "value": 50}},
        {"id": "args", "assert": {"type": "tool_args", "tool": "create_expense", "arguments": {"amount": 50}}},
        {"id": "order", "after": ["filed"], "assert": {"type": "tool_sequence", "value": ["lookup", "create_expense", "lookup"], "mode": "strict"}},
        {"id": "kept", "after": ["filed"], "assert": {"type": "state", "unchanged": ["$.note"]}},
        {"id": "twice", "assert": {"type": "tool_count", "tool": "lookup", "min": 2}},
    ]
    case = {"id": "d", "simulator": {"use": "sim"}, "checkpoints": checkpoints, "world": {"note": "keep"}, "max_turns": 4}
    result, data = run(bot, [case])
    assert result.exit_code == 0, result.output
    reached = {c["id"]: c["reached_at_turn"] for c in data["results"][0]["checkpoints"]}
    assert reached == {"filed": 2, "args": 2, "order": 3, "kept": 2, "twice": 3}
    assert data["results"][0]["checkpoints"][1]["tool"] == "create_expense"


# ---- bad input ------------------------------------------------------------------------------------


def test_bad_mocks_and_faults_are_located_errors_reported_together(bot):
    lines = [
        {"id": "a", "input": "x", "mocks": [{"returns": 1}]},
        {"id": "b", "input": "x", "mocks": [{"tool": "lookup", "returns": 1, "error": "e"}]},
        {"id": "c", "input": "x", "faults": [{"tool": "lookup", "kind": "eror"}]},
        {"id": "d", "input": "x", "faults": [{"tool": "lookup", "kind": "error", "rate": 1.5}]},
        {"id": "e", "input": "x", "faults": [{"tool": "lookup", "kind": "error", "rate": 0.5, "at": [1]}]},
        {"id": "f", "input": "x", "mocks": [{"tool": "lookup", "delay": "soon"}]},
        {"id": "g", "input": "x", "mocks": [{"tool": "lookup", "match": {"q": "regex:("}}]},
        {"id": "h", "input": "x", "mocks": [{"tool": "lokup", "returns": 1}], "faults": [{"tool": "fly", "kind": "empty"}]},
        {"id": "i", "input": "x", "mocks": [{"tool": "lookup", "retuns": 1}]},
        {"id": "j", "input": "x", "faults": [{"tool": "lookup", "kind": "empty", "message": "m", "at": [0]}]},
        {"id": "k", "input": "x", "world": [1]},
    ]
    path = bot.cases("bad.jsonl", lines)
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2
    err = result.stderr
    expected = [
        f"{path}:1:37: missing required field 'tool' in 'mocks'",
        f"{path}:2:70: give a mock 'returns' or 'error', not both",
        f"{path}:3:65: 'kind' cannot be 'eror'; did you mean 'error'?",
        f"{path}:4:82: 'rate' must be at most 1",
        f"{path}:5:74: give a fault 'at' or 'rate', not both; with neither, every call fails",
        f"{path}:6:65: bad 'delay': 'soon' is not a duration",
        f"{path}:7:65: pattern 'regex:(' does not compile",
        f"{path}:8:46: mocks[0]: the agent has no tool 'lokup'; did you mean 'lookup'?",
        f"{path}:8:91: faults[0]: the agent has no tool 'fly'; its tools: create_expense, lookup, send_email",
        f"{path}:9:56: 'retuns' is not a field; did you mean 'returns'?",
        f"{path}:10:74: an 'empty' fault has no 'message'; use kind 'malformed' to return a text of your own",
        f"{path}:10:97: 'at' must be at least 1",
        f"{path}:11:36: 'world' must be an object, not a list",
        "13 problems found; nothing was run",
    ]
    for line in expected:
        assert line in err, (line, err)


def test_seed_is_an_integer_option_of_the_running_section(bot):
    help_text = cli("--help").stdout
    running = " ".join(help_text.split("Running:")[1].split("Output:")[0].split())
    assert "--seed N" in running and "same seed injects the same faults" in running
    bad = cli("-i", "x", "-n", "bot", "--seed", "many")
    assert bad.exit_code == 2 and "'many' is not a valid integer" in bad.stderr


# ---- the world module ------------------------------------------------------------------------------


def test_diff_names_added_removed_and_changed_paths():
    before = {"a": 1, "b": {"c": [1, 2, 3]}, "gone": True, "odd key": 1, "n": 1}
    after = {"a": 2, "b": {"c": [0, 1, 2, 3]}, "new": None, "odd key": 2, "n": 1.0}
    assert diff(before, after) == (
        WorldChange("$.a", "changed", 1, 2),
        WorldChange("$.b.c[0]", "added", after=0),
        WorldChange("$.gone", "removed", before=True),
        WorldChange('$["odd key"]', "changed", 1, 2),
        WorldChange("$.new", "added", after=None),
    )
    assert diff([{"id": 1}, {"id": 2}], [{"id": 1}, {"id": 3}]) == (WorldChange("$[1].id", "changed", 2, 3),)
    assert diff([1, 2, 3], [1, 3]) == (WorldChange("$[1]", "removed", before=2),)
    assert diff({"x": [1]}, {"x": {"0": 1}}) == (WorldChange("$.x", "changed", [1], {"0": 1}),)
    assert diff(True, 1) == (WorldChange("$", "changed", True, 1),)


def test_draws_depend_only_on_their_arguments():
    first = [draw(0, "case", 1, 0, n) for n in range(200)]
    assert first == [draw(0, "case", 1, 0, n) for n in range(200)]
    assert all(0 <= x < 1 for x in first) and 60 < sum(x < 0.5 for x in first) < 140
    assert first != [draw(1, "case", 1, 0, n) for n in range(200)]
    assert first != [draw(0, "case", 2, 0, n) for n in range(200)]


def case(**fields):
    from agenttest.errors import Location

    return Case(id="c", messages=(), raw={}, location=Location("f"), base_dir=".", **fields)


def test_intercept_counts_calls_per_tool_with_server_prefixes():
    world = ToolWorld(case(faults=(Fault(tool="lookup", kind="error", at=(2,)),), mocks=(Mock(tool="lookup", times=2, returns=1),)), {})
    outcomes = [world.intercept(name, {}) for name in ("mcp__lookup", "other", "lookup", "lookup", "lookup")]
    assert [(o.fault, o.mocked) if o else None for o in outcomes] == [(None, True), None, ("error", False), (None, True), None]


def test_record_is_kept_for_a_case_with_a_world_or_a_change():
    assert ToolWorld(case(), {}).record() is None
    seeded = ToolWorld(case(), {})
    seeded.state["by_hook"] = 1
    seeded.begin()
    assert seeded.record().initial == {"by_hook": 1} and seeded.record().changes == ()
    declared = ToolWorld(case(world={"a": 1}), {"a": 1})
    assert declared.record().changes == () and declared.record().initial == {"a": 1}
    state: dict = {}
    changed = ToolWorld(case(), state)
    state["x"] = object()  # not JSON: kept as its text
    assert changed.record().final["x"].startswith("<object object")
