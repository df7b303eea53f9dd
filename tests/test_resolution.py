"""Resolution is one step (FORMATS §2, §8, §12): every problem that can be known before the first model
call — a field typo, a cost budget on a connector without pricing, a mock naming an MCP tool its server
lacks — is said in one round, and ``--dry-run`` and ``--list`` check exactly what a run checks."""

from __future__ import annotations

import json

import pytest

from helpers import REPO, cli

SERVER = str(REPO / "tests" / "mcp_server.py")


@pytest.fixture
def troubled(app):
    """An agent on the loopback connector (no pricing) with a real stdio MCP server, and a case file with
    three problems of three kinds."""
    app.file("mcps/tools/calc.mcp.yao", json.dumps({"label": "Calc", "transport": "stdio", "command": "python", "arguments": [SERVER]}))
    app.agent("bot", mcp={"servers": ["tools.calc"]})
    return app.cases("cases.jsonl", [
        {"id": "typo", "input": "hi", "asert": {"type": "contains", "value": "x"}},
        {"id": "costly", "input": "hi", "budget": {"cost": 0.01}},
        {"id": "mocked", "input": "hi", "mocks": [{"tool": "convrt", "returns": 1}]},
    ])


PROBLEMS = ("'asert' is not a field; did you mean 'assert'?", "case 'costly': connector fake has no pricing",
            "mocks[0]: the agent has no tool 'convrt'")


@pytest.mark.parametrize("flags", [(), ("--dry-run",), ("--list",)], ids=["run", "dry-run", "list"])
def test_three_kinds_of_problem_are_reported_in_one_round(troubled, server, flags):
    result = cli("-i", str(troubled), "-n", "bot", *flags)
    assert result.exit_code == 2, result.output
    for problem in PROBLEMS:
        assert problem in result.stderr, (problem, result.stderr)
    assert "cases.jsonl:1:" in result.stderr and "cases.jsonl:2:" in result.stderr and "cases.jsonl:3:" in result.stderr
    assert server.requests == []  # nothing reached the model


@pytest.mark.parametrize("flag", ["--dry-run", "--list"])
def test_previews_reject_what_a_run_rejects(app, flag):
    app.agent("bot", files={"src/env_test.py": "def Before(ctx, case):\n    return None\n"})
    cases = [
        {"id": "a", "input": "hi", "options": {"temprature": 0.2}},  # an option typo
        {"id": "b", "input": "hi", "before": "env_test.Bfore"},  # a missing hook
        {"id": "c", "input": "hi", "assert": {"type": "script", "script": "scripts.nowhere.check"}},  # a missing script
    ]
    path = app.cases("cases.jsonl", cases)
    preview = cli("-i", str(path), "-n", "bot", flag)
    run = cli("-i", str(path), "-n", "bot")
    assert preview.exit_code == run.exit_code == 2
    for text in ("'temprature' is not a model parameter", "Bfore", "nowhere"):
        assert text in preview.stderr and text in run.stderr, (text, preview.stderr)


def test_a_clean_file_still_previews_and_lists(app):
    app.agent("bot")
    path = app.cases("cases.jsonl", [{"id": "a", "input": "hi", "tags": ["smoke"]}])
    listed = cli("-i", str(path), "-n", "bot", "--list")
    assert listed.exit_code == 0 and "a  standard [smoke]" in listed.stdout and "1 case selected" in listed.stdout
    shown = cli("-i", str(path), "-n", "bot", "--dry-run")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["id"] == "a"


