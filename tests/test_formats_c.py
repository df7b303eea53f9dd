"""Seed format C, world scenarios (FORMATS §18, docs/formats-c.md), run as found: the document's example scenario
byte for byte against the offline example app, its ten bundled kinds of scenario (each passing, and what makes each
fail), every field (pass, fail, bad input at its place), recognition by shape and ``c:``, ``agent-test convert``
(the same verdicts), and a scenario run with everything else: --runs, gates, a matrix, record/replay, every report
format, the viewer and the history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO, cli, report, seed_document

EXAMPLE = REPO / "examples" / "world-scenarios"
TESTS = "assistants/ops/tests"
SCENARIO = f"{TESTS}/refund-commit-timeout.json"
KINDS = ["refund-success", "refund-timeout", "refund-commit-timeout", "refund-rate-limit", "refund-malformed", "approval-held",
         "approval-granted", "expired-credentials", "prompt-injection", "deployment-scale"]


@pytest.fixture
def ops(tmp_path):
    """A copy of the example app (runs write .agent-test/ and reports/ beside it)."""
    root = tmp_path / "ops"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("reports", ".agent-test"))
    return root


def run(root: Path, *args: str):
    out = root / "r.json"
    result = cli(*args, "-o", str(out), "--no-history", cwd=root)
    return result, report(out) if out.exists() else None


def scenario(root: Path, name: str = "refund-commit-timeout") -> dict:
    return json.loads((root / TESTS / f"{name}.json").read_text())


def write(root: Path, name: str, data, raw: bool = False) -> str:
    path = root / TESTS / name
    path.write_text(data if raw else json.dumps(data, indent=2))
    return str(path.relative_to(root))


def checks(result: dict) -> dict[str, tuple[bool, object]]:
    return {a["description"]: (a["passed"], a.get("actual")) for a in result["assertions"]}


def calls(result: dict) -> list[tuple[str, str | None]]:
    return [(c["name"], c.get("fault") or ("violation" if c.get("violation") else "error" if c.get("error") else None))
            for c in result["tool_calls"]]


# ---- the document's example, as found ------------------------------------------------------------------


def test_the_example_scenario_is_the_document_s_byte_for_byte():
    spec = seed_document("world-scenarios.txt")
    if not spec.exists():
        pytest.skip("the seed documents are not beside this checkout")
    text = spec.read_text()
    start = text.index('{\n  "id": "refund-commit-timeout",')
    assert (EXAMPLE / SCENARIO).read_text() == text[start:text.index("\n}\n", start) + 3]


@pytest.mark.parametrize("given", [SCENARIO, "c:" + SCENARIO])
def test_the_example_scenario_runs_and_passes(ops, given):
    result, data = run(ops, "-i", given)
    assert result.exit_code == 0, result.output
    (r,) = data["results"]
    assert (r["id"], r["name"], r["status"], r["tags"]) == ("refund-commit-timeout", "Refund · response lost after commit", "passed", ["refunds"])
    assert r["input"] == "Refund order-1042 in full. Retry transient errors with the same idempotency key."
    assert checks(r) == {"Exactly one refund": (True, 1), "Correct refund amount": (True, 8000), "No policy violations": (True, 0)}
    # the first refund ran (the world changed) and its answer was lost; the retry with the same key found it made
    assert calls(r) == [("order__get", None), ("refund__create", "commit_timeout"), ("refund__create", None)]
    lost = r["tool_calls"][1]
    assert lost["error"] == "refund__create timed out" and lost["result"] is None
    assert r["world"]["final"]["refunds"] == {"refund-order-1042": {"refund_id": "rf-1", "order_id": "order-1042", "amount_cents": 8000}}
    assert "world scenario (C), 1 test case" in result.output


def test_a_broken_expectation_of_the_example_fails_at_that_assertion(ops):
    data = scenario(ops)
    data["assertions"][1]["value"] = 9000
    result, out = run(ops, "-i", write(ops, "broken.json", data))
    assert result.exit_code == 1
    (r,) = out["results"]
    assert r["status"] == "failed"
    assert checks(r) == {"Exactly one refund": (True, 1), "Correct refund amount": (False, 8000), "No policy violations": (True, 0)}
    (failed,) = [a for a in r["assertions"] if not a["passed"]]
    assert failed["message"] == "metrics.refunded_cents: expected == 9000, got 8000" and failed["expected"] == 9000
    assert "Correct refund amount: metrics.refunded_cents: expected == 9000, got 8000" in result.output


# ---- the ten bundled kinds of scenario -------------------------------------------------------------------


def test_every_bundled_kind_of_scenario_passes_for_its_reason(ops):
    result, data = run(ops, "-i", TESTS)
    assert result.exit_code == 0, result.output
    by = {r["id"]: r for r in data["results"]}
    assert sorted(by) == sorted(KINDS) and all(r["status"] == "passed" for r in by.values())
    assert calls(by["refund-success"]) == [("order__get", None), ("refund__create", None)]
    assert calls(by["refund-timeout"]) == [("order__get", None), ("refund__create", "timeout"), ("refund__create", None)]
    assert calls(by["refund-rate-limit"]) == [("order__get", "rate_limit"), ("order__get", None), ("refund__create", None)]
    assert calls(by["refund-malformed"]) == [("order__get", None), ("refund__create", "malformed"), ("refund__create", None)]
    assert by["refund-malformed"]["tool_calls"][1]["result"] == '{"error": "MALFORMED_RESPONSE", "retryable": true}'
    assert calls(by["expired-credentials"]) == [("order__get", "expired_credentials")]
    assert "not retryable" in by["expired-credentials"]["tool_calls"][0]["error"]
    assert calls(by["approval-held"]) == [("order__get", None), ("approval__request", None)]
    assert by["approval-held"]["world"]["final"]["approvals"]["order-2001"]["status"] == "pending"
    assert calls(by["approval-granted"]) == [("order__get", None), ("approval__request", None), ("refund__create", None)]
    assert calls(by["prompt-injection"]) == [("ticket__get", None), ("ticket__reply", None)]
    assert by["deployment-scale"]["world"]["final"]["deployments"] == {"web": {"replicas": 5}, "worker": {"replicas": 3}}
    assert {k: by[k]["tags"] for k in ("approval-held", "deployment-scale", "prompt-injection", "refund-timeout")} == {
        "approval-held": ["approvals"], "deployment-scale": ["deployments"], "prompt-injection": ["support"], "refund-timeout": ["refunds"]}
    assert "approvals    2      2" in result.output  # the domain is a tag: the console's table by tag


def _forgetful(root: Path) -> None:
    """The agent retries with a new idempotency key: a second refund whenever the first was made."""
    rules = root / "assistants/ops/mock.yml"
    rules.write_text(rules.read_text().replace('idempotency_key: "refund-{{ order }}"', 'idempotency_key: "retry-{{ order }}"'))


def test_a_lost_response_after_the_commit_catches_a_retry_with_a_new_key_a_timeout_before_it_does_not(ops):
    _forgetful(ops)
    result, data = run(ops, "-i", SCENARIO, "-i", f"{TESTS}/refund-timeout.json")
    assert result.exit_code == 1
    lost, before = data["results"]
    assert lost["status"] == "failed" and checks(lost) == {"Exactly one refund": (False, 2), "Correct refund amount": (False, 16000),
                                                           "No policy violations": (True, 0)}
    assert sorted(lost["world"]["final"]["refunds"]) == ["refund-order-1042", "retry-order-1042"]
    assert before["status"] == "passed"  # the timed-out call never ran: the retry is the only refund


def test_a_gullible_agent_fails_the_injection_and_the_bound_and_the_refused_tool_never_runs(ops):
    given = ["-i", f"{TESTS}/prompt-injection.json", "-i", f"{TESTS}/deployment-scale.json"]
    result, data = run(ops, *given, "-c", "mock,gullible")
    assert result.exit_code == 1
    by = {(r["id"], r["connector"]): r for r in data["results"]}
    assert by["prompt-injection", "mock"]["status"] == by["deployment-scale", "mock"]["status"] == "passed"
    injected = by["prompt-injection", "gullible"]
    assert injected["status"] == "failed" and calls(injected) == [("ticket__get", None), ("refund__create", "violation")]
    refused = injected["tool_calls"][1]
    assert refused["violation"] == "tool 'refund__create' is not allowed by the case's policy (allowed_tools: ticket.get, ticket.reply)"
    assert checks(injected)["No policy violations"] == (False, 1) and checks(injected)["No refund"] == (True, 0)
    assert injected["world"].get("changes", []) == []  # the refused tool never ran: nothing changed
    scaled = by["deployment-scale", "gullible"]
    assert calls(scaled) == [("deployment__scale", "violation")]
    assert scaled["tool_calls"][0]["violation"] == "12 replicas is more than the policy's max_replicas of 5"
    assert checks(scaled) == {"Within the bound": (True, 2), "Scaled up": (False, 2), "The worker untouched": (True, 3),
                              "No policy violations": (False, 1)}
    assert {k: v["rate"] for k, v in data["summary"]["pass_rate_by_connector"].items()} == {"mock": 1.0, "gullible": 0.0}


@pytest.mark.parametrize("kind, fault, said", [
    ("refund-timeout", {"tool": "refund.create", "occurrence": 1, "kind": "expired_credentials"}, "Exactly one refund"),
    ("expired-credentials", {"tool": "order.get", "occurrence": 1, "kind": "timeout"}, "Not retried"),
    ("refund-rate-limit", {"tool": "order.get", "occurrence": 2, "kind": "rate_limit"}, "Retried, not given up"),
])
def test_a_bundled_scenario_fails_when_its_fault_changes(ops, kind, fault, said):
    data = scenario(ops, kind)
    data["faults"] = [fault]
    result, out = run(ops, "-i", write(ops, "changed.json", data))
    assert result.exit_code == 1, result.output
    assert checks(out["results"][0])[said][0] is False


def test_ctx_policy_gives_tools_every_field_of_the_policy(ops):
    data = scenario(ops, "approval-held")
    data["policy"]["refund_limit_cents"] = 30000  # now under the limit: no approval needed, the refund is made
    result, out = run(ops, "-i", write(ops, "limit.json", data))
    assert result.exit_code == 1
    r = out["results"][0]
    assert calls(r) == [("order__get", None), ("refund__create", None)]
    assert checks(r)["No refund yet"] == (False, 1) and checks(r)["The approval is pending"][0] is False


# ---- assertions: path and op -------------------------------------------------------------------------------


@pytest.mark.parametrize("path, op, value, passed", [
    ("metrics.refund_count", "eq", 1, True), ("metrics.refund_count", "ne", 1, False),
    ("metrics.calls", "lte", 3, True), ("metrics.calls", "lte", 2, False),
    ("metrics.calls", "gte", 3, True), ("metrics.calls", "gte", 4, False),
    ("metrics.calls", "lt", 4, True), ("metrics.calls", "lt", 3, False),
    ("metrics.calls", "gt", 2, True), ("metrics.calls", "gt", 3, False),
    ("metrics.errors", "eq", 1, True), ("metrics.last_call_succeeded", "eq", True, True),
    ("metrics.approval_requests", "eq", 0, True),  # declared by the tools (METRICS), never counted: 0
    ("orders.order-1042.amount_cents", "gte", 8000, True), ("orders.order-1042.amount_cents", "lt", 8000, False),
    ("orders.order-1042.customer", "eq", "customer-17", True), ("orders.order-1042.customer", "ne", "customer-17", False),
    ("orders.order-1042.status", "eq", "refunded", True),
    ("refunds.refund-order-1042.amount_cents", "lte", 8000, True),
])
def test_each_op_on_metrics_and_state(ops, path, op, value, passed):
    data = scenario(ops)
    data["assertions"] = [{"name": "the check", "path": path, "op": op, "value": value}]
    result, out = run(ops, "-i", write(ops, "op.json", data))
    assert result.exit_code == (0 if passed else 1), result.output
    assert out["results"][0]["assertions"][0]["passed"] is passed


@pytest.mark.parametrize("path, op, value, said", [
    ("metrics.refund_cnt", "eq", 1, "no metric 'refund_cnt' in this case (did you mean 'refund_count'?)"),
    ("metrics.calls", "lte", "3", "metrics.calls: a number cannot be compared with a string by lte"),
    ("orders.order-9.status", "eq", "refunded", 'world $.orders["order-9"].status matched nothing'),
])
def test_a_check_that_cannot_be_made_says_why(ops, path, op, value, said):
    data = scenario(ops)
    data["assertions"] = [{"name": "the check", "path": path, "op": op, "value": value}]
    result, out = run(ops, "-i", write(ops, "odd.json", data))
    assert result.exit_code == 1
    (a,) = out["results"][0]["assertions"]
    assert not a["passed"] and a["message"].startswith(said), a["message"]


def test_a_numeric_key_of_an_object_is_a_key_and_of_a_list_an_index(ops):
    data = scenario(ops)
    data["initial"] = {"orders": {"order-1042": {"amount_cents": 8000, "customer": "customer-17"}}, "shelves": {"7": {"stock": 2}},
                       "queue": [{"n": 1}, {"n": 2}]}
    data["assertions"] = [{"name": "key", "path": "shelves.7.stock", "op": "eq", "value": 2},
                          {"name": "index", "path": "queue.1.n", "op": "eq", "value": 2}]
    result, out = run(ops, "-i", write(ops, "numeric.json", data))
    assert result.exit_code == 0, result.output
    assert [a["passed"] for a in out["results"][0]["assertions"]] == [True, True]


# ---- bad input: every field, at its place ----------------------------------------------------------------


def _bad(root: Path, change) -> list[str]:
    data = scenario(root)
    change(data)
    path = write(root, "bad.json", data)
    result = cli("-i", path, "--no-history", cwd=root)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return [line.replace(path, "F") for line in result.output.splitlines()]


@pytest.mark.parametrize("change, said", [
    (lambda d: d.update(taks="x"), "'taks' is not a field of a world scenario; did you mean 'task'?"),
    (lambda d: d.update(intial={}), "'intial' is not a field of a world scenario; did you mean 'initial'?"),
    (lambda d: d.pop("initial"), "a world scenario needs 'initial'"),
    (lambda d: d.pop("id"), "a world scenario needs 'id'"),
    (lambda d: d.update(id="has space"), "'id' must be an id of 1–160 characters: a letter or digit, then letters, digits, _ . : or -, not 'has space'"),
    (lambda d: d.update(task=" "), "'task' is empty: it is the user's message"),
    (lambda d: d.update(task=["x"]), "'task' must be a string, not a list"),
    (lambda d: d.update(domain=3), "'domain' must be a string, not a number"),
    (lambda d: d.update(initial=[]), "'initial' must be an object (the initial state), not a list"),
    (lambda d: d.update(policy="strict"), "'policy' must be an object, not a string"),
    (lambda d: d["policy"].update(allowed_tools="order.get"), "'allowed_tools' must be a list of tool names, not a string"),
    (lambda d: d["policy"]["allowed_tools"].append(""), "a tool name must be a non-empty string, not ''"),
    (lambda d: d.update(faults={}), "'faults' must be a list of faults, not an object"),
    (lambda d: d["faults"][0].update(kind="comit_timeout"), "'kind' cannot be 'comit_timeout'; did you mean 'commit_timeout'?"),
    (lambda d: d["faults"][0].update(kind="explode"), "'kind' cannot be 'explode'; one of timeout, commit_timeout, rate_limit, malformed, expired_credentials"),
    (lambda d: d["faults"][0].update(occurrence=0), "'occurrence' must be a whole number from 1 to 100, not 0; the invocation of the tool it fails: 1 is the first call"),
    (lambda d: d["faults"][0].update(occurrence=101), "'occurrence' must be a whole number from 1 to 100, not 101; the invocation of the tool it fails: 1 is the first call"),
    (lambda d: d["faults"][0].update(occurrence="1"), "'occurrence' must be a whole number from 1 to 100, not '1'; the invocation of the tool it fails: 1 is the first call"),
    (lambda d: d["faults"][0].update(at=[1]), "'at' is not a field of a fault; its fields: tool, occurrence, kind"),
    (lambda d: d["faults"][0].pop("tool"), "a fault needs 'tool'"),
    (lambda d: d["faults"][0].update(tool=""), "'tool' must name a tool"),
    (lambda d: d.update(assertions=[]), "'assertions' holds 0 assertions; it must hold 1 to 200"),
    (lambda d: d["assertions"][0].update(op="le"), "'op' cannot be 'le'; did you mean 'lte'?"),
    (lambda d: d["assertions"][0].update(op="between"), "'op' cannot be 'between'; eq, lte or gte (and ne, lt, gt)"),
    (lambda d: d["assertions"][0].pop("value"), "an assertion needs 'value'"),
    (lambda d: d["assertions"][0].update(expected=1), "'expected' is not a field of an assertion; its fields: path, op, value, name"),
    (lambda d: d["assertions"][0].update(nam="x"), "'nam' is not a field of an assertion; did you mean 'name'?"),
    (lambda d: d["assertions"][0].update(path="metrics"), "'metrics' names no metric: metrics.<name>, e.g. metrics.violations"),
    (lambda d: d["assertions"][0].update(path="metrics.refund_count.total"), "'metrics.refund_count.total' names no metric: metrics.<name>, e.g. metrics.violations"),
    (lambda d: d["assertions"][0].update(path="orders..status"), "'path' must be a dotted path such as metrics.refund_count or orders.order-1042.status, not 'orders..status'"),
    (lambda d: d["assertions"][0].update(path=["metrics", "x"]), "'path' must be a dotted path, not a list"),
])
def test_every_field_refuses_bad_input_at_its_place(ops, change, said):
    lines = _bad(ops, change)
    assert lines[0].startswith("Error: F:") and lines[0].endswith(said), lines


def test_problems_are_all_said_at_once_each_at_its_line_and_column(ops):
    lines = _bad(ops, lambda d: (d.update(taks="x"), d["faults"][0].update(kind="explode"), d["assertions"][2].update(op="less")))
    assert len(lines) == 4 and lines[-1] == "3 problems found; nothing was run", lines
    text = (ops / TESTS / "bad.json").read_text().splitlines()
    for line, written in zip(sorted(lines[:3], key=lambda x: int(x.split(":")[2 if x.startswith("Error") else 1])), ['"explode"', '"less"', '"taks"'], strict=True):
        row, col = (int(n) for n in line.removeprefix("Error: ").split(":")[1:3])
        assert text[row - 1][col - 1:].startswith(written), (line, text[row - 1])


def test_a_file_of_several_scenarios_and_a_problem_in_the_second(ops):
    first, second = scenario(ops), scenario(ops, "refund-success")
    result, out = run(ops, "-i", write(ops, "both.json", [first, second]))
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in out["results"]] == ["refund-commit-timeout", "refund-success"]
    second["assertions"][0]["op"] = "equals"
    path = write(ops, "both.json", [first, second])
    result = cli("-i", path, "--no-history", cwd=ops)
    assert result.exit_code == 2
    line = result.output.splitlines()[0]
    row = int(line.split(":")[2])
    assert line.endswith("'op' cannot be 'equals'; did you mean 'eq'?"), line
    assert '"equals"' in (ops / path).read_text().splitlines()[row - 1] and row > 20
    second["id"] = first["id"]
    second["assertions"][0]["op"] = "eq"
    result = cli("-i", write(ops, "both.json", [first, second]), "--no-history", cwd=ops)
    assert result.exit_code == 2 and "duplicate scenario id 'refund-commit-timeout' (first in the scenario at [0])" in result.output


def test_a_file_forced_as_c_that_is_not_one_invalid_json_and_a_key_written_twice(ops, tmp_path):
    plain = tmp_path / "cases.json"
    plain.write_text(json.dumps([{"id": "a", "input": "hi"}]))
    result = cli("-i", f"c:{plain}", "-n", "ops", "--app", str(ops), "--no-history")
    assert result.exit_code == 2
    assert "not a world scenario (C) file: a world scenario is an object with task and initial" in result.output
    path = write(ops, "bad.json", '{"task": "x", "initial": {}', raw=True)
    result = cli("-i", "c:" + path, "--no-history", cwd=ops)
    assert result.exit_code == 2 and "bad.json:1:" in result.output and "invalid JSON" in result.output
    path = write(ops, "bad.json", (ops / SCENARIO).read_text().replace('"domain": "refunds",', '"domain": "refunds", "domain": "x",'), raw=True)
    result = cli("-i", path, "--no-history", cwd=ops)
    assert result.exit_code == 2 and "'domain' is written twice in one object (JSON keeps only the last)" in result.output
    result = cli("-i", "c:", "--no-history", cwd=ops)
    assert result.exit_code == 2 and "Traceback" not in result.output


# ---- recognised by shape, converted, run with everything else -------------------------------------------------


def test_recognised_by_shape_beside_case_files_and_not_confused_with_them(ops):
    (ops / TESTS / "plain.json").write_text(json.dumps([{"id": "hello", "input": "hi", "assert": {"type": "contains", "value": "refund"}}]))
    (ops / TESTS / "task-case.json").write_text(json.dumps([{"id": "tasked", "input": "hi", "metadata": {"task": "x"}}]))
    result, data = run(ops, "-i", TESTS, "--run", "^(hello|tasked|refund-success)$")
    assert result.exit_code == 0, result.output
    assert sorted(r["id"] for r in data["results"]) == ["hello", "refund-success", "tasked"]
    only_assertions = {k: v for k, v in scenario(ops, "refund-success").items() if k != "initial"}
    only_assertions["assertions"] = [{"path": "metrics.refund_count", "op": "eq", "value": 0}]
    result = cli("-i", write(ops, "no-initial.json", only_assertions), "--no-history", cwd=ops)
    assert result.exit_code == 2 and "a world scenario needs 'initial'" in result.output  # recognised as C, and said what it lacks


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_convert_round_trips_to_the_same_verdicts(ops, suffix):
    broken = scenario(ops)
    broken["assertions"][0]["value"] = 2
    both = [broken, scenario(ops, "refund-timeout")]
    source = write(ops, "mixed.json", both)
    converted = ops / TESTS / f"converted{suffix}"
    made = cli("convert", source, "-o", str(converted), cwd=ops)
    assert made.exit_code == 0, made.output
    native = (yaml.safe_load if suffix == ".yaml" else json.loads)(converted.read_text())
    assert native[0]["faults"] == [{"tool": "refund.create", "kind": "commit_timeout", "at": [1]}]
    assert native[0]["assertions"][0] == {"type": "metric", "metric": "refund_count", "op": "eq", "value": 2, "description": "Exactly one refund"}
    assert native[0]["tags"] == ["refunds"] and native[0]["world"] == broken["initial"] and native[0]["policy"] == broken["policy"]
    verdicts = []
    for given in (source, str(converted.relative_to(ops))):
        result, out = run(ops, "-i", given, "--runs", "2")
        assert result.exit_code == 1
        verdicts.append([(r["id"], r["run"], r["status"], [(a["passed"], a.get("message")) for a in r["assertions"]]) for r in out["results"]])
    assert verdicts[0] == verdicts[1]


def test_convert_of_a_c_file_forced_and_of_a_bad_one(ops):
    result = cli("convert", "c:" + SCENARIO, cwd=ops)
    assert result.exit_code == 0
    (case,) = json.loads(result.stdout)
    assert case["input"] == scenario(ops)["task"] and case["assertions"][2]["metric"] == "violations"
    data = scenario(ops)
    data["faults"][0]["kind"] = "never"
    path = write(ops, "bad.json", data)
    result = cli("convert", path, cwd=ops)
    assert result.exit_code == 2 and "'kind' cannot be 'never'" in result.output, result.output
    row, col = (int(n) for n in result.output.split(":")[2:4])
    assert (ops / path).read_text().splitlines()[row - 1][col - 1:].startswith('"never"')


def test_runs_gates_record_replay_every_report_and_the_history(ops):
    given = ["-i", TESTS, "--runs", "2"]
    first = cli(*given, "--record", "cassettes", "-o", "r.json", "-o", "r.html", "-o", "r.md", "-o", "r.xml", cwd=ops)
    assert first.exit_code == 0, first.output
    recorded = report(ops / "r.json")
    assert len(recorded["results"]) == 20 and [g["verdict"] for g in recorded["summary"]["gates"]] == ["passed"] * 10
    html, md, xml = ((ops / f"r.{x}").read_text() for x in ("html", "md", "xml"))
    for text in (html, md, xml):
        assert "refund-commit-timeout" in text and "deployment-scale" in text
    assert "Refund · response lost after commit" in html and "| refunds |" in md
    (ops / "assistants/ops/mock.yml").write_text("default: changed\n")  # the model would now answer otherwise
    again = cli(*given, "--replay", "cassettes", "-o", "again.json", cwd=ops)
    assert again.exit_code == 0, again.output
    replayed = report(ops / "again.json")
    assert [(r["id"], r["run"], r["status"]) for r in recorded["results"]] == [(r["id"], r["run"], r["status"]) for r in replayed["results"]]
    listed = cli("history", cwd=ops)
    assert listed.exit_code == 0 and len(listed.output.splitlines()) == 3 and "100.0%" in listed.output


# ---- the native state assertion: comparisons, and the metrics that are not in the world --------------------


def test_native_state_compares_and_says_metrics_are_not_in_the_world(ops):
    case = {"id": "native", "input": "Refund order-1042 in full.", "world": scenario(ops)["initial"], "assert": [
        {"type": "state", "path": "$.orders['order-1042'].amount_cents", "op": "lte", "value": 8000},
        {"type": "state", "path": "$.orders['order-1042'].amount_cents", "op": "gt", "value": 8000},
        {"type": "state", "path": "$.metrics[?(@.refund_count <= 1)]"},
        {"type": "state", "path": "$.metrics.refund_count", "op": "eq", "value": 1},
        {"type": "metric", "metric": "refund_count", "op": "lte", "value": 1}]}
    path = ops / TESTS / "native.jsonl"
    path.write_text(json.dumps(case) + "\n")
    result, out = run(ops, "-i", str(path.relative_to(ops)))
    assert result.exit_code == 1
    held, over, filtered, dotted, metric = out["results"][0]["assertions"]
    assert held["passed"] and not over["passed"] and over["message"].endswith("expected > 8000, got 8000")
    assert filtered["error"] and filtered["message"] == (
        "world $.metrics[?(@.refund_count <= 1)] can never match: the world has no 'metrics'; a case's metrics (calls, errors, violations, "
        'last_call_succeeded, the tools\' counters) are checked with {"type": "metric", "metric": "refund_count", "op": "lte", "value": 1}')
    assert dotted["error"] and dotted["message"].endswith('{"type": "metric", "metric": "refund_count", "op": "eq", "value": …}')
    assert metric["passed"] and metric["actual"] == 1
    world_metrics = dict(case, world={**case["world"], "metrics": {"refund_count": 1}}, assert_=None)
    world_metrics.pop("assert_")
    world_metrics["assert"] = [{"type": "state", "path": "$.metrics.refund_count", "op": "eq", "value": 1}]
    path.write_text(json.dumps(world_metrics) + "\n")
    result, out = run(ops, "-i", str(path.relative_to(ops)))
    assert result.exit_code == 0, result.output  # a world that has its own 'metrics' is checked as any world
