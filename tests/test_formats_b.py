"""Seed format B, eval-mock scenarios (FORMATS §18, docs/formats-b.md), end to end through the CLI: B's example
as found, recognition, every field (pass, fail, bad input), every error code with its line and column, faults
from the scenario's seed (also under --workers 2), pull-based turns, world events on the virtual clock,
budgets, worlds from files and snapshots, packs as data and as Python, and lint."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers import REPO, Answer, cli, report, seed_document

EXAMPLE = REPO / "examples" / "b" / "assistants" / "desk" / "tests" / "refund-and-reschedule.yaml"
SPEC = seed_document("scenario-dsl.txt")

BASE = """\
meta:
  name: s1
  schema_version: "1.0"
  seed: 7
  start_time: "2025-01-01T09:00:00Z"
task:
  prompt: "do it"
  budgets: {max_steps: 30, max_duration: "1h"}
world:
  shop:
    orders:
      - {status: delivered, total: 10.0}
      - {status: delivered, total: 20.0}
tools: [shop, email, calendar]
assertions:
  - id: refunded
    expr: world.shop.orders.exists(o, o.id == 2 && o.status == "refunded")
"""


def scripted(*steps):
    """The model: step N answers the request that carries N assistant messages — tool calls ``[(name, args)]`` or text."""

    def respond(req):
        done = sum(1 for m in req["messages"] if m["role"] == "assistant")
        step = steps[min(done, len(steps) - 1)]
        if callable(step):
            step = step(req)
        if isinstance(step, str):
            return Answer(step)
        return Answer("", tool_calls=[{"name": n, "arguments": a} for n, a in step])

    return respond


REFUND = [("shop__update_order", {"id": 2, "status": "refunded"})]


@pytest.fixture
def bapp(app, server):
    app.agent("bot")
    return app


def run_b(app, text, *args, name="s.yaml", prefix=""):
    path = app.file(f"scenarios/{name}", text)
    out = app.root / "r.json"
    result = cli("-i", prefix + str(path), "-n", "bot", "-o", str(out), "--no-history", *args)
    return result, (report(out) if out.exists() else None), path


def only(data):
    assert data is not None and len(data["results"]) == 1
    return data["results"][0]


# ---- B's example ------------------------------------------------------------------------------------


def test_the_example_runs_unchanged_offline_and_passes(tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", str(EXAMPLE), "-o", str(out), "--no-history", "-v")
    assert result.exit_code == 0, result.output
    r = only(report(out))
    assert r["status"] == "passed" and r["score"] == 0.8
    calls = r["tool_calls"]
    names = [c["name"] for c in calls]
    # the turn is pulled only once its when holds: TURN_NOT_READY before calendar.create_event, the message after
    assert calls[0]["result"] == {"status": "TURN_NOT_READY", "turn": 1}
    assert names.index("calendar__create_event") < names.index("eval__next_turn", 1)
    delivered = calls[names.index("eval__next_turn", 1)]
    assert delivered["result"]["user"] == "Actually, please move it to 15:00."
    # the world event arrives 8 virtual seconds after the turn, and not before
    run = r["scenario"]
    assert run["turns"] == [{"turn": 1, "vt": delivered["vt"], "user": "Actually, please move it to 15:00."}]
    assert run["events"][0]["op"] == "email.deliver" and run["events"][0]["vt"] == "2025-03-14T13:00:38Z"
    assert delivered["vt"] == "2025-03-14T13:00:30Z"
    inbox = calls[-1]
    assert inbox["vt"] > run["events"][0]["vt"] and any(m["from"] == "cfo@acme.example" for m in inbox["result"])
    # the minor assertion failed, the gate is green, and every report says it was minor
    minor = next(a for a in r["assertions"] if a.get("id") == "retried")
    assert minor["passed"] is False and minor["severity"] == "minor" and minor["weight"] == 0.5
    assert r["minor_failures"] and "✗ (minor) retried" in result.output
    assert len(run["identity"]) == 64 and "ALL TESTS PASSED" in result.output


def test_the_example_holds_the_documents_fragments_byte_for_byte():
    if not SPEC.exists():
        pytest.skip("the seed documents are not beside the repository")
    spec, example = SPEC.read_text(), EXAMPLE.read_text()
    for start, end in (("world:\n  base_snapshot", "\nfrom_file lines"), ("faults:\n  - tool: email.send", "\nExactly one trigger"),
                       ("turns:\n  - user:", "\nPull-based"), ("assertions:\n  - id: refunded", "Each assertion has")):
        i = spec.index(start)
        fragment = spec[i:spec.index(end, i)].rstrip("\n")
        assert fragment in example, start


def test_the_example_with_the_b_prefix_and_json_events(tmp_path):
    result = cli("-i", f"b:{EXAMPLE}", "--json", "--no-history")
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    r = next(e for e in events if e["event"] == "result")
    assert r["status"] == "passed" and r["scenario"]["events"] and r["minor_failures"]
    assert events[-1]["event"] == "summary" and events[-1]["exit_code"] == 0


def test_a_folder_of_scenarios_loads_them_and_not_their_fixtures_and_packs(tmp_path):
    folder = tmp_path / "suite"
    shutil.copytree(EXAMPLE.parent, folder)
    (folder / "pack.yaml").write_text("pack: x\n")
    result = cli("-i", str(folder), "--app", str(REPO / "examples" / "b"), "-n", "desk", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "refund-and-reschedule" in result.output and "fixtures" not in result.output


# ---- recognition and the envelope --------------------------------------------------------------------


def test_a_b_file_is_recognised_by_its_shape(bapp, server):
    server.responder = scripted(REFUND, "done")
    result, data, _ = run_b(bapp, BASE)
    assert result.exit_code == 0, result.output
    assert only(data)["status"] == "passed" and "B scenario" in result.output


def test_a_yaml_case_file_is_not_taken_for_b(bapp, server):
    path = bapp.file("cases.yaml", "- id: plain\n  input: hi\n  assert: [{type: contains, value: hi}]\n")
    server.responder = lambda req: Answer("hi")
    result = cli("-i", str(path), "-n", "bot", "--no-history")
    assert result.exit_code == 0, result.output


BAD = [  # (what is changed, the code, a word of the message, the line and column it points at)
    (BASE.replace("name: s1", "name: [s1"), "E001", "not valid YAML", (3, 17)),
    (BASE.replace("  seed: 7\n", "  sed: 7\n"), "E002", "did you mean 'seed'", (4, 3)),
    (BASE.replace("tools:", "tols:"), "E002", "did you mean 'tools'", (14, 1)),
    (BASE.replace('  schema_version: "1.0"\n', ""), "E003", "needs 'schema_version'", (2, 3)),
    (BASE.replace("seed: 7", "seed: seven"), "E004", "meta.seed must be a whole number", (4, 9)),
    (BASE.replace('max_duration: "1h"', 'max_duration: "soon"'), "E005", "max_duration", (8, 42)),
    (BASE.replace('  prompt: "do it"\n', '  prompt: "do it"\n  messages: [{role: user, content: hi}]\n'), "E006", "exactly one of prompt or messages", (7, 3)),
    (BASE.replace("[shop, email, calendar]", "[shop, emial, calendar]"), "E007", "did you mean 'email'", (14, 15)),
    (BASE + "faults:\n  - {tool: shop.refnd_order, error: timeout, after_calls: 1}\n", "E008", "no tool 'shop.refnd_order'", (19, 12)),
    (BASE.replace("    orders:\n", "    ordrs:\n"), "E009", "did you mean 'orders'", (11, 5)),
    (BASE.replace("o.id == 2 &&", "o.id == 2 &"), "E010", "CEL syntax error", (17, 49)),
    (BASE.replace("world.shop.orders.exists", "world.shop.oders.exists"), "E011", "did you mean 'orders'", (17, 22)),
    (BASE.replace("world:\n", "world:\n  base_snapshot: missing.sqlite\n"), "E012", "base_snapshot missing.sqlite does not exist", (10, 18)),
    (BASE + "  - id: refunded\n    expr: 'true'\n", "E015", "assertion id 'refunded' is used twice", (18, 9)),
    (BASE.replace('"1.0"', '"2.0"'), "E016", "schema_version 2.0 is not supported", (3, 19)),
]


@pytest.mark.parametrize("text,code,words,where", BAD, ids=[b[1] + "-" + b[2][:20] for b in BAD])
def test_every_load_error_is_b_s_envelope_at_its_place(bapp, text, code, words, where):
    result, _, path = run_b(bapp, text, "--dry-run", prefix="b:")  # b: reads a file whose shape is too broken to recognise
    assert result.exit_code == 2, result.output
    line = next(x for x in result.output.splitlines() if f"{code}:" in x)
    assert words in line, line
    if where is not None:
        assert line.startswith(f"Error: {path}:{where[0]}:{where[1]}: {code}:") or f"{path}:{where[0]}:{where[1]}: {code}:" in line, line
    assert "Traceback" not in result.output


def test_load_errors_are_in_the_json_error_event(bapp):
    path = bapp.file("scenarios/s.yaml", BASE.replace("  seed: 7\n", "  sed: 7\n").replace("o.id == 2 &&", "o.id == 2 &"))
    result = cli("-i", str(path), "-n", "bot", "--json", "--no-history")
    assert result.exit_code == 2
    event = json.loads(result.stdout.strip().splitlines()[-1])
    assert event["event"] == "error" and event["exit_code"] == 2
    codes = {(p["code"], p["line"], p["column"]) for p in event["problems"]}
    assert ("E002", 4, 3) in codes and ("E010", 17, 49) in codes
    assert all(p["file"] == str(path) and p["message"] for p in event["problems"])


def test_a_fixture_line_and_a_pack_file_are_located_in_their_own_files(bapp):
    bapp.file("scenarios/rows.jsonl", '{"collection": "orders", "data": {"id": 9}}\n{"collection": "orders", "dat": {}}\n')
    bapp.file("scenarios/bad.pack.yaml", "pack: bad\ncollections: [items]\ntools:\n  get: {op: reed, collection: items}\n")
    text = BASE.replace("  shop:\n", "  shop:\n    from_file: rows.jsonl\n").replace("tools: [shop,", "tools: [bad.pack.yaml, shop,")
    result, _, path = run_b(bapp, text, "--dry-run")
    assert result.exit_code == 2
    assert f"{path.parent / 'rows.jsonl'}:2:1: E013:" in result.output
    assert f"{path.parent / 'bad.pack.yaml'}:4:13: E017: unknown op 'reed'" in result.output
    assert "did you mean 'read'?" in result.output


def test_a_bad_snapshot_file(bapp):
    bapp.file("scenarios/base.sqlite", "not sqlite")
    result, _, _ = run_b(bapp, BASE.replace("world:\n", "world:\n  base_snapshot: base.sqlite\n"), "--dry-run")
    assert result.exit_code == 2 and "E014:" in result.output


# ---- CEL, located ------------------------------------------------------------------------------------


@pytest.mark.parametrize("expr,code,where", [
    ('    expr: |\n      world.shop.orders.size() > 0 &&\n        journal.count("shop.get_order") >=\n', "E010", (19, 41)),
    ("    expr: \"journal.count('shop.get_order') > 'one'\"\n", "E011", (17, 46)),
    ("    expr: journal.cont(\"shop.get_order\") > 1\n", "E011", (17, 19)),
    ("    expr: journal.count(\"shop.get_ordr\") > 1\n", "E011", (17, 25)),
    ("    expr: size(world.shop.orders)\n", "E011", (17, 11)),
    ("    expr: wrld.shop.orders.size() > 1\n", "E011", (17, 11)),
    ("    expr: |\n      world.shop.orders.exists(o,\n        o.totl > 1) && wold.x\n", "E011", (19, 24)),
])
def test_cel_errors_are_load_problems_at_line_and_column(bapp, expr, code, where):
    text = BASE.replace('    expr: world.shop.orders.exists(o, o.id == 2 && o.status == "refunded")\n', expr)
    result, _, path = run_b(bapp, text, "--dry-run")
    assert result.exit_code == 2, result.output
    assert f"{path}:{where[0]}:{where[1]}: {code}:" in result.output, result.output


def test_a_when_is_checked_before_the_run_too(bapp, server):
    text = BASE + "turns:\n  - user: hi\n    when: journal.count(\"shop.update_order\") >= \"1\"\n"
    result, _, path = run_b(bapp, text, "--dry-run")
    assert result.exit_code == 2 and f"{path}:20:49: E011: '>=' cannot compare an int with a string" in result.output
    assert server.requests == [] if hasattr(server, "requests") else True


# ---- assertions: severity, weight, collateral --------------------------------------------------------


SCORED = BASE + """\
  - id: emailed
    expr: journal.count("email.send") == 1
    severity: minor
    weight: 0.5
  - id: only-orders
    collateral:
      allow_changes: ["shop.orders"]
