"""What assertions see (FORMATS §4, round 4): the agent's final reply — never a tool's result in its place,
unless the agent (or the case) declares that its answer is a tool call (``output_from: "tool_result"``)."""

from __future__ import annotations

import json

from helpers import Answer, cli, report

TOOLS = [{"name": "lookup_expense", "description": "find an expense", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = """
def lookup_expense(ctx):
    return {"id": "EXP-100", "amount": 12}
"""


def silent_after_tool(req):
    """A model that calls the tool, then answers nothing (as SmolLM2 on llama-cpp-python does)."""
    if req["messages"][-1]["role"] == "tool":
        return Answer("")
    return Answer("", tool_calls=[{"name": "lookup_expense", "arguments": {}}])


def test_an_empty_final_reply_is_an_empty_output_not_the_tools_result(app, server, tmp_path):
    server.responder = silent_after_tool
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    cases = app.cases("cases.jsonl", [{"id": "c", "input": "find it", "assert": {"type": "contains", "value": "EXP-100"}}])
    out = tmp_path / "r.json"
    result = cli("-i", str(cases), "-n", "bot", "--app", str(app.root), "-o", str(out))
    assert result.exit_code == 1, result.output
    (r,) = report(out)["results"]
    assert r["status"] == "failed" and r["output"] == ""
    assert "output_from" not in r
    assert "the agent's last reply was empty after calling lookup_expense" in " ".join(r["warnings"])
    assert "the agent's last reply was empty after calling lookup_expense" in result.output


def test_an_agent_whose_answer_is_a_tool_call_declares_it_and_reports_say_so(app, server, tmp_path):
    server.responder = silent_after_tool
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY}, output_from="tool_result")
    cases = app.cases("cases.jsonl", [{"id": "c", "input": "find it", "assert": {"type": "contains", "value": "EXP-100"}}])
    out = tmp_path / "r.json"
    result = cli("-i", str(cases), "-n", "bot", "--app", str(app.root), "-o", str(out))
    assert result.exit_code == 0, result.output
    (r,) = report(out)["results"]
    assert r["status"] == "passed" and r["output"] == {"id": "EXP-100", "amount": 12}
    assert r["output_from"] == "tool_result" and "warnings" not in r


def test_a_case_declares_it_for_itself_and_may_say_text_against_its_agent(app, server, tmp_path):
    server.responder = silent_after_tool
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY}, output_from="tool_result")
    app.agent("plain", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    contains = {"type": "contains", "value": "EXP-100"}
    cases = app.cases("cases.jsonl", [{"id": "text", "input": "find it", "assert": contains, "output_from": "text"}])
    out = tmp_path / "r.json"
    assert cli("-i", str(cases), "-n", "bot", "--app", str(app.root), "-o", str(out)).exit_code == 1
    assert report(out)["results"][0]["output"] == ""
    cases = app.cases("more.jsonl", [{"id": "tool", "input": "find it", "assert": contains, "output_from": "tool_result"}])
    assert cli("-i", str(cases), "-n", "plain", "--app", str(app.root), "-o", str(out)).exit_code == 0
    assert report(out)["results"][0]["output_from"] == "tool_result"


def test_a_reply_with_text_is_the_output_whatever_it_called(app, server, tmp_path):
    def brain(req):
        if req["messages"][-1]["role"] == "tool":
            return Answer("Found it.")
        return Answer("", tool_calls=[{"name": "lookup_expense", "arguments": {}}])

    server.responder = brain
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    cases = app.cases("cases.jsonl", [{"id": "c", "input": "find it", "assert": {"type": "not_contains", "value": "EXP-100"}}])
    out = tmp_path / "r.json"
    assert cli("-i", str(cases), "-n", "bot", "--app", str(app.root), "-o", str(out)).exit_code == 0
    (r,) = report(out)["results"]
    assert r["output"] == "Found it." and "warnings" not in r


def test_bad_output_from_values_are_load_errors(app, server, tmp_path):
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY}, output_from="tool")
    cases = app.cases("cases.jsonl", [{"id": "c", "input": "x", "output_from": "tools"}])
    result = cli("-i", str(cases), "-n", "bot", "--app", str(app.root))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "cases.jsonl:1" in text and "output_from" in text


def test_bad_output_from_in_package_yao_is_a_load_error(app, server, tmp_path):
    folder = app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY}, output_from="tool")
    cases = app.cases("cases.jsonl", [{"id": "c", "input": "x"}])
    result = cli("-i", str(cases), "-n", "bot", "--app", str(app.root))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert str(folder / "package.yao") in result.output and "'output_from' must be \"text\" or \"tool_result\"" in result.output
    json.loads((folder / "package.yao").read_text())  # unchanged
