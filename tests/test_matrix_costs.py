"""The model matrix (-c a,b) and costs (connector pricing) end to end, against the loopback server: each
connector is its own model there, so a case can pass on one and fail on the other; every cost is checked
against a value computed by hand from the server's usage (10 prompt + 5 completion tokens a call)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from helpers import Answer, cli, last_user, report
from scripted import Scripted

OK = [{"type": "contains", "value": "ok"}]
A_PRICE = {"input": 1.0, "output": 2.0}  # per call: (10 × 1 + 5 × 2) / 1e6 = $0.00002
B_PRICE = {"input": 3.0, "output": 4.0, "cached_input": 0.5}  # per call, 4 cached: (6 × 3 + 4 × 0.5 + 5 × 4) / 1e6 = $0.00004
A_CALL, B_CALL = 20 / 1e6, 40 / 1e6


def connector(app, server, name, model, pricing=None):
    options = {"model": model, "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY", "max_retries": 0}
    if pricing is not None:
        options["pricing"] = pricing
    app.connector(name, {"type": "openai", "options": options})


@pytest.fixture
def two(app, server):
    scripted = Scripted()
    server.responder = lambda req: replace(scripted(req), cached=4) if req.get("model") == "model-b" else scripted(req)
    connector(app, server, "fake-a", "model-a", A_PRICE)
    connector(app, server, "fake-b", "model-b", B_PRICE)
    app.agent("bot", connector="fake-a")
    return app


def case(cid, pattern, **extra):
    return {"id": cid, "input": f"pattern:{pattern}:ok {cid}", "assert": OK, **extra}


def test_matrix_runs_every_case_on_each_connector(two, server, tmp_path):
    path = two.cases("cases.jsonl", [case("greet", "model-a=P;model-b=PF"), case("both", "P")])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-c", "fake-a,fake-b", "--runs", "2", "-o", str(out))
    assert result.exit_code == 1, result.output  # greet fails its gate on fake-b
    data = report(out)
    assert [(r["id"], r["connector"], r["run"]) for r in data["results"]] == [
        ("greet", "fake-a", 1), ("greet", "fake-a", 2), ("greet", "fake-b", 1), ("greet", "fake-b", 2),
        ("both", "fake-a", 1), ("both", "fake-a", 2), ("both", "fake-b", 1), ("both", "fake-b", 2)]
    assert sorted(b["model"] for b in server.bodies()) == ["model-a"] * 4 + ["model-b"] * 4
    s = data["summary"]
    assert s["matrix"] == ["fake-a", "fake-b"] and s["connector"] == "fake-a, fake-b"
    gates = {(g["id"], g["connector"]): g for g in s["gates"]}
    assert [(g["id"], g["connector"], g["verdict"], g["passed"]) for g in s["gates"]] == [
        ("greet", "fake-a", "passed", 2), ("greet", "fake-b", "failed", 1), ("both", "fake-a", "passed", 2), ("both", "fake-b", "passed", 2)]
    assert gates[("greet", "fake-a")]["cost"] == pytest.approx(2 * A_CALL) and gates[("greet", "fake-b")]["cost"] == pytest.approx(2 * B_CALL)
    assert gates[("greet", "fake-b")]["tokens"] == 30
    costs = s["costs"]
    assert costs["total"] == pytest.approx(4 * A_CALL + 4 * B_CALL)
    assert costs["by_connector"]["fake-a"] == {"usage": {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60}, "cost": pytest.approx(4 * A_CALL)}
    assert costs["by_connector"]["fake-b"]["usage"]["cached_tokens"] == 16 and costs["by_connector"]["fake-b"]["cost"] == pytest.approx(4 * B_CALL)
    assert costs["by_role"]["agent"]["cost"] == pytest.approx(costs["total"]) and "unpriced_tokens" not in costs
    first = data["results"][0]
    assert first["cost"] == pytest.approx(A_CALL) and first["spend"] == [
        {"role": "agent", "connector": "fake-a", "calls": 1, "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, "cost": pytest.approx(A_CALL)}]
    text = result.stdout
    assert "ℹ Connector: fake-a, fake-b" in text and "► [greet @ fake-b] (run 2/2)" in text
    assert "Matrix (the agent under test on each connector):" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("greet") and "PASSED 100%" in line)
    assert "PASSED 100% · 30 tok · $0.00004 ·" in row and "FAILED 50% · 30 tok · $0.00008 ·" in row
    assert "Cost:      $0.00024 in total — by role: agent $0.00024 (120 tokens)" in text
    assert "by connector: fake-a $0.00008 (60 tokens), fake-b $0.00016 (60 tokens)" in text
    assert not any("pricing" in json.dumps(b) for b in server.bodies())  # pricing is never sent


def test_repeated_c_is_the_same_matrix_and_all_green_is_exit_0(two, server, tmp_path):
    path = two.cases("cases.jsonl", [case("both", "P")])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-c", "fake-a", "-c", "fake-b", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert [(r["connector"], r["status"]) for r in report(out)["results"]] == [("fake-a", "passed"), ("fake-b", "passed")]


def test_matrix_in_every_report_format(two, tmp_path):
    path = two.cases("cases.jsonl", [case("greet", "model-a=P;model-b=F")])
    outs = {ext: tmp_path / f"r{ext}" for ext in (".md", ".html", ".xml")}
    for out in outs.values():
        assert cli("-i", str(path), "-n", "bot", "-c", "fake-a,fake-b", "-o", str(out)).exit_code == 1
    md = outs[".md"].read_text()
    assert "## Matrix" in md and "| case | fake-a | fake-b |" in md
    assert "| greet | PASSED 100% · 15 tok · $0.00002 ·" in md and "FAILED 0% · 15 tok · $0.00004 ·" in md
    assert "## Costs" in md and "$0.00006 in total" in md
    assert "| ✅ | greet | fake-a |" in md and "### ❌ greet @ fake-b — failed" in md
    page = outs[".html"].read_text()
    assert "<h2>Matrix</h2>" in page and "<th>fake-b</th>" in page and "<h2>Costs</h2>" in page
    suite = ET.parse(outs[".xml"]).getroot().find("testsuite")
    assert suite is not None
    names = [c.get("name") for c in suite.findall("testcase")]
    assert names == ["greet [fake-a]", "greet [fake-b]"] and suite.get("failures") == "1"
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or ()}
    assert props == {"cost_usd": "0.00006", "pass_rate": "0.5", "pass_rate_interval": "0.0945-0.9055", "confidence": "0.95", "cases": "2"}
    costs = [{p.get("name"): p.get("value") for p in c.iter("property")}["cost_usd"] for c in suite.findall("testcase")]
    assert costs == ["0.00002", "0.00004"]


def test_a_matrix_with_an_unknown_connector_is_exit_2(two):
    path = two.cases("cases.jsonl", [case("greet", "P")])
    result = cli("-i", str(path), "-n", "bot", "-c", "fake-a,fake-c")
    assert result.exit_code == 2 and "unknown connector 'fake-c'" in result.output
    result = cli("-i", str(path), "-n", "bot", "-c", "fake-a,")
    assert result.exit_code == 2 and "empty connector ID" in result.output


# ---- costs by role ----------------------------------------------------------------------------


def roles_responder(req):
    """The agent (model-a) says alpha, then omega; the simulator (model-sim) says 'next'; the judge
    (model-judge) passes an output with omega."""
    model = req.get("model")
    if model == "model-sim":
        return Answer(json.dumps({"message": "next", "goal_achieved": False}))
    if model == "model-judge":
        payload = json.loads(last_user(req))
        return Answer(json.dumps({"passed": "omega" in str(payload["output"]), "reason": "r"}))
    turns = sum(1 for m in req["messages"] if m.get("role") == "user")
    return Answer("alpha" if turns == 1 else "omega")


def test_costs_by_role_with_an_unpriced_validator(app, server, tmp_path):
    server.responder = roles_responder
    connector(app, server, "fake-a", "model-a", A_PRICE)
    connector(app, server, "fake-sim", "model-sim", {"input": 10, "output": 20})  # per call: (100 + 100) / 1e6
    connector(app, server, "fake-judge", "model-judge")  # no pricing: its tokens are counted, not priced
    app.agent("bot", connector="fake-a")
    app.agent("sim", connector="fake-sim")
    app.agent("judge", connector="fake-judge")
    dyn = {"id": "d1", "input": "start", "simulator": {"use": "sim"}, "max_turns": 4, "checkpoints": [
        {"id": "first", "assert": {"type": "contains", "value": "alpha"}},
        {"id": "judged", "after": ["first"], "assert": {"type": "agent", "use": "agents:judge", "value": "says omega"}}]}
    path = app.cases("dyn.jsonl", [dyn])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    assert result.exit_code == 0, result.output
    data = report(out)
    r = data["results"][0]
    spend = {s["role"]: s for s in r["spend"]}
    assert {k: (v["connector"], v["calls"]) for k, v in spend.items()} == {"agent": ("fake-a", 2), "simulator": ("fake-sim", 1), "validator": ("fake-judge", 2)}
    assert spend["agent"]["cost"] == pytest.approx(2 * A_CALL) and spend["simulator"]["cost"] == pytest.approx(200 / 1e6)
    assert "cost" not in spend["validator"]
    assert r["cost"] == pytest.approx(2 * A_CALL + 200 / 1e6)
    costs = data["summary"]["costs"]
    assert costs["total"] == pytest.approx(240 / 1e6) and costs["unpriced_tokens"] == 30
    assert costs["by_role"]["validator"] == {"usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}}
    assert "Cost:      $0.00024 in total — by role: agent $0.00004 (30 tokens), simulator $0.0002 (15 tokens), validator — (30 tokens)" in result.stdout
    assert "30 tokens went through connectors with no pricing (not in the cost)" in result.stdout


def test_generation_is_priced_as_the_generator_role(app, server, tmp_path):
    generated = [{"id": "g1", "input": "say:ok", "assert": OK}]
    server.responder = lambda req: Answer(json.dumps(generated)) if req.get("model") == "model-gen" else Answer("ok")
    connector(app, server, "fake-a", "model-a", A_PRICE)
    connector(app, server, "fake-gen", "model-gen", {"input": 100, "output": 100})  # (10 + 5) × 100 / 1e6
    app.agent("bot", connector="fake-a")
    app.agent("gen", connector="fake-gen")
    out = tmp_path / "r.json"
    result = cli("-i", "agents:gen?count=1", "-n", "bot", "--app", str(app.root), "-o", str(out))
    assert result.exit_code == 0, result.output
    costs = report(out)["summary"]["costs"]
    assert costs["by_role"]["generator"]["cost"] == pytest.approx(1500 / 1e6) and costs["by_role"]["agent"]["cost"] == pytest.approx(A_CALL)
    assert costs["total"] == pytest.approx(1500 / 1e6 + A_CALL)
    (spent,) = report(out)["summary"]["generation"]
    assert (spent["role"], spent["connector"], spent["calls"], spent["cost"]) == ("generator", "fake-gen", 1, pytest.approx(1500 / 1e6))
    from agenttest.reporting.codec import report_dict
    from agenttest.reporting.codec import read
    assert report_dict(read(str(out))) == report(out)  # read back whole, generation included


@pytest.mark.parametrize("pricing, message", [
    ({"input": "cheap", "output": 1}, "'pricing.input' must be a number of USD per million tokens (0 or more), not 'cheap'"),
    ({"inptu": 1, "output": 1}, "'pricing.inptu' is not a price; did you mean 'input'?"),
    ({"input": 1}, "'pricing' needs 'output'"),
    ({"input": -1, "output": 1}, "'pricing.input' must be a number"),
    ([1, 2], "'pricing' must be an object, not list"),
])
def test_bad_pricing_is_exit_2_at_the_connector_file(app, server, pricing, message):
    connector(app, server, "priced", "model-a", pricing)
    app.agent("bot", connector="priced")
    path = app.cases("cases.jsonl", [case("x", "P")])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2, result.output
    assert "priced.conn.yao" in result.output and message in result.output


# ---- the module ------------------------------------------------------------------------------------

from agenttest.accounting.costs import Pricing, money, pricing_of, totals  # noqa: E402
from agenttest.model import CaseKey, CaseResult, Spend, Usage  # noqa: E402


def test_pricing_cost_with_cached_tokens():
    p = pricing_of({"pricing": {"input": 2.5, "output": 10, "cached_input": 1.25}}, "c")
    assert p == Pricing(2.5, 10.0, 1.25)
    # 1,000,000 prompt tokens of which 400,000 cached, 100,000 completion: 0.6 × 2.5 + 0.4 × 1.25 + 0.1 × 10
    assert p.cost(Usage(1_000_000, 100_000, 1_100_000, 400_000)) == pytest.approx(3.0)
    assert Pricing(2.5, 10).cost(Usage(1_000_000, 0, 1_000_000, 400_000)) == pytest.approx(2.5)  # cached priced as input
    assert pricing_of({}, "c") is None


def test_money_and_totals():
    assert [money(x) for x in (None, 0, 0.000105, 0.0123, 0.5, 1234.5)] == ["—", "$0.00", "$0.000105", "$0.0123", "$0.50", "$1,234.50"]
    r = CaseResult(key=CaseKey(id="a"), status="passed", spend=(Spend("agent", "x", Usage(10, 5, 15), 1, 0.5), Spend("simulator", "y", Usage(1, 1, 2), 1, None)))
    t = totals([r, r], (Spend("generator", "x", Usage(3, 3, 6), 1, 0.25),))
    assert t.cost == pytest.approx(1.25) and t.unpriced_tokens == 4
    assert list(t.by_role) == ["agent", "simulator", "generator"] and t.by_role["agent"] == (Usage(20, 10, 30), pytest.approx(1.0))
    assert t.by_connector["x"][1] == pytest.approx(1.25) and t.by_connector["y"][1] is None


def test_diff_of_two_matrix_runs_compares_each_case_on_each_connector_under_its_own_gate(two, tmp_path):
    """A matrix report read back keeps its gates, connectors and costs; diff keys cases by connector and
    judges each against the case's own min_pass_rate."""
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    first = two.cases("one.jsonl", [case("greet", "P"), case("half", "model-a=P;model-b=PF", min_pass_rate=0.5)])
    assert cli("-i", str(first), "-n", "bot", "-c", "fake-a,fake-b", "--runs", "2", "-o", str(base)).exit_code == 0
    second = two.cases("one.jsonl", [case("greet", "model-a=P;model-b=F"), case("half", "model-a=P;model-b=PF", min_pass_rate=0.5)])
    assert cli("-i", str(second), "-n", "bot", "-c", "fake-a,fake-b", "--runs", "2", "-o", str(new)).exit_code == 1
    out = tmp_path / "d.json"
    result = cli("diff", str(base), str(new), "-o", str(out), "--fail-on-regression=any")
    assert result.exit_code == 1, result.output
    kinds = {(c["id"], c.get("connector")): c["kind"] for c in json.loads(out.read_text())["cases"]}
    assert kinds == {("greet", "fake-a"): "unchanged", ("greet", "fake-b"): "regressed",
                     ("half", "fake-a"): "unchanged", ("half", "fake-b"): "flaky"}  # 1 of 2 passed: its gate of 0.5 holds
    assert "REGRESSED [greet on fake-b] passed (2/2 runs passed) → failed (0/2 runs passed)" in result.output
    from agenttest.reporting.codec import report_dict
    from agenttest.reporting.codec import read
    assert report_dict(read(str(new))) == report(new)  # gates, matrix, costs and spend read back whole


