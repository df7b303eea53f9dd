"""Issue 50, item 12: a key beside ``cases`` in a case file is not dropped without a word (a suite's
``assertions`` beside its cases were never checked): it is exit 2 at its place, with what to do instead."""

from __future__ import annotations

import json

import pytest

from helpers import cli, report

CASE = {"id": "greets", "input": "hello", "assert": {"type": "contains", "value": "hi"}}


@pytest.fixture
def bot(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    return offline_app


def test_what_a_file_may_say_beside_its_cases_runs(bot, tmp_path):
    path = bot.file("assistants/bot/tests/t.json", json.dumps({"$schema": "https://example.com/cases.json", "name": "greetings",
                                                               "description": "the bot says hi", "cases": [CASE]}, indent=2))
    result = cli("-i", str(path), "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in report(tmp_path / "r.json")["results"]] == ["greets"]


def test_suite_assertions_beside_the_cases_are_an_error_at_their_place(bot):
    text = json.dumps({"cases": [CASE], "assertions": [{"type": "contains", "value": "never"}]}, indent=2)
    path = bot.file("assistants/bot/tests/t.json", text)
    for flags in ([], ["--dry-run"]):
        result = cli("-i", str(path), *flags)
        assert result.exit_code == 2, result.output
        assert (f"{path}:12:3: 'assertions' beside 'cases' is not read: a case file has no assertions of its own; "
                "put them in each case that needs them ('assert' in the case)") in result.stderr
        assert "Traceback" not in result.output + result.stderr


def test_a_misspelt_key_a_case_field_and_a_second_list_are_each_said(bot):
    path = bot.file("assistants/bot/tests/t.json",
                    '{"cases": [{"id": "greets", "input": "hello"}],\n "descripton": "x",\n "timeout": "5s",\n "test_cases": []}\n')
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert f"{path}:2:2: 'descripton' is not a field of a case file; did you mean 'description'?" in result.stderr
    assert f"{path}:3:2: 'timeout' beside 'cases' is a field of a case, not of the file" in result.stderr
    assert f"{path}:4:2: 'test_cases' beside 'cases': a case file has one list of cases; put every case in 'cases'" in result.stderr
    assert "3 problems found; nothing was run" in result.stderr


def test_a_yaml_file_is_held_to_the_same(bot, tmp_path):
    path = bot.file("assistants/bot/tests/t.yaml", "name: greetings\ncases:\n  - id: greets\n    input: hello\nexpected: hi\n")
    result = cli("-i", str(path))
    assert result.exit_code == 2 and f"{path}:5:1: 'expected' beside 'cases' is not read" in result.stderr
    path.write_text("name: greetings\ncases:\n  - id: greets\n    input: hello\n    expected: hi\n")
    assert cli("-i", str(path), "-o", str(tmp_path / "r.json")).exit_code == 0


def test_a_plain_list_of_cases_is_unchanged(bot, tmp_path):
    path = bot.file("assistants/bot/tests/t.json", json.dumps([CASE]))
    assert cli("-i", str(path), "-o", str(tmp_path / "r.json")).exit_code == 0
