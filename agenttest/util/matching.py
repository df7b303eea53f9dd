"""Matching values the way assertions, mocks and faults do: deep equality with numbers by value, partial
deep matches with ``regex:`` strings, and tool names with or without their MCP server prefix."""

from __future__ import annotations

from typing import Any

from agenttest.util import patterns
from agenttest.util.text import as_text


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``server__tool``, with the dots of the server ID as underscores (as Yao's
    ``MCPToolName`` does, since model tool names allow only letters, digits, ``_`` and ``-``)."""
    return f"{server.replace('.', '_')}__{tool}"


def equal(a: Any, b: Any) -> bool:
    """Deep equality where numbers compare by value but booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def matches(expected: Any, actual: Any) -> bool:
    """Partial deep match: dicts by the expected keys, lists element-wise by subset, ``regex:`` strings as patterns."""
    if isinstance(expected, str) and expected.startswith("regex:"):
        return patterns.search(expected[6:], as_text(actual)) is not None
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and all(any(matches(e, a) for a in actual) for e in expected)
    return equal(expected, actual)


def pattern_problems(value: Any) -> list[str]:
    """What is wrong with the ``regex:`` strings inside an expected value (for load-time checks)."""
    if isinstance(value, str) and value.startswith("regex:"):
        try:
            patterns.compile_pattern(value[6:])
        except patterns.error as exc:
            return [f"pattern {value!r} does not compile: {exc}"]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [p for item in items for p in pattern_problems(item)]


def name_matches(wanted: str, called: str) -> bool:
    """Exact, or the called name carries a ``server__`` / ``server.`` prefix, or ``wanted`` names an MCP
    tool as ``server.tool`` (the model's name for it is ``server__tool``, dots in the server as ``_``)."""
    if called == wanted or called.endswith(("__" + wanted, "." + wanted)):
        return True
    server, dot, tool = wanted.rpartition(".")
    return bool(dot and server and tool) and called == tool_name(server, tool)



OPS = ("eq", "ne", "lt", "lte", "gt", "gte")  # the comparisons of ``state``/``metric`` (``op``) and seed format C
_ORDER = {"lt": lambda a, b: a < b, "lte": lambda a, b: a <= b, "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b}
OP_WORDS = {"eq": "==", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def compare(actual: Any, op: str, expected: Any) -> tuple[bool, str]:
    """``actual op expected`` — eq and ne as ``equal``; the orderings between numbers (booleans are not numbers) or
    between strings only. Returns (holds, why it cannot be compared: "" when it can)."""
    if op == "eq":
        return equal(actual, expected), ""
    if op == "ne":
        return not equal(actual, expected), ""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (actual, expected))
    if not numbers and not (isinstance(actual, str) and isinstance(expected, str)):
        return False, f"{_kind(actual)} cannot be compared with {_kind(expected)} by {op}"
    return bool(_ORDER[op](actual, expected)), ""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    names: dict[type, str] = {str: "a string", dict: "an object", list: "a list"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def partial(expected: Any, actual: Any) -> bool:
    """A partial match as seed format A's ``contains`` makes it: an object by the keys expected (recursively), a list
    when each expected item matches one of its items, anything else by ``equal`` (no patterns)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and partial(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and all(any(partial(e, a) for a in actual) for e in expected)
    return equal(expected, actual)
