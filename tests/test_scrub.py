"""Secrets.scrub: every place a key can sit is hidden, and what holds no key is the same object (a report of
100,000 results is searched, not copied)."""

from __future__ import annotations

from agenttest.model import AssertionResult, CaseResult, ToolCall, Usage
from agenttest.util.secrets import Secrets

KEY = "sk-test-abcdef0123456789"


def _result(text: str) -> CaseResult:
    call = ToolCall("lookup", {"q": text, "n": [1, 2]}, "c1", {"rows": [text, b"raw " + text.encode()], "keys": {text: 1}}, None, 1.0)
    return CaseResult("c", "failed", "n", [{"role": "user", "content": "hi"}], output=text, tool_calls=(call,),
                      assertions=(AssertionResult("contains", False, f"saw {text}"),), usage=Usage(1, 2, 3), tags=("t",))


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
