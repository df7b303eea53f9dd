"""Trajectory assertions (tool_sequence, tool_args, tool_count) and the state assertion: pass, fail and
negate for each, their failure messages, and their load-time checks."""

from __future__ import annotations

import asyncio

import pytest

from agenttest import assertions
from agenttest.assertions import Observation, evaluate_all
from agenttest.model import AssertionSpec, ToolCall


def calls(*names_and_args):
    return tuple(ToolCall(name=name, arguments=args, id=f"c{i}") for i, (name, args) in enumerate(names_and_args))


CALLS = calls(("lookup", {"q": "x"}), ("srv__create_expense", {"type": "travel", "amount": 3500, "meta": {"city": "Beijing"}}),
              ("notify", {"to": "boss"}), ("create_expense", {"type": "meals", "amount": 40}))
REORDERED = calls(("notify", {"to": "boss"}), ("lookup", {"q": "x"}), ("create_expense", {"type": "travel", "amount": 3500}),
                  ("srv.create_expense", {"type": "meals", "amount": 40}))
FEWER = calls(("lookup", {"q": "y"}))
MORE = CALLS + calls(("delete_all", {}))
NONE: tuple[ToolCall, ...] = ()


def evaluate(params: dict, trajectory=CALLS, world=None, initial=None):
    assert assertions.check(params) == [], assertions.check(params)
    spec = AssertionSpec(params["type"], params)
    obs = Observation(output="", tool_calls=trajectory[-1:], all_tool_calls=trajectory, world=world, initial_world=initial)
    (result,) = asyncio.run(evaluate_all([spec], obs))
    return result


CASES = [
    # (params, calls that pass, calls that fail)
    ({"type": "tool_sequence", "value": ["lookup", "create_expense", "notify", "create_expense"], "mode": "strict"}, CALLS, REORDERED),
    ({"type": "tool_sequence", "value": ["lookup", "notify"]}, CALLS, REORDERED),  # ordered by default
    ({"type": "tool_sequence", "value": ["lookup", "create_expense"], "mode": "ordered"}, REORDERED, FEWER),
    ({"type": "tool_sequence", "value": ["create_expense", "notify", "create_expense", "lookup"], "mode": "unordered"}, REORDERED, MORE),
    ({"type": "tool_sequence", "value": ["create_expense", "lookup", "notify"], "mode": "subset"}, CALLS, MORE),
    ({"type": "tool_sequence", "value": ["create_expense", "lookup"], "mode": "superset"}, MORE, FEWER),
    ({"type": "tool_sequence", "value": [], "mode": "strict"}, NONE, FEWER),
    ({"type": "tool_args", "tool": "create_expense", "arguments": {"type": "travel", "meta": {"city": "regex:^Bei"}}}, CALLS, REORDERED),
    ({"type": "tool_args", "tool": "create_expense", "arguments": {"type": "meals", "amount": 40.0}, "match": "exact"}, CALLS, MORE[:2]),
    ({"type": "tool_args", "tool": "create_expense", "arguments": {"type": "travel"}, "call": "first"}, CALLS, REORDERED[::-1]),
    ({"type": "tool_args", "tool": "create_expense", "arguments": {"amount": "regex:^4\\d$"}, "call": "last"}, CALLS, MORE[:2]),
    ({"type": "tool_args", "tool": "notify", "match": "ignore"}, CALLS, FEWER),
    ({"type": "tool_count", "tool": "create_expense", "min": 2, "max": 2}, CALLS, FEWER),
    ({"type": "tool_count", "max": 4}, CALLS, MORE),
    ({"type": "tool_count", "tool": "lookup", "min": 1}, FEWER, NONE),
]


@pytest.mark.parametrize("params, good, bad", CASES, ids=[f"{c[0]['type']}-{i}" for i, c in enumerate(CASES)])
def test_pass_fail_and_negate(params, good, bad):
    passed = evaluate(params, good)
    assert passed.passed and passed.message == ""
    negated = evaluate({**params, "negate": True}, good)
    assert not negated.passed and negated.message.startswith(f"expected not: {params['type']} ") and negated.negated
    failed = evaluate(params, bad)
    assert not failed.passed and failed.message
    assert evaluate({**params, "negate": True}, bad).passed


