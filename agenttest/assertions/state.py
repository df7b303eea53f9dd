"""The ``state`` assertion: JSONPath over the case's tool world (FORMATS §11) — a value where the agent
left it (``path`` and ``value``, as ``json_path``), or paths it must have left alone (``unchanged``)."""

from __future__ import annotations

from typing import Any

from agenttest.speed.records import replace
from agenttest.model import AssertionResult
from agenttest.runtime.world import diff
from agenttest.util.text import shorten
from agenttest.assertions.registry import CheckProblem, Observation, register
from agenttest.assertions.static import PATH, VALUE, json_path, parsed_path, path_problems
from agenttest.util.matching import equal


def _check_state(params: dict[str, Any]) -> list[CheckProblem]:
    if ("path" in params) == ("unchanged" in params):
        return [(None, "'state' needs 'path' (with an optional 'value') or 'unchanged', not both", "e.g. {\"type\": \"state\", \"path\": \"$.expenses[0].status\", \"value\": \"submitted\"}")]
    if "path" in params:
        return path_problems(params, True)
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


@register("state", fields={"path": PATH, "value": VALUE, "unchanged": {"type": "array", "items": {"type": "string"},
                                                                      "description": "JSONPaths whose values must equal their initial ones"}},
          check=_check_state)
def state(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """The case's world holds a value at a path, or is unchanged at some paths."""
    if obs.world is None:
        return AssertionResult(type="state", passed=False, message="this case has no tool world to check", expected=params.get("value"), actual=None)
    if "unchanged" in params:
        return _unchanged(params["unchanged"], obs)
    result = json_path({**params, "type": "json_path"}, Observation(output=obs.world))
    assert isinstance(result, AssertionResult)  # json_path is synchronous
    if not result.passed and "value" in params and result.actual is not None:
        differing = fields_differing(params["path"], params["value"], result.actual)
        if differing:
            return replace(result, type="state", message=f"world {differing}")
    return replace(result, type="state", message=f"world {result.message}" if result.message else "")


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
