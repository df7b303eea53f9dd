"""The ``script`` assertion: a Python function ``func(output, input, value)`` in ``<app>/scripts/``."""

from __future__ import annotations

from typing import Any

from agenttest.runtime import usercalls
from agenttest.errors import CallError
from agenttest.model import AssertionResult
from agenttest.assertions.registry import CheckProblem, Need, Observation, register
from agenttest.assertions.judge import OPTIONS
from agenttest.util.values import fresh


def script_ref(params: dict[str, Any]) -> str | None:
    """``scripts.mod.func`` or ``scripts:mod.func`` → ``mod.func``."""
    ref = params.get("script") or params.get("use")
    if not isinstance(ref, str):
        return None
    for prefix in ("scripts:", "scripts."):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
            break
    else:
        return None
    return ref if "." in ref and not ref.startswith(".") and not ref.endswith(".") else None


def _check(params: dict[str, Any]) -> list[CheckProblem]:
    if "script" in params and "use" in params:
        return [("use", "give 'script' or 'use', not both", None)]
    if script_ref(params) is None:
        field = "script" if "script" in params else "use"
        return [(field, "a 'script' assertion needs \"script\": \"scripts.<module>.<function>\" or \"use\": \"scripts:<module>.<function>\"", "e.g. \"scripts.checks.has_reference\"")]
    return []


def verdict_of(returned: Any) -> tuple[bool, str]:
    if isinstance(returned, bool):
        return returned, ""
    if isinstance(returned, dict):
        for key in ("passed", "pass"):
            if key in returned:
                if not isinstance(returned[key], bool):  # "false" is true to bool(): never a verdict by accident
                    raise ValueError(f"returned {{'{key}': {returned[key]!r}}}; '{key}' must be true or false")
                return returned[key], str(returned.get("message", "") or "")
        raise ValueError(f"returned a dict without 'pass'/'passed': {returned!r}")
    if returned is None:
        raise ValueError("returned None; return True/False or {\"pass\": bool, \"message\": str}")
    raise ValueError(f"returned {type(returned).__name__}; return True/False or {{\"pass\": bool, \"message\": str}}")


def _needs(params: dict[str, Any]) -> list[Need]:
    return [Need("script", script_ref(params) or "", "script" if "script" in params else "use")]


@register("script", fields={"script": {"type": "string"}, "use": {"type": "string"}, "value": {}, "options": OPTIONS},
          check=_check, needs=_needs)
async def script(params: dict[str, Any], obs: Observation) -> AssertionResult:
    ref = script_ref(params) or ""  # checked at load time
    options = params.get("options") or {}
    value = options["metadata"] if "metadata" in options else params.get("value")
    if obs.judge is None:
        return AssertionResult(type="script", passed=False, message="no caller to load the script", error=True)
    fn = obs.judge.script(ref)
    try:
        returned = await usercalls.call(fn, obs.output, fresh(obs.input), fresh(value), what=f"script {ref}")
    except CallError as exc:  # the script could not give a verdict: the assertion, and the case, is an error
        message = str(exc).replace(f"script {ref} failed: ", f"script {ref} raised ", 1)
        return AssertionResult(type="script", passed=False, message=message, expected=value, error=True, traceback=exc.traceback or "")
    try:
        passed, message = verdict_of(returned)
    except ValueError as exc:
        return AssertionResult(type="script", passed=False, message=f"script {ref} {exc}", expected=value, error=True)
    if not passed:
        message = f"script {ref}: {message or 'returned false'}"
    return AssertionResult(type="script", passed=passed, message=message if not passed else "", expected=value, actual=message or None)
