"""Issue 50 items 8–10: no false green a new user can write — an assertion's unknown key fails the load, a
case that checks nothing says so, and the header names who judges."""

from __future__ import annotations

import json

import pytest

from helpers import cli, report

TOOLS = [{"name": "create_expense", "description": "file an expense",
          "parameters": {"type": "object", "properties": {"amount": {"type": "integer"}}}}]
RULES = """\
rules:
  - user: "^expense"
    tool_calls: [{name: create_expense, arguments: {amount: 5}}]
  - tool: "*"
    reply: '{"count": 1}'
default: '{"count": 1}'
"""
TOOLS_PY = "def create_expense(ctx, amount):\n    ctx.world['spent'] = amount\n    return {'ok': True}\n"


@pytest.fixture
def books(offline_app):
    offline_app.agent("bot", connector="mock", tools=TOOLS, files={"mock.yml": RULES, "src/tools.py": TOOLS_PY})
    return offline_app


def _run(app, cases, *args):
    path = app.cases("assistants/bot/tests/t.jsonl", cases)
    return path, cli("-i", str(path), *args)


def _at(case, key):
    """``line:column`` of the key ``key`` (its last place) in a case written as ``AppBuilder.cases`` writes it."""
    return json.dumps(case).rindex(f'"{key}"') + 1


# ---- item 8: assertions fail closed ---------------------------------------------------------------

@pytest.mark.parametrize("assertion, key, said", [
    ({"type": "json_path", "path": "$.count", "expected": 42}, "expected",
     "'expected' is not a field of a 'json_path' assertion; did you mean 'value'?"),
    ({"type": "state", "path": "$.spent", "expected": 9999}, "expected",
     "'expected' is not a field of a 'state' assertion; did you mean 'value'?"),
    ({"type": "tool_called", "name": "create_expense", "arguments": {"amount": 9999}}, "arguments",
     "'arguments' is not a field of a 'tool_called' assertion; 'tool_called' checks arguments inside its value: "
     '"value": {"name": "create_expense", "arguments": {"amount": 9999}}; '
     'or use {"type": "tool_args", "tool": "create_expense", "arguments": {"amount": 9999}}'),
    ({"type": "contains", "value": "count", "colour": "red"}, "colour",
     "'colour' is not a field of a 'contains' assertion; 'contains' takes value (and type, message, negate, id, severity, weight, description)"),
])
def test_an_unknown_key_in_an_assertion_is_exit_2_with_what_was_meant(books, assertion, key, said):
    case = {"id": "a", "input": "expense 5", "world": {}, "assert": [assertion]}
    path, result = _run(books, [case])
    assert result.exit_code == 2, result.output
    assert f"Error: {path}:1:{_at(case, key)}: {said}\n" in result.stderr
    assert "PASSED" not in result.output


def test_the_same_key_in_a_checkpoint_a_turn_and_a_generated_case_fails_too(books):
    checkpoint = {"id": "d", "simulator": {"script": ["expense 5"]},
                  "checkpoints": [{"id": "c", "assert": {"type": "json_path", "path": "$.count", "expected": 2}}]}
    turn = {"id": "s", "turns": [{"input": "hi", "assert": {"type": "json_path", "path": "$.count", "expected": 2}}]}
    path, result = _run(books, [checkpoint, turn])
    assert result.exit_code == 2
    for line, case in ((1, checkpoint), (2, turn)):
        said = f"{path}:{line}:{_at(case, 'expected')}: 'expected' is not a field of a 'json_path' assertion; did you mean 'value'?"
        assert said in result.stderr
    from agenttest.inputs.documents import KeyPolicy
    from agenttest.inputs.reading import parse

    generated = parse(json.dumps([{"id": "g", "input": "x", "rationale": "why", "assert": {"type": "contains", "expected": "y"}}]),
                      "agents:gen", kind=".json", policy=KeyPolicy(lenient=True))
    assert [str(p) for p in generated.problems] == [
        "agents:gen:1:79: 'expected' is not a field of a 'contains' assertion; did you mean 'value'?"]
    assert generated.warnings == ["agents:gen:1:28: 'rationale' is not a field of a case; ignored"]  # a case's extra key: kept lenient


def test_yaml_says_it_at_the_key(books):
    path = books.file("assistants/bot/tests/t.yaml", """\
        - id: a
          input: expense 5
          assert:
            - type: tool_called
              name: create_expense
              arguments: {amount: 9999}
        """)
    result = cli("-i", str(path))
    assert result.exit_code == 2 and f"Error: {path}:6:7: 'arguments' is not a field of a 'tool_called' assertion" in result.stderr


