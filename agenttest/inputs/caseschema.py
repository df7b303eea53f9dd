"""The shape of a case: its JSON Schema, derived from the case fields below and the registered assertion
types (so a plug-in's parameters are part of it), and a fast conservative check of that shape.

``plainly_valid`` is True only when the schema certainly accepts a case: suites of thousands of plain
cases skip jsonschema (~0.5 ms a case); anything unusual, and every invalid case, still goes through
jsonschema, which explains the errors. ``python -m agenttest.inputs.caseschema`` prints the schema; the shipped
copy (``schema/case.schema.json``, for editors) is checked against it by a test."""

from __future__ import annotations

import json
from typing import Any

from agenttest import assertions, plugins
from agenttest.config import MAX_RUNS

Schema = dict[str, Any]
_OPTIONS: Schema = {"type": "object", "properties": {"connector": {"type": "string"}, "metadata": {"type": "object"}}}

CASE_FIELDS: dict[str, Schema] = {
    "id": {"type": "string", "minLength": 1, "description": "Unique test identifier."},
    "name": {"type": "string"},
    "description": {"type": "string"},
    "input": {"$ref": "#/$defs/input"},
    "assert": {"$ref": "#/$defs/assertions"},
    "assertions": {"$ref": "#/$defs/assertions"},
    "expected": {"description": "With no assertions: deep-equal to the output."},
    "options": _OPTIONS,
    "user": {"type": "string"},
    "team": {"type": "string"},
    "metadata": {"type": "object"},
    "skip": {"type": "boolean"},
    "skip_reason": {"type": "string"},
    "timeout": {"$ref": "#/$defs/duration"},
    "before": {"type": "string", "minLength": 1},
    "after": {"type": "string", "minLength": 1},
    "simulator": {
        "type": "object", "additionalProperties": False,
        "properties": {"use": {"type": "string", "minLength": 1}, "options": _OPTIONS,
                       "script": {"type": "array", "minItems": 1, "items": {"type": "string"},
                                  "description": "An offline simulator: the user's messages in order; goal_achieved after the last."},
                       "hide_checkpoints": {"type": "boolean", "description": "Send the simulator no checkpoint ids or descriptions."}},
    },
    "checkpoints": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/checkpoint"}},
    "max_turns": {"type": "integer", "minimum": 1},
    "end": {"enum": ["checkpoints", "simulator"],
            "description": "How a dynamic conversation ends: once every required checkpoint is reached (default), or when the simulator says so."},
    "end_tools": {"type": "array", "items": {"type": "string", "minLength": 1},
                  "description": "Tools whose call ends a dynamic conversation (after their result)."},
    "turns": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/turn"}, "description": "A scripted conversation (FORMATS §14)."},
    "tags": {"type": "array", "items": {"type": "string"}, "description": "for -k selection and report grouping"},
    "world": {"type": "object", "description": "The initial state of the case's tool world (ctx.world)."},
    "mocks": {"type": "array", "items": {"$ref": "#/$defs/mock"}, "description": "Answers that replace tool calls."},
    "faults": {"type": "array", "items": {"$ref": "#/$defs/fault"}, "description": "Faults injected into tool calls."},
    "runs": {"type": "integer", "minimum": 1, "maximum": MAX_RUNS, "description": "Repetitions of this case (else --runs)."},
    "min_pass_rate": {"type": "number", "minimum": 0, "maximum": 1,
                      "description": "The case's gate: the share of its runs that must pass (else --min-pass-rate, default 1)."},
    "budget": {"$ref": "#/$defs/budget"},
    "output_from": {"enum": ["text", "tool_result"],
                    "description": "What the assertions see: the agent's final reply (text, the default) or, for an agent whose answer is a tool call, its first tool result."},
    "output": {"description": "A judge-only case: the agent's output, judged by the assertions instead of calling the agent (FORMATS §19)."},
    "tool_calls": {"type": "array", "items": {"type": "object", "required": ["name"],
                                              "properties": {"name": {"type": "string", "minLength": 1}, "arguments": {}, "result": {}}},
                   "description": "A judge-only case: the tool calls that came with its output."},
    "history": {"type": "array", "items": {"$ref": "#/$defs/message"},
                "description": "A judge-only case: the conversation before its output (what validators see as the input when there is none)."},
    "judge": {"type": "object", "additionalProperties": False, "minProperties": 1,
              "properties": {"min_agreement": {"type": "number", "minimum": 0, "maximum": 1}, "min_kappa": {"type": "number", "minimum": -1, "maximum": 1}},
              "description": "The judge gate for the validators of this case's labelled assertions: their agreement with the labels, and Cohen's kappa."},
    "policy": {"$ref": "#/$defs/policy"},
}
POLICY_FIELDS: dict[str, Schema] = {
    "allowed_tools": {"type": "array", "items": {"type": "string", "minLength": 1},
                      "description": "the only tools the agent may call: a call of another is refused and counted as a violation"},
    "write_policy": {"enum": ["read_only", "external"],
                     "description": "external: the case may create or change external records (runs only with --allow-external-writes)"},
}
SELECTION = {"type": "object", "additionalProperties": False,
             "properties": {"optionIndex": {"type": "integer", "minimum": 0}, "optionLabel": {"type": "string"},
                            "optionId": {"type": "string"}},
             "description": "a structured choice among the options the previous turn published: one of optionIndex, optionLabel, optionId"}