"""


def test_a_minor_failure_leaves_the_gate_green_with_a_weighted_score(bapp, server):
    server.responder = scripted(REFUND, "done")
    result, data, _ = run_b(bapp, SCORED)
    r = only(data)
    assert result.exit_code == 0 and r["status"] == "passed" and r["score"] == pytest.approx(2 / 2.5)
    assert "minor: emailed" in result.output and r["minor_failures"]
    md = bapp.root / "r.md"
    cli("-i", str(bapp.root / "scenarios" / "s.yaml"), "-n", "bot", "-o", str(md), "--no-history")
    assert "minor" in md.read_text()


def test_a_major_failure_fails_and_the_score_drops(bapp, server):
    server.responder = scripted("nothing done")
    result, data, _ = run_b(bapp, SCORED)
    r = only(data)
    assert result.exit_code == 1 and r["status"] == "failed" and r["score"] == pytest.approx(1 / 2.5)
    assert "false: world.shop.orders.exists" in r["error"]


def test_a_change_outside_the_allowlist_fails_naming_the_collection(bapp, server):
    server.responder = scripted(REFUND + [("email__send", {"to": "a@b.c", "subject": "s", "body": "b"})], "done")
    result, data, _ = run_b(bapp, SCORED)
    r = only(data)
    assert r["status"] == "failed" and "changed outside allow_changes: email.sent" in r["error"]


def test_a_new_collection_counts_as_a_change(bapp, server):
    bapp.file("scenarios/extra.yaml", "pack: extra\ncollections: [things]\ntools:\n  add: {op: create, collection: things}\n")
    text = SCORED.replace("tools: [shop,", "tools: [extra.yaml, shop,")
    server.responder = scripted(REFUND + [("extra__add", {"name": "x"})], "done")
    _, data, _ = run_b(bapp, text)
    assert "changed outside allow_changes: extra.things" in only(data)["error"]


def test_bad_assertions(bapp):
    both = BASE.replace("    expr: world", "    collateral: {allow_changes: [shop]}\n    expr: world")
    result, _, _ = run_b(bapp, both, "--dry-run")
    assert "E006: an assertion has exactly one of expr or collateral" in result.output
    for text, said in ((SCORED.replace("severity: minor", "severity: small"), "E005: unknown severity 'small'"),
                       (SCORED.replace("weight: 0.5", "weight: -1"), "E005: weight must be 0 or more"),
                       (SCORED.replace('["shop.orders"]', '["shop.oders"]'), "E009: allow_changes names 'shop.oders'")):
        result, _, _ = run_b(bapp, text, "--dry-run")
        assert result.exit_code == 2 and said in result.output, result.output


# ---- faults -------------------------------------------------------------------------------------------


def test_after_calls_fails_the_nth_call_once_and_journals_it(bapp, server):
    text = BASE.replace("assertions:", "faults:\n  - {tool: shop.update_order, error: server_error, after_calls: 1}\nassertions:") + \
        "  - id: retried\n    expr: journal.calls(\"shop.update_order\").filter(c, c.fault_injected).size() == 1\n"
    server.responder = scripted(REFUND, REFUND, "done")
    result, data, _ = run_b(bapp, text)
    r = only(data)
    assert r["status"] == "passed", r
    first, second = r["tool_calls"][:2]
    assert first["fault"] == "server_error" and first["error"].startswith("INTERNAL: shop.update_order")
    assert second.get("fault") is None and second["result"]["status"] == "refunded"


@pytest.mark.parametrize("kind,said", [("timeout", "shop.update_order timed out"), ("rate_limit", "RATE_LIMITED"),
                                       ("permission_denied", "PERMISSION_DENIED"), ("malformed", None)])
def test_every_fault_kind(bapp, server, kind, said):
    text = BASE.replace("assertions:", f"faults:\n  - {{tool: shop.update_order, error: {kind}, after_calls: 1}}\nassertions:")
    server.responder = scripted(REFUND, "done")
    _, data, _ = run_b(bapp, text)
    call = only(data)["tool_calls"][0]
    assert call["fault"] == kind
    assert (said in call["error"]) if said else call["result"].startswith('{"status": "ok"')


PROBABLE = BASE.replace("assertions:", "faults:\n  - {tool: shop.list_orders, error: rate_limit, probability: 0.5}\nassertions:")


def _faulted(data):
    return [[c.get("fault") is not None for c in r["tool_calls"]] for r in data["results"]]


def test_probability_faults_come_from_the_scenario_seed_the_same_everywhere(bapp, server):
    server.responder = scripted(*[[("shop__list_orders", {})]] * 12, "done")
    _, one, _ = run_b(bapp, PROBABLE, "--runs", "2")
    _, again, _ = run_b(bapp, PROBABLE, "--parallel", "4", "--seed", "99")
    _, workers, _ = run_b(bapp, PROBABLE, "--workers", "2", "--runs", "2")
    pattern = _faulted(one)[0]
    assert 0 < sum(pattern) < len(pattern)  # some calls failed, some did not
    assert _faulted(one) == [pattern, pattern] and _faulted(again) == [pattern] and _faulted(workers) == [pattern, pattern]
    _, other, _ = run_b(bapp, PROBABLE.replace("seed: 7", "seed: 8"))
    assert _faulted(other)[0] != pattern  # another seed, other draws


def test_bad_faults(bapp):
    for fault, said in (("{tool: shop.update_order, error: timeout}", "E006: a fault needs exactly one trigger"),
                        ("{tool: shop.update_order, error: timeout, after_calls: 1, probability: 0.5}", "E006"),
                        ("{tool: shop.update_order, error: boom, after_calls: 1}", "E005: unknown error kind 'boom'"),
                        ("{tool: shop.update_order, error: timeout, probability: 1.5}", "E005: probability must be above 0"),
                        ("{tool: shop.update_order, error: timeout, after_calls: 0}", "E005: after_calls must be 1 or more"),
                        ("{tool: shop.update_order, eror: timeout, after_calls: 1}", "E002: unknown field 'eror' of a fault")):
        result, _, _ = run_b(bapp, BASE.replace("assertions:", f"faults:\n  - {fault}\nassertions:"), "--dry-run")
        assert result.exit_code == 2 and said in result.output, (fault, result.output)


# ---- turns and world events ----------------------------------------------------------------------------


TURNS = BASE + """\
turns:
  - user: "Also refund order 1."
    when: journal.count("shop.update_order") >= 1
    world_events:
      - at_vt: "+8s"
        email.deliver: {from: a@b.c, subject: "thanks"}
      - at_vt: "2025-01-01T09:00:00Z"
        shop.place_order: {status: paid, total: 5.0}
