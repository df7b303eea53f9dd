"""Golden files for every report format, from one fixed report (regenerate: UPDATE_GOLDEN=1 pytest tests/test_golden.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agenttest.model import AssertionResult, CaseResult, CheckpointResult, RunReport, ToolCall, Turn, Usage, WorldChange, WorldRecord
from agenttest.reporting import render

GOLDEN = Path(__file__).parent / "golden"


def fixed_report() -> RunReport:
    call = ToolCall("create_expense", {"type": "travel", "amount": 3500}, "call_1", {"id": "EXP-001", "status": "submitted"}, None, 1.5)
    faulted = ToolCall("create_expense", {"type": "travel", "amount": 3500}, "call_0", None, "create_expense timed out", 0.1, fault="timeout")
    mocked = ToolCall("lookup_policy", {"type": "travel"}, "call_2", {"limit": 5000}, None, 0.2, mocked=True)
    filed = {"id": "EXP-001", "type": "travel", "amount": 3500}
    world = WorldRecord({"expenses": [], "budget": 9000}, {"expenses": [filed], "budget": 5500},
                        (WorldChange("$.expenses[0]", "added", after=filed), WorldChange("$.budget", "changed", 9000, 5500)))
    results = (
        CaseResult("T001", "passed", "asks for the type", "I want to submit an expense", "What type of expense?", 1200.0,
                   assertions=(AssertionResult("contains", True, "", "type"),), usage=Usage(20, 5, 25), index=0),
        CaseResult("T002", "failed", "files it", [{"role": "user", "content": "Yes <confirm> & go"}], "Expense submitted! EXP-001", 2100.0,
                   assertions=(AssertionResult("contains", False, "output does not contain 'approved': Expense submitted! EXP-001", "approved", "Expense submitted! EXP-001"),
                               AssertionResult("tool_called", True, "", "create_expense", {"name": "create_expense", "arguments": {"type": "travel", "amount": 3500}})),
                   tool_calls=(faulted, mocked, call), usage=Usage(40, 9, 49), index=1, world=world),
        CaseResult("T003", "error", "", "fail", None, 300.0, error="agent error: model error 500 from 127.0.0.1:8000: boom", index=2),
        CaseResult("T004", "timeout", "", "slow", None, 30000.0, error="timeout after 30s", index=3),
        CaseResult("T005", "skipped", "", "later", None, 0.0, skip_reason="needs a vision model", index=4),
        CaseResult("D001", "passed", "Expense coverage", None, "Submitted!", 6800.0, dynamic=True, tool_calls=(call,), index=5,
                   turns=(Turn(1, "Help me file an expense", "What type?", (), ("ask_type",), 1000.0),
                          Turn(2, "Dinner, $250", "Submitted!", (call,), ("call_create",), 2000.0)),
                   checkpoints=(CheckpointResult("ask_type", True, True, 1, "asks for the type"),
                                CheckpointResult("call_create", True, True, 2, "", "", "create_expense"),
                                CheckpointResult("thanks", False, False, None, "", "not reached"))),
    )
    return RunReport(results, "2026-11-30T10:00:00Z", "2026-11-30T10:00:40Z", 40400.0, "assistants.expense", "/app/assistants/expense",
                     "mock", "workers.test.user-simulator", "tests/inputs.jsonl", "report", {"user_id": "test-user", "team_id": "test-team", "locale": "en-us"},
                     {"timeout": 300.0, "parallel": 1, "runs": 1})


@pytest.mark.parametrize("ext", [".json", ".jsonl", ".md", ".html", ".xml"])
def test_golden(ext):
    text = "".join(render(fixed_report(), "report" + ext))
    path = GOLDEN / f"report{ext}"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_golden_json_matches_the_report_schema():
    from helpers import report

    report(GOLDEN / "report.json")
