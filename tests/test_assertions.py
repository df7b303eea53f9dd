"""Every static assertion type: its pass path, its fail path, and negate; plus messages and registry rules."""

from __future__ import annotations

import asyncio

import pytest

from agenttest import assertions
from agenttest.assertions import Observation, evaluate_all
from agenttest.model import AssertionSpec, ToolCall

CALLS = (
    ToolCall(name="create_expense", arguments={"type": "travel", "amount": 3500, "meta": {"city": "Beijing", "tags": ["a", "b"]}}, id="c1",
             result={"id": "EXP-042", "status": "submitted"}),
    ToolCall(name="mcp__lookup", arguments={"q": "x"}, id="c2", result=None, error="ValueError: boom"),
)


def check(params: dict, output, calls=CALLS):
    spec = AssertionSpec(params.get("type") or "equals", params)
    assert assertions.check(params) == [], assertions.check(params)
    (result,) = asyncio.run(evaluate_all([spec], Observation(output=output, tool_calls=calls)))
    return result


CASES = [
    # (params, output that passes, output that fails)
    ({"type": "equals", "value": "OK"}, " OK\n", "NOK"),
    ({"value": {"a": 1, "b": [1, 2]}}, '{"a": 1.0, "b": [1, 2]}', '{"a": 1, "b": [2, 1]}'),
    ({"type": "equals", "value": 1}, "1", "true"),
    ({"type": "contains", "value": "submitted"}, "Expense submitted!", "Expense filed"),
    ({"type": "contains", "value": ["travel", "$3500"]}, "travel for $3500", "travel for $350"),
    ({"type": "not_contains", "value": "error"}, "all good", "an error happened"),
    ({"type": "not_contains", "value": ["x", "y"]}, "abc", "abcy"),
    ({"type": "regex", "pattern": r"EXP-\d+"}, "ref EXP-001", "ref EXP-"),
    ({"type": "regex", "value": "(?i)^please"}, "PLEASE confirm", "Do confirm please"),
    ({"type": "json_path", "path": "$.status", "value": "ok"}, '{"status": "ok"}', '{"status": "bad"}'),
    ({"type": "json_path", "path": "$.items[0].id"}, '```json\n{"items": [{"id": 1}]}\n```', '{"items": []}'),
    ({"type": "json_path", "path": "$.status", "value": ["ok", "done"]}, 'Result: {"status": "done"} end', '{"status": "pending"}'),
    ({"type": "json_path", "path": "$.items[?(@.type == 'travel')].amount", "value": 3500},
     '{"items": [{"type": "meal", "amount": 5}, {"type": "travel", "amount": 3500}]}', '{"items": [{"type": "meal", "amount": 3500}]}'),
    ({"type": "json_path", "path": "$.n", "value": 2}, {"n": 2}, "no json here"),
    # names with non-ASCII letters after a dot, in a filter too (the parser reads only ASCII names there)
    ({"type": "json_path", "path": "$.héllo.größe", "value": 1}, '{"héllo": {"größe": 1}}', '{"héllo": {"größe": 2}}'),
    ({"type": "json_path", "path": "$.items[?(@.città == 'Roma')].n", "value": 1},
     '{"items": [{"città": "Roma", "n": 1}]}', '{"items": [{"città": "Milano", "n": 1}]}'),
    ({"type": "json_path", "path": "$.名前", "value": "太郎"}, '{"名前": "太郎"}', '{"名前": "花子"}'),
    ({"type": "json_path", "path": "$..città", "value": "Roma"}, '{"a": {"b": {"città": "Roma"}}}', '{"a": {"città": "Milano"}}'),
    ({"type": "json_path", "path": "$.ชื่อ", "value": 1}, '{"ชื่อ": 1}', '{"ชื่อ": 2}'),
    ({"type": "type", "value": "object"}, '{"a": 1}', "[1]"),
    ({"type": "type", "value": "string"}, "hello there", "42"),
    ({"type": "type", "path": "$.count", "value": "number"}, '{"count": 3}', '{"count": "3"}'),
    ({"type": "type", "path": "$.count", "value": "integer"}, '{"count": 3}', '{"count": 3.5}'),
    ({"type": "tool_called", "name": "create_expense"}, "", None),
    ({"type": "tool_called", "value": ["delete", "create_expense"]}, "", None),
    ({"type": "tool_called", "value": "lookup"}, "", None),  # server__ prefix
    ({"type": "tool_called", "value": {"name": "create_expense", "arguments": {"amount": 3500, "meta": {"city": "Beijing", "tags": ["b"]}}}}, "", None),
    ({"type": "tool_result", "value": {"tool": "create_expense", "result": {"status": "submitted", "id": "regex:^EXP-\\d{3}$"}}}, "", None),
]

