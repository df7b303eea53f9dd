"""User code habits (issue 25, item 8): an ``async def`` tool is awaited, ``sys.stdout.buffer`` works in
captured user code, and escape sequences or right-to-left overrides in ids are shown inert."""

from __future__ import annotations

import pytest

from helpers import cli, report

RULES = """
rules:
  - tool: "*"
    reply: "done: {{ tool_result }}"
  - user: "^tool:later"
    tool_calls: [{name: later}]
  - user: "^tool:binary"
    tool_calls: [{name: binary}]
  - user: "^tool:badstr"
    tool_calls: [{name: badstr}]
  - user: ".*"
    reply: "echo: {{ user }}"
"""
TOOLS = [{"name": n, "description": n, "parameters": {"type": "object", "properties": {}}} for n in ("later", "binary", "badstr")]
TOOLS_PY = """
import asyncio, sys
async def later(ctx):
    await asyncio.sleep(0.01)
    print("awaited")
    return {"total": 42}
class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("str() of this exception fails")
def badstr(ctx):
    raise BadStr()
def binary(ctx):
    sys.stdout.buffer.write("bytes \\u00e9\\n".encode())
    sys.stdout.buffer.flush()
    return "written"
"""


@pytest.fixture
def bot(offline_app):
    offline_app.agent("bot", connector="mock", tools=TOOLS, files={"mock.yml": RULES, "src/tools.py": TOOLS_PY})
    return offline_app


def test_an_async_tool_is_awaited_and_stdout_buffer_is_captured(bot):
    path = bot.cases("cases.jsonl", [
        {"id": "async", "input": "tool:later", "assert": {"type": "tool_result", "value": {"tool": "later", "result": {"total": 42}}}},
        {"id": "buffer", "input": "tool:binary", "assert": {"type": "contains", "value": "done: written"}}])
    out = bot.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--app", str(bot.root), "-o", str(out))
    assert result.exit_code == 0, result.output
    later, binary = report(out)["results"]
    assert "coroutine" not in str(later) and later["stdout"] == "awaited\n"
    assert binary["stdout"] == "bytes \u00e9\n" and "error" not in binary["tool_calls"][0]


SNEAKY = "ok\x1b[2K\x1b[1A\u202edeliaf"  # erases the line above, then shows "failed" reversed


def test_escape_sequences_and_rtl_overrides_in_ids_are_shown_escaped(bot):
    path = bot.cases("cases.jsonl", [{"id": SNEAKY, "input": "hi", "tags": ["t\u202ex"], "assert": {"type": "contains", "value": "nope"}}])
    listed = cli("-i", str(path), "-n", "bot", "--app", str(bot.root), "--list")
    assert listed.exit_code == 0
    assert "ok\\x1b[2K\\x1b[1A\\u202edeliaf" in listed.output and "t\\u202ex" in listed.output
    assert "\x1b" not in listed.output and "\u202e" not in listed.output
    outs = [bot.root / f"r{ext}" for ext in (".md", ".xml", ".json")]
    result = cli("-i", str(path), "-n", "bot", "--app", str(bot.root), *[a for o in outs for a in ("-o", str(o))])
    assert result.exit_code == 1
    assert "\x1b" not in result.output and "\u202e" not in result.output
    md, xml = outs[0].read_text(), outs[1].read_text()
    assert "\u202e" not in md and "\\u202e" in md and "\x1b" not in md
    assert "\u202e" not in xml and "\x1b" not in xml
    assert report(outs[2])["results"][0]["id"] == SNEAKY  # the data keeps the id as written


def test_an_exception_whose_str_raises_ends_its_call_at_once_not_at_the_deadline(bot):
    """A tool and a script assertion raise an exception whose __str__ raises: each call ends as a failure said
    as Python's traceback says it, right away (it used to kill the call's thread and wait out the deadline)."""
    bot.file("scripts/checks.py", """
        class BadStr(Exception):
            def __str__(self):
                raise RuntimeError("str() of this exception fails")
        def badstr(*args):
            raise BadStr()
    """)
    path = bot.cases("cases.jsonl", [
        {"id": "tool", "input": "tool:badstr", "timeout": "60s", "assert": {"type": "contains", "value": "done:"}},
        {"id": "script", "input": "hi", "timeout": "60s", "assert": {"type": "script", "script": "scripts.checks.badstr"}}])
    out = bot.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--app", str(bot.root), "-o", str(out))
    assert result.exit_code == 1, result.output
    tool, script = report(out)["results"]
    assert tool["status"] == "passed" and "BadStr: <exception str() failed>" in tool["tool_calls"][0]["error"], tool
    assert script["status"] in ("failed", "error") and "<exception str() failed>" in str(script), script
    assert "Exception in thread" not in result.output  # right away: neither waited out its 60 s deadline (a timeout)
