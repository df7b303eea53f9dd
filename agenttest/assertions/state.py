"""The ``state`` assertion: JSONPath over the case's tool world (FORMATS §11) — a value where the agent
left it (``path`` and ``value``, as ``json_path``; with ``op``, compared: eq, ne, lt, lte, gt, gte), or paths
it must have left alone (``unchanged``)."""

from __future__ import annotations

import re
from typing import Any

from agenttest.speed.records import replace
from agenttest.model import AssertionResult
from agenttest.runtime.world import diff
from agenttest.util.text import shorten
from agenttest.assertions.registry import CheckProblem, Observation, register
from agenttest.assertions.static import PATH, VALUE, json_path, parsed_path, path_problems
from agenttest.util.matching import OP_WORDS, OPS, compare, equal


def _check_state(params: dict[str, Any]) -> list[CheckProblem]:
    if ("path" in params) == ("unchanged" in params):
        return [(None, "'state' needs 'path' (with an optional 'value') or 'unchanged', not both", "e.g. {\"type\": \"state\", \"path\": \"$.expenses[0].status\", \"value\": \"submitted\"}")]
    if "path" in params:
        if "op" in params and "value" not in params:
            return [(None, "'op' compares with a 'value': give one", "e.g. {\"type\": \"state\", \"path\": \"$.stock\", \"op\": \"gte\", \"value\": 1}")]
        return path_problems(params, True)
    if "op" in params:
        return [("op", "'op' goes with 'path', not with 'unchanged'", None)]
    if "value" in params:
        return [("value", "'value' goes with 'path', not with 'unchanged'", None)]
    paths = params["unchanged"]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        return [("unchanged", "'unchanged' must be a list of JSONPaths", "e.g. [\"$.budget\", \"$.expenses[0]\"]")]
    return [("unchanged", message, hint) for path in paths for _, message, hint in path_problems({"type": "state", "path": path}, True)]


def _values(path: str, data: Any) -> list[Any]:
    return [m.value for m in parsed_path(path).find(data)]


def _shown(values: list[Any]) -> str:
    if not values:
        return "(absent)"
    return shorten(values[0] if len(values) == 1 else values, 80)


def _unchanged(paths: list[str], obs: Observation) -> AssertionResult:
    changed = []
    for path in paths:
        before, after = _values(path, obs.initial_world), _values(path, obs.world)
        if not equal(before, after):
            changed.append((path, before, after))
    if not changed:
        return AssertionResult(type="state", passed=True, message="", expected=paths, actual=None)
    text = "; ".join(f"{p}: {_shown(b)} → {_shown(a)}" for p, b, a in changed)
    actual = {p: a[0] if len(a) == 1 else a for p, _, a in changed}
    return AssertionResult(type="state", passed=False, message=f"world changed at {text}", expected=paths, actual=actual)


@register("state", fields={"path": PATH, "value": VALUE, "op": {"enum": list(OPS), "description": "compare: eq, ne, lt, lte, gt, gte"},
                           "unchanged": {"type": "array", "items": {"type": "string"},
                                                                      "description": "JSONPaths whose values must equal their initial ones"}},
          check=_check_state)
