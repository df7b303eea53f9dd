"""CEL (runtime/cel.py, assertions/cel.py): the helpers and macros over world, diff and journal, the checks made
before a run, and the native ``cel`` and ``collateral`` assertions in an ordinary case file."""

from __future__ import annotations

import pytest

from agenttest.model import ToolCall
from agenttest.runtime import cel
from agenttest.runtime.journal import changed_collections, collection_diff, context
from helpers import Answer, cli, report

WORLD = {"shop": {"orders": [{"id": 1, "status": "paid"}, {"id": 2, "status": "refunded"}], "refunds": []}}
BEFORE = {"shop": {"orders": [{"id": 1, "status": "paid"}, {"id": 2, "status": "delivered"}, {"id": 3, "status": "paid"}]}}
CALLS = [ToolCall(name="shop__get_order", arguments={"id": 2}, result={"id": 2}, vt="2025-01-01T00:00:05Z"),
         ToolCall(name="email.send", arguments={"to": "a"}, error="timeout", fault="timeout", vt="2025-01-01T00:00:06Z"),
         ToolCall(name="email.send", arguments={"to": "a"}, result={"id": 1}, vt="2025-01-01T00:00:07Z")]


def evaluate(expr):
    names = {"shop__get_order": "shop.get_order"}
    return cel.evaluate(expr, context(WORLD, BEFORE, CALLS, "All done.", lambda n: names.get(n, n)))


@pytest.mark.parametrize("expr,value", [
    ('world.shop.orders.exists(o, o.id == 2 && o.status == "refunded")', True),
    ("world.shop.orders.all(o, o.id > 0)", True),
    ("size(world.shop.orders.filter(o, o.status == \"paid\")) == 1", True),
    ("world.shop.orders.map(o, o.id) == [1, 2]", True),
    ('journal.calls("email.send").filter(c, c.fault_injected).size() == 1', True),
    ('journal.count("email.send") == 2 && count("shop.get_order") == 1', True),
    ('journal.before("shop.get_order", "email.send") && !before("email.send", "shop.get_order")', True),
    ('journal.last("email.send").ok && journal.last("email.send").vt == "2025-01-01T00:00:07Z"', True),
    ('journal.last("calendar.create_event") == null', True),
    ("all_of([true, journal.tools.size() == 3]) && any_of(false, true) && !all_of(true, false)", True),
    ('journal.final_response.contains("Done")', False),
    ("diff.shop.orders.changed.exists(c, c.id == 2 && c.fields == [\"status\"])", True),
    ("diff.shop.orders.removed.size() == 1 && diff.shop.orders.added.size() == 0", True),
    ("diff.shop.refunds.added.size() == 0", True),
])
def test_helpers_and_macros(expr, value):
    assert cel.check(expr) == []
    assert evaluate(expr) is value


def test_an_expression_that_cannot_be_evaluated_says_why():
    with pytest.raises(cel.CelError, match="no such member"):
        evaluate("world.crm.contacts.size() > 0")
    with pytest.raises(cel.CelError, match="out of range|invalid_argument"):
        evaluate("world.shop.orders[5].id == 1")


def test_diffs_by_key_and_by_value_and_the_collections_changed():
    assert collection_diff([{"id": 1, "a": 1}], [{"id": 1, "a": 2}, {"id": 2}]) == {
        "added": [{"id": 2}], "removed": [], "changed": [{"id": 1, "before": {"id": 1, "a": 1}, "after": {"id": 1, "a": 2}, "fields": ["a"]}]}
    assert collection_diff(["x", "y"], ["y", "z"]) == {"added": ["z"], "removed": ["x"], "changed": []}
    assert changed_collections(BEFORE, {**WORLD, "crm": {"contacts": [{"id": 1}]}}) == ["shop.orders", "shop.refunds", "crm.contacts"]