def test_a_key_that_holds_assertions_is_an_error_wherever_it_is(books):
    cases = [
        {"id": "a", "input": "hi", "checks": [{"type": "contains", "value": "zzz"}]},
        {"id": "b", "input": "hi", "evals": ["contains"]},
        {"id": "c", "input": "hi", "post_checks": {"type": "contains", "value": "zzz"}},
        {"id": "d", "turns": [{"input": "hi", "validate": [{"type": "contains", "value": "zzz"}]}]},
    ]
    path, result = _run(books, cases)
    assert result.exit_code == 2
    for line, (case, key, where) in enumerate(zip(cases, ("checks", "evals", "post_checks", "validate"), ("a case",) * 3 + ("a turn",)), 1):
        said = f"'{key}' is not a field of {where}: it holds assertions, which would never be checked; did you mean 'assert'?"
        assert f"{path}:{line}:{_at(case, key)}: {said}" in result.stderr


def test_expected_beside_assert_is_an_error_and_alone_is_yaos_equals(books):
    case = {"id": "a", "input": "hi", "assert": {"type": "contains", "value": "count"}, "expected": "nope"}
    path, result = _run(books, [case])
    assert result.exit_code == 2
    assert (f"{path}:1:{_at(case, 'expected')}: give 'assert' or 'expected', not both: 'expected' would be ignored; "
            "check it among the assertions: {\"type\": \"equals\", \"value\": …} in 'assert'") in result.stderr
    path, result = _run(books, [{"id": "a", "input": "hi", "assert": [], "expected": "nope"}], "-o", str(books.root / "r.json"))
    assert result.exit_code == 1 and report(books.root / "r.json")["results"][0]["status"] == "failed"


def test_case_keys_yao_files_carry_stay_warnings_and_others_fail(books):
    count = {"type": "contains", "value": "count"}
    case = {"id": "a", "input": "hi", "category": "smoke", "_comment": "x", "assert": count}
    path, result = _run(books, [case])
    assert result.exit_code == 0, result.output
    assert f"{path}:1:{_at(case, 'category')}: 'category' is not a field of a case; ignored" in result.stdout
    assert f"{path}:1:{_at(case, '_comment')}: '_comment' is not a field of a case; ignored" in result.stdout
    path, result = _run(books, [{"id": "a", "input": "hi", "colour": "red", "assert": count}])
    assert result.exit_code == 2
    assert (f"{path}:1:28: 'colour' is not a field of a case; keep your own data under 'metadata' (only the notes Yao files "
            "carry — category, comment, priority … — are ignored, with a warning)") in result.stderr


def test_an_assertions_description_is_a_note(books):
    path, result = _run(books, [{"id": "a", "input": "hi", "assert": {"type": "contains", "value": "count", "description": "a note"}}],
                        "--strict", "-v")
    assert result.exit_code == 0, result.output
    assert "count" in result.output and "description=" not in result.output  # not a parameter of the check
    assert "✓ a note: contains value=count" in result.output  # the criterion it stands for names it (seed format A's label)


# ---- item 9: a case that checks nothing says so -------------------------------------------------------

NOTHING = [
    {"id": "bare", "input": "hi"},
    {"id": "empty", "input": "hi", "assert": []},
    {"id": "checked", "input": "hi", "assert": {"type": "contains", "value": "count"}},
    {"id": "optional", "simulator": {"script": ["hi"]},
     "checkpoints": [{"id": "c", "required": False, "assert": {"type": "contains", "value": "zz"}}]},
    {"id": "sim", "end": "simulator", "simulator": {"script": ["hi"]}},
    {"id": "budgeted", "input": "hi", "budget": {"turns": 3}},
    {"id": "expected", "input": "hi", "expected": {"count": 1}},
    {"id": "skipped", "input": "hi", "skip": True},
]
SAID = ("4 cases (bare, empty, optional, sim) checked nothing but that the agent answered "
        "(no assertion, expected, required checkpoint or budget).")


def test_cases_that_check_nothing_are_counted_in_the_summary_and_every_report(books):
    out = books.root / "r"
    path, result = _run(books, NOTHING, "-o", f"{out}.json", "-o", f"{out}.md", "-o", f"{out}.xml", "-o", f"{out}.html", "-o", f"{out}.jsonl")
    assert result.exit_code == 0, result.output  # Yao's rule stands: an answer passes them
    assert ("⚠ 4 cases check nothing but that the agent answers (no assertion, expected, required checkpoint or budget): "
            "bare, empty, optional, sim — they pass whenever it answers; add assertions, or --strict fails them") in result.stdout
    assert f"  Checked nothing: {SAID}" in result.stdout
    assert "✨ ALL TESTS PASSED ✨ (4 of them checked nothing but that the agent answered)" in result.stdout
    data = report(f"{out}.json")
    assert data["summary"]["checked_nothing"] == 4
    assert [r["id"] for r in data["results"] if r.get("checked_nothing")] == ["bare", "empty", "optional", "sim"]
    assert f"> ⚠ **Checked nothing:** {SAID}" in (books.root / "r.md").read_text()
    xml = (books.root / "r.xml").read_text()
    assert '<property name="checked_nothing" value="4" />' in xml and xml.count('<property name="checked_nothing" value="true" />') == 4
    assert f"<b>Checked nothing:</b> {SAID}" in (books.root / "r.html").read_text()
    lines = [json.loads(line) for line in (books.root / "r.jsonl").read_text().splitlines()]
    assert sum(1 for line in lines if line.get("checked_nothing") is True) == 4


