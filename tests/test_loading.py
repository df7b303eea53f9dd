"""Case files: every valid shape in all three formats, and every kind of bad input with its location."""

from __future__ import annotations

import json
import textwrap

import pytest

from agenttest.errors import InputError
from agenttest.inputs.documents import KeyPolicy
from agenttest.inputs.reading import load_file, parse, parse_text
from helpers import cli


def problems(text: str, name: str = "cases.jsonl", simulator: str | None = None) -> list[str]:
    with pytest.raises(InputError) as info:
        parse_text(textwrap.dedent(text).lstrip("\n"), name, simulator)
    return [str(p) for p in info.value.problems]


# ---- valid files ---------------------------------------------------------------------------


def test_jsonl_skips_blank_and_comment_lines_and_accepts_both_spellings():
    text = '''
    // a comment
    {"id": "a", "input": "hi", "assert": {"type": "contains", "value": "x"}}

    {"id": "b", "input": "hi", "assertions": [{"type": "regex", "pattern": "x"}, {"value": "hi"}]}
    '''
    cases = parse_text(textwrap.dedent(text), "c.jsonl")
    assert [c.id for c in cases] == ["a", "b"]
    assert cases[0].assertions[0].type == "contains"
    assert [a.type for a in cases[1].assertions] == ["regex", "equals"]
    assert cases[0].location.line == 3
    # a type alone is that type with nothing else: each type needs a field of its own, so it is said
    bare = parse('{"id": "c", "input": "hi", "assert": ["equals"]}\n', "c.jsonl").problems
    assert [str(p) for p in bare] == ["c.jsonl:1:39: 'equals' needs a 'value'; the expected output, e.g. {\"type\": \"equals\", \"value\": \"yes\"}"]


def test_json_array_and_wrapped_object():
    arr = json.dumps([{"id": "a", "input": "x"}, {"id": "b", "input": "y"}], indent=2)
    assert [c.id for c in parse_text(arr, "c.json")] == ["a", "b"]
    wrapped = json.dumps({"cases": [{"id": "c", "input": "z"}]})
    assert [c.id for c in parse_text(wrapped, "c.json")] == ["c"]