@pytest.mark.parametrize("expr,message", [
    ("a +", "CEL syntax error"),
    ("", "empty CEL expression"),
    ("journal.count(1) > 0", "count() takes a tool's name, not an int"),
    ("journal.before(\"a\") ", "before() takes 2 arguments, not 1"),
    ("world.x.exists(o) ", "exists() takes a variable and an expression"),
    ("world.x.exists(o, 1 + 1)", "the body of exists() gives an int"),
    ("'a' && true", "'&&' needs booleans, not a string"),
    ("[1] in 2", "'in' needs a list or a map on its right"),
    ("diff.count(\"x\") > 1", "count() is a helper of the journal"),
])
def test_problems_known_before_the_run(expr, message):
    problems = cel.check(expr)
    assert problems and message in problems[0].message, problems


# ---- the native assertions in an ordinary case file ------------------------------------------------------


TOOLS = [{"name": "refund", "description": "refund", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}}]
TOOLS_PY = """
def refund(ctx, id):
    for order in ctx.world["shop"]["orders"]:
        if order["id"] == id:
            order["status"] = "refunded"
    ctx.world.setdefault("audit", []).append(id)
    return {"ok": True}
"""


def _run(app, server, cases):
    server.responder = lambda req: (Answer("done") if req["messages"][-1]["role"] == "tool"
                                    else Answer("", tool_calls=[{"name": "refund", "arguments": {"id": 2}}]))
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    return cli("-i", str(path), "-n", "bot", "-o", str(out), "--no-history"), out


def test_cel_and_collateral_in_any_case(app, server):
    world = {"shop": {"orders": [{"id": 2, "status": "paid"}]}}
    cases = [{"id": "ok", "input": "refund 2", "world": world, "assert": [
        {"type": "cel", "expr": 'world.shop.orders.exists(o, o.status == "refunded") && journal.count("refund") == 1'},
        {"type": "cel", "expr": "diff.shop.orders.changed.size() == 1", "id": "one-change", "weight": 2},
        {"type": "collateral", "allow_changes": ["shop.orders", "audit"]}]},
        {"id": "collateral", "input": "refund 2", "world": world, "assert": [{"type": "collateral", "allow_changes": ["shop"]}]},
        {"id": "minor", "input": "refund 2", "world": world, "assert": [
            {"type": "cel", "expr": "journal.count(\"refund\") == 2", "severity": "minor"}, {"type": "cel", "expr": "true"}]}]
    result, out = _run(app, server, cases)
    data = report(out)
    by = {r["id"]: r for r in data["results"]}
    assert by["ok"]["status"] == "passed" and by["ok"]["score"] == 1.0
    assert by["collateral"]["status"] == "failed" and "changed outside allow_changes: audit" in by["collateral"]["error"]
    assert by["minor"]["status"] == "passed" and by["minor"]["minor_failures"]
    assert result.exit_code == 1


def test_a_bad_cel_expression_in_a_case_file_is_a_load_problem(app, server):
    path = app.cases("cases.jsonl", [{"id": "x", "input": "hi", "assert": [{"type": "cel", "expr": "journal.count(\"a\") >= "}]},
                                     {"id": "y", "input": "hi", "assert": [{"type": "cel", "expr": "true", "severity": "tiny"}]}])
    app.agent("bot")
    result = cli("-i", str(path), "-n", "bot", "--dry-run")
    assert result.exit_code == 2
    assert f"{path}:1:" in result.output and "CEL syntax error" in result.output and "(at 1:" in result.output
    assert "'severity'" in result.output and "tiny" in result.output


def test_using_cel_leaves_the_process_recursion_limit_alone():
    """celpy.Environment() raises the recursion limit to 2500; it would change how deep a case file may nest before
    the JSON parser gives up (test_loading's limits), so the limit is put back."""
    import sys

    before = sys.getrecursionlimit()
    cel._env = None
    assert cel.check("journal.count(\"x\") >= 0") == []
    assert sys.getrecursionlimit() == before