FAILING_TOOL_SPECS = [
    {"type": "tool_called", "name": "delete_expense"},
    {"type": "tool_called", "value": {"name": "create_expense", "arguments": {"amount": 100}}},
    {"type": "tool_result", "value": {"tool": "create_expense", "result": {"status": "rejected"}}},
    {"type": "tool_result", "value": {"tool": "lookup"}},  # ran with an error
    {"type": "tool_result", "value": {"tool": "missing"}},
]


@pytest.mark.parametrize("params, good, bad", CASES, ids=[f"{c[0].get('type', 'equals')}-{i}" for i, c in enumerate(CASES)])
def test_pass_fail_and_negate(params, good, bad):
    passed = check(params, good)
    assert passed.passed and passed.message == ""
    assert not check({**params, "negate": True}, good).passed
    if bad is None:
        failed = check(params, good, calls=())
    else:
        failed = check(params, bad)
    assert not failed.passed and failed.message
    assert check({**params, "negate": True}, bad if bad is not None else good, calls=CALLS if bad is not None else ()).passed


@pytest.mark.parametrize("params", FAILING_TOOL_SPECS)
def test_tool_assertions_fail_with_reasons(params):
    result = check(params, "")
    assert not result.passed
    assert result.message


def test_failure_messages_say_what_happened():
    assert check({"type": "contains", "value": "approved"}, "Expense submitted").message == "output does not contain 'approved': Expense submitted"
    assert check({"type": "tool_called", "name": "delete"}, "").message == "expected tool delete to be called; called: create_expense, mcp__lookup"
    assert check({"type": "json_path", "path": "$.a", "value": 1}, "nothing").message.startswith("no JSON found in output")
    assert check({"type": "json_path", "path": "$.b", "value": 1}, '{"a": 1}').message == "$.b matched nothing"
    assert "failed: ValueError: boom" in check({"type": "tool_result", "value": {"tool": "lookup"}}, "").message


def test_custom_message_replaces_failure_text_only():
    params = {"type": "contains", "value": "x", "message": "must mention x"}
    assert check(params, "nope").message == "must mention x"
    assert check(params, "x").message == ""


def test_every_assertion_is_evaluated_no_short_circuit():
    specs = [AssertionSpec("contains", {"type": "contains", "value": v}) for v in ("a", "zz", "b", "yy")]
    results = asyncio.run(evaluate_all(specs, Observation(output="a b")))
    assert [r.passed for r in results] == [True, False, True, False]


def test_expected_and_actual_are_recorded():
    r = check({"type": "json_path", "path": "$.n", "value": 2}, '{"n": 3}')
    assert (r.expected, r.actual) == (2, 3)


def test_output_seen_by_assertions_is_hook_data_then_the_reply_and_a_tool_result_only_when_declared():
    from agenttest.model import Reply

    called = (ToolCall(name="t", arguments={}, id="1", result=None, error="it failed"), ToolCall(name="t", arguments={}, id="2", result={"r": 1}))
    assert Reply(text="text", data={"d": 1}, has_data=True).output == {"d": 1}
    assert Reply(text="text").output == "text"
    assert Reply(text="", tool_calls=called).output == ""  # never words the agent did not say (FORMATS §4, round 4)
    assert Reply(text="", tool_calls=called, output_from="tool_result").output == {"r": 1}  # the first that succeeded
    assert Reply(text="text", tool_calls=called, output_from="tool_result").output == {"r": 1}
    assert Reply(text="text", tool_calls=called[:1], output_from="tool_result").output == "text"


def test_registry_accepts_plugins_like_builtins():
    @assertions.register("starts_with", fields=("value",))
    def starts_with(params, obs):
        from agenttest.model import AssertionResult

        ok = obs.text.startswith(params["value"])
        return AssertionResult(type="starts_with", passed=ok, message="" if ok else f"does not start with {params['value']!r}")

    assert check({"type": "starts_with", "value": "He"}, "Hello").passed
    assert not check({"type": "starts_with", "value": "x"}, "Hello").passed
    assert "starts_with" in assertions.names()