def test_yaml_list_and_cases_key():
    text = """
    - id: a
      input: hello
      assert:
        - type: contains
          value: hi
    """
    assert parse_text(textwrap.dedent(text), "c.yaml")[0].assertions[0].params["value"] == "hi"
    text2 = "cases:\n  - id: b\n    input: hey\n"
    assert parse_text(text2, "c.yml")[0].id == "b"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("Hello", [{"role": "user", "content": "Hello"}]),
        ({"content": "Hi"}, [{"role": "user", "content": "Hi"}]),
        ({"role": "system", "content": "S"}, [{"role": "system", "content": "S"}]),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"content": "c"}],
         [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]),
        ([{"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "source": "file://./r.jpg"}]}],
         [{"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "source": "file://./r.jpg"}]}]),
    ],
)
def test_input_shapes_normalize_to_messages(value, expected):
    case = parse_text(json.dumps({"id": "a", "input": value}), "c.jsonl")[0]
    assert list(case.messages) == expected


def test_dynamic_case_without_input_and_checkpoint_spellings():
    case = {"id": "d", "simulator": {"use": "sim"}, "checkpoints": [
        {"id": "a", "assert": {"type": "contains", "value": "x"}},
        {"id": "b", "after": ["a"], "assertion": {"type": "tool_called", "value": "t"}, "required": False}]}
    c = parse_text(json.dumps(case), "c.jsonl")[0]
    assert c.dynamic and c.messages == ()
    assert [cp.id for cp in c.checkpoints] == ["a", "b"] and c.checkpoints[1].after == ("a",)
    assert c.checkpoints[1].required is False and c.max_turns == 20


def test_simulator_flag_supplies_the_simulator():
    case = {"id": "d", "checkpoints": [{"id": "a", "assert": {"type": "contains", "value": "x"}}]}
    assert parse_text(json.dumps(case), "c.jsonl", "workers.sim")[0].dynamic
    assert any("checkpoints need a simulator" in p for p in problems(json.dumps(case)))


def test_timeouts_parse():
    cases = parse_text('{"id": "a", "input": "x", "timeout": "2m30s"}\n{"id": "b", "input": "x", "timeout": 5}', "c.jsonl")
    assert [c.timeout for c in cases] == [150.0, 5.0]


# ---- bad files: each names file:line:column and says what would be accepted ---------------------


def test_invalid_json_names_line_and_column():
    found = problems('{"id": "a", "input": "x"}\n{"id": "b", "input": "x",}\n')
    assert found == ["cases.jsonl:2:25: invalid JSON: Expecting property name enclosed in double quotes; remove the trailing comma"]  # at the comma


@pytest.mark.parametrize("line, column, hint", [
    ('{"id": "c", "input": "Hi", "assert": [}', 39, "Expecting value; the list opened with '[' is closed with '}'"),
    ('{"id": "a", "input": }', 22, "Expecting value; a value is missing here"),
    ('{"id": "a", "input": "Hello",', 30, "Expecting property name enclosed in double quotes; the line ends after a comma: it is cut off, or the object is not closed"),
    ('{"id": "a", "input": "Hello"', 29, "Expecting ',' delimiter; the line ends before the object is closed"),
    ('{"id": "a", "input": ["Hello",]}', 30, "Expecting value; remove the trailing comma"),  # the comma itself
    ('{"id": "a", "input": "Hello", , "x": 1}', 31, "Expecting property name enclosed in double quotes; remove the extra comma"),
    ('{"id": "a", input: "Hello"}', 13, "Expecting property name enclosed in double quotes; keys are strings in double quotes"),
    ('{"id": "a", "input": True}', 22, "Expecting value; values are strings in double quotes, numbers, true, false or null"),
    ('{"id": "a", "input" "Hello"}', 21, "Expecting ':' delimiter; a ':' is missing after the key"),
    ('{"id": "a", "input": ["x", "y"', 31, "Expecting ',' delimiter; the line ends before the list is closed"),
])
def test_invalid_json_hint_says_what_is_really_there(line, column, hint):
    """The trailing-comma hint only where a comma really trails; otherwise what is wrong at that place."""
    assert problems(f'{{"id": "ok", "input": "x"}}\n{line}\n') == [f"cases.jsonl:2:{column}: invalid JSON: {hint}"]


def test_invalid_json_in_a_json_file_speaks_of_the_file():
    assert problems('[{"id": "a", "input": "x"},\n {"id": "b",\n', "cases.json") == [
        "cases.json:3:1: invalid JSON: Expecting property name enclosed in double quotes; "
        "the file ends after a comma: it is cut off, or the object is not closed"]
    assert problems('[{"id": "a", "input": "x"},\n]\n', "cases.json") == [
        "cases.json:1:27: invalid JSON: Expecting value; remove the trailing comma"]  # the comma, a line above the ']'


def test_text_after_the_value_of_a_json_file_is_not_called_a_jsonl_mistake():
    assert problems('[{"id": "a", "input": "x"}],\n', "cases.json") == [
        "cases.json:1:28: invalid JSON: Extra data; text after the file's JSON value: a .json case file holds one object, or one list of cases"]
    assert problems('{"id": "a", "input": "x"} {"id": "b"}\n') == [
        "cases.jsonl:1:27: invalid JSON: Extra data; one JSON object per line in .jsonl files"]


def test_brackets_inside_strings_do_not_count_as_open():
    (found,) = problems('{"id": "a", "input": "[{\\"", "tags": [}')
    assert found.endswith("the list opened with '[' is closed with '}'")


def test_single_quotes_hint():
    (found,) = problems("{'id': 'a'}")
    assert found.startswith("cases.jsonl:1:2: invalid JSON") and "double quotes" in found


def test_unknown_field_did_you_mean():
    (found,) = problems('{"id": "a", "input": "x", "asert": {"type": "contains", "value": "y"}}')
    assert found == "cases.jsonl:1:27: 'asert' is not a field; did you mean 'assert'?"


def test_unknown_assertion_type_did_you_mean():
    (found,) = problems('{"id": "a", "input": "x", "assert": [{"type": "contans", "value": "y"}]}')
    assert found == "cases.jsonl:1:39: unknown assertion type 'contans'; did you mean 'contains'?"


def test_missing_id_and_input():
    found = problems('{"input": "x"}\n{"id": "b"}\n')
    assert found[0] == "cases.jsonl:1:1: missing required field 'id'"
    assert found[1].startswith("cases.jsonl:2:1: missing required field 'input'")


def test_duplicate_id_points_at_both():
    found = problems('{"id": "a", "input": "x"}\n\n{"id": "a", "input": "y"}\n')
    assert found == ["cases.jsonl:3:8: duplicate id 'a' (first used at line 1); ids must be unique in a file"]


def test_wrong_types():
    found = problems('{"id": 7, "input": "x", "skip": "yes", "max_turns": "3"}')
    assert "cases.jsonl:1:8: 'id' must be a string, not a number" in found
    assert "cases.jsonl:1:33: 'skip' must be true or false, not a string" in found


def test_bad_input_shape():
    (found,) = problems('{"id": "a", "input": 42}')
    assert found.startswith("cases.jsonl:1:22: 'input' must be a string, a message")


def test_bad_duration():
    (found,) = problems('{"id": "a", "input": "x", "timeout": "soon"}')
    assert found.startswith("cases.jsonl:1:38: bad 'timeout': 'soon' is not a duration")
    assert "2m30s" in found


def test_regex_that_does_not_compile():
    (found,) = problems('{"id": "a", "input": "x", "assert": {"type": "regex", "pattern": "(unclosed"}}')
    assert found.startswith("cases.jsonl:1:55: regex '(unclosed' does not compile")


def test_after_naming_unknown_checkpoint():
    case = {"id": "d", "simulator": {"use": "s"}, "checkpoints": [
        {"id": "ask_type", "assert": {"type": "contains", "value": "x"}},
        {"id": "b", "after": ["ask_tpye"], "assert": {"type": "contains", "value": "y"}}]}
    (found,) = problems(json.dumps(case))
    assert "'after' names unknown checkpoint 'ask_tpye'; did you mean 'ask_type'?" in found


def test_checkpoints_that_wait_for_each_other_in_a_cycle_are_a_problem_at_the_after_that_closes_it():
    def case(*after):
        return json.dumps({"id": "d", "simulator": {"use": "s"}, "checkpoints": [
            {"id": cid, "after": deps, "assert": {"type": "contains", "value": cid}} for cid, deps in after]})
    (found,) = problems(case(("x", ["z"]), ("y", ["x"]), ("z", ["y"])))
    assert found == ("cases.jsonl:1:153: checkpoints wait for each other in a cycle — 'x' waits for 'z', 'z' for 'y', 'y' for 'x' — "
                     "so none of them can be reached; remove one 'after' of the cycle")
    (found,) = problems(case(("a", []), ("x", ["a", "y"]), ("y", ["x"])))
    assert "'x' waits for 'y', 'y' for 'x'" in found
    (found,) = problems(case(("x", ["x"])))
    assert "checkpoint 'x' cannot come after itself" in found  # said once, not also as a cycle
    (diamond,) = parse_text(case(("x", []), ("y", ["x"]), ("z", ["x", "y"])), "cases.jsonl")  # no cycle: it loads
    assert [cp.id for cp in diamond.checkpoints] == ["x", "y", "z"]


def test_assertions_that_check_nothing_are_problems():
    """contains "" and regex "" passed every case; tool_called [] failed with "expected tool  to be called"."""
    found = problems(json.dumps({"id": "a", "input": "x", "assert": [
        {"type": "contains", "value": ""}, {"type": "not_contains", "value": ["no", ""]}, {"type": "regex", "pattern": ""},
        {"type": "tool_called", "name": []}, {"type": "tool_called", "value": {"name": ""}}]}))
    assert [f.split(": ", 1)[1] for f in found] == [
        "'contains' of an empty string checks nothing (every output contains \"\"); give the text to look for",
        "'not_contains' of an empty string checks nothing (every output contains \"\"); give the text to look for",
        "an empty 'regex' matches every output: it checks nothing; give the pattern to look for, e.g. \"EXP-\\\\d+\"",
        "'tool_called' needs at least one tool name, not an empty list; e.g. \"name\": \"create_expense\"",
        "a tool name cannot be empty"]
    assert all(f.startswith("cases.jsonl:1:") for f in found)


def test_bad_assertion_parameters():
    found = problems('{"id": "a", "input": "x", "assert": [{"type": "contains"}, {"type": "type", "value": "strng"}, {"type": "json_path"}, {"type": "contains", "value": "y", "pth": "$"}]}')
    assert any("'contains' needs a 'value'" in p for p in found)
    assert any("did you mean 'string'?" in p for p in found)
    assert any("'json_path' needs a 'path'" in p for p in found)
    assert any("'pth' is not a field of a 'contains' assertion; 'contains' takes value" in p for p in found)  # 'path' is json_path's
    text = '{"id": "a", "input": "x", "assert": {"type": "contains", "value": "y", "pattern": "z"}}'
    for policy in (KeyPolicy(), KeyPolicy(strict=True), KeyPolicy(lenient=True)):  # a field of another type: a check lost, never ignored
        (found,) = [str(p) for p in parse(text, "cases.jsonl", policy=policy).problems]
        assert found == "cases.jsonl:1:72: 'pattern' is not a field of a 'contains' assertion; 'contains' takes value (and type, message, negate, id, severity, weight, description)"


def test_unknown_keys_typos_are_errors_others_are_ignored_with_one_warning_per_key_and_file():
    lines = [
        {"id": "a", "input": "x", "category": "smoke", "assert": {"type": "contains", "value": "x", "description": "a note"}},
        {"id": "b", "input": "x", "category": "smoke", "simulator": {"use": "sim", "persona": "p"},
         "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "x"}, "weight": 2}]},
    ]
    text = "\n".join(json.dumps(c) for c in lines)
    loaded = parse(text, "cases.jsonl")
    assert not loaded.problems and [c.id for c in loaded.cases] == ["a", "b"]
    assert "category" not in loaded.cases[0].raw and loaded.cases[0].assertions[0].params["description"] == "a note"
    assert [w.split(": ", 1)[1] for w in loaded.warnings] == [
        "'category' is not a field of a case; ignored",
        "'persona' is not a field of a simulator; ignored", "'weight' is not a field of a checkpoint; ignored"]
    strict = parse(text, "cases.jsonl", policy=KeyPolicy(strict=True))
    assert len(strict.problems) == 4 and all("with --strict" in str(p) for p in strict.problems)
    typo = parse('{"id": "a", "input": "x", "asert": "contains", "categry": "x"}', "cases.jsonl")
    assert str(typo.problems[0]) == "cases.jsonl:1:27: 'asert' is not a field; did you mean 'assert'?"
    assert typo.warnings == []  # 'categry' is no note Yao files carry: an error too
    assert str(typo.problems[1]) == "cases.jsonl:1:48: 'categry' is not a field of a case; did you mean 'category'?"
    lenient = parse('[{"id": "a", "input": "x", "asert": "contains", "rationale": "r"}]', "gen", kind=".json", policy=KeyPolicy(lenient=True))
    assert [str(p) for p in lenient.problems] == ["gen:1:28: 'asert' is not a field; did you mean 'assert'?"]  # a check lost: never kept lenient
    assert lenient.warnings == ["gen:1:49: 'rationale' is not a field of a case; ignored"]


@pytest.mark.parametrize("case, said", [
    ({"id": "a", "messages": [{"role": "user", "content": "hi"}]},
     "c.jsonl:1:13: missing required field 'input'; 'messages' is not a field of a case: did you mean 'input'?"),
    ({"id": "a", "input": "hi", "assert": [{"type": "contains", "expected": "x"}]},
     "c.jsonl:1:60: 'expected' is not a field of a 'contains' assertion; did you mean 'value'?"),
    ({"id": "a", "input": "hi", "assert": {"type": "regex", "regexp": "x"}},
     "c.jsonl:1:56: 'regex' needs a 'pattern' (or 'value') string; 'regexp' is not a field of an assertion: did you mean 'pattern'?"),
    ({"id": "a", "input": "hi", "faults": [{"tool": "t", "type": "error"}]},
     "c.jsonl:1:53: missing required field 'kind' in 'faults'; 'type' is not a field of a fault: did you mean 'kind'?"),
    ({"id": "a", "input": "hi", "mocks": [{"tool": "t", "result": {"ok": True}}]},
     "c.jsonl:1:52: 'result' is not a field of a mock; did you mean 'returns'? (a mock with neither 'returns' nor 'error' answers null)"),
])
def test_an_unknown_key_beside_a_missing_field_is_taken_for_that_field_under_another_name(case, said):
    """A user coming from another tool writes messages, expected, type, result: the problem says which field was
    meant, at the key written. Without the unknown key, the missing field is said as before."""
    assert problems(json.dumps(case), "c.jsonl") == [said]
    loaded = parse(json.dumps(case), "c.jsonl", policy=KeyPolicy(lenient=True))  # a generator's cases: a missing field fails all the same
    assert [str(p) for p in loaded.problems] == ([] if "mocks" in case else [said])
    assert loaded.warnings == (["c.jsonl:1:52: 'result' is not a field of a mock; ignored"] if "mocks" in case else [])


def test_a_misnamed_field_is_not_guessed_where_it_is_ambiguous_or_the_object_is_whole():
    two = {"id": "a", "input": "hi", "assert": [{"type": "contains", "expected": "x", "wanted": "y"}]}
    assert problems(json.dumps(two), "c.jsonl") == [
        "c.jsonl:1:60: 'expected' is not a field of a 'contains' assertion; did you mean 'value'?",
        "c.jsonl:1:77: 'wanted' is not a field of a 'contains' assertion; 'contains' takes value (and type, message, negate, id, severity, weight, description)"]
    whole = parse(json.dumps({"id": "a", "input": "hi", "mocks": [{"tool": "t", "returns": 1, "note": "x"}]}), "c.jsonl")
    assert not whole.problems and whole.warnings == ["c.jsonl:1:66: 'note' is not a field of a mock; ignored"]


def test_all_problems_reported_together_with_locations_in_json_and_yaml():
    text = '[\n  {"id": "a", "input": "x"},\n  {"id": "b", "inptu": "x"},\n  {"id": "c"}\n]\n'
    found = problems(text, "c.json")
    assert found == ["c.json:3:15: 'inptu' is not a field; did you mean 'input'?",  # not also "missing 'input'": one mistake, one problem
                     "c.json:4:3: missing required field 'input'; standard cases need 'input'; dynamic cases need 'checkpoints'"]
    ytext = "- id: a\n  input: x\n  assert:\n    - type: contans\n      value: y\n"
    (found,) = problems(ytext, "c.yaml")
    assert found == "c.yaml:4:7: unknown assertion type 'contans'; did you mean 'contains'?"


def test_invalid_yaml_location():
    (found,) = problems("- id: a\n  input: [unclosed\n", "c.yaml")
    assert found.startswith("c.yaml:3:1: invalid YAML")


@pytest.mark.parametrize("text, opened", [
    ("- id: a\n  input: hi\n  assert: [ {type: contains, value: x}\n- id: b\n  input: x\n", "the '[' at line 3, column 11 is never closed"),
    ("- id: a\n  input: {a: 1\n", "the '{' at line 2, column 10 is never closed"),
    ('- id: a\n  input: "unterminated\n', "the quote at line 2, column 10 is never closed"),
])
def test_an_unclosed_bracket_or_quote_in_yaml_is_pointed_at_where_it_opened(tmp_path, text, opened):
    """The parser notices an unclosed '[' lines later (often at the end of the file): the hint says where it opened."""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_file(str(path)).check()
    assert "invalid YAML" in str(info.value) and opened in str(info.value), str(info.value)


def test_missing_file_with_hint(tmp_path):
    (tmp_path / "inputs.jsonl").write_text('{"id": "a", "input": "x"}\n')
    with pytest.raises(InputError) as info:
        load_file(str(tmp_path / "input.jsonl")).check()
    assert "does not exist" in str(info.value) and "inputs.jsonl" in str(info.value)


def test_attachment_paths_resolve_against_the_case_file(tmp_path):
    from agenttest.runtime.attachments import resolve

    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "r.png").write_bytes(b"\x89PNG")
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "input": [{"role": "user", "content": [{"type": "image", "source": "file://./fixtures/r.png"}]}]}))
    case = load_file(str(path)).check()[0]
    part = resolve(case.messages, case.base_dir)[0]["content"][0]
    assert part == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}


