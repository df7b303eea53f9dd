"""A case's policy, the fault kinds seed format C needs and the figures of its journal (FORMATS §11, §18):
allowed_tools enforced (the tool never runs, a violation is counted), ctx.deny, write_policy and
--allow-external-writes, rate_limit / expired_credentials / commit_timeout, the ``metric`` assertion over
calls, errors, violations, last_call_succeeded and the counters tools keep, and ``state`` with ``op``."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report

TOOLS = [
    {"name": "refund.create", "description": "refund", "parameters": {"type": "object", "properties": {"cents": {"type": "integer"}}}},
    {"name": "order.get", "description": "read", "parameters": {"type": "object", "properties": {}}},
    {"name": "account.delete", "description": "forbidden", "parameters": {"type": "object", "properties": {}}},
]
TOOLS_PY = """
METRICS = ["refund_count", "refunded_cents"]

def refund_create(ctx, cents):
    if cents > ctx.policy.get("refund_limit_cents", 10**9):
        ctx.deny(f"{cents} cents is over the refund limit")
    ctx.world.setdefault("refunds", []).append({"cents": cents})
    ctx.count("refund_count")
    ctx.count("refunded_cents", cents)
    return {"refund": len(ctx.world["refunds"]), "write_policy": ctx.policy.get("write_policy")}

def order_get(ctx):
    return {"order": "o-1", "amount_cents": 8000}

def account_delete(ctx):
    ctx.world["deleted"] = True
    return "deleted"
