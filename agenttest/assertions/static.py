"""Static assertions: equals, contains, not_contains, regex, json_path, type, tool_called, tool_result."""

from __future__ import annotations

import asyncio
import json
import re
from functools import lru_cache
from typing import Any

from agenttest.util.text import find_json, shorten, written
from agenttest.util import patterns
from agenttest.util.matching import equal, matches, name_matches
from agenttest.model import AssertionResult, ToolCall
from agenttest.assertions.registry import CheckProblem, Need, Observation, get, register

JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")


def _ok(kind: str, expected: Any = None, actual: Any = None) -> AssertionResult:
    return AssertionResult(type=kind, passed=True, message="", expected=expected, actual=actual)


def _fail(kind: str, message: str, expected: Any = None, actual: Any = None) -> AssertionResult:
    return AssertionResult(type=kind, passed=False, message=message, expected=expected, actual=actual)


VALUE: dict[str, Any] = {"description": "the expected value"}
PATH = {"type": "string", "description": "a JSONPath, e.g. $.items[0].name"}


# ---- equals -----------------------------------------------------------------------------------


def _check_equals(params: dict[str, Any]) -> list[CheckProblem]:
    """An 'equals' with no 'value' compares against nothing: an assertion without a 'type' is 'equals', so
    ``{"contains": "help"}`` (a type written as a key) would fail every case for a reason nobody wrote."""
    if "value" in params:
        return []
    named = [k for k in params if k not in ("type", "value") and get(k) is not None]
    if named and "type" not in params:
        example = json.dumps({"type": named[0], "value": params[named[0]]}, ensure_ascii=False)
        return [(None, f"an assertion without a 'type' is 'equals', and it needs a 'value'; '{named[0]}' is a type, not a field",
                 f"did you mean {example}?")]
    return [(None, "'equals' needs a 'value'", "the expected output, e.g. {\"type\": \"equals\", \"value\": \"yes\"}")]


@register("equals", fields={"value": VALUE}, check=_check_equals)
def equals(params: dict[str, Any], obs: Observation) -> AssertionResult:
    expected, output = params.get("value"), obs.output
    if isinstance(expected, str) and isinstance(output, str):
        passed = output.strip() == expected.strip()
    else:
        if isinstance(output, str) and not isinstance(expected, str):
            found, parsed = find_json(output)
            output = parsed if found else output
        passed = equal(output, expected)
    if passed:
        return _ok("equals", expected, output)
    return _fail("equals", f"expected {_shown(expected)}, got {_shown(output)}", expected, output)


def _shown(value: Any) -> str:
    """A value in a message as JSON would write it where text would hide it: null, "" (not nothing)."""
    if value is None or value == "" or isinstance(value, bool):
        return json.dumps(value)
    return shorten(value, 120)


# ---- contains / not_contains ---------------------------------------------------------------------


def _check_strings(params: dict[str, Any]) -> list[CheckProblem]:
    value = params.get("value")
    if value is None:
        return [("value", f"'{params['type']}' needs a 'value'", "a string or a list of strings")]
    if isinstance(value, list):
        if not value or not all(isinstance(v, str) for v in value):
            return [("value", "'value' must be a string or a non-empty list of strings", None)]
    elif not isinstance(value, str):
        return [("value", f"'value' must be a string or a list of strings, got {type(value).__name__}", None)]
    if "" in _needles(value):  # every text contains "": contains would always pass, not_contains always fail
        return [("value", f"'{params['type']}' of an empty string checks nothing (every output contains \"\")", "give the text to look for")]
    return []