BUDGET_FIELDS: dict[str, Schema] = {
    "tokens": {"type": "integer", "minimum": 0, "description": "the agent under test's tokens in one run"},
    "cost": {"type": "number", "minimum": 0, "description": "the agent under test's cost in USD in one run (needs the connector's pricing)"},
    "tool_calls": {"type": "integer", "minimum": 0},
    "turns": {"type": "integer", "minimum": 0},
    "duration": {"$ref": "#/$defs/duration"},
    "model_calls": {"type": "integer", "minimum": 1, "description": "the agent under test's model calls in one conversation"},
}
TURN_FIELDS: dict[str, Schema] = {
    "id": {"type": "string", "minLength": 1},
    "input": {"$ref": "#/$defs/input"},
    "assert": {"$ref": "#/$defs/assertions"},
    "assertions": {"$ref": "#/$defs/assertions"},
    "selection": {"$ref": "#/$defs/selection"},
    "variants": {"type": "array", "minItems": 1, "items": {
        "type": "object", "required": ["id", "input"], "additionalProperties": False,
        "properties": {"id": {"type": "string", "minLength": 1}, "input": {"$ref": "#/$defs/input"},
                       "selection": {"$ref": "#/$defs/selection"}}},
        "description": "Inputs that each replace this turn's (its input and selection): the case runs once per combination; "
                       "an 'input' beside them is the baseline, not run."},
}
FAULT_KINDS = ["error", "timeout", "malformed", "empty", "rate_limit", "server_error", "permission_denied", "expired_credentials",
               "commit_timeout"]
MOCK_FIELDS: dict[str, Schema] = {
    "tool": {"type": "string", "minLength": 1, "description": "the tool's name"},
    "match": {"type": "object", "description": "a subset of the arguments; strings starting regex: are patterns"},
    "returns": {"description": "the result the agent sees"},
    "error": {"type": "string", "description": "or: the error the agent sees"},
    "delay": {"$ref": "#/$defs/duration"},
    "times": {"type": "integer", "minimum": 1, "description": "how many calls it answers (default: all)"},
}
FAULT_FIELDS: dict[str, Schema] = {
    "tool": {"type": "string", "minLength": 1, "description": "a tool's name, or * for every tool"},
    "kind": {"enum": FAULT_KINDS},
    "at": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}, "description": "call numbers (1 is the first call)"},
    "rate": {"type": "number", "minimum": 0, "maximum": 1, "description": "the chance that a call fails (reproducible with --seed)"},
    "message": {"type": "string", "description": "the error text (error, timeout) or the result (malformed)"},
}
ROLES = ["user", "assistant", "system", "tool", "developer"]
PARTS = ["text", "image", "image_url", "audio", "input_audio", "file", "data"]
MESSAGE_FIELDS: dict[str, Schema] = {
    "role": {"enum": ROLES},
    "content": {"anyOf": [{"type": "string"}, {"type": "null"}, {"$ref": "#/$defs/part"}, {"type": "array", "items": {"$ref": "#/$defs/part"}}]},
    "name": {"type": "string"},
    "tool_calls": {"type": "array"},
    "tool_call_id": {"type": "string"},
    "refusal": {"type": ["string", "null"]},
}
CHECKPOINT_FIELDS: dict[str, Schema] = {
    "id": {"type": "string", "minLength": 1},
    "description": {"type": "string"},
    "assert": {"$ref": "#/$defs/assertion"},
    "assertion": {"$ref": "#/$defs/assertion"},
    "after": {"type": "array", "items": {"type": "string"}},
    "required": {"type": "boolean"},
}


