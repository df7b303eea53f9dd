"""Checks of the observation (docs/formats-a.md): ``check`` reads one place of the turn's observation — its
``response`` and ``checkpoint`` — or, at suite level, of ``{summary, status}``, with the operators of seed format
A (equals, exists, absent, contains); ``all`` and ``any`` hold assertions of their own."""

from __future__ import annotations

import json
from typing import Any

from agenttest.model import AssertionResult, AssertionSpec
from agenttest.util.matching import equal, partial
from agenttest.util.text import shorten
from agenttest.assertions.registry import CheckProblem, Observation, evaluate_all, register

OPERATORS = ("equals", "exists", "absent", "contains")
UNSAFE = frozenset({"__proto__", "constructor", "prototype"})  # keys that reach an object's prototype in JavaScript hosts
MAX_PATH = 32
MAX_CHILDREN = 100
_MISSING = object()

PATH = {"type": "array", "maxItems": MAX_PATH, "items": {"type": ["string", "integer"]},
        "description": "keys and list indexes into the observation: [\"response\", \"status\"]"}


def _check_problems(params: dict[str, Any]) -> list[CheckProblem]:
    out: list[CheckProblem] = []
    path = params.get("path")
    if not isinstance(path, list):
        return [("path", "a 'check' needs a 'path': a list of keys and indexes", "e.g. [\"response\", \"status\"]")]
    for step in path:
        if isinstance(step, bool) or not isinstance(step, (str, int)) or (isinstance(step, int) and step < 0):
            out.append(("path", f"'path' holds {step!r}: each step is a key (a string) or a list index (0 or more)", None))
        elif step in UNSAFE:
            out.append(("path", f"'path' holds '{step}', which is not a safe key", "name the field itself"))
    operator = params.get("operator")
    if operator not in OPERATORS:
        return out + [("operator", "a 'check' needs an 'operator'" if operator is None else f"'operator' cannot be {operator!r}",
                       f"one of {', '.join(OPERATORS)}")]
    if operator in ("equals", "contains") and "value" not in params:
        out.append((None, f"'{operator}' needs a 'value'", None))
    if operator in ("exists", "absent") and "value" in params:
        out.append(("value", f"'{operator}' takes no 'value'", "remove it"))
    return out


def reach(data: Any, path: list[Any]) -> Any:
    """The value at ``path`` (keys of objects, indexes of lists), or _MISSING."""
    for step in path:
        if isinstance(data, dict) and isinstance(step, str) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and not isinstance(step, bool) and step < len(data):
            data = data[step]
        else:
            return _MISSING
    return data


def _shown(value: Any, width: int = 120) -> str:
    """A value in a message: text quoted (``"choice"``, not ``choice``), anything else as compact JSON."""
    return shorten(json.dumps(value, ensure_ascii=False) if isinstance(value, str) else value, width)


def _where(path: list[Any]) -> str:
    return ".".join(str(p) for p in path) or "the observation"


def _contains(found: Any, value: Any) -> bool:
    if isinstance(found, list):
        return any(partial(value, item) for item in found)
    if isinstance(found, str) and isinstance(value, str):
        return value in found
    return isinstance(found, dict) and partial(value, found)


@register("check", fields={"path": PATH, "operator": {"enum": list(OPERATORS)}, "value": {}}, check=_check_problems)
def check(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """One place of the observation (or of a suite's summary) equals, holds or lacks a value."""
    subject = obs.suite if obs.suite is not None else obs.observed
    path, operator, value = params["path"], params["operator"], params.get("value")
    if subject is None:
        return AssertionResult(type="check", passed=False, message="nothing to check: 'check' reads the observation of a standard or scripted case",
                               expected=value, actual=None, error=True)
    found = reach(subject, path)
    where = _where(path)
    present = found is not _MISSING and found is not None
    if operator == "exists":
        return AssertionResult(type="check", passed=present, message="" if present else f"{where} is absent", expected=None, actual=None if found is _MISSING else found)
    if operator == "absent":
        return AssertionResult(type="check", passed=not present, message="" if not present else f"{where} is present: {_shown(found, 120)}", expected=None, actual=found)
    if found is _MISSING:
        return AssertionResult(type="check", passed=False, message=f"{where} is absent (expected {'a value containing ' if operator == 'contains' else ''}"
                               f"{_shown(value, 120)})", expected=value, actual=None)
    if operator == "equals":
        ok = equal(found, value)
        return AssertionResult(type="check", passed=ok, message="" if ok else f"{where}: expected {_shown(value, 120)}, got {_shown(found, 120)}", expected=value, actual=found)
    ok = _contains(found, value)
    what = f"no item of {where} matches" if isinstance(found, list) else f"{where} does not contain"
    return AssertionResult(type="check", passed=ok, message="" if ok else f"{what} {_shown(value, 120)} (it holds {_shown(found, 160)})", expected=value, actual=found)


# ---- all, any --------------------------------------------------------------------------------------

CHILDREN = {"type": "array", "minItems": 1, "maxItems": MAX_CHILDREN, "description": "the assertions it combines"}


def _children_problems(params: dict[str, Any]) -> list[CheckProblem]:
    children = params.get("assertions")
    if not isinstance(children, list) or not children:
        return [("assertions", f"'{params.get('type')}' needs 'assertions': a list of 1 to {MAX_CHILDREN} assertions", None)]
    bad = [i for i, c in enumerate(children) if not isinstance(c, (dict, str))]
    return [("assertions", f"assertions[{i}] must be an assertion object", None) for i in bad]


def _specs(params: dict[str, Any]) -> list[AssertionSpec]:
    children = [{"type": c} if isinstance(c, str) else c for c in params["assertions"]]
    return [AssertionSpec(c.get("type") or "equals", c, None, ("assertions", i)) for i, c in enumerate(children)]


def _summary(results: tuple[AssertionResult, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, "passed": r.passed, **({"message": r.message} if r.message else {})} for r in results]


def _said(results: tuple[AssertionResult, ...]) -> str:
    return "; ".join(f"{r.name}: {r.message or 'failed'}" for r in results)


async def _combined(kind: str, params: dict[str, Any], obs: Observation) -> AssertionResult:
    results = await evaluate_all(_specs(params), obs)
    details = {"assertions": _summary(results)}
    failed = tuple(r for r in results if not r.passed)
    errored = tuple(r for r in results if r.error)
    if kind == "all":
        if not failed:
            return AssertionResult(type="all", passed=True, details=details)
        return AssertionResult(type="all", passed=False, message=f"all: {len(failed)} of {len(results)} did not hold: {_said(failed)}",
                               details=details, error=bool(errored))
    if len(failed) < len(results):
        return AssertionResult(type="any", passed=True, details=details)
    return AssertionResult(type="any", passed=False, message=f"any: none of {len(results)} held: {_said(failed)}", details=details,
                           error=len(errored) == len(results))


@register("all", fields={"assertions": CHILDREN}, check=_children_problems, nested="assertions")
async def all_of(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """Every assertion it holds holds."""
    return await _combined("all", params, obs)


@register("any", fields={"assertions": CHILDREN}, check=_children_problems, nested="assertions")
async def any_of(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """At least one assertion it holds holds: several observed outcomes are acceptable."""
    return await _combined("any", params, obs)
