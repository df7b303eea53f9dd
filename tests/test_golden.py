"""Golden files for every report format, from one fixed report (regenerate: UPDATE_GOLDEN=1 pytest tests/test_golden.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agenttest.reporting import viewer

from agenttest.verdicts.gates import Policy
from agenttest.model import Answer, AssertionResult, CallLog, CaseKey, CaseResult, CheckpointResult, Exchange, Retry, RunReport, Spend, ToolCall, Turn, Usage, WorldChange, WorldRecord
from agenttest.reporting import render
from agenttest.verdicts.outcome import make_report

GOLDEN = Path(__file__).parent / "golden"


def fixed_report() -> RunReport:
    call = ToolCall(name="create_expense", arguments={"type": "travel", "amount": 3500}, id="call_1", result={"id": "EXP-001", "status": "submitted"}, error=None, duration_ms=1.5)
    faulted = ToolCall(name="create_expense", arguments={"type": "travel", "amount": 3500}, id="call_0", result=None, error="create_expense timed out", duration_ms=0.1, fault="timeout")
    mocked = ToolCall(name="lookup_policy", arguments={"type": "travel"}, id="call_2", result={"limit": 5000}, error=None, duration_ms=0.2, mocked=True)
    filed = {"id": "EXP-001", "type": "travel", "amount": 3500}
    calls = CallLog(
        messages=({"role": "system", "content": "You file expenses. Key: ***"}, {"role": "user", "content": "Yes <confirm> & go"},
                  {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                                                                         "function": {"name": "create_expense", "arguments": "{\"type\": \"travel\"}"}}]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "{\"id\": \"EXP-001\"}"},
                  {"role": "user", "content": "{\"output\": \"Expense submitted! EXP-001\", \"criteria\": \"approved\"}"}),
        tools=([{"type": "function", "function": {"name": "create_expense", "description": "File an expense", "parameters": {"type": "object"}}}],),
        exchanges=(Exchange(role="agent", connector="gpt", url="https://api.openai.com/v1/chat/completions", turn=1, messages=(0, 1), tools=0,
                            parameters={"model": "gpt-4o-mini", "temperature": 0}, queued_ms=120.0, duration_ms=900.0,
                            response=Answer(tool_calls=({"id": "call_1", "name": "create_expense", "arguments": {"type": "travel"}},),
                                            finish_reason="tool_calls", model="gpt-4o-mini-2024-07-18", usage=Usage(30, 8, 38)),
                            retries=(Retry(kind="rate_limit", error="model error 429 from api.openai.com: slow down", status=429, waited_ms=100.0),)),
                   Exchange(role="agent", connector="gpt", url="https://api.openai.com/v1/chat/completions", turn=1, messages=(0, 1, 2, 3), tools=0,
                            parameters={"model": "gpt-4o-mini", "temperature": 0, "stream": True, "stream_options": {"include_usage": True}},
                            first_byte_ms=300.0, duration_ms=700.0,
                            response=Answer(content="Expense submitted! EXP-001", finish_reason="length", model="gpt-4o-mini-2024-07-18",
                                            usage=Usage(40, 9, 49, source="estimated"))),
                   Exchange(role="validator", connector="mock", turn=1, served="assertion 1", messages=(4,), parameters={"model": "mock"},
                            duration_ms=2.0, replayed=True, error="validator reply was empty")))
    world = WorldRecord({"expenses": [], "budget": 9000}, {"expenses": [filed], "budget": 5500},
                        (WorldChange("$.expenses[0]", "added", after=filed), WorldChange("$.budget", "changed", 9000, 5500)))
    results = (
        CaseResult(key=CaseKey(id="T001"), status="passed", name="asks for the type", input="I want to submit an expense", output="What type of expense?", duration_ms=1200.0,
                   assertions=(AssertionResult(type="contains", passed=True, message="", expected="type"),), usage=Usage(20, 5, 25), index=0),
        CaseResult(key=CaseKey(id="T002"), status="failed", name="files it", input=[{"role": "user", "content": "Yes <confirm> & go"}], output="Expense submitted! EXP-001", duration_ms=2100.0,
                   assertions=(AssertionResult(type="contains", passed=False, message="output does not contain 'approved': Expense submitted! EXP-001",
                                               expected="approved", actual="Expense submitted! EXP-001"),
                               AssertionResult(type="tool_called", passed=True, message="", expected="create_expense",
                                               actual={"name": "create_expense", "arguments": {"type": "travel", "amount": 3500}})),
                   tool_calls=(faulted, mocked, call), usage=Usage(40, 9, 49), index=1, world=world, calls=calls),
        CaseResult(key=CaseKey(id="T003"), status="error", name="", input="fail", output=None, duration_ms=300.0, error="agent error: model error 500 from 127.0.0.1:8000: boom", index=2),
        CaseResult(key=CaseKey(id="T004"), status="timeout", name="", input="slow", output=None, duration_ms=30000.0, error="timeout after 30s", index=3),
        CaseResult(key=CaseKey(id="T005"), status="skipped", name="", input="later", output=None, duration_ms=0.0, skip_reason="needs a vision model", index=4),
        CaseResult(key=CaseKey(id="D001"), status="passed", name="Expense coverage", input=None, output="Submitted!", duration_ms=6800.0, dynamic=True, tool_calls=(call,), index=5,
                   turns=(Turn(turn=1, input="Help me file an expense", output="What type?", tool_calls=(), checkpoints=("ask_type",), duration_ms=1000.0),
                          Turn(turn=2, input="Dinner, $250", output="Submitted!", tool_calls=(call,), checkpoints=("call_create",), duration_ms=2000.0)),
                   checkpoints=(CheckpointResult(id="ask_type", reached=True, required=True, reached_at_turn=1, description="asks for the type"),
                                CheckpointResult(id="call_create", reached=True, required=True, reached_at_turn=2, description="", message="", tool="create_expense"),
                                CheckpointResult(id="thanks", reached=False, required=False, reached_at_turn=None, description="", message="not reached"))),
    )
    return RunReport(results=results, started_at="2026-11-30T10:00:00Z", completed_at="2026-11-30T10:00:40Z", duration_ms=40400.0, agent_id="assistants.expense", agent_path="/app/assistants/expense",
                     connector="mock", simulator="workers.test.user-simulator", input_source="tests/inputs.jsonl", output_file="report",
                     environment={"user_id": "test-user", "team_id": "test-team", "locale": "en-us"},
                     options={"timeout": 300.0, "parallel": 1, "runs": 1})


def gated_report() -> RunReport:
    """Two cases × two connectors × two runs: gates, an early stop, a matrix, costs, warnings, a fail-fast stop."""
    def run(cid: str, conn: str, k: int, index: int, passed: bool = True, **extra) -> CaseResult:
        price = 20 / 1e6 if conn == "fake-a" else 40 / 1e6
        spend = (Spend("agent", conn, Usage(10, 5, 15), 1, price), Spend("validator", "judge", Usage(30, 3, 33), 1, None))
        check = AssertionResult(type="contains", passed=passed, message="" if passed else "output does not contain 'ok': nope", expected="ok", actual="ok" if passed else "nope")
        return CaseResult(key=CaseKey(id=cid, connector=conn), status="passed" if passed else "failed", name="", input=f"say {cid}", output="ok" if passed else "nope", duration_ms=100.0 * (k + index),
                          assertions=(check,), usage=Usage(10, 5, 15), run=k, index=index, spend=spend, **extra)

    results = [
        run("greet", "fake-a", 1, 0), run("greet", "fake-a", 2, 1),
        run("greet", "fake-b", 1, 2), run("greet", "fake-b", 2, 3, passed=False, warnings=("after hook env_test.After: ValueError: boom",)),
        run("ask", "fake-a", 1, 4, passed=False),
        run("ask", "fake-b", 1, 6), run("ask", "fake-b", 2, 7),
    ]
    policies = {CaseKey("", cid, conn): Policy(2, 1.0) for cid in ("greet", "ask") for conn in ("fake-a", "fake-b")}
    policies[CaseKey("", "later", "fake-a")] = policies[CaseKey("", "later", "fake-b")] = Policy(2, 0.5)
    return make_report(results, 1795953600.0, 900.0, policies=policies, saved={CaseKey("", "ask", "fake-a"): 1},
                       agent_id="bot", agent_path="/app/assistants/bot", connector="fake-a, fake-b", input_source="tests/cases.jsonl",
                       output_file="report", environment={"user_id": "test-user", "team_id": "test-team", "locale": "en-us"},
                       options={"runs": 2, "connectors": ["fake-a", "fake-b"], "early_stop": True, "fail_fast": True},
                       matrix=("fake-a", "fake-b"), stopped_early=True, not_run=4, warnings=("$ENV.SHORT is shorter than 8 characters",))


REPORTS = {"report": fixed_report, "gated": gated_report}


@pytest.mark.parametrize("ext", [".json", ".jsonl", ".md", ".html", ".xml"])
@pytest.mark.parametrize("name", list(REPORTS))
def test_golden(name, ext):
    text = "".join(render(REPORTS[name](), "report" + ext))
    if ext == ".html":  # the page's data and static content are golden; the viewer's own script and style are tested in a browser
        text = text.replace(viewer.asset("viewer.js"), "/* viewer.js */").replace(viewer.asset("viewer.css"), "/* viewer.css */")
        text = text.replace(viewer.asset("calls.js"), "/* calls.js */")
    path = GOLDEN / f"{name}{ext}"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("name", list(REPORTS))
def test_golden_json_matches_the_report_schema(name):
    from helpers import report

    report(GOLDEN / f"{name}.json")