def test_a_crashing_assertion_becomes_a_failed_result():
    @assertions.register("explodes")
    def explodes(params, obs):
        raise RuntimeError("kaboom")

    result = check({"type": "explodes"}, "x")
    assert not result.passed and "kaboom" in result.message and result.error


def test_a_negated_check_says_so_in_what_it_checked():
    """A negated assertion's ``checked`` (console -v, every report) reads ``not: …``: a passed
    ``tool_called name=create_expense`` with negate must not look like the tool was called."""
    held = check({"type": "tool_called", "name": "never_called", "negate": True}, "x")
    assert held.passed and held.checked == "not: name=never_called"
    plain = check({"type": "tool_called", "name": "create_expense"}, "x")
    assert plain.checked == "name=create_expense"


def test_a_non_ascii_name_after_a_dot_is_quoted_and_quoted_text_is_left_alone():
    from agenttest.assertions.static import _quoted_names

    assert _quoted_names("$.héllo") == "$['héllo']"
    assert _quoted_names("$.a.ü-b[0]") == "$.a['ü-b'][0]"
    assert _quoted_names("$.items[?(@.città == 'a.é')]") == "$.items[?(@['città'] == 'a.é')]"
    assert _quoted_names("$['x.é'].y") == "$['x.é'].y"  # inside quotes: as written
    assert _quoted_names('$.a[?(@.n == "q\\".é")]') == '$.a[?(@.n == "q\\".é")]'  # an escaped quote does not end the text
    assert _quoted_names("$.plain.path") == "$.plain.path"
    assert _quoted_names("$..città") == "$..['città']"  # recursive descent kept
    assert _quoted_names("$.हिंदी.ชื่อ") == "$['हिंदी']['ชื่อ']"  # combining marks are part of the name
    assert _quoted_names("$.he\u0301llo") == "$['he\u0301llo']"
    # and a path that is wrong for another reason still says so, in the words the user wrote
    assert assertions.check({"type": "json_path", "path": "$.é[", "value": 1})[0][1].startswith("JSONPath '$.é[' does not parse")


def test_an_equals_of_null_or_empty_text_says_so_in_its_message():
    """A failing equals of null said "expected , got …": null and "" were shown as nothing."""
    assert check({"type": "equals", "value": None}, "hello").message == "expected null, got hello"
    assert check({"type": "equals", "value": ""}, "hello").message == 'expected "", got hello'
    assert check({"type": "equals", "value": "yes"}, "").message == 'expected yes, got ""'
    assert check({"type": "equals", "value": False}, "maybe").message == "expected false, got maybe"


def test_a_spec_shared_by_cases_gives_one_finished_verdict_while_it_holds_and_each_failure_its_own():
    """The loader makes one spec of assertions written alike: a check that holds again is the same finished
    verdict (what it checked, negate and message applied once), a failure is finished for its own output, and
    expected values equal but written apart (1 and True) are never taken for one another."""
    spec = AssertionSpec("contains", {"type": "contains", "value": "ok", "message": "said otherwise"})
    first, second = (asyncio.run(evaluate_all([spec], Observation(output=out)))[0] for out in ("ok 1", "ok 2"))
    assert first is second and first.passed and first.checked == "value=ok"
    bad = [asyncio.run(evaluate_all([spec], Observation(output=out)))[0] for out in ("nope", "nah")]
    assert [b.message for b in bad] == ["said otherwise"] * 2 and not bad[0].passed and bad[0].actual == "nope" and bad[1].actual == "nah"
    assert asyncio.run(evaluate_all([spec], Observation(output="ok 3")))[0].passed
    negated = AssertionSpec("contains", {"type": "contains", "value": "ok", "negate": True})
    held, broke = (asyncio.run(evaluate_all([negated], Observation(output=out)))[0] for out in ("fine", "ok"))
    assert held.passed and not broke.passed and broke.message == "expected not: contains value=ok (it held)" and broke.negated
    again = asyncio.run(evaluate_all([negated], Observation(output="fine")))[0]
    assert again == held and asyncio.run(evaluate_all([negated], Observation(output="fine")))[0] is again
    one, true = AssertionSpec("equals", {"value": 1}), AssertionSpec("equals", {"value": True})
    assert asyncio.run(evaluate_all([one], Observation(output="1")))[0].expected == 1
    assert asyncio.run(evaluate_all([true], Observation(output="true")))[0].expected is True