# ---- through the CLI: exit 2, no traceback, every problem listed ------------------------------------


def test_cli_rejects_bad_file_with_exit_2(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "input": "x", "asert": "contains"}\n{"id": "a", "input": "y", "timeout": "soon"}\n')
    result = cli("-i", str(path), "--dry-run")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert f"{path}:1:27: 'asert' is not a field; did you mean 'assert'?" in result.stderr
    assert f"{path}:2:38: bad 'timeout'" in result.stderr
    assert f"{path}:2:8: duplicate id 'a' (first used at line 1)" in result.stderr
    assert "3 problems found; nothing was run" in result.stderr


def test_cli_missing_input_file_is_exit_2(tmp_path):
    result = cli("-i", str(tmp_path / "nope.jsonl"), "--dry-run")
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_dry_run_prints_normalized_cases_and_writes_them(tmp_path):
    src = tmp_path / "c.yaml"
    src.write_text("- id: a\n  input: hi\n  assert: contains\n")
    src.write_text("- id: a\n  input: hi\n  assert: {type: contains, value: h}\n- id: b\n  input: {content: yo}\n  expected: x\n")
    out = tmp_path / "cases.jsonl"
    result = cli("-i", str(src), "--dry-run", "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows[0] == {"id": "a", "input": [{"role": "user", "content": "hi"}], "assertions": [{"type": "contains", "value": "h"}]}
    assert rows[1]["input"] == [{"role": "user", "content": "yo"}] and rows[1]["expected"] == "x"
    reloaded = load_file(str(out)).check()
    assert [c.id for c in reloaded] == ["a", "b"]


def _nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = {"k": value}
    return value


@pytest.mark.parametrize("levels, too_deep", [(62, False), (63, True), (61, False)])
def test_a_jsonl_case_at_the_depth_limit_loads_and_one_level_more_is_a_problem(levels, too_deep):
    """The case is level 1 and its metadata level 2: 62 dicts below put the innermost value at level 64,
    the limit. The walk that shares a line's strings is the depth check of a .jsonl case; its verdict must
    be the one a .json file of the same case gets (``too_deep``)."""
    line = json.dumps({"id": "a", "input": "hi", "metadata": _nested(levels)})
    for text, name in ((line, "cases.jsonl"), ("[" + line + "]", "cases.json")):
        loaded = parse(text, name)
        said = [str(p) for p in loaded.problems]
        assert (said != []) is too_deep, (name, said)
        if too_deep:
            assert "nested more than 64 levels deep" in said[0] and len(loaded.cases) == 0
        else:
            assert loaded.cases[0].metadata == _nested(levels)


def test_jsonl_cases_hold_one_object_for_each_repeated_string_key_message_and_assertion():
    """100,000 cases repeat their keys, roles, histories and assertions: each is held once. A dict of text
    alone written alike is one dict, and the same AssertionSpec; what holds anything else, or the same keys
    in another order, is each case's own (user code gets copies: test_shared_case_data.py)."""
    history = [{"role": "user", "content": "I want to submit an expense"}, {"role": "assistant", "content": "Which one?"}]
    lines = [json.dumps({"id": f"c{i}", "input": [*history, {"role": "user", "content": f"#{i}"}],
                         "assertions": [{"type": "contains", "value": "ok"}, {"type": "equals", "value": 1 if i else True}],
                         "metadata": {"tags": ["a", "b"], "order": {"x": "1", "y": "2"} if i else {"y": "2", "x": "1"}}}) for i in range(3)]
    a, b, c = parse("\n".join(lines), "cases.jsonl").cases
    assert [m["content"] for m in a.raw["input"]] == ["I want to submit an expense", "Which one?", "#0"]
    for x, y in zip(a.raw["input"][:2], b.raw["input"][:2]):
        assert x is y  # one dict for every case that writes the message alike
    assert a.raw["input"] is not b.raw["input"] and a.raw["input"][2] is not b.raw["input"][2]
    assert a.raw["input"][2]["content"] == "#0" and b.raw["input"][2]["content"] == "#1"
    assert a.raw["metadata"]["tags"][0] is b.raw["metadata"]["tags"][0]
    assert next(iter(a.raw)) is next(iter(b.raw))
    assert a.assertions[0] is b.assertions[0] is c.assertions[0] and a.assertions[0].params is b.assertions[0].params
    assert a.assertions[1].params == {"type": "equals", "value": True} and b.assertions[1].params == {"type": "equals", "value": 1}
    assert a.assertions[1] is not b.assertions[1] and b.assertions[1].params is not c.assertions[1].params  # not text: each its own
    assert type(a.assertions[1].params["value"]) is bool and type(b.assertions[1].params["value"]) is int
    assert list(a.raw["metadata"]["order"]) == ["y", "x"] and list(b.raw["metadata"]["order"]) == ["x", "y"]  # as written
    assert b.raw["metadata"]["order"] is c.raw["metadata"]["order"] and a.raw["metadata"]["order"] is not b.raw["metadata"]["order"]
    assert a.tags == () and a.location.line == 1 and c.location.line == 3


def test_a_json_list_of_cases_shares_what_its_cases_write_alike_as_jsonl_does():
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Which one?"}]
    cases = [{"id": f"c{i}", "input": [*history, {"role": "user", "content": f"#{i}"}], "assert": {"type": "contains", "value": "ok"}}
             for i in range(3)]
    for text in (json.dumps(cases, indent=2), json.dumps({"cases": cases})):
        loaded = parse(text, "cases.json")
        a, b, c = loaded.cases
        assert not loaded.problems and a.raw["input"][0] is b.raw["input"][0] is c.raw["input"][0]
        assert a.raw["input"][2] is not b.raw["input"][2] and a.assertions[0] is b.assertions[0]
        assert a.locate(("input", 2, "content")).line == (15 if text.startswith("[\n") else 1)
    line = json.dumps(cases + [{"id": "bad", "input": [{"role": "robot", "content": "x"}]}])  # one line: columns from the item's start
    said = [str(p) for p in parse(line, "cases.json").problems]
    column = line.index('"robot"') + 1
    assert said == [f"cases.json:1:{column}: 'role' cannot be 'robot'; one of user, assistant, system, tool, developer"], said
    twice = parse('[{"id": "a", "input": "x", "input": "y"}]', "cases.json")
    assert [str(p) for p in twice.problems] == ["cases.json:1:28: 'input' is written twice in one object (JSON keeps only the last); remove one of them"], twice.problems


def test_a_message_or_assertion_shared_by_many_cases_hides_no_problem_of_another():
    """The loader shares a message or an assertion written alike in many cases (they are one object): a case
    whose message or assertion differs, even by a key, is checked on its own, and a problem found in a shared
    one is said for every case that has it."""
    ok = {"role": "user", "content": "hi"}
    good, bad = {"type": "contains", "value": "ok"}, {"type": "contains", "valu": "ok"}
    lines = [{"id": "a", "input": [ok], "assertions": [good]}, {"id": "b", "input": [ok], "assertions": [good]},
             {"id": "c", "input": [{**ok, "rol": "user"}], "assertions": [good]},
             {"id": "d", "input": [ok], "assertions": [bad]}, {"id": "e", "input": [ok], "assertions": [bad]},
             {"id": "f", "input": [{"role": "robot", "content": "hi"}]}, {"id": "g", "input": [{"role": "user", "content": 5}]}]
    loaded = parse("\n".join(json.dumps(c) for c in lines), "cases.jsonl")
    said = [str(p) for p in loaded.problems]
    assert [p.split(":")[1] for p in said] == ["3", "4", "5", "6", "7"], said  # 'valu': not also "needs a 'value'"
    assert "'rol' is not a field; did you mean 'role'?" in said[0]
    assert said[1] == said[2].replace(":5:", ":4:") and "'valu' is not a field; did you mean 'value'?" in said[1]
    assert "'role' cannot be 'robot'" in said[3] and "'content' must be a string" in said[4]


def test_ids_alike_but_for_how_their_unicode_is_composed_are_a_warning():
    loaded = parse('{"id": "caf\\u00e9", "input": "x"}\n{"id": "cafe\\u0301", "input": "y"}\n{"id": "cafe", "input": "z"}\n', "cases.jsonl")
    assert [c.id for c in loaded.cases] == ["caf\u00e9", "cafe\u0301", "cafe"] and not loaded.problems
    assert loaded.warnings == ["cases.jsonl:2:8: id 'cafe\\u0301' differs from 'caf\\xe9' (line 1) only in how its Unicode is "
                               "composed; both look like 'café' in every report"]


def test_byte_order_marks_where_jsonl_files_were_joined_are_read_past():
    text = '{"id": "a", "input": "x"}\n\ufeff// the second file\n\ufeff{"id": "b", "input": "y", "note": 1}\n\ufeff{"id": "c", "input": }\n'
    loaded = parse(text, "cases.jsonl")
    assert [c.id for c in loaded.cases] == ["a", "b"]
    assert loaded.warnings == ["cases.jsonl:3:28: 'note' is not a field of a case; ignored"]  # the mark is column 1
    assert [str(p) for p in loaded.problems] == ["cases.jsonl:4:23: invalid JSON: Expecting value; a value is missing here"]


@pytest.mark.parametrize("text", ['[\n  {"id": "a", "input": "x"},\n  {"id": "b", "input": "y"}\n]\n',
                                  '{\n  "id": "a",\n  "input": "x"\n}\n',
                                  '{\n  "id": "a",\n  "input": "x"\n}\n{\n  "id": "b",\n  "input": "y"\n}\n',  # as jq prints them
                                  '{"id": "a", "input": "x"}\n{\n  "id": "b", "input": "y"\n}\n'])
def test_pretty_printed_json_named_jsonl_is_one_problem_that_says_so(text):
    loaded = parse(text, "cases.jsonl")
    assert [str(p) for p in loaded.problems] == [
        "cases.jsonl:1:1: the file is JSON written over several lines (pretty-printed), not one case per line; write each case "
        "on a line of its own (jq -c prints them so), or name the file .json with the cases in a list ([{...}, {...}])"]
    assert loaded.cases == []
    if text.startswith("["):
        assert [c.id for c in parse(text, "cases.json").cases] == ["a", "b"]


@pytest.mark.parametrize("levels", [63, 64, 80, 500])
def test_a_json_case_nested_too_deeply_is_said_at_its_place_however_deep(levels):
    """As in .jsonl: the case's line and column, the same words, whatever the depth (it once lost its place
    two levels past the limit)."""
    ok = json.dumps({"id": "ok", "input": "hi"})
    text = "[\n  " + ok + ",\n  " + json.dumps({"id": "a", "input": "hi", "metadata": _nested(levels)}) + "\n]\n"
    loaded = parse(text, "cases.json")
    assert [str(p) for p in loaded.problems] == ["cases.json:3:3: the case is nested more than 64 levels deep"]
    assert [c.id for c in loaded.cases] == ["ok"]


def test_a_json_wrapper_with_cases_written_twice_is_a_problem_and_each_hint_fits_its_key():
    loaded = parse('{"cases": [{"id": "a", "input": "hello"}],\n "cases": [{"id": "b", "input": "hello", "metadata": {"k": 1, "k": 2}}]}\n',
                   "cases.json")
    assert [str(p) for p in loaded.problems][0] == (
        "cases.json:2:2: 'cases' is written twice in one object (JSON keeps only the last); remove one; all the cases go in one list")
    one = parse('[{"id": "b", "input": "hello", "metadata": {"k": 1, "k": 2}}]', "cases.json")
    assert [str(p) for p in one.problems] == ["cases.json:1:53: 'k' is written twice in one object (JSON keeps only the last); remove one of them"]


@pytest.mark.parametrize("text, name, said", [
    ('{"id": "a", "input": "C:\\dir"}\n', "cases.jsonl",
     "cases.jsonl:1:25: invalid JSON: Invalid \\escape; a backslash starts an escape in JSON strings: write \\\\ for a backslash itself"),
    ('{"id": "b", "input": "\\u00zz"}\n', "cases.jsonl", "cases.jsonl:1:24: invalid JSON: Invalid \\uXXXX escape; \\u takes four hexadecimal digits"),
    ('[{"id": "c", "input": "x"}]\n', "cases.jsonl",
     "cases.jsonl:1:1: a case must be a JSON object, not a list; a .jsonl file holds one case object per line; a list of cases goes in a .json file"),
    ("cases:\n  - id: a\n\tinput: x\n", "cases.yaml", "cases.yaml:3:1: invalid YAML: found character '\\t' that cannot start any token; YAML indents with spaces, not tabs"),
    ("- id: a\n  input: [{role: user, content: Note:\thi}]\n", "cases.yaml",
     "cases.yaml:2:38: invalid YAML: found character '\\t' that cannot start any token; YAML does not take a tab here: use a space"),
    ("cases:\n  - just text\n", "cases.yaml", "cases.yaml:2:5: a case must be a mapping, not a string"),
    ("- id: a\n  input: Hi there\n   assert:\n    - type: contains\n      value: x\n", "cases.yaml",
     "cases.yaml:3:10: invalid YAML: mapping values are not allowed here; this key is indented more than the one above it"),
    ("- id: a\n  input: Hi\n  assert:\n    - contains: help\n", "cases.yaml",
     "cases.yaml:4:7: an assertion without a 'type' is 'equals', and it needs a 'value'; 'contains' is a type, not a field; "
     'did you mean {"type": "contains", "value": "help"}?'),
    ('{"id": "a", "input": "Hi", "assert": {"type": "equals"}}\n', "cases.jsonl", "cases.jsonl:1:38: 'equals' needs a 'value'"),
    ("- id: a\n  input: note: moved  # a comment\n", "cases.yaml",
     'cases.yaml:2:14: invalid YAML: mapping values are not allowed here; a value that holds ": " must be quoted'),
])
def test_each_mistake_gets_a_remedy_that_fits_it(text, name, said):
    assert any(str(p).startswith(said) for p in parse(text, name).problems), [str(p) for p in parse(text, name).problems]


@pytest.mark.parametrize("line, fixed", [
    ("  input: note: the meeting moved", '  input: "note: the meeting moved"'),
    ("- id: time: 10:30 é", '- id: "time: 10:30 é"'),
])
def test_a_yaml_value_holding_a_colon_gets_its_line_quoted_as_the_hint(line, fixed):
    text = f"- id: a\n{line}\n" if line.startswith(" ") else f"{line}\n  input: hi\n"
    (problem,) = parse(text, "cases.yaml").problems
    assert str(problem).split("; ", 1)[1] == f'a value that holds ": " must be quoted: {fixed.strip().removeprefix("- ")}'
    repaired = parse(text.replace(line, fixed), "cases.yaml")  # the hint's line, put in place, reads as meant
    assert repaired.problems == [] and fixed.split(": ", 1)[1].strip('"') in str(repaired.cases[0])


def test_a_yaml_colon_value_with_a_comment_an_anchor_or_a_page_of_text_gets_no_quoted_line():
    for line in ("  input: note: moved  # a comment", "  input: &a note: moved", "  input: note: " + " " * 100_000 + "x"):
        (problem,) = parse(f"- id: a\n{line}\n", "cases.yaml").problems
        assert str(problem).endswith('; a value that holds ": " must be quoted'), str(problem)


@pytest.mark.parametrize("field, written, kind", [
    ("input", "yes", "a boolean"),
    ("id", "1042", "a number"),
    ("value", "10.50", "a number"),
    ("content", "off", "a boolean"),
])
def test_a_yaml_word_read_as_a_boolean_or_a_number_gets_it_quoted_as_the_hint(field, written, kind):
    texts = {"input": f"- id: a\n  input: {written}\n", "id": f"- id: {written}\n  input: hi\n",
             "value": f"- id: a\n  input: hi\n  assert:\n    - type: contains\n      value: {written}\n",
             "content": f"- id: a\n  input: [{{role: user, content: {written}}}]\n"}
    (problem,) = parse(texts[field], "cases.yaml").problems
    assert str(problem).endswith(f'; YAML reads an unquoted {written} as {kind}: quote it, "{written}"'), str(problem)
    repaired = parse(texts[field].replace(f" {written}", f' "{written}"'), "cases.yaml")  # the hint, taken
    assert repaired.problems == [] and len(repaired.cases) == 1


@pytest.mark.parametrize("text, place, hint, written", [
    ("- id: a\n  input: hi\n  assert:\n    - type: contains\n      value: [help, yes]\n", "5:21",
     'YAML reads an unquoted yes as a boolean: quote it, "yes"', "yes"),
    ("- id: a\n  input: hi\n  assert:\n    - {type: tool_sequence, value: [create_expense, 10]}\n", "4:53",
     'YAML reads an unquoted 10 as a number: quote it, "10"', "10"),
    ("- id: a\n  input: hi\n  tags: [smoke, area: billing]\n", "3:17",
     'inside [ ], an item that holds ": " is read as a mapping: quote it, "area: billing"', "area: billing"),
])
def test_an_item_of_a_yaml_list_that_is_not_the_text_written_is_pointed_at_with_it_quoted(text, place, hint, written):
    """In a list, the problem is at the item YAML did not read as text (not the list), and taking the hint loads."""
    (problem,) = parse(text, "cases.yaml").problems
    assert str(problem).startswith(f"cases.yaml:{place}: ") and str(problem).endswith(f"; {hint}"), str(problem)
    repaired = parse(text.replace(written, f'"{written}"'), "cases.yaml")
    assert repaired.problems == [] and len(repaired.cases) == 1, [str(p) for p in repaired.problems]


def test_a_yaml_input_list_holding_text_with_a_colon_says_how_to_write_the_text():
    """input: [Note: hi] is a message {Note: hi} with no 'content': not "did you mean 'content'", and not "quote
    the item" (a list of strings is no input either), but the input written as text."""
    text = "- id: a\n  input: [Note: hi]\n"
    (problem,) = parse(text, "cases.yaml").problems
    assert str(problem) == ("cases.yaml:2:11: missing required field 'content' in 'input'; YAML reads Note: hi inside [ ] "
                            'as a mapping, not text: for one message, write input: "Note: hi"')
    repaired = parse('- id: a\n  input: "Note: hi"\n', "cases.yaml")
    assert repaired.problems == [] and repaired.cases[0].input == "Note: hi"


def test_a_json_list_that_must_hold_text_is_pointed_at_its_first_item_that_is_not():
    for assertion, item in (({"type": "contains", "value": ["help", True]}, "true"), ({"type": "tool_sequence", "value": ["a", 7]}, "7")):
        text = json.dumps({"id": "a", "input": "hi", "assert": [assertion]})
        (problem,) = parse(text, "c.jsonl").problems
        assert problem.location.column == text.rindex(item) + 1, str(problem)
    text = json.dumps({"id": "a", "input": "hi", "assert": [{"type": "contains", "value": []}]})  # no item to point at: as before
    assert parse(text, "c.jsonl").problems[0].location.column == text.index("\"value\"") + 1


def test_a_yaml_pair_in_a_list_that_is_a_mapping_by_intent_gets_no_quoting_hint():
    """[type: contains] is YAML's one-pair mapping written on purpose: a typo in it is said as a typo."""
    (problem,) = parse("- id: a\n  input: hi\n  assert: [type: containz]\n", "cases.yaml").problems
    assert str(problem) == "cases.yaml:3:12: unknown assertion type 'containz'; did you mean 'contains'?"
    assert parse("- id: a\n  input: hi\n  assert: [type: contains]\n", "cases.yaml").problems  # needs a value: said as before
    loaded = parse("- id: a\n  input: [role: user]\n", "cases.yaml")
    assert [str(p) for p in loaded.problems] == ["cases.yaml:2:11: missing required field 'content' in 'input'"]


def test_a_quoted_or_json_value_of_the_wrong_type_gets_no_yaml_quoting_hint():
    for text, name in (('- id: a\n  input: !!bool "yes"\n', "cases.yaml"), ('{"id": "a", "input": true}\n', "cases.jsonl"),
                       ("- id: a\n  input: hi\n  runs: many\n", "cases.yaml"),
                       ("- id: a\n  input: hi\n  timeout: yes\n", "cases.yaml")):  # "yes" is no duration either
        problems = parse(text, name).problems
        assert problems and not any("YAML reads" in str(p) for p in problems), [str(p) for p in problems]


@pytest.mark.parametrize("line, entry, fixed", [
    ("  input: [{ role: user, content: Note: hi }]", "content: Note: hi", 'content: "Note: hi"'),
    ("  metadata: {tags: [a, b: c: d]}", "b: c: d", 'b: "c: d"'),
])
def test_a_colon_value_inside_flow_brackets_gets_its_entry_quoted_not_an_unclosed_bracket(line, entry, fixed):
    text = f"- id: a\n{line}\n" if "input" in line else f"- id: a\n  input: hi\n{line}\n"
    (problem,) = parse(text, "cases.yaml").problems
    assert str(problem).endswith(f'; inside {{ }} or [ ], a value that holds ": " must be quoted: {fixed}'), str(problem)
    assert "never closed" not in str(problem)
    repaired = parse(text.replace(entry, fixed), "cases.yaml")  # the hint's entry, put in place, reads as meant
    assert repaired.problems == [] and fixed.split(": ", 1)[1].strip('"') in str(repaired.cases[0])


def test_yaml_hints_read_the_marked_line_whatever_ends_the_lines():
    """The line a hint quotes is found from the mark's offset: CR-only and CRLF files too (YAML counts a lone CR)."""
    for end in ("\r", "\r\n"):
        flow, = parse(f"- id: a{end}  input: [{{role: user, content: Note: hi}}]{end}", "cases.yaml").problems
        block, = parse(f"- id: a{end}  input: note: moved{end}", "cases.yaml").problems
        assert flow.hint.endswith('content: "Note: hi"') and block.hint.endswith('input: "note: moved"'), (flow, block)


def test_a_flow_colon_value_that_may_go_on_past_a_comma_or_a_bracket_gets_the_plain_hint():
    for content in ("Note: one, two, three", "Note: see [1]", "Note: ${x}"):
        (problem,) = parse(f"- id: a\n  input: [{{role: user, content: {content}}}]\n", "cases.yaml").problems
        assert str(problem).endswith('; inside { } or [ ], a value that holds ": " must be quoted'), str(problem)


def test_yaml_hints_show_text_as_written_not_escaped():
    (problem,) = parse("- id: a\n  input: [{role: user, content: Заметка: встреча 🎉}]\n", "cases.yaml").problems
    assert str(problem).endswith('must be quoted: content: "Заметка: встреча 🎉"'), str(problem)


def test_a_text_part_whose_text_is_not_a_string_is_a_problem():
    for text, name, said in (('{"id": "a", "input": [{"role": "user", "content": [{"type": "text", "text": 7}]}]}\n', "cases.jsonl",
                              "cases.jsonl:1:77: 'text' must be a string, not a number"),
                             ("- id: a\n  input: [{role: user, content: [{type: text, text: yes}]}]\n", "cases.yaml",
                              "cases.yaml:2:53: 'text' must be a string, not a boolean; YAML reads an unquoted yes as a boolean")):
        (problem,) = parse(text, name).problems
        assert str(problem).startswith(said), str(problem)
    assert parse('{"id": "a", "input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}\n', "cases.jsonl").problems == []


def test_a_quoted_colon_value_inside_flow_brackets_gets_the_plain_hint():
    (problem,) = parse('- id: a\n  input: [{ role: user, content: \'x\': y }]\n', "cases.yaml").problems
    assert str(problem).endswith('; inside { } or [ ], a value that holds ": " must be quoted'), str(problem)


def test_a_second_yaml_document_says_to_list_the_cases_in_one():
    (problem,) = parse("id: a\ninput: hi\n---\nid: b\ninput: hi\n", "cases.yaml").problems
    assert str(problem) == ("cases.yaml:3:1: invalid YAML: a second document starts here; a case file is one YAML document: "
                            "remove the '---' and write the cases as one list (each starts with '- id: …')")
    assert [c.id for c in parse("- id: a\n  input: hi\n- id: b\n  input: hi\n", "cases.yaml").cases] == ["a", "b"]


def test_json_too_deep_for_the_parser_itself_is_said_where_it_passed_the_limit():
    text = '[\n  {"id": "ok", "input": "x"},\n  {"id": "a", "input": "x", "metadata": ' + "[" * 3000 + "]" * 3000 + "}\n]"
    problems = [str(p) for p in parse(text, "cases.json").problems]
    assert problems == [f"cases.json:3:{text.splitlines()[2].index('[') + 64}: nested too deeply (more than 64 levels)"]


@pytest.mark.parametrize("name, text", [
    ("cases.jsonl", '{"id": "a", "input": "hi"}\r\n{"id": "b",\r"input": "hi", "note": 1}\r\n{"id": "c", "input": "hi", "comment": 2}\r\n'),
    ("cases.json", '[\r\n  {"id": "a", "input": "hi"},\r\n  {"id": "b",\r"input": "hi", "note": 1},\r\n  {"id": "c", "input": "hi", "comment": 2}\r\n]\r\n'),
    ("cases.yaml", "cases:\r\n  - id: a\r\n    input: hi\r\n  - id: b\r\n    input: hi\r\n    note: 1\r\n  - id: c\r\n    input: hi\r\n    comment: 2\r\n"),
])
def test_crlf_files_and_a_lone_cr_between_json_tokens_load_with_their_places(tmp_path, name, text):
    """Only a line feed ends a line: CRLF files keep their line numbers, and a CR alone inside a JSON line is
    whitespace there (it once split the line, and every case after it was a line off)."""
    path = tmp_path / name
    path.write_bytes(text.encode())
    loaded = load_file(str(path))
    assert [c.id for c in loaded.cases] == ["a", "b", "c"] and not loaded.problems
    lines = {".jsonl": (2, 3), ".json": (3, 4), ".yaml": (6, 9)}[path.suffix]
    places = [w.split(": ")[0].rsplit(":", 2)[1] for w in loaded.warnings]
    assert places == [str(n) for n in lines], loaded.warnings


def test_a_key_written_twice_once_escaped_is_placed_at_its_second_place():
    line = '{"id": "e", "input": "x", "\\u0061ssert": {"type": "contains", "value": "a"}, "assert": {"type": "contains", "value": "b"}}'
    (problem,) = parse(line + "\n", "cases.jsonl").problems
    second = line.index('"assert"') + 1  # the first is written escaped
    assert str(problem).startswith(f"cases.jsonl:1:{second}: 'assert' is written twice in one object")


def test_yaml_cases_are_read_with_libyaml_where_it_places_everything_as_the_pure_parser_does():
    """The loader composes YAML with libyaml's parser when PyYAML has it (~4× faster) and says what is wrong as the
    pure-Python parser says it: the places of every node must be the same, non-ASCII text before them too."""
    yaml = pytest.importorskip("yaml")
    if getattr(yaml, "CSafeLoader", None) is None:
        pytest.skip("PyYAML without libyaml")
    text = ('- id: "café 😀 中文"\n  input: "héllo 😀"\n  assertions:\n    - {type: contains, valu: "x"}\n'
            "- id: b\n  input: [{content: 😀😀, role: robot}]\n")

    def marks(loader):
        out, todo = [], [yaml.compose(text, Loader=loader)]
        while todo:
            node = todo.pop()
            out.append((node.start_mark.line, node.start_mark.column, node.end_mark.line, node.end_mark.column))
            todo += [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else (
                node.value if isinstance(node, yaml.SequenceNode) else [])
        return out

    assert marks(yaml.CSafeLoader) == marks(yaml.SafeLoader)
    loaded = parse(text, "cases.yaml")
    said = [str(p) for p in loaded.problems]
    assert said[0].startswith("cases.yaml:4:24: 'valu' is not a field; did you mean 'value'?") and f"cases.yaml:6:{text.splitlines()[5].index('robot') + 1}: 'role' cannot be 'robot'" in said[-1], said
    tab = parse("- id: a\n\tinput: x\n", "cases.yaml").problems
    assert [str(p) for p in tab] == ["cases.yaml:2:1: invalid YAML: found character '\\t' that cannot start any token; YAML indents with spaces, not tabs"], tab


@pytest.mark.parametrize("name, text, where", [
    ("d.json", '[{"id":"a","input":"hi","assert":[{"type":"regex","value":"ok"}],"assert":{"type":"regex","value":"("}}]', "1:91"),
    ("d.jsonl", '{"id":"a","input":"hi","assert":[{"type":"regex","value":"ok"}],"assert":{"type":"regex","value":"("}}', "1:90"),
    ("d.yaml", "- id: a\n  input: hi\n  assert: {type: contains, value: x}\n  assert: contains\n", "4:11"),
])
def test_after_a_key_written_twice_the_problems_of_its_value_point_at_the_copy_that_was_read(name, text, where):
    """JSON and YAML keep a repeated key's last value; what is wrong with that value is placed there, not at
    the dropped first copy (a new user's trial found the first one pointed at)."""
    said = [str(p) for p in parse(text, name).problems]
    assert len(said) == 2 and "written twice" in said[0] and said[1].startswith(f"{name}:{where}: "), said


@pytest.mark.parametrize("name, text, said", [
    ("c.json", '{"case": [{"id": "a", "input": "x"}]}', "; did you mean 'cases'?"),
    ("c.json", '{"test_case": []}', "; did you mean 'test_cases'?"),
    ("c.yaml", "case:\n  - id: a\n    input: x\n", "; did you mean 'cases'?"),
    ("c.json", '{"other": []}', ""),
])
def test_a_near_miss_of_the_cases_key_gets_a_did_you_mean(name, text, said):
    problems = [str(p) for p in parse(text, name).problems]
    assert problems == [f"{name}:1:1: expected a list of cases or an object with 'cases': [...], not an object{said}"], problems


def test_problems_come_in_the_files_order_parsing_and_checking_alike():
    """A line that is not JSON is found while parsing, before the other cases are checked: said in line order."""
    text = ('{"id": "a", "input": [{"role": "usr", "content": "x"}]}\n{"id": "b", "input": 5}\n'
            '{"id": "c", "input": "x",}\n{"id": "d", "input": [{"role": "robot", "content": "x"}]}\n')
    said = [str(p) for p in parse(text, "u.jsonl").problems]
    assert [p.split(":")[1] for p in said] == ["1", "2", "3", "4"], said
    assert "did you mean 'user'?" in said[0] and "invalid JSON" in said[2] and "'robot'" in said[3]


def test_json_too_deep_for_the_parser_is_placed_at_the_bracket_past_the_limit_in_jsonl_json_and_yaml():
    """A .jsonl line said 1:1 and a YAML file had no place at all (a new user's trial); now each points into the nesting."""
    deep = "[" * 1500 + "]" * 1500
    case = '{"id": "a", "input": "x", "metadata": {"x": ' + deep + "}}"
    prefix = case.index("[")
    assert [str(p) for p in parse(case + "\n", "d.jsonl").problems] == [f"d.jsonl:1:{prefix + 63}: nested too deeply (more than 64 levels)"]
    assert [str(p) for p in parse(f"[{case}]", "d.json").problems] == [f"d.json:1:{prefix + 64}: nested too deeply (more than 64 levels)"]
    said = [str(p) for p in parse("- id: a\n  input: x\n  metadata: {x: " + deep + "}\n", "d.yaml").problems]
    assert len(said) == 1 and said[0].startswith("d.yaml:3:") and said[0].endswith(": nested too deeply (more than 64 levels)"), said


def test_an_equals_of_null_is_kept_apart_from_an_equals_with_no_value():
    assert parse('{"id": "a", "input": "Hi", "assert": {"type": "equals", "value": null}}\n', "cases.jsonl").problems == []
    assert parse('{"id": "a", "input": "Hi", "assert": {"value": "Hi"}}\n', "cases.jsonl").problems == []


@pytest.mark.parametrize("field, said", [
    ('"runs": 2.0', "'runs' must be a whole number, not 2.0"),
    ('"runs": 1e3', "'runs' must be a whole number, not 1000.0"),
    ('"min_pass_rate": NaN, "runs": 2', "'min_pass_rate' must be a number, not nan"),
    ('"budget": {"cost": NaN}', "'cost' must be a number, not nan"),
    ('"budget": {"tokens": 5.0}', "'tokens' must be a whole number, not 5.0"),
])
def test_numbers_json_schema_lets_through_are_problems_at_their_place(field, said):
    """2.0 counts as an integer to JSON Schema, and NaN passes every bound: each crashed the run (exit 3)."""
    text = '{"id": "a", "input": "hi", ' + field + '}'
    (problem,) = parse(text, "c.jsonl").problems
    value = field.split(": ")[-1 if "budget" in field else 1].strip("}").split(",")[0]  # the number written: the problem's place
    assert str(problem).startswith(f"c.jsonl:1:{text.index(value) + 1}: {said}"), str(problem)
    assert parse('{"id": "a", "input": "hi", "runs": 2, "min_pass_rate": 0.5, "budget": {"cost": 0.5, "tokens": 5}}', "c.jsonl").problems == []