def assertion_fields() -> dict[str, Schema]:
    """Every parameter of every registered type; a name two types describe differently accepts anything
    here (each type's own declaration is checked by ``assertions.check``)."""
    out: dict[str, Schema] = {}
    for kind in assertions.types():
        for name, schema in kind.params.items():
            out[name] = schema if out.get(name, schema) == schema else {}
    out["type"] = {"type": "string", "description": ", ".join(k.name for k in assertions.types())}
    return out


def build() -> Schema:
    """The JSON Schema of one case."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://agenttest.dev/schema/case.schema.json",
        "title": "agenttest case",
        "description": "One test case of an agent-test case file (.jsonl line, .json array item or .yaml list item).",
        "type": "object",
        "required": ["id"],
        "additionalProperties": False,
        "properties": case_fields(),
        "$defs": {
            "duration": {"description": "\"30s\", \"2m30s\", \"1h\", \"500ms\" or a number of seconds.", "type": ["string", "number"]},
            "input": {
                "description": "A string, one message, or a message history.",
                "anyOf": [{"type": "string"}, {"$ref": "#/$defs/message"}, {"type": "array", "items": {"$ref": "#/$defs/message"}}],
            },
            "message": {"type": "object", "properties": MESSAGE_FIELDS, "additionalProperties": False,
                        "anyOf": [{"required": ["content"]}, {"required": ["tool_calls"]}, {"required": ["refusal"]}]},
            "turn": {"type": "object", "additionalProperties": False, "properties": TURN_FIELDS},
            "part": {"type": "object", "required": ["type"], "properties": {"type": {"enum": PARTS}},
                     "allOf": [{"if": {"properties": {"type": {"const": "text"}}, "required": ["type"]},
                                "then": {"properties": {"text": {"type": "string"}}}}]},
            "assertions": {"anyOf": [
                {"type": "string"}, {"$ref": "#/$defs/assertion"},
                {"type": "array", "items": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/assertion"}]}},
            ]},
            "assertion": {"type": "object", "additionalProperties": False, "properties": assertion_fields()},
            "checkpoint": {"type": "object", "required": ["id"], "additionalProperties": False, "properties": CHECKPOINT_FIELDS},
            "mock": {"type": "object", "required": ["tool"], "additionalProperties": False, "properties": MOCK_FIELDS},
            "fault": {"type": "object", "required": ["tool", "kind"], "additionalProperties": False, "properties": FAULT_FIELDS},
            "budget": {"type": "object", "minProperties": 1, "additionalProperties": False, "properties": BUDGET_FIELDS,
                       "description": "Limits on one run of the case; exceeding one fails it."},
            "policy": {"type": "object", "properties": POLICY_FIELDS,
                       "description": "What the case allows: allowed_tools (enforced), write_policy; other keys are the app's (ctx.policy)."},
            "selection": SELECTION,
        },
    }


_cache: dict[str, Any] = {"version": -1}


def schema() -> Schema:
    """The schema for the types registered now (rebuilt when a plug-in registers one)."""
    _refresh()
    return _cache["schema"]


def validator() -> Any:
    _refresh()
    if "validator" not in _cache:
        from jsonschema import Draft202012Validator

        _cache["validator"] = Draft202012Validator(_cache["schema"])
    return _cache["validator"]


def _refresh() -> None:
    if _cache["version"] != _versions():
        fields = assertion_fields()
        _cache.clear()
        _cache.update(version=_versions(), schema=build(), assertion_checks={k: _simple_check(v) for k, v in fields.items()},
                      keys=frozenset(case_fields()))


_TYPES: dict[str, Any] = {"string": lambda v: type(v) is str, "boolean": lambda v: type(v) is bool,
                          "object": lambda v: type(v) is dict, "array": lambda v: type(v) is list,
                          "integer": lambda v: type(v) is int, "number": lambda v: type(v) in (int, float)}


def _simple_check(field: Schema) -> Any:
    """A quick test for a parameter's schema; None when only jsonschema can tell (the case is not plain)."""
    rest = set(field) - {"description"}
    if not rest:
        return lambda v: True
    if rest == {"type"} and isinstance(field["type"], str) and field["type"] in _TYPES:
        return _TYPES[field["type"]]
    if rest == {"enum"} and all(type(c) is str for c in field["enum"]):
        allowed = frozenset(field["enum"])
        return lambda v: type(v) is str and v in allowed
    if rest == {"type", "minimum"} and field["type"] == "integer":
        low = field["minimum"]
        return lambda v: type(v) is int and v >= low
    if rest == {"type", "items"} and field["type"] == "array" and field["items"] == {"type": "string"}:
        return lambda v: type(v) is list and all(type(x) is str for x in v)
    if field is _OPTIONS or field == _OPTIONS:
        return _options
    return None


