"""util/schemas.py: a JSON Schema compiled into plain checks says yes exactly when jsonschema does — over the
shipped report schema, on real reports and on thousands of their mutations — and refuses to compile a keyword
it does not know."""

from __future__ import annotations

import copy
import json
import random

import pytest
from jsonschema import Draft202012Validator

from agenttest.util.schemas import Unsupported, compiled, equal
from helpers import REPO

SCHEMA = json.loads((REPO / "agenttest" / "schema" / "report.schema.json").read_text())
ODD = [None, True, False, 0, 1, -1, 1.0, 2.5, float("nan"), "", "x", "passed", "2026-12-01T10:00:00Z", [], [1], {}, {"a": 1},
       {"type": "contains", "passed": True}, 10**20]


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _mutated(doc, rng):
    doc = copy.deepcopy(doc)
    path = rng.choice(list(_paths(doc))[1:])
    holder = doc
    for step in path[:-1]:
        holder = holder[step]
    what = rng.random()
    if what < 0.6:
        holder[path[-1]] = rng.choice(ODD)
    elif what < 0.8 and isinstance(holder, dict):
        del holder[path[-1]]
    elif isinstance(holder, dict):
        holder[rng.choice(["colour", "id", "status", "mock", "run"])] = rng.choice(ODD)
    else:
        holder.append(rng.choice(ODD))
    return doc


def _documents():
    for name in ("report.json", "gated.json"):
        yield json.loads((REPO / "tests" / "golden" / name).read_text())
    from test_codec import _report
    from agenttest.reporting import codec

    for seed in range(4):
        yield json.loads(json.dumps(codec.report_dict(_report(seed))))


def test_the_compiled_report_schema_says_what_jsonschema_says():
    check, validator = compiled(SCHEMA), Draft202012Validator(SCHEMA)
    rng = random.Random(50)
    seen = {True: 0, False: 0}
    for n, doc in enumerate(_documents()):
        assert check(doc) is validator.is_valid(doc) is (n < 2 or check(doc))  # the golden reports are valid
        for _ in range(400):
            bad = _mutated(doc, rng)
            said = validator.is_valid(bad)
            assert check(bad) is said, json.dumps(bad)[:300]
            seen[said] += 1
    assert seen[True] > 100 and seen[False] > 1000  # both answers were asked for, many times


@pytest.mark.parametrize("schema, good, bad", [
    ({"type": "integer", "minimum": 1}, [1, 2.0, 10**30], [0, 1.5, True, "1", None]),
    ({"enum": [1, "a", [1, 2]]}, [1, 1.0, "a", [1, 2], [1.0, 2]], [True, "b", [2, 1], 2]),
    ({"const": True}, [True], [1, 1.0, "true"]),
    ({"type": ["string", "null"], "pattern": "^a"}, [None, "abc"], ["bac", 1]),
    ({"type": "object", "required": ["a"], "properties": {"a": {"type": "number"}}, "additionalProperties": False},
     [{"a": 1}, {"a": 2.5}], [{"a": True}, {}, {"a": 1, "b": 2}, [], None]),
    ({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}, [[], [[], [[]]]], [[1], [[], {}]]),
    ({"additionalProperties": {"type": "string"}}, [{"a": "b"}, 3, []], [{"a": 1}]),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, [0.5, "x", float("nan")], [0, 1, -2]),
    ({"anyOf": [{"type": "null"}, {"type": "integer"}], "not": {"const": 3}}, [None, 2], [3, "x", 1.5]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}], "allOf": [{"type": "number"}]}, [1, 2.5], [3, "x"]),
    ({"minItems": 1, "maxItems": 2, "minLength": 2, "maxLength": 3, "minProperties": 1, "maxProperties": 1},
     [[1], [1, 2], "ab", "abc", {"a": 1}, 7], [[], [1, 2, 3], "a", "abcd", {}, {"a": 1, "b": 2}]),
])
def test_each_keyword_as_jsonschema_reads_it(schema, good, bad):
    check, validator = compiled(schema), Draft202012Validator(schema)
    for value in good:
        assert check(value) and validator.is_valid(value), value
    for value in bad:
        assert not check(value) and not validator.is_valid(value), value


@pytest.mark.parametrize("schema", [{"if": {"type": "string"}}, {"type": "string", "format": "date"}, {"$ref": "other.json"},
                                    {"properties": {"a": {"dependentRequired": {}}}}, {"$ref": "#/$defs/missing"}])
def test_a_keyword_it_does_not_know_is_refused_not_guessed(schema):
    with pytest.raises(Unsupported):
        compiled(schema)


def test_json_equality():
    assert equal(1, 1.0) and not equal(True, 1) and not equal(0, False) and equal({"a": [1]}, {"a": [1.0]}) and not equal([1], {"1": 1})