"""


def brain(req):
    """The model: calls the tools the first user message lists, one round each; then repeats the last result."""
    messages = req["messages"]
    plan = json.loads(last_user(req))
    done = sum(1 for m in messages if m["role"] == "tool")
    if done < len(plan):
        name, args = plan[done]
        return Answer(content="", tool_calls=[{"name": name, "arguments": args}])
    return Answer(content="done: " + messages[-1]["content"])


def asking(*calls):
    return json.dumps([[n, a] for n, a in calls])


@pytest.fixture
def shop(app, server):
    server.responder = brain
    app.agent("shop", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    return app


def run(app, cases, *args):
    path = app.cases("cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "shop", "-o", str(out), *args)
    return result, report(out) if out.exists() else None


# ---- allowed_tools, ctx.deny -------------------------------------------------------------------------


def test_a_tool_the_policy_does_not_allow_is_refused_counted_and_never_runs(shop, server):
    result, data = run(shop, [{
        "id": "refused", "input": asking(("account.delete", {}), ("order.get", {})), "world": {},
        "policy": {"allowed_tools": ["order.get", "refund.create"]},
        "assert": [{"type": "metric", "metric": "violations", "value": 0, "description": "No policy violations"},
                   {"type": "state", "unchanged": ["$"]}, {"type": "metric", "metric": "calls", "value": 2}]}])
    assert result.exit_code == 1
    (r,) = data["results"]
    refused, read = r["tool_calls"]
    assert refused["violation"].startswith("tool 'account.delete' is not allowed by the case's policy (allowed_tools: order.get, refund.create)")
    assert refused["error"].startswith("policy violation: tool 'account.delete' is not allowed")
    assert "violation" not in read and read["result"] == {"order": "o-1", "amount_cents": 8000}
    # the model was told why, as a tool error
    assert "policy violation" in [m for m in server.bodies()[1]["messages"] if m["role"] == "tool"][0]["content"]
    violations, unchanged, calls = r["assertions"]
    assert not violations["passed"] and violations["message"] == "metrics.violations: expected == 0, got 1"
    assert violations["description"] == "No policy violations" and violations["actual"] == 1
    assert unchanged["passed"] and calls["passed"]


def test_a_tool_that_denies_by_policy_counts_a_violation_and_its_reason_reaches_the_model(shop, server):
    result, data = run(shop, [{
        "id": "over", "input": asking(("refund.create", {"cents": 20000})), "policy": {"refund_limit_cents": 10000},
        "assert": [{"type": "metric", "metric": "violations", "value": 1}, {"type": "metric", "metric": "refund_count", "value": 0},
                   {"type": "metric", "metric": "last_call_succeeded", "value": False}]}])
    assert result.exit_code == 0, result.output
    (call,) = data["results"][0]["tool_calls"]
    assert call["violation"] == "20000 cents is over the refund limit"
    assert call["error"] == "policy violation: 20000 cents is over the refund limit"
    assert "traceback" not in call  # a refusal is not a crash


def test_ctx_policy_is_the_case_policy_and_write_policy_external_needs_the_flag(shop):
    case = {"id": "writes", "input": asking(("refund.create", {"cents": 100})), "policy": {"write_policy": "external"},
            "assert": {"type": "tool_result", "value": {"tool": "refund.create", "result": {"write_policy": "external"}}}}
    result, data = run(shop, [case, {"id": "reads", "input": asking(("order.get", {}))}])
    assert result.exit_code == 0, result.output
    skipped, ran = data["results"]
    assert skipped["status"] == "skipped" and skipped["skip_reason"].startswith("write_policy external: the case may create or change")
    assert "--allow-external-writes" in skipped["skip_reason"] and ran["status"] == "passed"
    result, data = run(shop, [case], "--allow-external-writes")
    assert result.exit_code == 0, result.output
    assert data["results"][0]["status"] == "passed"
    assert data["metadata"]["options"]["allow_external_writes"] is True


# ---- the fault kinds of seed format C -------------------------------------------------------------------


def test_commit_timeout_runs_the_tool_then_loses_its_answer(shop, server):
    result, data = run(shop, [{
        "id": "lost", "input": asking(("refund.create", {"cents": 8000}), ("refund.create", {"cents": 8000})), "world": {},
        "faults": [{"tool": "refund.create", "kind": "commit_timeout", "at": [1]}],
        "assert": [{"type": "metric", "metric": "refund_count", "value": 2}, {"type": "metric", "metric": "refunded_cents", "op": "eq", "value": 16000},
                   {"type": "metric", "metric": "errors", "value": 1}, {"type": "metric", "metric": "last_call_succeeded", "value": True},
                   {"type": "state", "path": "$.refunds.`len`", "value": 2}]}])
    assert result.exit_code == 0, result.output
    first, second = data["results"][0]["tool_calls"]
    assert first["fault"] == "commit_timeout" and first["error"] == "refund.create timed out" and first["result"] is None
    assert second["result"] == {"refund": 2, "write_policy": None}
    assert [m["content"] for m in server.bodies()[1]["messages"] if m["role"] == "tool"] == ['{"error": "refund.create timed out"}']


@pytest.mark.parametrize("kind, said", [
    ("rate_limit", "RATE_LIMITED: refund.create: too many requests (429); retry later"),
    ("expired_credentials", "EXPIRED_CREDENTIALS: refund.create: the credentials have expired (401); not retryable: a person must sign in again"),
])
def test_faults_before_the_commit_change_nothing(shop, kind, said):
    result, data = run(shop, [{
        "id": kind, "input": asking(("refund.create", {"cents": 1})), "world": {},
        "faults": [{"tool": "refund.create", "kind": kind, "at": [1]}],
        "assert": [{"type": "state", "unchanged": ["$"]}, {"type": "metric", "metric": "refund_count", "value": 0},
                   {"type": "metric", "metric": "errors", "value": 1}]}])
    assert result.exit_code == 0, result.output
    (call,) = data["results"][0]["tool_calls"]
    assert call["fault"] == kind and call["error"] == said


# ---- metrics ------------------------------------------------------------------------------------------


def test_an_unknown_metric_is_an_error_with_the_known_ones(shop):
    result, data = run(shop, [{"id": "typo", "input": asking(("order.get", {})),
                               "assert": {"type": "metric", "metric": "refund_cout", "value": 0}}])
    assert result.exit_code == 1
    r = data["results"][0]
    assert r["status"] == "error"
    assert r["error"].startswith("no metric 'refund_cout' in this case (did you mean 'refund_count'?)")


def test_metric_comparisons_and_what_cannot_be_compared(shop):
    result, data = run(shop, [{"id": "ops", "input": asking(("order.get", {}), ("order.get", {})), "assert": [
        {"type": "metric", "metric": "calls", "op": "gte", "value": 2}, {"type": "metric", "metric": "calls", "op": "lt", "value": 3},
        {"type": "metric", "metric": "calls", "op": "ne", "value": 0}, {"type": "metric", "metric": "calls", "op": "gt", "value": 2},
        {"type": "metric", "metric": "calls", "op": "lte", "value": "2"}]}])
    assert result.exit_code == 1
    checks = data["results"][0]["assertions"]
    assert [a["passed"] for a in checks] == [True, True, True, False, False]
    assert checks[3]["message"] == "metrics.calls: expected > 2, got 2"
    assert checks[4]["message"] == "metrics.calls: a number cannot be compared with a string by lte" and checks[4]["error"]


def test_bad_metric_and_policy_fields_are_located(shop):
    path = shop.file("bad.jsonl", "\n".join(json.dumps(c) for c in [
        {"id": "a", "input": "x", "assert": {"type": "metric", "metric": "calls", "op": "lessthan", "value": 1}},
        {"id": "b", "input": "x", "assert": {"type": "metric", "metric": "calls"}},
        {"id": "c", "input": "x", "policy": {"allowed_tools": "order.get"}},
        {"id": "d", "input": "x", "policy": {"write_policy": "external-ish"}},
        {"id": "e", "input": "x", "faults": [{"tool": "order.get", "kind": "commit-timeout"}]},
    ]) + "\n")
    result = cli("-i", str(path), "-n", "shop")
    assert result.exit_code == 2
    lines = result.output.replace(str(path), "bad.jsonl").splitlines()
    assert lines[:5] == [
        "Error: bad.jsonl:1:75: 'op' cannot be 'lessthan'; one of eq, ne, lt, lte, gt, gte",
        "bad.jsonl:2:37: a 'metric' assertion needs a 'value'; e.g. {\"type\": \"metric\", \"metric\": \"violations\", \"value\": 0}",
        "bad.jsonl:3:55: 'allowed_tools' must be a list, not a string",
        "bad.jsonl:4:54: 'write_policy' cannot be 'external-ish'; did you mean 'external'?",
        "bad.jsonl:5:68: 'kind' cannot be 'commit-timeout'; did you mean 'commit_timeout'?"]
    out = result.output
    assert "Traceback" not in out


# ---- state with op ------------------------------------------------------------------------------------


def test_state_compares_with_op_and_says_a_filter_that_can_never_match(shop):
    world = {"metrics": {"x": 3}, "deployments": {"web": {"replicas": 5}}}
    result, data = run(shop, [{"id": "s", "input": asking(("order.get", {})), "world": world, "assert": [
        {"type": "state", "path": "$.deployments.web.replicas", "op": "lte", "value": 5},
        {"type": "state", "path": "$.deployments.web.replicas", "op": "gt", "value": 5},
        {"type": "state", "path": "$.metrics[?(@.x <= 5)]"},
        {"type": "state", "path": "$.nowhere", "op": "eq", "value": 1}]}])
    assert result.exit_code == 1
    held, over, never, nothing = data["results"][0]["assertions"]
    assert held["passed"] and held["actual"] == 5
    assert over["message"] == "world $.deployments.web.replicas: expected > 5, got 5"
    assert never["error"] and never["message"] == (
        "world $.metrics[?(@.x <= 5)] can never match: a filter [?(…)] tests the items of $.metrics, and none of them is an object "
        'or a list; to compare a field, write {"path": "$.metrics.x", "op": "lte", "value": 5}')
    assert nothing["message"] == "world $.nowhere matched nothing"


def test_state_op_needs_a_value_and_a_path(shop):
    path = shop.cases("bad.jsonl", [{"id": "a", "input": "x", "assert": {"type": "state", "path": "$.a", "op": "lte"}},
                                    {"id": "b", "input": "x", "assert": {"type": "state", "unchanged": ["$.a"], "op": "eq"}}])
    result = cli("-i", str(path), "-n", "shop")
    assert result.exit_code == 2
    assert "bad.jsonl:1:" in result.output and "'op' compares with a 'value': give one" in result.output
    assert "bad.jsonl:2:" in result.output and "'op' goes with 'path', not with 'unchanged'" in result.output