def test_assertions_naming_a_tool_the_agent_lacks_are_caught_before_the_run(app, server):
    """A guard with a misspelt tool (``tool_count`` of ``setwrld`` with ``max: 0``, a negated ``tool_called``) passed
    whatever the agent did; mocks with the same typo were already exit 2."""
    app.agent("bot", tools=[{"type": "function", "function": {"name": "set_world", "parameters": {"type": "object"}}}],
              files={"src/tools.py": "def set_world(ctx):\n    return 1\n"})
    typos = [
        {"type": "tool_count", "tool": "set_wrld", "max": 0},
        {"type": "tool_called", "name": "set_wrld", "negate": True},
        {"type": "tool_called", "value": [{"name": "set_wrld"}]},
        {"type": "tool_sequence", "value": ["set_world", "set_wrld"], "mode": "subset", "negate": True},
        {"type": "tool_args", "tool": "set_wrld", "match": "ignore"},
        {"type": "tool_result", "value": {"tool": "set_wrld"}},
    ]
    path = app.cases("cases.jsonl", [{"id": "a", "input": "hi", "assert": typos},
                                     {"id": "b", "input": "hi", "dynamic": True, "simulator": {"use": "sim"}, "max_turns": 2,
                                      "checkpoints": [{"id": "c1", "assert": {"type": "tool_called", "name": "set_wrld"}}]}])
    app.agent("sim")
    for flags in ((), ("--dry-run",)):
        result = cli("-i", str(path), "-n", "bot", *flags)
        assert result.exit_code == 2 and server.requests == [], result.output
        kinds = [t["type"] for t in typos] + ["tool_called"]
        lines = [line for line in result.stderr.splitlines() if "has no tool" in line]
        assert [line.split(": ")[-2] for line in lines] == kinds, result.stderr
        assert all(line.endswith("the agent has no tool 'set_wrld'; did you mean 'set_world'?") for line in lines)
        assert lines[0].removeprefix("Error: ").startswith(f"{path}:1:") and lines[-1].startswith(f"{path}:2:")
    # a name close to none of the agent's tools may be a guard against a made-up call: a warning, an error with --strict
    guard = app.cases("guard.jsonl", [{"id": "g", "input": "say:ok", "assert": [{"type": "tool_called", "name": "delete_everything", "negate": True}]},
                                      {"id": "h", "input": "say:ok", "assert": [{"type": "tool_count", "tool": "delete_everything", "max": 0}]}])
    server.responder = lambda req: __import__("helpers").Answer("ok")
    result = cli("-i", str(guard), "-n", "bot")
    assert result.exit_code == 0, result.output
    said = [line for line in result.stdout.splitlines() if "delete_everything" in line]
    assert said == [f"⚠ {guard}:1:75: tool_called: the agent has no tool 'delete_everything' (its tools: set_world): "
                    "the assertion checks for a call to a tool it was never given"]  # once, not once per assertion
    strict = cli("-i", str(guard), "-n", "bot", "--strict")
    assert strict.exit_code == 2 and "tool_called: the agent has no tool 'delete_everything'; its tools: set_world; " \
                                     "unknown tools are errors with --strict" in strict.stderr


def test_tool_args_naming_an_argument_the_tool_lacks_is_caught_before_the_run(app, server):
    """A negated ``tool_args`` with ``ordr_id`` passed whatever the agent did (the schema has only ``order_id``)."""
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}}}
    app.agent("bot", tools=[{"type": "function", "function": {"name": "lookup_order", "parameters": schema}}],
              files={"src/tools.py": "def lookup_order(ctx, order_id, reason=''):\n    return {'id': order_id}\n"})
    path = app.cases("cases.jsonl", [
        {"id": "a", "input": "tool:lookup_order:{\"order_id\": \"7\"}",
         "assert": [{"type": "tool_args", "tool": "lookup_order", "arguments": {"ordr_id": "1042"}, "negate": True}]},
        {"id": "b", "input": "hi", "assert": [{"type": "tool_args", "tool": "lookup_order", "arguments": {"order_id": "1", "colour": "red"}}]},
    ])
    for flags in ((), ("--dry-run",)):
        result = cli("-i", str(path), "-n", "bot", *flags)
        assert result.exit_code == 2 and server.requests == [] and "Traceback" not in result.output, result.output
        lines = [line.removeprefix("Error: ") for line in result.stderr.splitlines() if "has no argument" in line]
        assert lines == [f"{path}:1:136: tool_args: tool 'lookup_order' has no argument 'ordr_id'; did you mean 'order_id'?",
                         f"{path}:2:116: tool_args: tool 'lookup_order' has no argument 'colour'; its arguments: order_id, reason"], result.stderr
    from scripted import scripted

    server.responder = scripted  # the names it declares pass, and a negated check fails when the call was made
    good = app.cases("good.jsonl", [{"id": "a", "input": "tool:lookup_order:{\"order_id\": \"7\"}",
                                     "assert": [{"type": "tool_args", "tool": "lookup_order", "arguments": {"order_id": "7"}, "negate": True}]}])
    result = cli("-i", str(good), "-n", "bot")
    assert result.exit_code == 1 and "FAILED" in result.output, result.output


def test_what_a_case_with_problems_names_is_checked_in_the_same_round(app, server):
    """An unknown validator in a case that had another problem was said only once that problem was fixed."""
    app.agent("bot")
    app.agent("workers.test.validator")
    validatr = {"type": "agent", "use": "agents:workers.test.validatr", "value": "polite"}
    path = app.cases("cases.jsonl", [
        {"id": "c", "input": "hi", "assert": [{"type": "contains"}, validatr]},
        {"id": "d", "input": "hi", "runs": "three", "assert": [{"type": "tool_called", "name": "x"}, {**validatr, "use": "agents:workers.test.validatr2"}]},
    ])
    for flags in ((), ("--dry-run",)):
        result = cli("-i", str(path), "-n", "bot", *flags)
        assert result.exit_code == 2 and server.requests == [] and "Traceback" not in result.output, result.output
        lines = result.stderr.splitlines()
        assert f"Error: {path}:1:39: 'contains' needs a 'value'; a string or a list of strings" in lines
        assert f"{path}:2:36: 'runs' must be an integer, not a string" in lines
        assert any(x.startswith(f"{path}:1:86: unknown agent 'workers.test.validatr'; did you mean 'workers.test.validator'?") for x in lines), lines
        assert any(x.startswith(f"{path}:2:") and "unknown agent 'workers.test.validatr2'" in x for x in lines), lines
        assert lines[-1] == "4 problems found; nothing was run"
