"""The ``agent`` assertion: a validator agent judges the output (FORMATS §4, validator protocol)."""

from __future__ import annotations

from typing import Any

from agenttest.errors import CallError
from agenttest.model import AssertionResult
from agenttest.agents.protocols import ProtocolError, ask_json
from agenttest.assertions.registry import CheckProblem, Need, Observation, register


def agent_id(use: str) -> str:
    return use[len("agents:"):] if use.startswith("agents:") else use


def _check(params: dict[str, Any]) -> list[CheckProblem]:
    use = params.get("use")
    if not isinstance(use, str) or not use.startswith("agents:") or len(use) <= len("agents:"):
        return [("use", "an 'agent' assertion needs 'use': \"agents:<validator id>\"", "e.g. \"agents:workers.test.validator\"")]
    meta = (params.get("options") or {}).get("metadata") or {}
    if "value" not in params and "criteria" not in meta:
        return [("value", "an 'agent' assertion needs criteria: 'value' or options.metadata.criteria", None)]
    return []


def verdict(value: Any) -> dict[str, Any]:
    """Check a validator reply: an object with a boolean ``passed``."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    if "passed" not in value:
        raise ValueError("the JSON has no 'passed' field")
    if not isinstance(value["passed"], bool):
        raise ValueError(f"'passed' must be true or false, got {value['passed']!r}")
    score = value.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or score != score):
        raise ValueError(f"'score' must be a number, got {score!r:.40}")
    return value


async def ask_validator(
    judge: Any, validator: str, output: Any, input: Any, criteria: Any, metadata: dict[str, Any], connector: str | None
) -> AssertionResult:
    """Run the validator protocol; every failure becomes a failed (or errored) result."""
    payload = {"output": output, "input": input, "criteria": criteria, **metadata}
    try:
        value = await ask_json(judge, validator, payload, "validator", verdict, connector, {"criteria": criteria, **metadata})
    except ProtocolError as exc:  # the judge's fault, not the agent's: the case is an error naming the judge
        return AssertionResult("agent", False, f"validator {validator}: {exc}", criteria, error=True)
    except CallError as exc:
        return AssertionResult("agent", False, f"validator {validator} could not be called: {exc}", criteria, error=True)
    reason = str(value.get("reason", ""))
    score = value.get("score")
    score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
    details = {k: v for k, v in value.items() if k not in ("passed", "reason", "score")} or None
    message = "" if value["passed"] else f"validator: {reason or 'criteria not met'}"
    return AssertionResult("agent", value["passed"], message, criteria, reason, score, details)


OPTIONS = {"type": "object", "properties": {"connector": {"type": "string"}, "metadata": {"type": "object"}}}


def _needs(params: dict[str, Any]) -> list[Need]:
    return [Need("agent", agent_id(params["use"]), "use", (params.get("options") or {}).get("connector"))]


@register("agent", fields={"use": {"type": "string"}, "value": {"description": "the criteria"}, "options": OPTIONS},
          check=_check, needs=_needs)
async def agent(params: dict[str, Any], obs: Observation) -> AssertionResult:
    options = params.get("options") or {}
    metadata = dict(options.get("metadata") or {})
    criteria = params.get("value", metadata.pop("criteria", None))
    metadata.pop("criteria", None)
    if obs.judge is None:
        return AssertionResult("agent", False, "no caller to reach the validator", error=True)
    return await ask_validator(
        obs.judge, agent_id(params["use"]), obs.output, obs.input, criteria, metadata, options.get("connector")
    )