def _reference_totals(results, generation=()):
    """totals as first written: every spend sorted by role then connector, summed one by one."""
    from agenttest.accounting.costs import _order, add

    by_role: dict = {}
    by_connector: dict = {}
    unpriced, cost = 0, None
    for s in sorted([s for r in results for s in r.spend] + list(generation), key=lambda s: _order((s.role, s.connector))):
        for table, key in ((by_role, s.role), (by_connector, s.connector)):
            usage, sofar = table.get(key, (Usage(), None))
            table[key] = (usage + s.usage, add(sofar, s.cost))
        cost = add(cost, s.cost)
        if s.cost is None:
            unpriced += s.usage.total_tokens
    return cost, by_role, by_connector, unpriced


@pytest.mark.parametrize("seed", range(5))
def test_totals_sum_as_one_sorted_pass_would(seed):
    """totals groups spends instead of sorting them all (10,000 results): the same sums to the last bit, the
    same order of roles and connectors, unpriced calls kept apart."""
    import random

    rng = random.Random(seed)
    roles, connectors = ["agent", "simulator", "validator", "generator", "custom"], ["b", "a", "c"]

    def spend() -> Spend:
        usage = Usage(rng.randint(0, 900), rng.randint(0, 300), 0, rng.randint(0, 50))
        usage = Usage(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens + usage.completion_tokens, usage.cached_tokens)
        return Spend(rng.choice(roles), rng.choice(connectors), usage, rng.randint(1, 3), rng.choice([None, rng.random() / 7]))

    results = [CaseResult(key=CaseKey(id=f"c{i}"), status="passed", spend=tuple(spend() for _ in range(rng.randint(0, 3)))) for i in range(300)]
    generation = [spend() for _ in range(rng.randint(0, 3))]
    got = totals(results, generation)
    cost, by_role, by_connector, unpriced = _reference_totals(results, generation)
    assert (got.cost, got.unpriced_tokens) == (cost, unpriced)
    assert list(got.by_role.items()) == list(by_role.items()) and list(got.by_connector.items()) == list(by_connector.items())
