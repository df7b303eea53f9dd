"""One odd character loses nothing (issue 25, item 1): a lone surrogate — half an emoji, as a proxy that cuts
a string sends it — in a reply, a tool-call argument, a case file, a cassette or a report read back never
stops a report, a cassette or the console from being written; a tool returning what JSON cannot hold is
that tool call's error, not a silent pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, Answer, cli, report

CUT = "ok \ud83d cut"  # what the loopback server sends, as JSON: "ok \ud83d cut"
TOOLS = [{"name": "echo", "description": "echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}},
         {"name": "loop", "description": "loop", "parameters": {"type": "object", "properties": {}}},
         {"name": "thing", "description": "thing", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = """
def echo(ctx, text):
    print("printed", text)
    return {"got": text}
def loop(ctx, **_):
    d = {}
    d["self"] = d
    return d
def thing(ctx, **_):
    return object()
"""
FORMATS = (".json", ".jsonl", ".md", ".html", ".xml")


def replies(req):
    """Text with a lone surrogate; for ``tool:NAME`` a call of that tool (then the tool's result echoed)."""
    last = req["messages"][-1]
    if last["role"] == "tool":
        return Answer(f"tool said {last['content']}")
    word = last["content"]
    if word.startswith("tool:"):
        return Answer("", tool_calls=[{"name": word[5:], "arguments": {"text": CUT}}])
    return Answer(CUT)


@pytest.fixture
def cut(app, server):
    server.responder = replies
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    return app


def run(app, cases, *flags):
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases)
    outs = [str(app.root / f"r{ext}") for ext in FORMATS]
    result = cli("-i", str(path), *[a for o in outs for a in ("-o", o)], *flags)
    assert "Traceback" not in result.output + result.stderr, result.output + result.stderr
    return result, report(outs[0])


def test_a_lone_surrogate_in_replies_and_tool_arguments_loses_nothing(cut, tmp_path):
    cases = [{"id": "reply", "input": "hi", "assert": {"type": "contains", "value": "ok \ufffd cut"}},
             {"id": "args", "input": "tool:echo", "assert": {"type": "tool_called", "value": {"name": "echo", "arguments": {"text": "ok \ufffd cut"}}}}]
    result, data = run(cut, cases, "--record", str(tmp_path / "tapes"), "-v")
    assert result.exit_code == 0, result.output
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    for ext in FORMATS:  # every report was written whole
        assert (cut.root / f"r{ext}").stat().st_size > 200, ext
    tapes = list((tmp_path / "tapes").rglob("*.jsonl"))
    assert len(tapes) == 2  # the cassettes were saved, as valid JSON lines, the reply as it came (escaped)
    assert all("ok \\ud83d cut" in json.dumps([json.loads(line) for line in t.read_text().splitlines()]) for t in tapes)


def test_a_lone_surrogate_in_a_case_file_runs(cut):
    path = cut.root / "assistants/bot/tests/inputs.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"id": "in\\ud83d", "input": "say \\ud83d", "assert": {"type": "contains", "value": "ok"}}\n')
    out = cut.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "-o", str(cut.root / "r.md"))
    assert result.exit_code == 0, result.output
    (r,) = report(out)["results"]
    assert r["id"] == "in\ufffd" and r["input"] == "say \ufffd"


def test_a_lone_surrogate_in_a_cassette_replays(cut, tmp_path, server):
    tapes = tmp_path / "tapes"
    cases = [{"id": "reply", "input": "hi", "assert": {"type": "contains", "value": "cut"}}]
    assert run(cut, cases, "--record", str(tapes))[0].exit_code == 0
    (tape,) = tapes.rglob("*.jsonl")
    assert "\\ud83d" in tape.read_text()  # the reply as it came, escaped
    server.reset()
    result, data = run(cut, cases, "--replay", str(tapes))
    assert result.exit_code == 0, result.output
    assert data["results"][0]["output"] == "ok \ufffd cut" and server.requests == []


@pytest.mark.parametrize("command", ["merge", "diff"])
def test_a_lone_surrogate_in_a_report_read_back(cut, command):
    result, _ = run(cut, [{"id": "reply", "input": "hi"}])
    crafted = cut.root / "crafted.json"
    text = (cut.root / "r.json").read_text().replace("\ufffd", "\\ud83d")
    assert "\\ud83d" in text
    crafted.write_text(text)
    if command == "merge":
        out = cut.root / "merged.md"
        result = cli("merge", str(crafted), "-o", str(out), "-o", str(cut.root / "merged.html"), "-o", str(cut.root / "merged.json"))
        assert result.exit_code == 0, result.output + result.stderr
        assert report(cut.root / "merged.json")["results"][0]["output"] == "ok \ufffd cut"
    else:
        result = cli("diff", str(crafted), str(crafted), "-o", str(cut.root / "d.md"))
        assert result.exit_code == 0, result.output + result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_a_tool_returning_what_json_cannot_hold_is_that_calls_error(cut):
    cases = [{"id": "circular", "input": "tool:loop"}, {"id": "object", "input": "tool:thing"},
             {"id": "fine", "input": "hi", "assert": {"type": "contains", "value": "cut"}}]
    result, data = run(cut, cases)
    by_id = {r["id"]: r for r in data["results"]}
    loop, thing = by_id["circular"]["tool_calls"][0], by_id["object"]["tool_calls"][0]
    assert loop["error"] == "tool loop returned a circular structure (a dict that contains itself), which cannot be sent to the model"
    assert thing["error"].startswith("tool thing returned a builtins.object object, which has no JSON form")
    assert "<object object" not in json.dumps(data)  # never stringified into something that passes
    assert by_id["fine"]["status"] == "passed" and result.exit_code == 0  # the model was told of the error and answered


def test_the_console_and_events_write_what_user_code_printed_whatever_it_holds(cut, tmp_path):
    """A real process with a pipe as stdout: a tool prints a lone surrogate (``-v`` shows it); nothing fails."""
    cases = [{"id": "args", "input": "tool:echo"}]
    path = cut.cases("assistants/bot/tests/inputs.jsonl", cases)
    tools = cut.root / "assistants/bot/src/tools.py"
    tools.write_text(tools.read_text().replace('print("printed", text)', 'print("printed \\ud83d", text)'))
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    for flags in (["-v"], ["--json"]):
        proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "-o", str(tmp_path / "r.json"), *flags],
                              capture_output=True, env=env, cwd=REPO, timeout=60)
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 0 and "Traceback" not in out, out
        assert "printed \\ud83d" in out if flags == ["-v"] else '"event": "summary"' in out
        assert report(tmp_path / "r.json")["results"][0]["stdout"].startswith("printed ")