def _needles(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


@register("contains", fields={"value": VALUE}, check=_check_strings)
def contains(params: dict[str, Any], obs: Observation) -> AssertionResult:
    text, needles = obs.text, _needles(params["value"])
    missing = [n for n in needles if n not in text]
    if not missing:
        return _ok("contains", params["value"])
    what = ", ".join(repr(m) for m in missing)
    return _fail("contains", f"output does not contain {what}: {shorten(text, 120)}", params["value"], text)


@register("not_contains", fields={"value": VALUE}, check=_check_strings)
def not_contains(params: dict[str, Any], obs: Observation) -> AssertionResult:
    text, needles = obs.text, _needles(params["value"])
    present = [n for n in needles if n in text]
    if not present:
        return _ok("not_contains", params["value"])
    what = ", ".join(repr(p) for p in present)
    return _fail("not_contains", f"output contains {what}: {shorten(text, 120)}", params["value"], text)


# ---- regex ---------------------------------------------------------------------------------------


def _check_regex(params: dict[str, Any]) -> list[CheckProblem]:
    key = "pattern" if "pattern" in params else "value"
    pattern = params.get(key)
    if "pattern" in params and "value" in params:
        return [("value", "give 'value' or 'pattern', not both", None)]
    if not isinstance(pattern, str):
        return [(key if key in params else None, "'regex' needs a 'pattern' (or 'value') string", None)]
    if not pattern:
        return [(key, "an empty 'regex' matches every output: it checks nothing", "give the pattern to look for, e.g. \"EXP-\\\\d+\"")]
    try:
        patterns.compile_pattern(pattern)
    except patterns.error as exc:
        return [(key, f"regex {pattern!r} does not compile: {exc}", "escape special characters with \\\\")]
    return []


@register("regex", fields={"value": VALUE, "pattern": {"type": "string"}}, check=_check_regex)
async def regex(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The search runs in a worker thread with a deadline: a backtracking pattern cannot freeze the run."""
    pattern = params.get("pattern", params.get("value"))
    text = obs.text
    try:
        m = await asyncio.to_thread(patterns.search, str(pattern), text)
    except patterns.PatternTimeout as exc:
        return AssertionResult(type="regex", passed=False, message=f"regex {exc}", expected=pattern, error=True)
    if m:
        return _ok("regex", pattern, m.group(0))
    return _fail("regex", f"output does not match /{pattern}/: {shorten(text, 120)}", pattern, text)


# ---- json_path / type ------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def parsed_path(path: str) -> Any:
    from jsonpath_ng.ext import parse

    return parse(_quoted_names(path))


# a name after a dot runs to the next character JSONPath gives a meaning to (letters with combining marks, as
# in Devanagari or Thai, are part of it: \w alone stops at them)
_DOTTED = re.compile(r"\.([^\s.\[\]()'\"=!<>&|,*?:~+/\\@$]+)")


def _quoted_names(path: str) -> str:
    """``path`` with each ``.name`` that has a non-ASCII letter written ``['name']``: the JSONPath parser reads
    only ASCII names after a dot (``$.héllo`` would not parse; ``$['héllo']`` does). Quoted text is left alone."""
    if path.isascii():
        return path
    out, i, quote = [], 0, ""
    while i < len(path):
        c = path[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(path):
                out.append(path[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c == "." and (m := _DOTTED.match(path, i)) and not m.group(1).isascii():
            out.append(("." if out and out[-1] == "." else "") + f"['{m.group(1)}']")  # $..é: the descent is kept
            i = m.end()
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def path_problems(params: dict[str, Any], required: bool) -> list[CheckProblem]:
    path = params.get("path")
    if path is None:
        return [("path", f"'{params['type']}' needs a 'path'", "e.g. \"$.status\"")] if required else []
    if not isinstance(path, str):
        return [("path", "'path' must be a string", None)]
    try:
        parsed_path(path)
    except Exception as exc:
        return [("path", f"JSONPath {path!r} does not parse: {exc}", "e.g. \"$.items[0].name\" or \"$.items[?(@.ok == true)]\"")]
    return []


def _lookup(params: dict[str, Any], obs: Observation) -> tuple[str | None, list[Any]]:
    """Parse the output's JSON and return (error, matched values)."""
    found, data = find_json(obs.output)
    if not found:
        return f"no JSON found in output: {shorten(obs.text, 120)}", []
    path = params.get("path")
    if path is None:
        return None, [data]
    return None, [m.value for m in parsed_path(path).find(data)]


@register("json_path", fields={"path": PATH, "value": VALUE}, check=lambda p: path_problems(p, True))
def json_path(params: dict[str, Any], obs: Observation) -> AssertionResult:
    error, values = _lookup(params, obs)
    path = params["path"]
    if error:
        return _fail("json_path", error, params.get("value"), obs.text)
    if not values:
        return _fail("json_path", f"{path} matched nothing", params.get("value"), None)
    actual = values[0] if len(values) == 1 else values
    if "value" not in params:
        return _ok("json_path", None, actual)
    expected = params["value"]
    for v in values:
        if equal(v, expected) or (isinstance(expected, list) and not isinstance(v, list) and any(equal(v, e) for e in expected)):
            return _ok("json_path", expected, v)
    return _fail("json_path", f"{path}: expected {shorten(expected, 120)}, got {shorten(actual, 120)}", expected, actual)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _check_type(params: dict[str, Any]) -> list[CheckProblem]:
    from agenttest.errors import did_you_mean

    value = params.get("value")
    if value not in JSON_TYPES:
        hint = (did_you_mean(value, JSON_TYPES) if isinstance(value, str) else None) or f"one of {', '.join(JSON_TYPES)}"
        return [("value", f"'type' assertion needs 'value' naming a JSON type, got {written(value)}", hint)]
    return path_problems(params, False)


@register("type", fields={"value": VALUE, "path": PATH}, check=_check_type)
def type_(params: dict[str, Any], obs: Observation) -> AssertionResult:
    expected = params["value"]
    if "path" in params or not isinstance(obs.output, str):
        error, values = _lookup(params, obs)
        if error:
            return _fail("type", error, expected, obs.text)
        if not values:
            return _fail("type", f"{params['path']} matched nothing", expected, None)
        actual = json_type(values[0])
    else:
        found, data = find_json(obs.output) if obs.output.strip()[:1] in "{[" or _is_scalar_json(obs.output) else (False, None)
        actual = json_type(data) if found else "string"
    if actual == expected or (expected == "number" and actual == "integer"):
        return _ok("type", expected, actual)
    where = f"{params['path']} is" if "path" in params else "output is"
    return _fail("type", f"{where} {actual}, expected {expected}", expected, actual)


def _is_scalar_json(text: str) -> bool:
    import json

    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# ---- tool_called / tool_result -------------------------------------------------------------------------


def _check_tool_called(params: dict[str, Any]) -> list[CheckProblem]:
    if "value" in params and "name" in params:
        return [("name", "give 'name' or 'value', not both", None)]
    spec = params.get("name", params.get("value"))
    if spec is None:
        return [(None, "'tool_called' needs 'name' (or 'value')", "a tool name, a list of names, or {\"name\", \"arguments\"}")]
    items = spec if isinstance(spec, list) else [spec]
    field = "name" if "name" in params else "value"
    if not items:
        return [(field, "'tool_called' needs at least one tool name, not an empty list", "e.g. \"name\": \"create_expense\"")]
    for item in items:
        if item == "" or isinstance(item, dict) and item.get("name") == "":
            return [(field, "a tool name cannot be empty", None)]
        if isinstance(item, dict):
            if not isinstance(item.get("name"), str):
                return [("name" if "name" in params else "value", "a tool_called object needs a 'name' string", None)]
            extra = set(item) - {"name", "arguments"}
            if extra:
                return [("value", f"unknown key {sorted(extra)[0]!r} in tool_called", "use 'name' and 'arguments'")]
        elif not isinstance(item, str):
            return [("name" if "name" in params else "value", "tool names must be strings", None)]
    return []


def _tool_spec_matches(item: Any, call: ToolCall) -> bool:
    if isinstance(item, str):
        return name_matches(item, call.name)
    if not name_matches(item["name"], call.name):
        return False
    return "arguments" not in item or matches(item["arguments"], call.arguments)


def tools_named(name: Any, field: str | tuple[Any, ...]) -> list[Need]:
    """The tool an assertion names at ``field`` (none when it is no name: its check says so)."""
    return [Need("tool", name, field)] if isinstance(name, str) and name else []


def _called_tools(params: dict[str, Any]) -> list[Need]:
    field = "name" if "name" in params else "value"
    spec = params.get(field)
    items = spec if isinstance(spec, list) else [spec]
    out = []
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else item
        where: tuple[Any, ...] = (field,) + ((i,) if isinstance(spec, list) else ()) + (("name",) if isinstance(item, dict) else ())
        out += tools_named(name, where)
    return out


@register("tool_called", fields={"value": VALUE, "name": {"description": "a tool name, a list of names, or {name, arguments}"}},
          check=_check_tool_called, needs=_called_tools)
def tool_called(params: dict[str, Any], obs: Observation) -> AssertionResult:
    spec = params.get("name", params.get("value"))
    items = spec if isinstance(spec, list) else [spec]
    for call in obs.tool_calls:
        if any(_tool_spec_matches(item, call) for item in items):
            return _ok("tool_called", spec, {"name": call.name, "arguments": call.arguments})
    called = [c.name for c in obs.tool_calls]
    want = " or ".join(shorten(i, 120) for i in items)
    got = ", ".join(called) if called else "no tools were called"
    detail = ""
    if called and any(isinstance(i, dict) and "arguments" in i for i in items):
        detail = "; arguments: " + "; ".join(f"{c.name}{shorten(c.arguments, 120)}" for c in obs.tool_calls)
    return _fail("tool_called", f"expected tool {want} to be called; called: {got}{detail}", spec, called)


def _check_tool_result(params: dict[str, Any]) -> list[CheckProblem]:
    value = params.get("value")
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        return [("value", "'tool_result' needs 'value': {\"tool\": name, \"result\": expected}", None)]
    extra = set(value) - {"tool", "result"}
    if extra:
        return [("value", f"unknown key {sorted(extra)[0]!r} in tool_result", "use 'tool' and 'result'")]
    return []


@register("tool_result", fields={"value": VALUE}, check=_check_tool_result,
          needs=lambda params: tools_named(params.get("value", {}).get("tool") if isinstance(params.get("value"), dict) else None, ("value", "tool")))
def tool_result(params: dict[str, Any], obs: Observation) -> AssertionResult:
    value = params["value"]
    calls = [c for c in obs.tool_calls if name_matches(value["tool"], c.name)]
    if not calls:
        return _fail("tool_result", f"tool {value['tool']!r} was not called", value, None)
    for call in calls:
        if call.error is None and ("result" not in value or matches(value["result"], _parsed(call.result))):
            return _ok("tool_result", value, call.result)
    last = calls[-1]
    if last.error is not None:
        return _fail("tool_result", f"tool {last.name!r} failed: {last.error}", value, {"error": last.error})
    return _fail("tool_result", f"tool {last.name!r} returned {shorten(last.result, 120)}, expected {shorten(value.get('result'), 120)}", value, last.result)


def _parsed(result: Any) -> Any:
    if isinstance(result, str):
        found, data = find_json(result)
        if found and not isinstance(data, str):
            return data
    return result