# ---- the fast check ------------------------------------------------------------------------------

CASE_KEYS = frozenset(CASE_FIELDS)  # a case's own keys (what a case file beside its list of cases may not set)


def case_fields() -> dict[str, Schema]:
    """The fields of a case: the built-in ones and those the plug-in modes read (a mode's ``fields``)."""
    plugins.builtins()
    extra = {k: v for mode in plugins.MODES.values() for k, v in (getattr(mode, "fields", None) or {}).items()}
    return {**CASE_FIELDS, **extra} if extra else CASE_FIELDS


def _versions() -> tuple[int, int]:
    return assertions.version(), plugins.MODES.version
STRINGS = ("name", "description", "user", "team", "skip_reason")
NONEMPTY = ("before", "after")
MESSAGE_KEYS = frozenset(MESSAGE_FIELDS)
_SAYS = frozenset(("content", "tool_calls", "refusal"))  # a message has one of these (real transcripts omit content)
ROLE_SET = frozenset(ROLES)
PART_SET = frozenset(PARTS)
CHECKPOINT_KEYS = frozenset(CHECKPOINT_FIELDS)
MOCK_KEYS = frozenset(MOCK_FIELDS)
FAULT_KEYS = frozenset(FAULT_FIELDS)


def _str(v: Any) -> bool:
    return type(v) is str


def _options(v: Any) -> bool:
    return type(v) is dict and ("connector" not in v or _str(v["connector"])) and ("metadata" not in v or type(v["metadata"]) is dict)


def _message(m: Any) -> bool:
    if type(m) is not dict or not m.keys() & _SAYS or not m.keys() <= MESSAGE_KEYS:
        return False
    if "role" in m and not (_str(m["role"]) and m["role"] in ROLE_SET):
        return False
    c = m.get("content")
    if not (c is None or _str(c) or _part(c) or (type(c) is list and all(_part(p) for p in c))):
        return False
    return (("name" not in m or _str(m["name"])) and ("tool_call_id" not in m or _str(m["tool_call_id"]))
            and ("tool_calls" not in m or type(m["tool_calls"]) is list) and ("refusal" not in m or m["refusal"] is None or _str(m["refusal"])))


def _part(p: Any) -> bool:
    return type(p) is dict and _str(p.get("type")) and p["type"] in PART_SET and (p["type"] != "text" or _str(p.get("text", "")))


def _assertion(a: Any) -> bool:
    if _str(a):
        return True
    if type(a) is not dict:
        return False
    checks = _cache["assertion_checks"]
    for key, value in a.items():
        check = checks.get(key)
        if check is None or not check(value):
            return False
    return True


def _assertions(v: Any) -> bool:
    return _assertion(v) or (type(v) is list and all(_assertion(a) for a in v))


def _checkpoint(c: Any) -> bool:
    return (type(c) is dict and c.keys() <= CHECKPOINT_KEYS and _str(c.get("id")) and c["id"] != ""
            and ("description" not in c or _str(c["description"])) and ("required" not in c or type(c["required"]) is bool)
            and ("after" not in c or (type(c["after"]) is list and all(_str(x) for x in c["after"])))
            and all(k not in c or (type(c[k]) is dict and _assertion(c[k])) for k in ("assert", "assertion")))


def _count(v: Any, least: int) -> bool:
    return type(v) is int and v >= least