def test_strict_fails_a_case_that_checks_nothing(books):
    out = books.root / "r.json"
    path, result = _run(books, NOTHING, "--strict", "-o", str(out))
    assert result.exit_code == 1
    rows = {r["id"]: r for r in report(out)["results"]}
    assert {i for i, r in rows.items() if r["status"] == "failed"} == {"bare", "empty", "optional", "sim"}
    assert rows["bare"]["error"] == ("checks nothing but that the agent answered (no assertion, expected, required checkpoint or "
                                     "budget), which --strict does not pass: add assertions to the case")
    assert "— they pass whenever it answers; --strict fails them" in result.stdout
    path, result = _run(books, [NOTHING[2], NOTHING[5]], "--strict")
    assert result.exit_code == 0 and "check nothing" not in result.stdout


def test_a_literal_message_is_a_look_at_the_reply_not_a_case_that_checks_nothing(books):
    result = cli("-i", "hello there", "-n", "bot", "--app", str(books.root), "--strict")
    assert result.exit_code == 0 and "checked nothing" not in result.output


# ---- item 10: the header names who judges -------------------------------------------------------------

def _cast(app):
    app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    app.agent("judge", connector="mock", files={"mock.yml": 'default: \'{"passed": true, "reason": "fine"}\'\n'})
    app.agent("sim", connector="mock", files={"mock.yml": 'default: \'{"message": "bye", "goal_achieved": true}\'\n'})
    return app.cases("assistants/bot/tests/t.jsonl", [
        {"id": "judged", "input": "hi", "assert": {"type": "agent", "use": "agents:judge", "value": "polite"}},
        {"id": "talk", "simulator": {"use": "sim"}, "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "hi"}}]},
        {"id": "real-judge", "input": "hi", "assert": {"type": "agent", "use": "agents:judge", "value": "polite", "options": {"connector": "fake"}}},
    ])


def test_a_judge_or_simulator_left_on_the_mock_under_a_real_agent_is_named_and_warned_of(app, tmp_path):
    path = _cast(app)
    out = tmp_path / "r"
    result = cli("-i", str(path), "-c", "fake", "-o", f"{out}.json", "-o", f"{out}.md", "-o", f"{out}.xml")
    assert "ℹ Connector: fake\n" in result.stdout and "ℹ Simulator: sim on mock\n" in result.stdout
    assert "ℹ Judges: judge on mock, judge on fake\n" in result.stdout
    judge = ("the validator judge runs on the mock connector 'mock' while the agent under test runs on 'fake': its verdicts are the "
             "mock's canned rules, not a model's judgement — give it a connector of its own (\"options\": {\"connector\": …} on the "
             "assertion, or its package.yao)")
    sim = ("the simulator sim runs on the mock connector 'mock' while the agent under test runs on 'fake': the user it plays follows "
           "the mock's canned rules — give it a connector of its own (simulator.options.connector, or its package.yao)")
    assert f"⚠ {judge}\n" in result.stdout and f"⚠ {sim}\n" in result.stdout
    data = report(f"{out}.json")
    assert data["summary"]["roles"] == [{"role": "agent", "agent": "bot", "connector": "fake"},
                                        {"role": "simulator", "agent": "sim", "connector": "mock", "mock": True},
                                        {"role": "validator", "agent": "judge", "connector": "mock", "mock": True},
                                        {"role": "validator", "agent": "judge", "connector": "fake"}]
    assert judge in data["metadata"]["warnings"] and sim in data["metadata"]["warnings"]
    roles = "agent bot on fake; simulator sim on mock (a mock); validator judge on mock (a mock); validator judge on fake"
    assert f"- **Roles:** {roles}" in (tmp_path / "r.md").read_text()
    assert f'<property name="roles" value="{roles}" />' in (tmp_path / "r.xml").read_text()
    from agenttest.reporting.codec import read

    assert [p.connector for p in read(f"{out}.json").players] == ["fake", "mock", "mock", "fake"]  # read back as written


def test_all_on_the_mock_names_the_roles_without_a_warning(app, tmp_path):
    path = _cast(app)
    result = cli("-i", str(path), "-o", str(tmp_path / "r.json"))
    assert "ℹ Judges: judge on mock, judge on fake\n" in result.stdout and "runs on the mock connector" not in result.output
    plain = app.cases("assistants/bot/tests/plain.jsonl", [{"id": "a", "input": "hi", "assert": {"type": "contains", "value": "hi"}}])
    result = cli("-i", str(plain), "-c", "fake", "-o", str(tmp_path / "p.json"))
    assert "Judges" not in result.stdout and "roles" not in report(tmp_path / "p.json")["summary"]
