"""Trajectory assertions — what the agent did, not what it said: ``tool_sequence`` (the order of the
tools called), ``tool_args`` (the arguments of a call) and ``tool_count`` (how many calls). They look at
every tool call of the case so far, across turns; names match as in ``tool_called``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenttest.model import AssertionResult, ToolCall
from agenttest.util.text import shorten
from agenttest.assertions.registry import CheckProblem, Observation, register
from agenttest.assertions.static import tools_named
from agenttest.assertions.static import VALUE
from agenttest.util.matching import equal, matches, name_matches, pattern_problems

SEQUENCE_MODES = ("strict", "ordered", "unordered", "subset", "superset")
ARG_MATCHES = ("exact", "subset", "ignore")
CALLS = ("first", "last", "any")
TOOL = {"type": "string", "description": "a tool name (also matches server__name and server.name)"}
COUNT = {"type": "integer", "minimum": 0}


def _ok(kind: str, expected: Any, actual: Any) -> AssertionResult:
    return AssertionResult(type=kind, passed=True, message="", expected=expected, actual=actual)


def _fail(kind: str, message: str, expected: Any, actual: Any) -> AssertionResult:
    return AssertionResult(type=kind, passed=False, message=message, expected=expected, actual=actual)


def _listing(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "no tools were called"


# ---- tool_sequence -------------------------------------------------------------------------------


def _check_sequence(params: dict[str, Any]) -> list[CheckProblem]:
    value = params.get("value")
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return [("value" if "value" in params else None, "'tool_sequence' needs 'value': a list of tool names", "e.g. [\"lookup\", \"create_expense\"]")]
    return []


def in_order(expected: Sequence[str], called: Sequence[str]) -> bool:
    """``expected`` occurs in ``called`` in this order, other calls allowed in between."""
    rest = iter(called)
    return all(any(name_matches(e, c) for c in rest) for e in expected)


def one_to_one(expected: Sequence[str], called: Sequence[str]) -> bool:
    """Each call matches a different expected name and none is left over (any order)."""
    if len(expected) != len(called):
        return False
    owner: dict[int, int] = {}  # expected index → the call it is matched with

    def assign(call: int, seen: set[int]) -> bool:
        for i, name in enumerate(expected):
            if i not in seen and name_matches(name, called[call]):
                seen.add(i)
                if i not in owner or assign(owner[i], seen):
                    owner[i] = call
                    return True
        return False

    return all(assign(call, set()) for call in range(len(called)))


def _sequence_problem(mode: str, expected: list[str], called: list[str]) -> str | None:
    """Why ``called`` does not fit ``expected`` under ``mode``, or None when it does."""
    if mode == "strict":
        ok = len(expected) == len(called) and all(name_matches(e, c) for e, c in zip(expected, called))
        return None if ok else "expected exactly these tools in this order"
    if mode == "ordered":
        return None if in_order(expected, called) else "expected these tools in this order"
    if mode == "unordered":
        return None if one_to_one(expected, called) else "expected exactly these tools, in any order"
    if mode == "subset":
        extra = [c for c in called if not any(name_matches(e, c) for e in expected)]
        return f"only these tools may be called, but {', '.join(dict.fromkeys(extra))} {'was' if len(set(extra)) == 1 else 'were'} too" if extra else None
    missing = [e for e in expected if not any(name_matches(e, c) for c in called)]
    return f"expected at least these tools; not called: {', '.join(missing)}" if missing else None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@register("tool_sequence", fields={"value": VALUE, "mode": {"enum": list(SEQUENCE_MODES), "description": "how the calls must match (default ordered)"}},
          check=_check_sequence, needs=lambda params: [n for i, name in enumerate(_listed(params.get("value"))) for n in tools_named(name, ("value", i))])
def tool_sequence(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The case's tool calls follow a sequence (strict, ordered, unordered, subset or superset)."""
    expected, mode = params["value"], params.get("mode", "ordered")
    called = [c.name for c in obs.trajectory]
    problem = _sequence_problem(mode, expected, called)
    if problem is None:
        return _ok("tool_sequence", expected, called)
    return _fail("tool_sequence", f"{problem} ({mode}): [{', '.join(expected)}]; called: {_listing(called)}", expected, called)


# ---- tool_args -----------------------------------------------------------------------------------


