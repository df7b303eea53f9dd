"""The example app in the repository runs offline, as the README says."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import REPO, cli, report


def test_readme_example_suite(tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "assistants.expense", "-o", str(out), cwd=REPO)
    assert result.exit_code == 1, result.output  # two cases fail on purpose
    s = report(out)["summary"]
    assert (s["total"], s["passed"], s["failed"], s["skipped"], s["errors"]) == (11, 8, 2, 1, 0)
    failed = [r["id"] for r in report(out)["results"] if r["status"] == "failed"]
    assert failed == ["fail-wrong-word", "fail-wrong-tool"]
    assert "ℹ Agent: assistants.expense" in result.stdout


def test_green_run_without_the_deliberate_failures(tmp_path):
    result = cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "--run", "^(?!fail-)", "-o", str(tmp_path / "r.json"), cwd=REPO)
    assert result.exit_code == 0, result.output
    assert "✨ ALL TESTS PASSED ✨" in result.stdout


def test_dynamic_example(tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", "assistants/expense/tests/dynamic.jsonl", "-n", "expense", "-o", str(out), cwd=REPO)
    assert result.exit_code == 0, result.output
    assert [r["status"] for r in report(out)["results"]] == ["passed", "passed"]


def test_world_example(tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", "assistants/expense/tests/world.yaml", "-n", "expense", "-v", "-o", str(out), cwd=REPO)
    assert result.exit_code == 0, result.output
    results = {r["id"]: r for r in report(out)["results"]}
    assert [r["status"] for r in results.values()] == ["passed"] * 6
    assert results["mocked-service"]["tool_calls"][0]["mocked"] is True
    assert [c.get("fault") for c in results["retries-a-timeout"]["tool_calls"]] == ["timeout", None]
    assert results["service-down"]["world"]["changes"] == [] and "Sorry" in results["service-down"]["output"]
    assert [c["path"] for c in results["files-into-world"]["world"]["changes"]] == ["$.expenses[1]"]
    assert "[fault: error]" in result.stdout and "[mocked]" in result.stdout and "+ $.expenses[1] = " in result.stdout


def test_example_generators_and_literal_message(tmp_path):
    gen = cli("-i", "agents:workers.test.generator?count=3&focus=edge-cases", "-n", "expense", "--dry-run", cwd=REPO)
    assert gen.exit_code == 0 and len(gen.stdout.splitlines()) == 3
    out = tmp_path / "r.json"
    ran = cli("-i", "agents:workers.test.generator?count=3", "-n", "expense", "-o", str(out), cwd=REPO)
    assert ran.exit_code == 0, ran.output
    script = cli("-i", "scripts:generators.expense_cases?count=4", "-n", "expense", "-o", str(out), cwd=REPO)
    assert script.exit_code == 0 and report(out)["summary"]["passed"] == 4
    msg = cli("-i", "I want to submit an expense", "-n", "expense", cwd=REPO)
    assert msg.exit_code == 0 and "output: What type of expense" in msg.stdout


def test_example_hooks_and_script_tests(tmp_path):
    hooks = cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "--run", "^expense-turn",
                "--before", "env_test.BeforeAll", "--after", "env_test.AfterAll", "-o", str(tmp_path / "r.json"), cwd=REPO)
    assert hooks.exit_code == 0
    out = tmp_path / "s.json"
    scripts = cli("-i", "scripts.expense", "-n", "expense", "-o", str(out), cwd=REPO)
    assert scripts.exit_code == 1  # one script test fails on purpose
    statuses = {r["id"]: r["status"] for r in report(out)["results"]}
    assert statuses == {"TestAsksForType": "passed", "TestFilesAfterConfirmation": "passed", "TestRefusesOverLimit": "passed",
                        "TestReceiptNeedsVision": "skipped", "TestDeliberatelyFailing": "failed"}


RECORD = "agent-test -i assistants/expense/tests/inputs.jsonl -n expense --record examples/cassettes"


def test_the_shipped_cassettes_replay_the_example_suite(tmp_path):
    live, replayed = tmp_path / "live.json", tmp_path / "replayed.json"
    cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "-o", str(live), cwd=REPO)
    result = cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "--replay", "examples/cassettes", "--parallel", "4",
                 "-o", str(replayed), cwd=REPO)
    assert result.exit_code == 1, result.output  # the two deliberate failures, as live
    same = lambda path: [(r["id"], r["status"], r["output"], r["usage"]) for r in report(path)["results"]]  # noqa: E731
    assert same(replayed) == same(live)
    diff = cli("diff", str(live), str(replayed), "--fail-on-regression", cwd=REPO)
    assert diff.exit_code == 0 and "2 still failing, 9 unchanged" in diff.output


def test_the_shipped_cassettes_are_what_record_writes_today(tmp_path):
    fresh = tmp_path / "cassettes"
    cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "--record", str(fresh), "-o", str(tmp_path / "r.json"), cwd=REPO)
    shipped = REPO / "examples" / "cassettes"
    names = sorted(str(p.relative_to(shipped)) for p in shipped.rglob("*.jsonl"))
    assert names == sorted(str(p.relative_to(fresh)) for p in fresh.rglob("*.jsonl")), f"re-record them: {RECORD}"
    for name in names:
        assert (shipped / name).read_text() == (fresh / name).read_text(), f"{name} is stale; re-record: {RECORD}"


def test_heavy_dependencies_are_not_imported_by_the_cli_module():
    r = subprocess.run([sys.executable, "-c", "import agenttest.cli, sys; print('openai' in sys.modules, 'jsonschema' in sys.modules, 'asyncio' in sys.modules)"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.stdout.split() == ["False", "False", "False"]  # heavy imports happen only when used: --help and --version need none


def test_public_api_is_sorted_and_importable():
    import agenttest

    assert agenttest.__all__ == sorted(agenttest.__all__)
    for name in agenttest.__all__:
        assert hasattr(agenttest, name)


def test_shipped_schema_is_valid_json_schema():
    from jsonschema import Draft202012Validator

    schema = json.loads((REPO / "agenttest" / "schema" / "case.schema.json").read_text())
    Draft202012Validator.check_schema(schema)


def test_examples_folder_runs(tmp_path):
    out = tmp_path / "y.json"
    assert cli("-i", "examples/cases.yaml", "-n", "expense", "-o", str(out), cwd=REPO).exit_code == 0
    assert report(out)["summary"]["passed"] == 3
    r = cli("-i", "examples/cases.json", "-n", "expense", "--ctx", "examples/ctx.json", "-o", str(out), cwd=REPO)
    assert r.exit_code == 0, r.output
    data = report(out)
    assert data["environment"] == {"user_id": "ctx-user", "team_id": "ctx-team", "locale": "en-gb"}
    assert [x["status"] for x in data["results"]] == ["passed", "passed", "skipped"]


def test_example_mcp_server_suite(tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", "assistants/expense/tests/rates.jsonl", "-n", "expense", "-o", str(out), cwd=REPO)
    assert result.exit_code == 0, result.output
    converted, refused = report(out)["results"]
    assert [c["server"] for c in converted["tool_calls"] + refused["tool_calls"]] == ["rates", "rates"]
    assert "no rate for 'CHF'" in refused["tool_calls"][0]["error"]


def test_airline_example_runs_offline_with_the_pass_hat_k_table(tmp_path):
    """examples/airline: a tau-bench-style task port — a world, tools, scripted and mock simulators,
    end: "simulator", final state assertions — run with --runs 4 as docs/dynamic.md shows."""
    out = tmp_path / "r.json"
    result = cli("--app", "examples/airline", "-i", "examples/airline/assistants/airline/tests/tasks.jsonl", "-n", "airline",
                 "--runs", "4", "-o", str(out), cwd=REPO)
    assert result.exit_code == 0, result.output
    data = report(out)
    passed = {g["id"]: g["passed"] for g in data["summary"]["gates"]}
    assert passed == {"cancel-insured": 4, "refuse-uninsured": 4, "compensation": 4, "cancel-flaky-backend": 2}
    # by hand, over the four cases: C(c,k)/C(4,k) with c = 4, 4, 4, 2
    assert data["summary"]["pass_k"]["pass_hat"] == [0.875, round((3 + 1 / 6) / 4, 6), 0.75, 0.75]
    compensation = next(r for r in data["results"] if r["id"] == "compensation")
    assert compensation["turns"][-1]["ended"] == "end tool transfer_to_human_agents"
    assert {c["role"] for c in compensation["model_calls"]} == {"agent", "simulator"}
    assert "pass^k    0.875      0.792      0.750      0.750" in result.stdout
    assert "  95% CI  0.62–1.00  0.38–1.00  0.25–1.00  0.25–1.00" in result.stdout  # the bootstrap over the four cases (docs/gates.md)