def _mock(m: Any) -> bool:
    return (type(m) is dict and m.keys() <= MOCK_KEYS and _str(m.get("tool")) and m["tool"] != ""
            and ("match" not in m or type(m["match"]) is dict) and ("error" not in m or _str(m["error"]))
            and ("delay" not in m or type(m["delay"]) in (str, int, float)) and ("times" not in m or _count(m["times"], 1)))


def _fault(f: Any) -> bool:
    return (type(f) is dict and f.keys() <= FAULT_KEYS and _str(f.get("tool")) and f["tool"] != "" and f.get("kind") in FAULT_KINDS
            and ("at" not in f or (type(f["at"]) is list and f["at"] != [] and all(_count(n, 1) for n in f["at"])))
            and ("rate" not in f or (type(f["rate"]) in (int, float) and 0 <= f["rate"] <= 1))
            and ("message" not in f or _str(f["message"])))


def _number(v: Any, low: float, high: float) -> bool:
    return type(v) in (int, float) and low <= v <= high


def _gate(raw: dict[str, Any]) -> bool:
    """The repetition, gate and budget fields, if any, certainly fit the schema."""
    budget = raw.get("budget", {"turns": 1})
    if type(budget) is dict and "model_calls" in budget:
        return False
    return (("runs" not in raw or (_count(raw["runs"], 1) and raw["runs"] <= MAX_RUNS))
            and ("min_pass_rate" not in raw or _number(raw["min_pass_rate"], 0, 1))
            and type(budget) is dict and bool(budget) and budget.keys() <= BUDGET_FIELDS.keys()
            and all(_count(budget[k], 0) for k in ("tokens", "tool_calls", "turns") if k in budget)
            and ("cost" not in budget or _number(budget["cost"], 0, float("inf")))
            and ("duration" not in budget or type(budget["duration"]) in (str, int, float)))


def _world(raw: dict[str, Any]) -> bool:
    """The tool-world fields, if any, certainly fit the schema."""
    return (("world" not in raw or type(raw["world"]) is dict)
            and ("mocks" not in raw or (type(raw["mocks"]) is list and all(_mock(m) for m in raw["mocks"])))
            and ("faults" not in raw or (type(raw["faults"]) is list and all(_fault(f) for f in raw["faults"]))))


def plainly_valid(raw: Any) -> bool:
    """True only if the case's structure is certainly valid under the schema."""
    _refresh()
    if type(raw) is not dict or not raw.keys() <= _cache["keys"] or not _str(raw.get("id")) or raw["id"] == "":
        return False
    if not all(k not in raw or _str(raw[k]) for k in STRINGS) or not all(k not in raw or (_str(raw[k]) and raw[k]) for k in NONEMPTY):
        return False
    if "input" in raw:
        v = raw["input"]
        if not (_str(v) or _message(v) or (type(v) is list and all(_message(m) for m in v))):
            return False
    for key in ("assert", "assertions"):
        if key in raw and not _assertions(raw[key]):
            return False
    if "options" in raw and not _options(raw["options"]):
        return False
    if "metadata" in raw and type(raw["metadata"]) is not dict:
        return False
    if "skip" in raw and type(raw["skip"]) is not bool:
        return False
    if "timeout" in raw and type(raw["timeout"]) not in (str, int, float):
        return False
    if "max_turns" in raw and (type(raw["max_turns"]) is not int or raw["max_turns"] < 1):
        return False
    if "tags" in raw and not (type(raw["tags"]) is list and all(_str(t) for t in raw["tags"])):
        return False
    if not _world(raw) or not _gate(raw):
        return False
    if raw.keys() & {"end", "end_tools", "turns", "output_from", "output", "tool_calls", "history", "judge", "policy"}:
        return False  # rarer fields: jsonschema decides
    if "simulator" in raw:
        s = raw["simulator"]
        if type(s) is not dict or not s.keys() <= {"use", "options"} or not _str(s.get("use")) or not s["use"]:
            return False
        if "options" in s and not _options(s["options"]):
            return False
    if "checkpoints" in raw:
        cps = raw["checkpoints"]
        if type(cps) is not list or not cps or not all(_checkpoint(c) for c in cps):
            return False
    return True


if __name__ == "__main__":  # python -m agenttest.inputs.caseschema > agenttest/schema/case.schema.json
    print(json.dumps(build(), indent=2, ensure_ascii=False))
