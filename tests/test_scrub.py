"""Secrets.scrub: every place a key can sit is hidden, and what holds no key is the same object (a report of
100,000 results is searched, not copied)."""

from __future__ import annotations

from agenttest.model import AssertionResult, CaseKey, CaseResult, ToolCall, Usage
from agenttest.util.secrets import Secrets

KEY = "sk-test-abcdef0123456789"


def _result(text: str) -> CaseResult:
    call = ToolCall(name="lookup", arguments={"q": text, "n": [1, 2]}, id="c1", result={"rows": [text, b"raw " + text.encode()], "keys": {text: 1}}, error=None, duration_ms=1.0)
    return CaseResult(key=CaseKey(id="c"), status="failed", name="n", input=[{"role": "user", "content": "hi"}], output=text, tool_calls=(call,),
                      assertions=(AssertionResult(type="contains", passed=False, message=f"saw {text}"),), usage=Usage(1, 2, 3), tags=("t",))


def test_a_key_anywhere_is_hidden():
    scrubbed = Secrets([KEY]).scrub(_result(f"key={KEY}"))
    assert KEY not in repr(scrubbed) and KEY.encode() not in repr(scrubbed).encode()
    call = scrubbed.tool_calls[0]
    assert call.arguments["q"] == "key=***" and call.result["rows"] == ["key=***", b"raw key=***"] and call.result["keys"] == {"key=***": 1}
    assert scrubbed.assertions[0].message == "saw key=***" and scrubbed.output == "key=***"


def test_what_holds_no_key_is_the_same_object():
    clean = _result("nothing here")
    assert Secrets([KEY]).scrub(clean) is clean
    dirty = _result(KEY)
    scrubbed = Secrets([KEY]).scrub(dirty)
    assert scrubbed is not dirty and scrubbed.input is dirty.input and scrubbed.usage is dirty.usage  # only the changed parts are new
    assert scrubbed.tags is dirty.tags and scrubbed.tool_calls[0].arguments["n"] is dirty.tool_calls[0].arguments["n"]


LONG = "sk_live_" + "".join("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789_-"[(i * 7 + i // 5) % 61] for i in range(156))


def test_every_piece_of_twelve_characters_is_hidden_wherever_the_text_was_cut():
    """Issue 50: a message that kept 90 characters of a 164-character key showed them all."""
    hide = Secrets([LONG]).redact
    assert hide(f"got 'the vault said {LONG[:90]}…'") == "got 'the vault said ***…'"
    assert hide(f"…{LONG[-40:]} and more") == "…*** and more"
    assert hide(f"x{LONG[30:42]}y") == "x***y"  # twelve characters from the middle
    assert hide(f"x{LONG[30:41]}y") == f"x{LONG[30:41]}y"  # eleven are not a piece
    assert hide(LONG + LONG) == "***" and hide(f"{LONG} {LONG}") == "*** ***"
    assert hide("é " + LONG[3:20] + " ü") == "é *** ü"  # text that is not ASCII takes the other path
    assert hide("the vault said hello and that is all") == "the vault said hello and that is all"


def test_any_cut_of_a_key_leaves_no_piece():
    import random

    hide = Secrets([LONG, "short-123"]).redact
    rng = random.Random(50)
    for _ in range(3000):
        a, c = rng.randrange(len(LONG)), rng.randrange(len(LONG))
        b, d = rng.randrange(a, len(LONG) + 1), rng.randrange(c, len(LONG) + 1)
        text = rng.choice(["", "pre ", "é"]) + LONG[a:b] + rng.choice(["", " ", "x", "_", "ü"]) + LONG[c:d] + " post"
        shown = hide(text)
        assert not any(LONG[i:i + 12] in shown for i in range(len(LONG) - 11)), (text, shown)


def test_secrets_under_twelve_characters_are_hidden_whole_only():
    hide = Secrets(["pw-0123456"]).redact
    assert hide("a pw-0123456 b pw-01234") == "a *** b pw-01234"


def test_a_result_hidden_once_is_not_searched_again_until_a_new_secret_comes():
    secrets = Secrets([KEY])
    dirty = _result(f"{KEY} nothing here")
    shown = secrets.scrub(dirty)
    assert secrets.scrub(dirty) is shown and secrets.scrub(shown) is shown
    report = secrets.scrub((dirty,))  # a container holding it: the same hidden result inside
    assert report[0] is shown
    secrets.add("nothing here")  # a new secret: what was hidden is searched again
    again = secrets.scrub(shown)
    assert again is not shown and again.tool_calls[0].arguments["q"] == "*** ***"
