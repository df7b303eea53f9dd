"""A new user's first steps, as reported: JSON syntax errors whose hints fit what is there, and the app
``agent-test init`` makes — an unknown order explained, order numbers kept as the strings the tool's schema
says, and a mistyped folder is exit 2, not a message."""

from __future__ import annotations

import json

import pytest

from helpers import cli, report


def test_invalid_json_lines_get_the_hint_that_fits_each(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    path = offline_app.file("assistants/bot/tests/bad.jsonl", '{"id": "a", "input": "Hello",\n{"id": "b", "input": }\n'
                            '{"id": "c", "input": "Hi", "assert": [}\n{"id": "d", "input": "x",}\n')
    result = cli("-i", str(path), "--app", str(offline_app.root))
    assert result.exit_code == 2 and "4 problems found; nothing was run" in result.stderr
    assert f"{path}:1:30: invalid JSON: Expecting property name enclosed in double quotes; the line ends after a comma: it is cut off, or the object is not closed" in result.stderr
    assert f"{path}:2:22: invalid JSON: Expecting value; a value is missing here" in result.stderr
    assert f"{path}:3:39: invalid JSON: Expecting value; the list opened with '[' is closed with '}}'" in result.stderr
    assert f"{path}:4:25: invalid JSON: Expecting property name enclosed in double quotes; remove the trailing comma" in result.stderr
    assert result.stderr.count("trailing comma") == 1


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """An app made by ``agent-test init``, run in-process from its folder."""
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    assert cli("init", str(tmp_path / "demo")).exit_code == 0
    return tmp_path / "demo"


def test_init_app_explains_an_order_it_cannot_find(demo):
    found = cli("-i", "order 1042", cwd=demo)
    assert found.exit_code == 0 and "output: Order 1042 is shipped." in found.output
    unknown = cli("-i", "order 9999", cwd=demo)
    assert unknown.exit_code == 0 and "Order  is" not in unknown.output
    assert "output: Sorry, I could not find that order: no order 9999. Please check the number." in unknown.output
    suite = cli("-i", "tests", "-k", "unknown-order", cwd=demo)
    assert suite.exit_code == 0 and "[unknown-order]" in suite.output and "Passed:    1" in suite.output


def test_init_app_order_numbers_stay_strings_as_the_tool_schema_says(demo):
    """``order_id`` is ``{"type": "string"}``: the mock sends "2001", so a hand-written exact case passes."""
    exact = {"type": "tool_called", "value": {"name": "lookup_order", "arguments": {"order_id": "2001"}}}
    (demo / "tests" / "mine.jsonl").write_text(json.dumps({"id": "exact", "input": "Order 2001, please", "assert": [exact]}) + "\n"
                                               + json.dumps({"id": "number", "input": "Order 2001, please",
                                                             "assert": [{**exact, "value": {**exact["value"], "arguments": {"order_id": 2001}}}]}) + "\n")
    ran = cli("-i", "tests/mine.jsonl", "-o", str(demo / "out.json"), cwd=demo)
    data = report(demo / "out.json")
    assert ran.exit_code == 1 and {r["id"]: r["status"] for r in data["results"]} == {"exact": "passed", "number": "failed"}
    assert data["results"][0]["tool_calls"][0]["arguments"] == {"order_id": "2001"}


@pytest.mark.parametrize("text, meant", [
    ("test", "the folder 'tests/'"),
    ("Tests", "the folder 'tests/'"),
    ("asistants", "the folder 'assistants/'"),
    ("smoke", "the file 'smoke.jsonl'"),
    ("smoke.jsnol", "the file 'smoke.jsonl'"),
])
def test_a_one_word_input_that_looks_like_a_mistyped_path_is_exit_2(demo, text, meant):
    """A CI that mistyped its path must not go green on a message: exit 2 with the did-you-mean, and -m sends it."""
    (demo / "smoke.jsonl").write_text('{"id": "s", "input": "Hi"}\n')
    result = cli("-i", text, cwd=demo)
    assert result.exit_code == 2 and "output:" not in result.output
    assert (f"Error: -i '{text}': no such file or folder; did you mean {meant}?; to send it to the agent as a message, "
            f"use -m '{text}' (or -i 'message:{text}')") in result.stderr
    for explicit in (["-m", text], ["-i", f"message:{text}"]):
        sent = cli(*explicit, cwd=demo)
        assert sent.exit_code == 0 and "output: Hello! I can help with your orders." in sent.output, explicit
        assert "⚠" not in sent.output


def test_a_word_without_dash_i_suggests_it(demo):
    result = cli("tests", cwd=demo)
    assert result.exit_code == 2
    assert "Got unexpected extra argument (tests); did you mean -i tests? (inputs are given with -i; -m TEXT sends a message)" in result.stderr
    typo = cli("dif", "a.json", "b.json", cwd=demo)
    assert typo.exit_code == 2 and "did you mean the command 'diff'? (agent-test diff --help)" in typo.stderr
    nothing = cli(cwd=demo)
    assert nothing.exit_code == 2 and "Missing option '-i' / '--input' (or -m TEXT)." in nothing.stderr
    empty = cli("-m", " ", cwd=demo)
    assert empty.exit_code == 2 and "Error: -m is empty" in empty.stderr


@pytest.mark.parametrize("text", ["hello", "Where is my order?", "hi", "report", "README"])
def test_messages_unlike_any_path_get_no_warning(demo, text):
    result = cli("-i", text, cwd=demo)
    assert result.exit_code == 0 and "output: " in result.output
    assert "⚠" not in result.output and "sent as a message" not in result.output