WORLD = {"expenses": [{"id": "EXP-1", "amount": 42}, {"id": "EXP-2", "amount": 3500, "status": "submitted"}], "budget": 5000}
INITIAL = {"expenses": [{"id": "EXP-1", "amount": 42}], "budget": 5000}
STATE_CASES = [
    # (params, world that passes, world that fails) — the initial world is INITIAL
    ({"type": "state", "path": "$.expenses[1].amount", "value": 3500}, WORLD, INITIAL),
    ({"type": "state", "path": "$.expenses[?(@.id == 'EXP-2')].status", "value": ["submitted", "approved"]}, WORLD, INITIAL),
    ({"type": "state", "path": "$.expenses.`len`", "value": 2}, WORLD, INITIAL),
    ({"type": "state", "path": "$.budget"}, WORLD, {"expenses": []}),
    ({"type": "state", "unchanged": ["$.expenses[0]", "$.budget"]}, WORLD, {**WORLD, "budget": 1500}),
    ({"type": "state", "unchanged": ["$"]}, INITIAL, WORLD),
    ({"type": "state", "unchanged": ["$.missing"]}, WORLD, {**WORLD, "missing": 1}),  # absent before and after: unchanged
]


@pytest.mark.parametrize("params, good, bad", STATE_CASES, ids=[str(i) for i in range(len(STATE_CASES))])
def test_state_pass_fail_and_negate(params, good, bad):
    passed = evaluate(params, world=good, initial=INITIAL)
    assert passed.passed and passed.message == ""
    assert not evaluate({**params, "negate": True}, world=good, initial=INITIAL).passed
    failed = evaluate(params, world=bad, initial=INITIAL)
    assert not failed.passed and failed.message
    assert evaluate({**params, "negate": True}, world=bad, initial=INITIAL).passed


def test_failure_messages_say_what_happened():
    seq = evaluate({"type": "tool_sequence", "value": ["notify", "lookup"]})
    assert seq.message == "expected these tools in this order (ordered): [notify, lookup]; called: lookup, srv__create_expense, notify, create_expense"
    assert seq.actual == ["lookup", "srv__create_expense", "notify", "create_expense"]
    subset = evaluate({"type": "tool_sequence", "value": ["lookup"], "mode": "subset"}, FEWER + calls(("x", {}), ("x", {})))
    assert subset.message == "only these tools may be called, but x was too (subset): [lookup]; called: lookup, x, x"
    superset = evaluate({"type": "tool_sequence", "value": ["lookup", "pay"], "mode": "superset"}, NONE)
    assert superset.message.startswith("expected at least these tools; not called: lookup, pay") and superset.message.endswith("called: no tools were called")
    args = evaluate({"type": "tool_args", "tool": "create_expense", "arguments": {"amount": 1}, "call": "last"})
    assert args.message == 'the last call of create_expense does not match the arguments (subset) {"amount":1}; arguments: {"type":"meals","amount":40}'
    missing = evaluate({"type": "tool_args", "tool": "pay", "arguments": {}})
    assert missing.message == "tool 'pay' was not called; called: lookup, srv__create_expense, notify, create_expense"
    anyof = evaluate({"type": "tool_args", "tool": "create_expense", "arguments": {"type": "office"}})
    assert anyof.message.startswith("no call of create_expense matches the arguments (subset) {\"type\":\"office\"}; arguments: ")
    count = evaluate({"type": "tool_count", "tool": "create_expense", "min": 3, "max": 5})
    assert count.message == "create_expense was called 2 times, expected between 3 and 5" and count.actual == 2
    one = evaluate({"type": "tool_count", "max": 0}, FEWER)
    assert one.message == "tools were called 1 time, expected at most 0"
    state = evaluate({"type": "state", "path": "$.budget", "value": 10}, world=WORLD, initial=INITIAL)
    assert state.message == "world $.budget: expected 10, got 5000"
    nothing = evaluate({"type": "state", "path": "$.refunds"}, world=WORLD, initial=INITIAL)
    assert nothing.message == "world $.refunds matched nothing"
    changed = evaluate({"type": "state", "unchanged": ["$.budget", "$.expenses[1]", "$.expenses[0]"]}, world={"expenses": [{"id": "EXP-1", "amount": 42}]}, initial=WORLD)
    assert changed.message == 'world changed at $.budget: 5000 → (absent); $.expenses[1]: {"id":"EXP-2","amount":3500,"status":"submitted"} → (absent)'
    assert changed.actual == {"$.budget": [], "$.expenses[1]": []}


