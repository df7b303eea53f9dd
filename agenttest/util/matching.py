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