def state(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The case's world holds a value at a path, or is unchanged at some paths."""
    if obs.world is None:
        return AssertionResult(type="state", passed=False, message="this case has no tool world to check", expected=params.get("value"), actual=None)
    if "unchanged" in params:
        return _unchanged(params["unchanged"], obs)
    if "op" in params:
        return _compared(params, obs.world)
    result = json_path({**params, "type": "json_path"}, Observation(output=obs.world))
    assert isinstance(result, AssertionResult)  # json_path is synchronous
    if not result.passed and "value" in params and result.actual is not None:
        differing = fields_differing(params["path"], params["value"], result.actual)
        if differing:
            return replace(result, type="state", message=f"world {differing}")
    if not result.passed and result.actual is None:
        result = _never(params["path"], obs.world) or result
    return replace(result, type="state", message=f"world {result.message}" if result.message else "")


def _compared(params: dict[str, Any], world: Any) -> AssertionResult:
    """Every value the path finds stands in relation ``op`` to ``value``."""
    path, op, value = params["path"], params["op"], params["value"]
    found = _values(path, world)
    if not found:
        return _never(path, world) or AssertionResult(type="state", passed=False, message=f"world {path} matched nothing", expected=value, actual=None)
    for v in found:
        holds, why = compare(v, op, value)
        if why:
            return AssertionResult(type="state", passed=False, message=f"world {path}: {why}", expected=value, actual=v, error=True)
        if not holds:
            return AssertionResult(type="state", passed=False, message=f"world {path}: expected {OP_WORDS[op]} {shorten(value, 80)}, got {shorten(v, 80)}", expected=value, actual=v)
    return AssertionResult(type="state", passed=True, message="", expected=value, actual=found[0] if len(found) == 1 else found)


def _never(path: str, world: Any) -> AssertionResult | None:
    """A filter that can never match — ``$.metrics[?(@.x <= 5)]`` filters the *children* of ``$.metrics``, and
    none of them is an object with fields — said as the error it is, with the path that was meant."""
    if _metrics(path) and isinstance(world, dict) and "metrics" not in world:
        return _not_the_world(path)
    at = path.find("[?(")
    if at < 0:
        return None
    parents = _values(path[:at], world)
    if not parents or any(isinstance(v, (dict, list)) for p in parents for v in (p.values() if isinstance(p, dict) else p if isinstance(p, list) else ())):
        return None
    meant = _meant(path, at)
    hint = f"; to compare a field, write {{\"path\": \"{meant[0]}\", \"op\": \"{meant[1]}\", \"value\": {meant[2]}}}" if meant else ""
    return AssertionResult(type="state", passed=False, message=f"{path} can never match: a filter [?(…)] tests the items of {path[:at]}, "
                           f"and none of them is an object or a list{hint}", expected=None, actual=None, error=True)


def _metrics(path: str) -> bool:
    return path == "$.metrics" or path.startswith(("$.metrics.", "$.metrics["))


def _not_the_world(path: str) -> AssertionResult:
    """``$.metrics…`` on a world that has no ``metrics``: the case's metrics are not in its world."""
    at = path.find("[?(")
    meant = _meant(path, at) if at >= 0 else None
    name = meant[0].removeprefix("$.metrics.") if meant else path.removeprefix("$.metrics").lstrip(".") or "violations"
    op, value = (meant[1], meant[2]) if meant else ("eq", "…")
    return AssertionResult(type="state", passed=False, message=f"{path} can never match: the world has no 'metrics'; a case's metrics (calls, "
                           f"errors, violations, last_call_succeeded, the tools' counters) are checked with "
                           f"{{\"type\": \"metric\", \"metric\": \"{name}\", \"op\": \"{op}\", \"value\": {value}}}", expected=None, actual=None, error=True)


_FILTER = re.compile(r"\[\?\(@\.([\w-]+)\s*(==|!=|<=|>=|<|>)\s*(.+?)\)\]$")
_WORDS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}


def _meant(path: str, at: int) -> tuple[str, str, str] | None:
    m = _FILTER.match(path, at)
    return (f"{path[:at]}.{m.group(1)}", _WORDS[m.group(2)], m.group(3).strip()) if m else None


FIELDS_SHOWN = 8  # differing fields named in a message; the report's expected and actual hold all of them


def fields_differing(path: str, expected: Any, actual: Any) -> str:
    """``$.users.u1 differs in 2 fields: $.users.u1.balance: expected 100, got 40; …`` when both sides are
    objects or lists (cutting the two values at a width would hide the field that differs); else ""."""
    if not (isinstance(expected, (dict, list)) and isinstance(actual, type(expected))):
        return ""
    changes = diff(expected, actual, path)
    if not changes:
        return ""
    parts = []
    for c in changes[:FIELDS_SHOWN]:
        want = "absent" if c.op == "added" else shorten(c.before, 60)
        got = "absent" if c.op == "removed" else shorten(c.after, 60)
        parts.append(f"{c.path}: expected {want}, got {got}")
    more = f"; … {len(changes) - FIELDS_SHOWN} more" if len(changes) > FIELDS_SHOWN else ""
    return f"{path} differs in {len(changes)} field{'s' if len(changes) != 1 else ''}: " + "; ".join(parts) + more
