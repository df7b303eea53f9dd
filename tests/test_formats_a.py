"""Seed format A, scenario suites (FORMATS §18, docs/formats-a.md), run as found: the document's example suite
byte for byte against the offline example app, every field (pass, fail, bad input), suite checks that fail the
run in every report, variants with repetitions, writePolicy, skipReason, structured selection, custom
evaluators, recognition by shape, ``agent-test convert`` (the same verdicts), record/replay and a matrix."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import REPO, cli, report, seed_document

EXAMPLE = REPO / "examples" / "scenario-suites"
SUITE = "assistants/shop/tests/product-selection.json"
EVERY = "assistants/shop/tests/every-field.json"


@pytest.fixture
def shop(tmp_path):
    """A copy of the example app (runs write .agent-test/ beside it)."""
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("reports", ".agent-test"))
    return root


def run(root: Path, *args: str):
    out = root / "r.json"
    result = cli(*args, "-o", str(out), cwd=root)
    return result, report(out) if out.exists() else None


def write(root: Path, name: str, data) -> str:
    path = root / "assistants" / "shop" / "tests" / name
    path.write_text(json.dumps(data, indent=2))
    return str(path.relative_to(root))


def every(root: Path):
    return json.loads((root / EVERY).read_text())


# ---- the document's example, as found ------------------------------------------------------------------


def test_the_example_suite_is_the_document_s_byte_for_byte():
    spec = seed_document("scenario-suites.txt")
    if not spec.exists():
        pytest.skip("the seed documents are not beside this checkout")
    text = spec.read_text()
    start = text.index('{\n  "schemaVersion": 1,')
    assert (EXAMPLE / SUITE).read_text() == text[start:text.index("\n}\n", start) + 3]


@pytest.mark.parametrize("given", [SUITE, "a:" + SUITE])
def test_the_example_suite_runs_and_passes(shop, given):
    result, data = run(shop, "-i", given)
    assert result.exit_code == 0, result.output
    (r,) = data["results"]
    assert (r["id"], r["name"], r["status"], r["tags"]) == ("browse-and-select", "Choose from the displayed products", "passed",
                                                            ["catalogue", "selection"])
    assert r["description"] == "Show available products, accept the first option, and finish the choice."
    assert [t["id"] for t in r["turns"]] == ["search", "select"]
    assert [a["id"] for t in r["turns"] for a in t["assertions"]] == ["completed", "choice", "options", "selection-recorded", "choice-closed"]
    assert [a["id"] for a in r["assertions"]] == ["final-response-completed"]
    (suite,) = data["summary"]["suites"]
    assert suite["file"].endswith("product-selection.json")
    assert {k: v for k, v in suite.items() if k != "file"} == {"id": "product-selection", "name": "Product selection", "passed": True,
                                                                "assertions": [], "metadata": {"useCase": "A customer chooses a product"}}
    assert "scenario suite (A), 1 test case" in result.output


def test_every_field_of_the_complete_example(shop):
    result, data = run(shop, "-i", EVERY, "--runs", "2")
    assert result.exit_code == 0, result.output
    by = {}
    for r in data["results"]:
        by.setdefault(r["id"], []).append(r)
    assert list(by) == ["choose[direct,by-index]", "choose[direct,by-label]", "choose[direct,by-id]", "choose[polite,by-index]",
                        "choose[polite,by-label]", "choose[polite,by-id]", "order", "order-refused", "voice"]
    first = by["choose[polite,by-id]"]
    assert [(r["variants"], r["run"]) for r in first] == [(["polite", "by-id"], 1), (["polite", "by-id"], 2)]
    assert first[0]["metadata"] == {"fixture": "catalogue.json"}
    assert first[0]["turns"][0]["input"] == "Please list the products you have"
    right = first[0]["turns"][1]["assertions"][1]
    assert right == {"type": "evaluator", "passed": True, "actual": "selected lamp-1 (Desk lamp)", "checked": "use=scripts.history.selected_product",
                     "id": "right-product", "description": "The fact names the option chosen"}
    assert by["order"][0]["status"] == "skipped" and "--allow-external-writes" in by["order"][0]["skip_reason"]
    assert by["voice"][0]["status"] == "skipped" and by["voice"][0]["skip_reason"] == "Voice input is reviewed in the speech suite"
    assert data["summary"]["passed"] == 14 and data["summary"]["skipped"] == 4  # a skipped case never counts as passed
    (suite,) = data["summary"]["suites"]
    assert suite["passed"] and [a["id"] for a in suite["assertions"]] == ["none-failed", "suite-passed", "all-ran"]
    assert suite["metadata"] == {"useCase": "A customer chooses a product", "source": "docs/formats-a.md"}


def test_an_external_write_runs_with_the_flag_and_the_host_sees_the_policy(shop):
    result, data = run(shop, "-i", EVERY, "--allow-external-writes", "-k", "order")
    assert result.exit_code == 0, result.output
    order, refused = data["results"]
    assert order["status"] == "passed" and order["tool_calls"][0]["result"] == {"id": "order-1", "product_id": "lamp-1"}
    assert refused["tool_calls"][0]["violation"] == "placing an order writes an external record; this conversation is read_only"


# ---- failures at the right place ------------------------------------------------------------------------


def test_a_variant_with_one_broken_expectation_fails_at_that_assertion(shop):
    data = every(shop)
    data["scenarios"][0]["steps"][0]["variants"][1]["input"]["text"] = "Hello there"  # the polite variant no longer searches
    result, out = run(shop, "-i", write(shop, "broken.json", data))
    assert result.exit_code == 1
    by = {r["id"]: r for r in out["results"]}
    assert all(by[f"choose[direct,{v}]"]["status"] == "passed" for v in ("by-index", "by-label", "by-id"))
    polite = by["choose[polite,by-index]"]
    assert polite["status"] == "error"  # its selection then has no interaction to choose from: the conversation stops
    assert polite["turns"][0]["assertions"][0] == {
        "type": "any", "passed": False, "id": "offered", "description": "Products offered, or none available explained",
        "checked": "2 assertions",
        "message": 'any: none of 2 held: choice: response.interaction.kind is absent (expected "choice"); none: response.text does not '
                   'contain "no products" (it holds "I can show you the available products.")',
        "details": {"assertions": [{"name": "choice", "passed": False, "message": 'response.interaction.kind is absent (expected "choice")'},
                                   {"name": "none", "passed": False, "message": 'response.text does not contain "no products" (it holds "I can show you the available products.")'}]}}
    assert polite["error"] == ("turn 2 (select): selection optionIndex 1: no active interaction to choose from (the previous turn "
                               "published none)")
    assert polite["assertions"] == [] and polite["turns_not_run"] == 1  # a partial conversation is never accepted
    (suite,) = out["summary"]["suites"]
    assert not suite["passed"]


def test_a_broken_expectation_of_the_document_s_example(shop):
    data = json.loads((shop / SUITE).read_text())
    data["scenarios"][0]["steps"][1]["assertions"][0]["value"] = {"type": "product.chosen"}
    result, out = run(shop, "-i", write(shop, "broken.json", data))
    assert result.exit_code == 1
    (r,) = out["results"]
    assert r["status"] == "failed"
    assert r["error"] == ('turn 2 (select): selection-recorded: no item of checkpoint.facts matches {"type":"product.chosen"} '
                          '(it holds [{"type":"product.selected","productId":"lamp-1"}])')
    assert [a["passed"] for t in r["turns"] for a in t["assertions"]] == [True, True, True, False, True]


def test_a_failing_suite_check_fails_the_run_in_every_report(shop):
    data = every(shop)
    data["assertions"].append({"id": "no-skips", "kind": "check", "path": ["summary", "skipped"], "operator": "equals", "value": 0,
                               "label": "Nothing skipped"})
    path = write(shop, "suite-fails.json", data)
    outs = [shop / f"r.{ext}" for ext in ("md", "html", "xml", "jsonl")]
    result = cli("-i", path, "-o", str(shop / "r.json"), *[a for o in outs for a in ("-o", str(o))], "--json", cwd=shop)
    assert result.exit_code == 1
    assert all(r["status"] in ("passed", "skipped") for r in report(shop / "r.json")["results"])  # every case passed
    (suite,) = report(shop / "r.json")["summary"]["suites"]
    assert not suite["passed"] and suite["assertions"][-1]["message"] == "summary.skipped: expected 0, got 2"
    events = [json.loads(line) for line in result.stdout.splitlines()]
    summary = next(e for e in events if e["event"] == "summary")
    assert summary["exit_code"] == 1 and summary["suites"][0]["passed"] is False
    assert "✗ Nothing skipped [no-skips]: summary.skipped: expected 0, got 2" in result.stderr
    assert "❌ 1 suite check failed — the run fails" in result.stderr
    assert "- ❌ `shop-every-field` — Every field of a scenario suite" in outs[0].read_text()
    assert "Suite shop-every-field: failed: the run fails" in outs[1].read_text()
    assert 'name="suite checks: shop-every-field"' in outs[2].read_text() and 'type="SuiteCheckFailed"' in outs[2].read_text()
    assert json.loads(outs[3].read_text().splitlines()[-1])["summary"]["suites"][0]["passed"] is False


def test_suite_checks_see_every_case_and_their_repetitions(shop):
    (shop / "scripts" / "seen.py").write_text("def cases(subject):\n    return {'pass': False, 'message': repr(sorted("
                                               "(c['id'], c['repetition'], c['status']) for c in subject['cases']))}\n")
    data = json.loads((shop / SUITE).read_text())
    data["assertions"] = [{"id": "seen", "kind": "evaluator", "name": "seen.cases"}]
    result, out = run(shop, "-i", write(shop, "seen.json", data), "--runs", "2")
    assert result.exit_code == 1
    said = out["summary"]["suites"][0]["assertions"][0]["message"]
    assert said == "evaluator seen.cases: [('browse-and-select', 0, 'passed'), ('browse-and-select', 1, 'passed')]"


# ---- bad input: exit 2, located, nothing run --------------------------------------------------------------


def _bad(shop, change) -> list[str]:
    data = every(shop)
    change(data)
    path = write(shop, "bad.json", data)
    result = cli("-i", path, cwd=shop)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return [line.replace(path, "F") for line in result.output.splitlines() if line.strip()]


@pytest.mark.parametrize("change, said", [
    (lambda d: d.update(schemaVerison=1), "'schemaVerison' is not a field of a scenario suite; did you mean 'schemaVersion'?"),
    (lambda d: d.update(schemaVersion=2), "'schemaVersion' must be 1, not 2; this reader knows schema version 1"),
    (lambda d: d.update(repetitions=2), "'repetitions' is not a field of a scenario suite; its fields: schemaVersion, id, name, scenarios, metadata, assertions"),
    (lambda d: d.pop("name"), "a scenario suite needs 'name'"),
    (lambda d: d.update(id="-x"), "'id' must be an id of 1–160 characters: a letter or digit, then letters, digits, _ . : or -, not '-x'"),
    (lambda d: d.update(scenarios=[]), "'scenarios' holds 0 scenarios; it must hold 1 to 10,000"),
    (lambda d: d["scenarios"][1].update(id="choose"), "duplicate scenario id 'choose' (first at scenarios[0])"),
    (lambda d: d["scenarios"][0].update(writePolicy="readonly"), "'writePolicy' cannot be 'readonly'; read_only or external"),
    (lambda d: d["scenarios"][0].pop("writePolicy"), "a scenario needs 'writePolicy'"),
    (lambda d: d["scenarios"][0].update(tags="x"), "'tags' must be a list of strings, not a string"),
    (lambda d: d["scenarios"][0].update(metadata=[1]), "'metadata' must be an object, not a list"),
    (lambda d: d["scenarios"][0].update(skip_reason="x"), "'skip_reason' is not a field of a scenario; did you mean 'skipReason'?"),
    (lambda d: d["scenarios"][0].update(steps=[]), "'steps' holds 0 steps; it must hold 1 to 500"),
    (lambda d: d["scenarios"][0]["steps"][0].update(imput={"text": "x"}), "'imput' is not a field of a step; did you mean 'input'?"),
    (lambda d: d["scenarios"][0]["steps"][0]["input"].update(text="x" * 10001), "'text' holds 10,001 characters; at most 10,000"),
    (lambda d: d["scenarios"][0]["steps"][0]["input"].update(message="x"), "'message' is not a field of an input; its fields: text, selection"),
    (lambda d: d["scenarios"][0]["steps"][1]["input"]["selection"].update(optionId="p"),
     "a selection gives exactly one of optionIndex, optionLabel, optionId, not optionIndex and optionId; do not combine selectors"),
    (lambda d: d["scenarios"][0]["steps"][1]["input"]["selection"].update(optionIndex=-1), "'optionIndex' must be a whole number from 0, not -1"),
    (lambda d: d["scenarios"][0]["steps"][0].update(variants=[]), "'variants' holds 0 variants; it must hold 1 to 100"),
    (lambda d: d["scenarios"][0]["steps"][0]["variants"][1].update(id="direct"), "duplicate variant id 'direct' (first at variants[0])"),
    (lambda d: d["scenarios"][0]["steps"][0]["variants"][0].update(assertions=[]), "'assertions' is not a field of a variant; its fields: id, input"),
    (lambda d: d["scenarios"][0]["assertions"][0].update(kind="chek"), "'kind' cannot be 'chek'; did you mean 'check'?"),
    (lambda d: d["scenarios"][0]["assertions"][0].pop("id"), "a 'check' assertion needs 'id'"),
    (lambda d: d["scenarios"][0]["assertions"][0].update(operator="equal"), "'operator' cannot be 'equal'; did you mean 'equals'?"),
    (lambda d: d["scenarios"][0]["assertions"][0].update(path=["response", "__proto__"]), "'__proto__' is not a safe path step; name the field itself"),
    (lambda d: d["scenarios"][0]["assertions"][0].pop("value"), "'equals' needs a 'value'"),
    (lambda d: d["scenarios"][0]["assertions"][0].update(label=3), "'label' must be a string, not a number"),
    (lambda d: d["scenarios"][0]["assertions"][0].update(message="x"), "'message' is not a field of a 'check' assertion; its fields: id, kind, path, operator, label, value"),
    (lambda d: d["scenarios"][0]["steps"][0]["assertions"][0].update(assertions=[]), "'assertions' holds 0 assertions; it must hold 1 to 100"),
    (lambda d: d["scenarios"][0]["steps"][1]["assertions"][1].update(name="history.selected product"),
     "'name' must be an id of 1–160 characters: a letter or digit, then letters, digits, _ . : or -, not 'history.selected product'"),
    (lambda d: d["scenarios"][0]["steps"][1]["assertions"][1].update(params=[]), "'params' must be an object, not a list"),
    (lambda d: d["assertions"].append(dict(d["assertions"][0])), "duplicate assertion id 'none-failed' (first at assertions[0])"),
])
def test_every_field_refuses_bad_input_at_its_place(shop, change, said):
    lines = _bad(shop, change)
    assert lines[0].startswith("Error: F:") and lines[0].endswith(said), lines


def test_problems_are_all_said_at_once_each_at_its_line(shop):
    lines = _bad(shop, lambda d: (d.update(schemaVerison=1), d["scenarios"][0].update(writePolicy="x")))
    assert len(lines) == 3 and lines[-1] == "2 problems found; nothing was run"
    text = (shop / "assistants/shop/tests/bad.json").read_text().splitlines()
    line = int(lines[1].split(":")[1])
    assert '"writePolicy": "x"' in text[line - 1]


def test_an_evaluator_that_is_not_registered_is_said_before_the_run_at_its_place(shop):
    data = every(shop)
    data["scenarios"][0]["assertions"][1]["name"] = "history.no_such"
    path = write(shop, "bad.json", data)
    result = cli("-i", path, cwd=shop)
    assert result.exit_code == 2
    line = result.output.splitlines()[0].replace(path, "F")
    where = int(line.split(":")[2])
    assert '"name": "history.no_such"' in (shop / path).read_text().splitlines()[where - 1], line
    assert "no_such" in line


def test_a_file_forced_as_a_suite_that_is_not_one(shop, tmp_path):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{"id": "a", "input": "hi"}]))
    result = cli("-i", f"a:{path}", "-n", "shop", "--app", str(shop))
    assert result.exit_code == 2
    assert "not a scenario suite (A) file: a suite is an object with schemaVersion: 1 and scenarios" in result.output


def test_invalid_json_and_a_key_written_twice(shop):
    bad = shop / "assistants/shop/tests/bad.json"
    bad.write_text('{"schemaVersion": 1, "scenarios": [}')
    result = cli("-i", "a:assistants/shop/tests/bad.json", cwd=shop)
    assert result.exit_code == 2 and "bad.json:1:" in result.output and "invalid JSON" in result.output
    bad.write_text((shop / SUITE).read_text().replace('"id": "product-selection",', '"id": "product-selection", "id": "again",'))
    result = cli("-i", "assistants/shop/tests/bad.json", cwd=shop)
    assert result.exit_code == 2 and "'id' is written twice in one object (JSON keeps only the last)" in result.output


# ---- recognised by shape, converted, replayed, on a matrix -----------------------------------------------


def test_a_folder_holds_suites_and_case_files_alike(shop):
    (shop / "assistants/shop/tests/plain.jsonl").write_text(json.dumps({"id": "hello", "input": "hi", "assert": {"type": "contains", "value": "products"}}) + "\n")
    result, data = run(shop, "-i", "assistants/shop/tests/", "--run", "^(?!choose)")
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in data["results"]] == ["order", "order-refused", "voice", "hello", "browse-and-select"]
    assert {s["id"] for s in data["summary"]["suites"]} == {"shop-every-field", "product-selection"}


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_convert_round_trips_to_the_same_verdicts(shop, suffix):
    data = every(shop)
    data["scenarios"][0]["steps"][0]["variants"][1]["input"]["text"] = "Hello there"  # some fail, so that verdicts differ
    source = write(shop, "mixed.json", data)
    converted = shop / "assistants" / "shop" / "tests" / f"converted{suffix}"
    made = cli("convert", source, "-o", str(converted), cwd=shop)
    assert made.exit_code == 0, made.output
    native = (yaml.safe_load if suffix == ".yaml" else json.loads)(converted.read_text())
    assert native["suite"]["id"] == "shop-every-field" and native["cases"][0]["policy"] == {"write_policy": "read_only"}
    verdicts = []
    for given in (source, str(converted.relative_to(shop))):
        result, out = run(shop, "-i", given, "--runs", "2")
        assert result.exit_code == 1
        verdicts.append(([(r["id"], r["run"], r["status"], r.get("error"), [[a["passed"] for a in t["assertions"]] for t in r.get("turns", [])],
                           [a["passed"] for a in r["assertions"]]) for r in out["results"]],
                         [(s["passed"], [a["passed"] for a in s["assertions"]]) for s in out["summary"]["suites"]]))
    assert verdicts[0] == verdicts[1]


def test_convert_writes_json_on_stdout_and_refuses_what_is_not_a_seed_file(shop):
    result = cli("convert", SUITE, cwd=shop)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["cases"][0]["turns"][1]["selection"] == {"optionIndex": 0}
    plain = shop / "plain.json"
    plain.write_text(json.dumps([{"id": "a", "input": "x"}]))
    result = cli("convert", str(plain), cwd=shop)
    assert result.exit_code == 2 and "is in no seed format agent-test converts" in result.output and "a:" in result.output
    result = cli("convert", SUITE, "-o", "out.txt", cwd=shop)
    assert result.exit_code == 2 and "convert writes .json, .yaml or .yml" in result.output
    result = cli("convert", SUITE, "--format", "yaml", cwd=shop)
    assert result.exit_code == 0 and yaml.safe_load(result.stdout)["cases"][0]["id"] == "browse-and-select"
    result = cli("convert", SUITE, "--format", "yaml", "-o", "out.json", cwd=shop)
    assert result.exit_code == 2 and "--format yaml does not match -o out.json" in result.output and not (shop / "out.json").exists()
    result = cli("convert", SUITE, "--format", "toml", cwd=shop)
    assert result.exit_code == 2 and "'toml' is not one of 'json', 'yaml'" in result.output
    result = cli("convert", "missing.json", cwd=shop)
    assert result.exit_code == 2 and "input file 'missing.json' does not exist" in result.output
    bad = copy.deepcopy(json.loads((shop / SUITE).read_text()))
    bad["scenarios"][0]["writePolicy"] = "never"
    result = cli("convert", write(shop, "bad.json", bad), cwd=shop)
    assert result.exit_code == 2 and "'writePolicy' cannot be 'never'" in result.output


def test_convert_says_a_b_scenario_runs_as_found(shop):
    found = REPO / "examples" / "b" / "assistants" / "desk" / "tests" / "refund-and-reschedule.yaml"
    for given in (str(found), "b:" + str(found)):
        result = cli("convert", given, cwd=shop)
        assert result.exit_code == 2 and "a 'b:' input has no case file of agent-test's own to convert into" in result.output, result.output
        assert "convert reads a:FILE" in result.output and "Traceback" not in result.output


def test_record_and_replay_give_the_same_verdicts(shop):
    first, recorded = run(shop, "-i", EVERY, "--record", "cassettes")
    assert first.exit_code == 0, first.output
    (shop / "assistants/shop/mock.yml").write_text("default: changed\n")  # the model would now answer otherwise
    again, replayed = run(shop, "-i", EVERY, "--replay", "cassettes")
    assert again.exit_code == 0, again.output
    assert [(r["id"], r["status"]) for r in recorded["results"]] == [(r["id"], r["status"]) for r in replayed["results"]]


def test_on_a_matrix_each_connector_is_judged_apart(shop):
    (shop / "connectors" / "other.conn.yao").write_text('{"type": "mock", "options": {"model": "other"}}')
    data = json.loads((shop / SUITE).read_text())
    data["assertions"] = [{"id": "none-failed", "kind": "check", "path": ["summary", "failed"], "operator": "equals", "value": 0}]
    result, out = run(shop, "-i", write(shop, "m.json", data), "-c", "mock,other")
    assert result.exit_code == 0, result.output
    assert [(s["connector"], s["passed"]) for s in out["summary"]["suites"]] == [("mock", True), ("other", True)]


def test_the_report_reads_back_with_its_suites(shop):
    result, data = run(shop, "-i", EVERY)
    from agenttest.reporting import codec

    back = codec.read(str(shop / "r.json"))
    (suite,) = back.suites
    assert suite.id == "shop-every-field" and suite.passed and [a.label for a in suite.assertions] == ["none-failed", "suite-passed", "all-ran"]
    assert back.results[0].metadata == {"fixture": "catalogue.json"}
    assert back.results[0].turns[1].assertions[1].description == "The fact names the option chosen"
