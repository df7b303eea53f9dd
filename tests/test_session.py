"""The session — one invocation from load to exit code — in-process and through the CLI, offline on the
mock connector: failures inside a case never end the run; a bug outside any case is exit 3 with the
report still written; load-time problems come all at once, each with its place."""

from __future__ import annotations

import asyncio
import json

import pytest

from agenttest.config import RunConfig
from agenttest.errors import ExitCode, InputError, InternalError
from agenttest.session import Session

from helpers import cli, report

RULES = """
rules:
  - tool: "*"
    reply: "done: {{ tool_result }}"
  - user: "^files"
    tool_calls: [{name: lookup}]
  - user: ".*"
    reply: "echo: {{ user }}"
"""
TOOLS = [{"name": "lookup", "description": "look something up", "parameters": {"type": "object", "properties": {}}}]


@pytest.fixture
def mockapp(offline_app):
    offline_app.agent("bot", connector="mock", tools=TOOLS, files={
        "mock.yml": RULES,
        "src/tools.py": "def lookup(ctx):\n    print('looked up for', ctx.user_id)\n    return {'found': 3}\n",
        "src/env_test.py": "def Before(ctx, case):\n    return None\n",
    })
    offline_app.agent("badcreate", connector="mock", files={"mock.yml": RULES, "src/index.py": "def create(ctx, messages):\n    return {'messages': 5}\n"})
    return offline_app


def run_session(tmp_path, **fields) -> tuple[ExitCode, str]:
    import io

    out = io.StringIO()
    code = asyncio.run(Session(RunConfig(**fields), out).run())
    return code, out.getvalue()


def test_session_runs_cases_and_writes_the_report(mockapp, tmp_path):
    path = mockapp.cases("cases.jsonl", [{"id": "a", "input": "hi", "assert": {"type": "contains", "value": "echo: hi"}},
                                         {"id": "b", "input": "files please", "assert": {"type": "tool_called", "name": "lookup"}}])
    out = tmp_path / "r.json"
    code, text = run_session(tmp_path, inputs=(str(path),), agent="bot", outputs=(str(out),), app=str(mockapp.root))
    assert code == ExitCode.OK, text
    data = report(out)
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    assert data["results"][1]["stdout"] == "looked up for test-user\n"  # captured, not printed
    assert "looked up for" not in text


def test_a_bad_create_hook_is_one_cases_error_the_others_keep_their_verdicts(mockapp, tmp_path):
    mockapp.cases("assistants/badcreate/tests/cases.jsonl", [{"id": "x", "input": "hi"}])
    path = mockapp.cases("assistants/bot/tests/cases.jsonl", [
        {"id": "ok", "input": "hi", "assert": {"type": "contains", "value": "echo"}},
        {"id": "no", "input": "hi", "assert": {"type": "contains", "value": "nope"}},
    ])
    bad = mockapp.root / "assistants/badcreate/tests/cases.jsonl"
    out = tmp_path / "r.json"
    result = cli("-i", str(bad), "-o", str(out))
    assert result.exit_code == 1 and "Traceback" not in result.output
    (r,) = report(out)["results"]
    assert r["status"] == "error" and "create hook returned 'messages' that is not a list" in r["error"]
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 1 and [x["status"] for x in report(out)["results"]] == ["passed", "failed"]


def test_a_bug_outside_any_case_is_exit_3_with_the_report_written(mockapp, tmp_path, monkeypatch):
    from agenttest.reporting import console

    def broken(self, result, runs=1):
        raise KeyError("a bug in the console")

    monkeypatch.setattr(console.Console, "finished", broken)
    path = mockapp.cases("cases.jsonl", [{"id": "a", "input": "hi"}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 3
    assert "internal error: KeyError: 'a bug in the console'" in result.stderr
    assert "Traceback (most recent call last)" in result.stderr and "please report it" in result.stderr
    assert [r["id"] for r in report(out)["results"]] == ["a"]  # what ran is in the report


def test_a_bug_outside_any_case_raises_internal_error_from_the_session(mockapp, tmp_path, monkeypatch):
    from agenttest.reporting import console

    monkeypatch.setattr(console.Console, "finished", lambda self, r, runs=1: 1 / 0)
    path = mockapp.cases("cases.jsonl", [{"id": "a", "input": "hi"}])
    with pytest.raises(InternalError) as info:
        run_session(tmp_path, inputs=(str(path),), agent="bot", outputs=(str(tmp_path / "r.json"),), app=str(mockapp.root))
    assert info.value.exit_code == 3 and "ZeroDivisionError" in info.value.traceback


def test_every_load_time_problem_comes_at_once_with_its_place(mockapp, tmp_path):
    cases = [
        {"id": "typo", "input": "hi", "asert": {"type": "contains", "value": "x"}},
        {"id": "judge", "input": "hi", "assert": {"type": "agent", "use": "agents:nobody", "value": "ok"}},
        {"id": "hook", "input": "hi", "before": "env_test.Befor"},
    ]
    path = mockapp.cases("cases.jsonl", cases)
    lines = path.read_text().splitlines()
    with pytest.raises(InputError) as info:
        run_session(tmp_path, inputs=(str(path),), agent="bot", app=str(mockapp.root))
    problems = [str(p) for p in info.value.problems]
    col = [line.index(word) + 1 for line, word in zip(lines, ['"asert"', '"agents:nobody"', '"env_test.Befor"'])]
    assert len(problems) == 3
    assert problems[0] == f"{path}:1:{col[0]}: 'asert' is not a field; did you mean 'assert'?"
    assert problems[1].startswith(f"{path}:2:{col[1]}: unknown agent 'nobody'")
    assert problems[2].startswith(f"{path}:3:{col[2]}: hook 'env_test.Befor':")
    assert problems[2].endswith("has no function 'Befor'; did you mean 'Before'?")


def test_dry_run_needs_no_agent_and_runs_nothing(mockapp, tmp_path):
    path = mockapp.cases("loose.jsonl", [{"id": "a", "input": "hi"}])
    code, text = run_session(tmp_path, inputs=(str(path),), dry_run=True, app=str(mockapp.root))
    assert code == ExitCode.OK and json.loads(text) == {"id": "a", "input": [{"role": "user", "content": "hi"}]}
