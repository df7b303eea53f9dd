"""A fast, conservative structural check of a case: True only when the shipped JSON Schema certainly
accepts it. Suites of thousands of plain cases skip jsonschema (~0.5 ms a case); anything unusual, and
every invalid case, still goes through jsonschema, which explains the errors. A test keeps the two in step."""

from __future__ import annotations

from typing import Any

CASE_KEYS = frozenset({"id", "name", "description", "input", "assert", "assertions", "expected", "options", "user", "team",
                       "metadata", "skip", "skip_reason", "timeout", "before", "after", "simulator", "checkpoints", "max_turns"})
STRINGS = ("name", "description", "user", "team", "skip_reason")
NONEMPTY = ("before", "after")
MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
ROLES = frozenset({"user", "assistant", "system", "tool", "developer"})
PARTS = frozenset({"text", "image", "image_url", "audio", "input_audio", "file"})
ASSERTION_KEYS = frozenset({"type", "value", "pattern", "path", "name", "message", "negate", "use", "script", "options"})
ASSERTION_STRINGS = ("type", "pattern", "path", "message", "use", "script")
CHECKPOINT_KEYS = frozenset({"id", "description", "assert", "assertion", "after", "required"})


def _str(v: Any) -> bool:
    return type(v) is str


def _options(v: Any) -> bool:
    return type(v) is dict and ("connector" not in v or _str(v["connector"])) and ("metadata" not in v or type(v["metadata"]) is dict)


def _message(m: Any) -> bool:
    if type(m) is not dict or "content" not in m or not m.keys() <= MESSAGE_KEYS:
        return False
    if "role" in m and not (_str(m["role"]) and m["role"] in ROLES):
        return False
    c = m["content"]
    if not (c is None or _str(c) or (type(c) is list and all(type(p) is dict and _str(p.get("type")) and p["type"] in PARTS for p in c))):
        return False
    return (("name" not in m or _str(m["name"])) and ("tool_call_id" not in m or _str(m["tool_call_id"]))
            and ("tool_calls" not in m or type(m["tool_calls"]) is list))


def _assertion(a: Any) -> bool:
    if _str(a):
        return True
    return (type(a) is dict and a.keys() <= ASSERTION_KEYS and all(k not in a or _str(a[k]) for k in ASSERTION_STRINGS)
            and ("negate" not in a or type(a["negate"]) is bool) and ("options" not in a or _options(a["options"])))


def _assertions(v: Any) -> bool:
    return _assertion(v) or (type(v) is list and all(_assertion(a) for a in v))


def _checkpoint(c: Any) -> bool:
    return (type(c) is dict and c.keys() <= CHECKPOINT_KEYS and _str(c.get("id")) and c["id"] != ""
            and ("description" not in c or _str(c["description"])) and ("required" not in c or type(c["required"]) is bool)
            and ("after" not in c or (type(c["after"]) is list and all(_str(x) for x in c["after"])))
            and all(k not in c or (type(c[k]) is dict and _assertion(c[k])) for k in ("assert", "assertion")))


def plainly_valid(raw: Any) -> bool:
    """True only if the case's structure is certainly valid under the schema."""
    if type(raw) is not dict or not raw.keys() <= CASE_KEYS or not _str(raw.get("id")) or raw["id"] == "":
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
