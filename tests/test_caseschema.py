"""The fast structural check never accepts what the JSON Schema rejects, and accepts ordinary cases."""

from __future__ import annotations

import copy
import json

from agenttest.inputs.caseschema import validator as _validator
from agenttest.inputs.caseschema import plainly_valid
from helpers import REPO

REPLACEMENTS = [None, 0, -1, 1.5, True, "", "x", "user", "text", [], {}, ["x"], [{}], [{"type": "text"}], {"x": 1}, {"content": "c"}]


def corpus() -> list[dict]:
    import yaml

    cases = []
    for name in ("inputs.jsonl", "dynamic.jsonl"):
        for line in (REPO / "assistants/expense/tests" / name).read_text().splitlines():
            if line.strip() and not line.startswith("//"):
                cases.append(json.loads(line))
    cases += yaml.safe_load((REPO / "assistants/expense/tests/world.yaml").read_text())[1:4]  # worlds, mocks, faults
    return cases


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def variants(case):
    for path in paths(case):
        if not path:
            continue
        for replacement in REPLACEMENTS + ["__delete__", "__extra__"]:
            mutated = copy.deepcopy(case)
            parent = mutated
            for part in path[:-1]:
                parent = parent[part]
            if replacement == "__delete__":
                del parent[path[-1]]
            elif replacement == "__extra__":
                if isinstance(parent[path[-1]], dict):
                    parent[path[-1]]["unexpected"] = 1
            else:
                parent[path[-1]] = replacement
            yield mutated


def test_fast_check_implies_schema_validity():
    validator = _validator()
    checked = accepted = 0
    for case in corpus():
        assert plainly_valid(case), case["id"]  # ordinary cases take the fast path
        for variant in variants(case):
            checked += 1
            if plainly_valid(variant):
                accepted += 1
                errors = list(validator.iter_errors(variant))
                assert not errors, (variant, errors[0].message)
    assert checked > 4000 and 0 < accepted < checked


def test_loading_never_crashes_on_garbage():
    """Random JSON values, mangled lines and YAML: either cases or an InputError, never another exception."""
    import random

    from agenttest.errors import InputError
    from agenttest.inputs.reading import parse_text

    rng = random.Random(1234)
    atoms = [None, True, 0, -3, 2.5, "", "x", "contains", [], {}, {"type": "regex", "value": "("}, [{"role": "tool"}]]
    keys = ["id", "input", "assert", "assertions", "checkpoints", "simulator", "timeout", "after", "options", "x", "skip"]

    def value(depth=0):
        if depth > 2 or rng.random() < 0.4:
            return rng.choice(atoms)
        if rng.random() < 0.5:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}

    lines = []
    for _ in range(600):
        case = {k: value() for k in rng.sample(keys, rng.randint(0, 6))}
        text = json.dumps(case)
        if rng.random() < 0.15:
            cut = rng.randint(0, len(text))
            text = text[:cut] + rng.choice(["", ",", "}", "'", "\\\\"]) + text[cut:]
        lines.append(text)
    for kind in (".jsonl", ".json", ".yaml"):
        for chunk in range(0, 600, 50):
            part = lines[chunk:chunk + 50]
            text = "\n".join(part) if kind == ".jsonl" else ("[" + ",".join(part) + "]" if kind == ".json" else "\n".join(f"- {p}" for p in part))
            try:
                parse_text(text, "fuzz" + kind)
            except InputError as exc:
                assert all(p.message for p in exc.problems)


def test_shipped_schema_is_the_one_derived_from_the_registry():
    """The shipped file is what the regeneration command its docstring names prints, byte for byte."""
    import subprocess
    import sys

    from agenttest.inputs.caseschema import build

    shipped = (REPO / "agenttest/schema/case.schema.json").read_text()
    assert json.loads(shipped) == build(), "regenerate: python -m agenttest.inputs.caseschema > agenttest/schema/case.schema.json"
    printed = subprocess.run([sys.executable, "-m", "agenttest.inputs.caseschema"], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert printed == shipped


def test_a_registered_type_brings_its_parameters_into_the_schema():
    from agenttest import assertions
    from agenttest.inputs.caseschema import schema
    from agenttest.model import AssertionResult

    @assertions.register("near_length", fields={"chars": {"type": "integer"}, "slack": {"type": "number"}})
    def near_length(params, obs):
        return AssertionResult(type="near_length", passed=abs(len(obs.text) - params["chars"]) <= params.get("slack", 0))

    props = schema()["$defs"]["assertion"]["properties"]
    assert props["chars"] == {"type": "integer"} and props["slack"] == {"type": "number"}
    ok = {"id": "a", "input": "x", "assert": {"type": "near_length", "chars": 3, "slack": 1.5}}
    bad = {"id": "a", "input": "x", "assert": {"type": "near_length", "chars": "three"}}
    assert plainly_valid(ok) and not list(_validator().iter_errors(ok))
    assert not plainly_valid(bad) and list(_validator().iter_errors(bad))
    assert assertions.check(bad["assert"]) == [("chars", "'chars' must be an integer, not str", None)]