"""
NEXT = [("eval__next_turn", {})]


def test_a_turn_is_sent_only_after_its_when_holds(bapp, server):
    server.responder = scripted(NEXT, NEXT, REFUND, NEXT, [("email__list_inbox", {})], [("email__list_inbox", {})], NEXT, "done")
    result, data, _ = run_b(bapp, TURNS)
    r = only(data)
    assert r["status"] == "passed", result.output
    results = [c["result"] for c in r["tool_calls"]]
    assert results[0]["status"] == results[1]["status"] == "TURN_NOT_READY"
    assert results[3] == {"status": "OK", "turn": 1, "user": "Also refund order 1."}
    assert results[-1] == {"status": "NO_MORE_TURNS"}
    # the relative event 8 s after the delivery: not in the inbox 6 s after it, there 12 s after it
    delivered = r["tool_calls"][3]["vt"]
    assert results[4] == [] and results[5][0]["subject"] == "thanks"
    assert r["scenario"]["events"][1]["op"] == "email.deliver" and r["scenario"]["events"][1]["vt"] > delivered
    # an absolute time already past at the delivery happens at once; neither event counts as the agent's change
    assert r["scenario"]["events"][0]["op"] == "shop.place_order"
    changed = {c["path"] for c in r["world"]["changes"]}
    assert changed == {"$.shop.orders[1].status"}


def test_a_turn_never_delivered_is_a_warning(bapp, server):
    server.responder = scripted(NEXT, "done")
    result, data, _ = run_b(bapp, TURNS)
    r = only(data)
    assert r["status"] == "failed" and "never delivered" in " ".join(r["warnings"])


def test_bad_turns(bapp):
    for old, new, said in (('        email.deliver: {from: a@b.c, subject: "thanks"}\n', "        email.dliver: {}\n", "E008: unknown world operation 'email.dliver'"),
                           ('      - at_vt: "+8s"\n', '      - at_vt: "soon"\n', "E005: at_vt 'soon'"),
                           ('      - at_vt: "+8s"\n        email.deliver:', "      - email.deliver:", "E003: a world event needs 'at_vt'"),
                           ('  - user: "Also refund order 1."\n', "  - usr: hi\n", "E002: unknown field 'usr' of a turn"),
                           ("        shop.place_order: {status: paid, total: 5.0}\n", "        shop.get_order: {id: 1}\n", "E008")):
        result, _, _ = run_b(bapp, TURNS.replace(old, new), "--dry-run")
        assert result.exit_code == 2 and said in result.output, (new, result.output)


# ---- budgets --------------------------------------------------------------------------------------------


def test_max_steps_ends_the_run_with_budget_exceeded(bapp, server):
    server.responder = scripted(*[[("shop__list_orders", {})]] * 10, "done")
    result, data, _ = run_b(bapp, BASE.replace("max_steps: 30", "max_steps: 3"), "--json")
    r = only(data)
    assert result.exit_code == 1 and r["status"] == "failed"
    assert r["error"].startswith("BUDGET_EXCEEDED: max_steps 3 reached") and r["scenario"]["code"] == "BUDGET_EXCEEDED"
    assert len(r["tool_calls"]) == 3 and r["assertions"]  # the assertions are still shown
    event = next(json.loads(x) for x in result.stdout.splitlines() if '"event": "result"' in x)
    assert event["scenario"]["code"] == "BUDGET_EXCEEDED"


def test_max_duration_is_virtual_time(bapp, server):
    server.responder = scripted(*[[("shop__list_orders", {})]] * 10, "done")
    _, data, _ = run_b(bapp, BASE.replace('max_duration: "1h"', 'max_duration: "20s"'))
    r = only(data)
    assert r["error"].startswith("BUDGET_EXCEEDED: max_duration 20s of virtual time passed")
    assert len(r["tool_calls"]) == 3  # 5 s a model call, 1 s a tool call: the fourth model call starts past 20 s


def test_bad_budgets(bapp):
    for old, new, said in (("max_steps: 30", "max_steps: 0", "E005: max_steps must be 1 or more"),
                           ("max_steps: 30", "max_stps: 30", "E002: unknown field 'max_stps' of task.budgets"),
                           ("max_steps: 30", 'max_steps: "30"', "E004: max_steps must be a whole number")):
        result, _, _ = run_b(bapp, BASE.replace(old, new), "--dry-run")
        assert result.exit_code == 2 and said in result.output, result.output


# ---- worlds: from_file, base_snapshot, the identity ------------------------------------------------------------


def test_from_file_rows_seed_the_world_relative_to_the_scenario(bapp, server):
    bapp.file("scenarios/data/rows.jsonl", '{"collection": "orders", "data": {"id": 5, "status": "paid", "total": 1.0}}\n\n'
              '{"collection": "customers", "data": {"name": "Ann"}}\n')
    text = BASE.replace("  shop:\n", "  shop:\n    from_file: data/rows.jsonl\n") + \
        "  - id: rows\n    expr: world.shop.orders.exists(o, o.id == 5) && world.shop.customers[0].id == 1 && size(world.shop.orders) == 3\n"
    server.responder = scripted([("shop__update_order", {"id": 7, "status": "refunded"})], "done")
    _, data, _ = run_b(bapp, text)
    r = only(data)
    ok = {a["id"]: a["passed"] for a in r["assertions"]}
    assert ok["rows"] is True  # the inline orders after the file's: ids 6 and 7
    assert r["world"]["initial"]["shop"]["orders"][1]["id"] == 6


def test_snapshot_restores_instead_of_seeding_and_both_are_in_the_identity(bapp, server, tmp_path):
    rows = bapp.file("scenarios/base.jsonl", '{"collection": "shop.products", "data": {"id": 1, "name": "lamp"}}\n')
    result = cli("snapshot", str(rows), "-o", str(bapp.root / "scenarios" / "base.sqlite"))
    assert result.exit_code == 0 and "1 entity" in result.output
    text = BASE.replace("world:\n", "world:\n  base_snapshot: base.sqlite\n") + \
        "  - id: restored\n    expr: world.shop.products.exists(p, p.name == \"lamp\")\n"
    server.responder = scripted(REFUND, "done")
    _, data, _ = run_b(bapp, text)
    r = only(data)
    assert r["status"] == "passed" and all(a["passed"] for a in r["assertions"])
    first = r["scenario"]["identity"]
    rows.write_text('{"collection": "shop.products", "data": {"id": 1, "name": "desk"}}\n')
    cli("snapshot", str(rows), "-o", str(bapp.root / "scenarios" / "base.sqlite"))
    _, data, _ = run_b(bapp, text)
    assert only(data)["scenario"]["identity"] != first and only(data)["status"] == "failed"
    # a scenario's own world, seeded, can be a snapshot too
    result = cli("snapshot", str(bapp.root / "scenarios" / "s.yaml"), "-o", str(tmp_path / "w.sqlite"))
    assert result.exit_code == 0 and "3 entities" in result.output


def test_snapshot_of_bad_rows_is_located(bapp, tmp_path):
    rows = bapp.file("rows.jsonl", '{"collection": "products", "data": {}}\n')
    result = cli("snapshot", str(rows), "-o", str(tmp_path / "x.sqlite"))
    assert result.exit_code == 2 and f"{rows}:1:1: E013: collection 'products' must be named pack.collection" in result.output


# ---- packs ------------------------------------------------------------------------------------------------------


PACK = """\
pack: notes
description: Notes.
collections: [notes]
tools:
  add: {op: create, collection: notes, defaults: {done: false}}
  get: {op: read, collection: notes}
  edit: {op: update, collection: notes}
  all: {op: list, collection: notes}
  find: {op: search, collection: notes, fields: [text]}
  drop: {op: delete, collection: notes}
  shout:
    description: A Python tool of the pack.
    parameters: {type: object, properties: {id: {type: integer}}, required: [id]}
