"""The observation of a turn and what reads it (docs/formats-a.md): ``check`` with equals/exists/absent/contains,
``all``/``any``, custom evaluators with the recorded history, a turn's ``selection`` among the options the
previous turn published (and seed format A's errors), a turn's ``input`` beside its ``variants``, and an
assertion's ``id``/``description`` in results."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report

TOOLS = [
    {"name": "products_search", "description": "find", "parameters": {"type": "object", "properties": {}}},
    {"name": "product_select", "description": "choose", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}},
]
TOOLS_PY = """
def products_search(ctx):
    return ctx.world["catalogue"]

def product_select(ctx, id):
    ctx.world["selected"] = id
    return {"selected": id}
"""
INDEX_PY = """
def next(ctx, payload):
    published = {}
    for call in payload["tools"]:
        if call["name"] == "products_search":
            published["interaction"] = {"kind": "choice", "options": [{"id": p["id"], "label": p["name"]} for p in call["result"]]}
        if call["name"] == "product_select":
            published["facts"] = [{"type": "product.selected", "productId": call["arguments"]["id"]}]
    return published or None
"""
EVALUATORS_PY = """
SEEN = []

def selected_first_shown(subject):
    facts = subject["observation"]["checkpoint"]["facts"]
    shown = [o for t in subject["history"] for o in ((t["observation"]["response"].get("interaction") or {}).get("options") or [])]
    wanted = subject["params"]["index"]
    ok = bool(facts) and bool(shown) and facts[-1]["productId"] == shown[wanted]["id"]
    return {"pass": ok, "message": f"history of {len(subject['history'])} turns; selected {facts[-1]['productId'] if facts else None}"}

def turns_seen(subject):
    return {"pass": len(subject["history"]) == subject["params"]["turns"], "message": f"{len(subject['history'])} turns recorded"}
