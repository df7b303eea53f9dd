"""Finding JSON in model text: the whole reply, a fenced block, the first object or array in prose."""

from __future__ import annotations

import pytest

from agenttest.util.text import as_text, find_json, shorten


@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ("  [1, 2]\n", [1, 2]),
    ("42", 42),
    ('Here:\n```json\n{"passed": true}\n```\nbye', {"passed": True}),
    ('```\n[{"id": "x"}]\n```', [{"id": "x"}]),
    ('I think {"passed": false, "reason": "a } inside"} is right', {"passed": False, "reason": "a } inside"}),
    ("set {not json} then [3, 4] end", [3, 4]),
    ({"already": "data"}, {"already": "data"}),
])
def test_found(text, expected):
    assert find_json(text) == (True, expected)


@pytest.mark.parametrize("text", ["", "   ", "no json at all", "{broken", "```json\n{nope\n```"])
def test_not_found(text):
    assert find_json(text) == (False, None)


def test_as_text():
    assert as_text("x") == "x" and as_text(None) == "" and as_text({"é": [1]}) == '{"é":[1]}'


def test_shorten_makes_one_line_within_the_limit():
    assert shorten("a\n  b\tc", 10) == "a b c"
    assert shorten("x" * 20, 10) == "x" * 9 + "…" and len(shorten("x" * 20, 10)) == 10
    assert shorten({"k": "v" * 50}, 12, "...") == '{"k":"vvv...'
    assert shorten(None, 5) == ""
