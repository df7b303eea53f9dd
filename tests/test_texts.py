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


# ---- text that enters a run, values that leave user code ---------------------------------------------

def test_lone_surrogates_become_the_replacement_character_and_pairs_are_joined():
    from agenttest.util.text import loads, safe_text as clean

    assert clean("ok \ud83d cut") == "ok \ufffd cut" and clean("\ud83d\ude00") == "😀" and clean("plain") == "plain"
    assert loads('{"k\\ud83d": ["\\ud83d", {"x": "\\ude00"}], "n": 1}') == {"k\ufffd": ["\ufffd", {"x": "\ufffd"}], "n": 1}
    deep = loads("[" * 900 + '"\\ud83d"' + "]" * 900)  # cleaned without recursion
    for _ in range(900):
        deep = deep[0]
    assert deep == "\ufffd"


def test_what_user_code_returns_is_sent_as_json_or_is_an_error():
    import dataclasses
    import datetime

    from agenttest.errors import CallError
    from agenttest.util.values import sendable

    @dataclasses.dataclass
    class Point:
        x: int

    value = {"b": b"x\xff", "s": {3, 1}, "t": (1,), 2: datetime.date(2026, 1, 2), "p": Point(1)}
    assert sendable(value, "tool t") == {"b": "x\\xff", "s": [1, 3], "t": [1], "2": "2026-01-02", "p": {"x": 1}}
    loop: list = []
    loop.append(loop)
    deep: object = "x"
    for _ in range(150):
        deep = [deep]
    for bad, words in [(loop, "returned a circular structure (a list that contains itself)"), (object(), "returned a builtins.object object"),
                       ({(1, 2): "v"}, "returned a dict with a tuple key"), (deep, "returned a value nested more than 100 levels deep")]:
        with pytest.raises(CallError) as info:
            sendable(bad, "tool t")
        assert str(info.value).startswith("tool t " + words)
    shared = [1]
    assert sendable([shared, shared], "tool t") == [[1], [1]]  # the same list twice is not a cycle
