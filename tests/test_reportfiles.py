"""JSON reports read back (for diff, merge, --baseline): the inverse of the report writer."""

from __future__ import annotations

import json

from agenttest.reporting.codec import report_dict
from agenttest.reporting.codec import read
from helpers import REPO, cli, report


def test_a_report_read_back_writes_the_same_document(tmp_path):
    golden = REPO / "tests" / "golden" / "report.json"
    assert report_dict(read(str(golden))) == json.loads(golden.read_text())


def test_a_rich_run_reads_back_whole(tmp_path):
    out = tmp_path / "r.json"
    cli("-i", "assistants/expense/tests/inputs.jsonl", "-i", "assistants/expense/tests/dynamic.jsonl", "-i", "assistants/expense/tests/world.yaml",
        "-n", "expense", "--runs", "2", "-o", str(out), cwd=REPO)
    data = report(out)
    assert any(r.get("turns") for r in data["results"]) and any(r.get("world") for r in data["results"])
    assert any(r["status"] == "skipped" for r in data["results"]) and data["summary"]["stability"]
    assert report_dict(read(str(out))) == data


def test_a_gated_matrix_report_with_costs_reads_back_whole():
    golden = REPO / "tests" / "golden" / "gated.json"
    data = json.loads(golden.read_text())
    assert data["summary"]["gates"] and data["summary"]["matrix"] and data["summary"]["costs"]
    assert report_dict(read(str(golden))) == data