def test_exact_arguments_need_the_same_keys():
    params = {"type": "tool_args", "tool": "create_expense", "arguments": {"type": "meals"}, "match": "exact"}
    assert not evaluate(params).passed  # amount is there too
    assert evaluate({**params, "match": "subset"}).passed


def test_unordered_matches_each_call_once():
    params = {"type": "tool_sequence", "value": ["create_expense", "srv__create_expense"], "mode": "unordered"}
    both = calls(("srv__create_expense", {}), ("create_expense", {}))
    assert evaluate(params, both).passed  # 'create_expense' takes the plain call, the prefixed name the other
    assert not evaluate(params, calls(("create_expense", {}), ("create_expense", {}))).passed


def test_state_without_a_world_fails_with_a_reason():
    result = evaluate({"type": "state", "path": "$.a", "value": 1})
    assert not result.passed and result.message == "this case has no tool world to check"


BAD = [
    ({"type": "tool_sequence"}, "'tool_sequence' needs 'value': a list of tool names"),
    ({"type": "tool_sequence", "value": "lookup"}, "'tool_sequence' needs 'value': a list of tool names"),
    ({"type": "tool_sequence", "value": ["a"], "mode": "strictly"}, "'mode' cannot be 'strictly'"),
    ({"type": "tool_args", "arguments": {}}, "'tool_args' needs 'tool': a tool name"),
    ({"type": "tool_args", "tool": "t"}, "'tool_args' needs 'arguments': an object"),
    ({"type": "tool_args", "tool": "t", "arguments": {"a": "regex:("}}, "pattern 'regex:(' does not compile"),
    ({"type": "tool_args", "tool": "t", "arguments": {}, "call": "second"}, "'call' cannot be 'second'"),
    ({"type": "tool_count", "tool": "t"}, "'tool_count' needs 'min' and/or 'max'"),
    ({"type": "tool_count", "min": 3, "max": 1}, "'max' (1) is less than 'min' (3)"),
    ({"type": "tool_count", "min": -1}, "'min' -1 is less than the minimum of 0"),
    ({"type": "state"}, "'state' needs 'path' (with an optional 'value') or 'unchanged', not both"),
    ({"type": "state", "path": "$.a", "unchanged": ["$.b"]}, "not both"),
    ({"type": "state", "unchanged": []}, "'unchanged' must be a list of JSONPaths"),
    ({"type": "state", "unchanged": ["$..[?("]}, "JSONPath '$..[?(' does not parse"),
    ({"type": "state", "unchanged": ["$.a"], "value": 1}, "'value' goes with 'path', not with 'unchanged'"),
]


@pytest.mark.parametrize("params, message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_parameters_are_load_errors(params, message):
    problems = assertions.check(params)
    assert any(message in text for _, text, _ in problems), problems


def test_a_typo_in_a_mode_is_a_located_error_with_a_hint(offline_app):
    from agenttest.errors import InputError
    from agenttest.inputs.reading import parse_text

    line = '{"id": "a", "input": "x", "assert": [{"type": "tool_sequence", "value": ["a"], "mode": "strcit"}]}'
    with pytest.raises(InputError) as info:
        parse_text(line, "cases.jsonl")
    assert str(info.value) == "cases.jsonl:1:88: 'mode' cannot be 'strcit'; did you mean 'strict'?"