events:
  arrive: {op: create, collection: notes}
"""
TOOLS_PY = """\
def shout(ctx, id):
    for note in ctx.world["notes"]["notes"]:
        if note["id"] == id:
            note["text"] = note["text"].upper()
            return note
    raise ValueError(f"no note {id}")
"""


def test_a_pack_is_data_and_python_and_its_dotted_tools_are_callable(bapp, server):
    bapp.file("scenarios/notes/pack.yaml", PACK)
    bapp.file("scenarios/notes/tools.py", TOOLS_PY)
    text = BASE.replace("tools: [shop, email, calendar]", "tools: [shop, notes/pack.yaml]") + (
        "  - id: notes\n    expr: world.notes.notes.exists(n, n.text == \"BUY MILK\" && n.done == false) && size(world.notes.notes) == 1\n")
    server.responder = scripted(REFUND + [("notes__add", {"text": "buy milk"}), ("notes__add", {"text": "call mum"})],
                                [("notes__find", {"query": "milk"}), ("notes.shout", {"id": 1}), ("notes__edit", {"id": 2, "text": "x"})],
                                [("notes__drop", {"id": 2}), ("notes__get", {"id": 2}), ("notes__all", {})], "done")
    result, data, _ = run_b(bapp, text)
    r = only(data)
    assert r["status"] == "passed", result.output
    by = [(c["name"], c.get("result"), c.get("error")) for c in r["tool_calls"]]
    assert by[3][1] == [{"done": False, "text": "buy milk", "id": 1}]
    assert by[4][1]["text"] == "BUY MILK"  # the dotted name is callable as the model wrote it
    assert by[7][2].startswith("NOT_FOUND: notes.notes has no entity with id 2")
    offered = {t["function"]["name"] for t in server.bodies()[0]["tools"]}
    assert {"notes__add", "notes__shout", "shop__update_order", "eval__next_turn"} <= offered


def test_a_call_with_bad_arguments_is_an_error_result(bapp, server):
    server.responder = scripted([("shop__update_order", {"id": "two", "status": "refunded"})], "done")
    _, data, _ = run_b(bapp, BASE)
    call = only(data)["tool_calls"][0]
    assert call["error"].startswith("INVALID_ARGUMENT: shop.update_order: id: 'two' is not of type 'integer'")


# ---- lint -----------------------------------------------------------------------------------------------------


LINTED = BASE + """\
  - id: positional
    expr: world.shop.orders[1].status == "refunded"
  - id: never
    expr: journal.count("shop.update_order") < 0 || (world.shop.orders.exists(o, o.status == "a" && o.status == "b"))
  - id: unchangeable
    expr: world.shop.customers.size() == 0
  - id: wording
    expr: journal.final_response == "Done."
