"""The loader holds a message, an assertion or any dict of text written alike in many cases as one object
(100,000 cases in a third of the memory); user code is handed its own copy of a case's data, so what a
Before hook, a create hook, a script assertion or a tool (through ``ctx.metadata``) changes in place reaches no other case and not the report.
End to end through the CLI, on the mock connector, in the controller and in a worker."""

from __future__ import annotations

import json

import pytest

from helpers import cli, report

RULES = """
rules:
  - user: ".*"
    reply: "echo: {{ user }}"
"""
HOOKS = """
def Before(ctx, case):
    name = ctx.metadata["profile"]["name"]
    if name != "ann":
        raise ValueError(f"ctx.metadata holds another case's edit: {name}")
    ctx.metadata["profile"]["name"] += "!"
    case["input"][0]["content"] += " (edited by Before)"
    case["assertions"][0]["value"] = "never"
"""
INDEX = """
def create(ctx, messages):
    messages[-1]["content"] += "!"  # in place, returning nothing: this call is sent the edit
"""
SCRIPTS = """
def Check(output, input, value):
    input[0]["content"] = "edited by the script"
    value["seen"] = value.get("seen", 0) + 1
    return value["seen"] == 1
"""


@pytest.fixture
def editor(offline_app):
    offline_app.agent("editor", connector="mock", files={"mock.yml": RULES, "src/index.py": INDEX, "src/env_test.py": HOOKS})
    offline_app.file("scripts/checks.py", SCRIPTS)
    return offline_app


@pytest.mark.parametrize("workers, kind", [("0", ".jsonl"), ("1", ".jsonl"), ("1", ".json")])
def test_what_user_code_edits_in_place_stays_in_its_own_case(editor, tmp_path, workers, kind):
    written = {"role": "user", "content": "hello"}
    cases = [{"id": f"c{i}", "input": [written], "before": "env_test.Before", "metadata": {"profile": {"name": "ann"}},
              "assertions": [{"type": "contains", "value": "echo: hello!"},
                             {"type": "script", "script": "scripts.checks.Check", "value": {"n": "1"}}]} for i in range(4)]
    if kind == ".json":  # a list of cases, shared as a .jsonl file's are
        path = editor.file("assistants/editor/tests/cases.json", json.dumps({"cases": cases}, indent=2))
    else:
        path = editor.cases("assistants/editor/tests/cases.jsonl", cases)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "editor", "--workers", workers, "--parallel", "1", "-o", str(out))
    assert out.exists(), result.output
    data = report(out)
    by_id = {r["id"]: r for r in data["results"]}
    assert result.exit_code == 0, (result.output, [r.get("error") or r["assertions"] for r in data["results"]])
    for i in range(4):
        r = by_id[f"c{i}"]
        assert r["status"] == "passed", r
        assert r["output"] == "echo: hello!", r["output"]  # the create hook's edit, made once: not "hello!!" in a later case
        assert r["input"] == [written], r["input"]  # as written: the Before hook's and the script's edits were their own
        assert [a["passed"] for a in r["assertions"]] == [True, True]  # the script's "seen" counts from 1 in each case