def _check_args(params: dict[str, Any]) -> list[CheckProblem]:
    problems: list[CheckProblem] = []
    if not isinstance(params.get("tool"), str) or not params["tool"]:
        problems.append(("tool" if "tool" in params else None, "'tool_args' needs 'tool': a tool name", None))
    if params.get("match", "subset") != "ignore" and not isinstance(params.get("arguments"), dict):
        where = "arguments" if "arguments" in params else None
        problems.append((where, "'tool_args' needs 'arguments': an object", "or \"match\": \"ignore\" to check only that the tool was called"))
    return problems + [("arguments", message, None) for message in pattern_problems(params.get("arguments"))]


def exact(expected: Any, actual: Any) -> bool:
    """Deep equality (the same keys, lists item by item), ``regex:`` strings as patterns."""
    if isinstance(expected, str) and expected.startswith("regex:"):
        return matches(expected, actual)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and expected.keys() == actual.keys() and all(exact(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(exact(e, a) for e, a in zip(expected, actual))
    return equal(expected, actual)


def _args_fit(how: str, expected: Any, call: ToolCall) -> bool:
    if how == "ignore":
        return True
    return exact(expected, call.arguments) if how == "exact" else matches(expected, call.arguments)


@register("tool_args", fields={"tool": TOOL, "arguments": {"type": "object", "description": "the expected arguments"},
                               "match": {"enum": list(ARG_MATCHES), "description": "exact, subset (default) or ignore"},
                               "call": {"enum": list(CALLS), "description": "which call: first, last or any (default)"}},
          check=_check_args, needs=lambda params: tools_named(params.get("tool"), "tool"))
def tool_args(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """A call of a tool had the expected arguments."""
    tool, how, which = params["tool"], params.get("match", "subset"), params.get("call", "any")
    expected = params.get("arguments")
    calls = [c for c in obs.trajectory if name_matches(tool, c.name)]
    if not calls:
        return _fail("tool_args", f"tool {tool!r} was not called; called: {_listing([c.name for c in obs.trajectory])}", expected, None)
    chosen = calls[:1] if which == "first" else calls[-1:] if which == "last" else calls
    for call in chosen:
        if _args_fit(how, expected, call):
            return _ok("tool_args", expected, {"name": call.name, "arguments": call.arguments})
    seen = "; ".join(shorten(c.arguments, 120) for c in chosen)
    what = f"the {which} call of {tool}" if which != "any" else f"no call of {tool}"
    verb = "does not match" if which != "any" else "matches"
    return _fail("tool_args", f"{what} {verb} the arguments ({how}) {shorten(expected, 120)}; arguments: {seen}", expected,
                 [c.arguments for c in chosen] if which == "any" else chosen[0].arguments)


# ---- tool_count ----------------------------------------------------------------------------------


def _check_count(params: dict[str, Any]) -> list[CheckProblem]:
    if "min" not in params and "max" not in params:
        return [(None, "'tool_count' needs 'min' and/or 'max'", "e.g. {\"type\": \"tool_count\", \"tool\": \"create_expense\", \"max\": 1}")]
    low, high = params.get("min"), params.get("max")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        return [("max", f"'max' ({high}) is less than 'min' ({low})", None)]
    if "tool" in params and (not isinstance(params["tool"], str) or not params["tool"]):
        return [("tool", "'tool' must be a tool name", None)]
    return []


def _bounds(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"exactly {low}" if low == high else f"between {low} and {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


@register("tool_count", fields={"tool": TOOL, "min": COUNT, "max": COUNT}, check=_check_count,
          needs=lambda params: tools_named(params.get("tool"), "tool"))
def tool_count(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The number of tool calls (of one tool, or of all) is within bounds."""
    tool, low, high = params.get("tool"), params.get("min"), params.get("max")
    calls = [c for c in obs.trajectory if tool is None or name_matches(tool, c.name)]
    n = len(calls)
    expected = {k: params[k] for k in ("min", "max") if k in params}
    if (low is None or n >= low) and (high is None or n <= high):
        return _ok("tool_count", expected, n)
    subject = f"{tool} was called" if tool else "tools were called"
    return _fail("tool_count", f"{subject} {n} time{'s' if n != 1 else ''}, expected {_bounds(low, high)}", expected, n)