"""
CATALOGUE = [{"id": "p-1", "name": "Desk lamp"}, {"id": "p-2", "name": "Chair"}, {"id": "p-3", "name": "Chair"}]


def brain(req):
    """Shows products when asked; selects the product the user's selection names; answers after a tool."""
    if req["messages"][-1]["role"] == "tool":
        return Answer(content="Here you are.")
    said = last_user(req)
    content = [m for m in req["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, list):  # the text, then the selection as a data part sent as its JSON text
        chosen = json.loads(content[-1]["text"])["selection"]
        return Answer(content="", tool_calls=[{"name": "product_select", "arguments": {"id": chosen["id"]}}])
    if "show" in said.lower():
        return Answer(content="", tool_calls=[{"name": "products_search", "arguments": {}}])
    return Answer(content="Hello.")


@pytest.fixture
def shop(app, server):
    server.responder = brain
    app.agent("shop", tools=TOOLS, files={"src/tools.py": TOOLS_PY, "src/index.py": INDEX_PY})
    app.file("scripts/history.py", EVALUATORS_PY)
    return app


def run(app, cases, *args):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "shop", "-o", str(out), *args)
    return result, report(out) if out.exists() else None


def check(path, operator, value=None, **more):
    return {"type": "check", "path": path, "operator": operator, **({"value": value} if value is not None else {}), **more}


SEARCH = {"id": "search", "input": "Show available products", "assert": [
    check(["response", "status"], "equals", "completed", id="completed"),
    check(["response", "interaction", "kind"], "equals", "choice", id="choice"),
    check(["response", "interaction", "options"], "exists", id="options")]}


def select(selection, **more):
    return {"id": "select", "input": "I choose this one", "selection": selection, **more, "assert": [
        check(["checkpoint", "facts"], "contains", {"type": "product.selected"}, id="selection-recorded", description="The choice is recorded"),
        check(["response", "interaction"], "absent", id="choice-closed")]}


def test_a_conversation_observed_turn_by_turn_with_a_structured_selection(shop, server):
    result, data = run(shop, [{"id": "browse", "world": {"catalogue": CATALOGUE}, "turns": [SEARCH, select({"optionIndex": 1})],
                               "assert": [check(["checkpoint", "world", "selected"], "equals", "p-2"),
                                          {"type": "evaluator", "use": "scripts.history.selected_first_shown", "params": {"index": 1}}]}])
    assert result.exit_code == 0, result.output
    (r,) = data["results"]
    assert [a["id"] for t in r["turns"] for a in t["assertions"]] == ["completed", "choice", "options", "selection-recorded", "choice-closed"]
    assert r["turns"][1]["assertions"][0]["description"] == "The choice is recorded"
    final = r["assertions"][1]
    assert final["passed"] and final["actual"] == "history of 2 turns; selected p-2"
    # the selection reached the model as a data part of the user's message (sent as its JSON text)
    sent = server.bodies()[2]["messages"][-1]["content"]
    assert sent[0] == {"type": "text", "text": "I choose this one"}
    assert json.loads(sent[1]["text"]) == {"selection": {"id": "p-2", "label": "Chair", "index": 1}}


@pytest.mark.parametrize("selection, error", [
    ({"optionIndex": 3}, "turn 2 (select): selection optionIndex 3 is out of range (the interaction has 3 options)"),
    ({"optionId": "p-9"}, "turn 2 (select): selection optionId 'p-9': no published option has that id (they are: p-1, p-2, p-3)"),
    ({"optionLabel": "Chair"}, "turn 2 (select): selection optionLabel 'Chair' is ambiguous: 2 options have it"),
    ({"optionLabel": "Desk lamp"}, ""),
])
def test_a_selection_that_names_no_published_option_is_the_case_error(shop, selection, error):
    result, data = run(shop, [{"id": "c", "world": {"catalogue": CATALOGUE}, "turns": [SEARCH, select(selection), {"input": "thanks"}],
                               "assert": check(["response", "status"], "equals", "completed")}])
    r = data["results"][0]
    if not error:
        assert r["status"] == "passed", r
        return
    assert result.exit_code == 1
    assert r["status"] == "error" and r["error"] == error
    assert r["turns_not_run"] == 2 and r["assertions"] == []  # the final check never ran: a partial conversation is not accepted


def test_a_selection_with_no_interaction_open(shop):
    result, data = run(shop, [{"id": "c", "world": {"catalogue": CATALOGUE}, "turns": [select({"optionIndex": 0})]}])
    assert data["results"][0]["error"] == ("turn 1 (select): selection optionIndex 0: no active interaction to choose from "
                                           "(the previous turn published none)")


def test_check_failures_say_where_and_what(shop):
    result, data = run(shop, [{"id": "c", "world": {"catalogue": CATALOGUE}, "turns": [{"input": "Show available products", "assert": [
        check(["response", "interaction", "kind"], "equals", "list"),
        check(["response", "interaction"], "absent"),
        check(["checkpoint", "facts"], "contains", {"type": "product.selected"}),
        check(["response", "nothing"], "exists"),
        check(["response", "interaction", "options", 0], "contains", {"label": "Desk"}),
        check(["response", "text"], "contains", "you are")]}]}])
    assert result.exit_code == 1
    checks = data["results"][0]["turns"][0]["assertions"]
    assert [c["passed"] for c in checks] == [False, False, False, False, False, True]
    assert checks[0]["message"] == 'response.interaction.kind: expected "list", got "choice"'
    assert checks[1]["message"].startswith('response.interaction is present: {"kind":"choice"')
    assert checks[2]["message"] == 'no item of checkpoint.facts matches {"type":"product.selected"} (it holds [])'
    assert checks[3]["message"] == "response.nothing is absent"
    assert checks[4]["message"] == ('response.interaction.options.0 does not contain {"label":"Desk"} (it holds {"id":"p-1","label":"Desk lamp"})')


def test_all_and_any(shop):
    ok, no = check(["response", "status"], "equals", "completed", id="ok"), check(["response", "status"], "equals", "failed", id="no")
    result, data = run(shop, [{"id": "c", "input": "hi", "assert": [
        {"type": "any", "assertions": [no, ok], "id": "either"}, {"type": "all", "assertions": [ok, no], "description": "Both"},
        {"type": "any", "assertions": [no, {**no, "id": "no-again"}]}]}])
    assert result.exit_code == 1
    either, both, neither = data["results"][0]["assertions"]
    assert either["passed"] and either["id"] == "either"
    assert not both["passed"] and both["message"] == 'all: 1 of 2 did not hold: no: check: expected "failed", got "completed"'.replace(
        "check: ", "response.status: ")
    assert neither["message"].startswith("any: none of 2 held: no: response.status")
    assert both["details"]["assertions"] == [{"name": "ok", "passed": True},
                                             {"name": "no", "passed": False, "message": 'response.status: expected "failed", got "completed"'}]


def test_an_evaluator_at_a_step_sees_the_earlier_turns_and_at_the_end_all_of_them(shop):
    turns_seen = {"type": "evaluator", "use": "scripts.history.turns_seen"}
    result, data = run(shop, [{"id": "c", "turns": [{"input": "hi", "assert": {**turns_seen, "params": {"turns": 0}}},
                                                    {"input": "again", "assert": {**turns_seen, "params": {"turns": 1}}}],
                               "assert": {**turns_seen, "params": {"turns": 2}}}])
    assert result.exit_code == 0, result.output


def test_a_turn_input_beside_variants_is_the_baseline_and_only_the_variants_run(shop, server):
    turn = {"id": "search", "input": "BASELINE never sent", "variants": [{"id": "direct", "input": "Show available products"},
                                                                          {"id": "polite", "input": "Please show me the products"}],
            "assert": check(["response", "interaction", "kind"], "equals", "choice", id="choice")}
    result, data = run(shop, [{"id": "v", "world": {"catalogue": CATALOGUE}, "turns": [turn]}], "--runs", "2")
    assert result.exit_code == 0, result.output
    assert [(r["id"], r["variants"], r["run"]) for r in data["results"]] == [
        ("v[direct]", ["direct"], 1), ("v[direct]", ["direct"], 2), ("v[polite]", ["polite"], 1), ("v[polite]", ["polite"], 2)]
    assert not any("BASELINE" in json.dumps(b) for b in server.bodies())


def test_one_broken_variant_fails_at_its_assertion(shop):
    turn = {"id": "search", "input": "Show available products", "variants": [{"id": "direct", "input": "Show available products"},
                                                                             {"id": "vague", "input": "Hello there"}],
            "assert": check(["response", "interaction", "kind"], "equals", "choice", id="choice")}
    result, data = run(shop, [{"id": "v", "world": {"catalogue": CATALOGUE}, "turns": [turn]}])
    assert result.exit_code == 1
    direct, vague = data["results"]
    assert direct["status"] == "passed" and vague["status"] == "failed"
    assert vague["error"] == "turn 1 (search): choice: response.interaction.kind is absent (expected \"choice\")"


def test_bad_observation_checks_are_located(shop):
    path = shop.cases("bad.jsonl", [
        {"id": "a", "input": "x", "assert": {"type": "check", "path": ["response", "__proto__"], "operator": "exists"}},
        {"id": "b", "input": "x", "assert": {"type": "check", "path": ["response"], "operator": "equal", "value": 1}},
        {"id": "c", "input": "x", "assert": {"type": "check", "path": ["response"], "operator": "absent", "value": 1}},
        {"id": "d", "input": "x", "assert": {"type": "any", "assertions": [{"type": "chek"}]}},
        {"id": "e", "input": "x", "assert": {"type": "all", "assertions": []}},
        {"id": "f", "turns": [{"input": "x", "selection": {"optionIndex": 0, "optionId": "p"}}]},
        {"id": "g", "input": "x", "assert": {"type": "evaluator", "use": "history.turns_seen"}},
    ])
    result = cli("-i", str(path), "-n", "shop")
    assert result.exit_code == 2
    lines = result.output.replace(str(path), "bad.jsonl").splitlines()
    assert lines[:7] == [
        "Error: bad.jsonl:1:55: 'path' holds '__proto__', which is not a safe key; name the field itself",
        "bad.jsonl:2:89: 'operator' cannot be 'equal'; did you mean 'equals'?",
        "bad.jsonl:3:99: 'absent' takes no 'value'; remove it",
        "bad.jsonl:4:69: unknown assertion type 'chek'; did you mean 'check'?",
        "bad.jsonl:5:67: 'assertions' must not be an empty list",
        "bad.jsonl:6:70: a selection gives one selector, not optionIndex and optionId; keep one of them",
        "bad.jsonl:7:59: an 'evaluator' needs \"use\": \"scripts.<module>.<function>\"; e.g. \"scripts.history.selected_product\""]


def test_an_evaluator_that_is_not_there_is_said_before_the_run(shop):
    path = shop.cases("c.jsonl", [{"id": "a", "input": "x", "assert": {"type": "any", "assertions": [
        {"type": "evaluator", "use": "scripts.history.no_such_function"}]}}])
    result = cli("-i", str(path), "-n", "shop")
    assert result.exit_code == 2
    assert "c.jsonl:1:" in result.output and "no_such_function" in result.output