"""


def test_lint_flags_fragile_patterns_with_codes_places_and_hints(bapp):
    path = bapp.file("scenarios/l.yaml", LINTED)
    result = cli("lint", str(path))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert f"{path}:19:11: W001: positional index into world.shop.orders; " in lines[0]
    assert any(f"{path}:21:11: W002:" in x and "never reach" in x for x in lines)
    assert any(f"{path}:21:" in x and "cannot equal both" in x for x in lines)
    assert any(f"{path}:23:11: W003: reads only shop.customers" in x for x in lines)
    assert any(f"{path}:25:11: W004: an exact comparison of the agent's final text" in x for x in lines)
    assert lines[-1] == "5 findings in 1 file"


def test_lint_of_a_clean_file_and_of_a_broken_one(bapp):
    clean = bapp.file("scenarios/c.yaml", BASE)
    result = cli("lint", str(clean), str(EXAMPLE))
    assert result.exit_code == 0 and result.output.strip() == "0 findings in 2 files"
    broken = bapp.file("scenarios/b.yaml", BASE.replace("seed: 7", "sed: 7"))
    result = cli("lint", str(broken))
    assert result.exit_code == 2 and "E002" in result.output
    result = cli("lint", "--json", str(bapp.file("scenarios/l.yaml", LINTED)))
    assert json.loads(result.output.splitlines()[0])["code"] == "W001"


def test_strict_runs_lint_before_a_run(bapp, server):
    server.responder = scripted(REFUND, "done")
    result, _, path = run_b(bapp, LINTED, "--strict")
    assert result.exit_code == 2 and f"{path}:19:11: W001:" in result.output and "(lint, --strict)" in result.output
    assert not server.bodies()


# ---- meta and task, the fields not covered above -----------------------------------------------------------------


def test_task_messages_and_the_start_time_and_revision(bapp, server):
    text = BASE.replace('  prompt: "do it"\n', '  messages:\n    - {role: system, content: "be brief"}\n    - {role: user, content: "do it"}\n')
    text = text.replace('start_time: "2025-01-01T09:00:00Z"', "start_time: 2025-06-01T12:00:00+02:00\n  revision: r7")
    server.responder = scripted(REFUND, "done")
    _, data, _ = run_b(bapp, text)
    r = only(data)
    assert r["status"] == "passed" and r["scenario"]["started"] == "2025-06-01T10:00:00Z"
    assert r["tool_calls"][0]["vt"] == "2025-06-01T10:00:05Z"  # one model call (5 s) before the first tool call
    sent = server.bodies()[0]["messages"]
    assert [m["role"] for m in sent][-2:] == ["system", "user"] and sent[-1]["content"] == "do it"


def test_bad_meta_and_task(bapp):
    for old, new, said in (('start_time: "2025-01-01T09:00:00Z"', 'start_time: "noon"', "E005: meta.start_time 'noon' is not an ISO 8601 time"),
                           ("seed: 7", "seed: 7\n  revision: [1]", "E004: meta.revision must be a whole number or a string"),
                           ('  prompt: "do it"\n', "  messages: [{role: robot, content: hi}]\n", "E005: unknown role 'robot'"),
                           ('  prompt: "do it"\n', "  messages: [{role: user}]\n", "E003: a message needs 'content'"),
                           ('  prompt: "do it"\n', "", "E006: task needs exactly one of prompt or messages"),
                           ("tools: [shop, email, calendar]", "tools: [shop, ./missing.yaml]", "E012: pack file ./missing.yaml does not exist")):
        result, _, _ = run_b(bapp, BASE.replace(old, new), "--dry-run", prefix="b:")
        assert result.exit_code == 2 and said in result.output, (new, result.output)


def test_the_snapshot_benchmark_runs_at_smoke_size():
    from bench.snapshots import main

    figures = main(["--smoke"])
    assert figures["entities"] == 300 and figures["seed_s"] > 0 and figures["restore_s"] > 0


FLOW = """\
meta: {name: flow, schema_version: "1.0", seed: 7}
task: {prompt: "do it"}
world: {shop: {orders: [{status: delivered, total: 10.0}, {status: delivered, total: 20.0}]}}
tools: [shop]
assertions: [{id: refunded, expr: 'world.shop.orders.exists(o, o.id == 2 && o.status == "refunded")'}]
"""


@pytest.mark.parametrize("text", [FLOW, "{" + FLOW.replace("\n", ", ").rstrip(", ") + "}\n"], ids=["flow", "all-flow"])
def test_a_b_file_in_flow_style_is_recognised_by_its_parsed_shape(bapp, server, text):
    server.responder = scripted(REFUND, "done")
    result, data, _ = run_b(bapp, text)
    assert result.exit_code == 0, result.output
    assert only(data)["status"] == "passed" and "B scenario" in result.output
    server.responder = scripted("done")  # and it fails when the agent does nothing
    result, data, _ = run_b(bapp, text)
    assert result.exit_code == 1 and only(data)["status"] == "failed"


def test_a_flow_mapping_that_is_not_b_is_still_a_case_file_problem(bapp):
    result, _, path = run_b(bapp, "{meta: {schema_version: '1.0'}, task: x, world: {}}\n", "--dry-run")  # no tools
    assert result.exit_code == 2 and "B scenario" not in result.output and "Traceback" not in result.output


def test_lint_of_a_case_file_says_it_is_not_a_b_scenario(bapp):
    jsonl = bapp.cases("tests/cases.jsonl", [{"id": "a", "input": "hi"}])
    listed = bapp.file("tests/cases.yaml", "- id: a\n  input: hi\n")
    for path, words in ((jsonl, "not a B scenario (one YAML file"), (listed, "not a B scenario (a YAML mapping with meta, task, "
                                                                            "world and tools; this file holds a list: a case file?)")):
        result = cli("lint", str(path))
        assert result.exit_code == 2, result.output
        assert f"{path}: {words}" in result.output and "E001" not in result.output and "not valid YAML" not in result.output


def test_lint_flags_an_assertion_that_is_always_true(bapp):
    path = bapp.file("scenarios/t.yaml", BASE + "  - id: vacuous\n    expr: \"true\"\n")
    result = cli("lint", str(path))
    assert result.exit_code == 1, result.output
    assert f"{path}:19:12: W005: this assertion is always true; it reads nothing of the run" in result.output


def test_comparing_an_int_with_a_string_at_run_time_says_so_in_plain_words(bapp, server):
    """``o.id == "2"`` over ids that are ints: celpy said "found no matching overload for Token('RULE', 'relation_eq') …"."""
    server.responder = scripted(REFUND, "done")
    result, data, _ = run_b(bapp, BASE.replace("o.id == 2 &&", 'o.id == "2" &&'))
    assert result.exit_code == 1, result.output
    (failed,) = [a for a in only(data)["assertions"] if not a["passed"]]
    assert failed["message"] == ('world.shop.orders.exists(o, o.id == "2" && o.status == "refunded"): could not be evaluated: '
                                 "'==' compares an int with a string (a value of one type never equals one of another: compare "
                                 'like with like, e.g. 2 with 2 or "2" with "2")')
    assert "Token(" not in result.output and "overload" not in result.output and "celtypes" not in result.output
