"""The ``pairwise`` assertion (FORMATS §19): a validator chooses between the output and a reference — or two given
outputs — asked in both orders; a choice that follows the position, not the content, is ``inconclusive``.

Protocol: one user message whose content is the JSON of ``{"pairwise": true, "input", "criteria", "a", "b", …metadata}``;
the reply holds ``{"choice": "a" | "b" | "tie", "reason"}``. The output passes when it is chosen, or tied, in both
orders; it fails when the reference is chosen in both."""

from __future__ import annotations

from typing import Any

from agenttest.agents.protocols import ProtocolError, ask_json
from agenttest.assertions.judge import LABEL, OPTIONS, against_label, agent_id, judge_of
from agenttest.assertions.registry import CheckProblem, Need, Observation, register
from agenttest.errors import CallError
from agenttest.model import AssertionResult, Judged

CHOICES = ("a", "b", "tie")


def choice(value: Any) -> dict[str, Any]:
    """Check a pairwise reply: an object whose ``choice`` is "a", "b" or "tie"."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    if value.get("choice") not in CHOICES:
        raise ValueError(f"'choice' must be \"a\", \"b\" or \"tie\", got {value.get('choice')!r}")
    return value


def _check(params: dict[str, Any]) -> list[CheckProblem]:
    use = params.get("use")
    if not isinstance(use, str) or not use.startswith("agents:") or len(use) <= len("agents:"):
        return [("use", "a 'pairwise' assertion needs 'use': \"agents:<validator id>\"", "e.g. \"agents:workers.test.validator\"")]
    if "reference" not in params:
        return [("reference", "a 'pairwise' assertion needs 'reference': what the output is compared with", None)]
    if "value" not in params:
        return [("value", "a 'pairwise' assertion needs criteria: 'value'", "e.g. \"the clearer answer\"")]
    return []


def _needs(params: dict[str, Any]) -> list[Need]:
    return [Need("agent", agent_id(params["use"]), "use", (params.get("options") or {}).get("connector"))]


async def _ask(obs: Observation, validator: str, a: Any, b: Any, criteria: Any, metadata: dict[str, Any], connector: str | None) -> dict[str, Any] | str:
    """One order's choice, or why there is none."""
    payload = {"pairwise": True, "input": obs.input, "criteria": criteria, "a": a, "b": b, **metadata}
    try:
        return await ask_json(obs.judge, validator, payload, "validator", choice, connector, {"criteria": criteria, **metadata})
    except ProtocolError as exc:
        return f"validator {validator} reply unusable: {exc}"
    except CallError as exc:
        return f"validator {validator} could not be called: {exc}"


@register("pairwise", fields={"use": {"type": "string"}, "value": {"description": "the criteria"}, "reference": {"description": "what the output is compared with"},
                              "label": LABEL,
                              "options": OPTIONS}, check=_check, needs=_needs)
async def pairwise(params: dict[str, Any], obs: Observation) -> AssertionResult:
    """A validator prefers the output to the reference (or ties), asked in both orders."""
    options = params.get("options") or {}
    metadata = dict(options.get("metadata") or {})
    criteria, reference, connector = params.get("value"), params["reference"], options.get("connector")
    validator = agent_id(params["use"])
    if obs.judge is None:
        return AssertionResult(type="pairwise", passed=False, message="no caller to reach the validator", error=True)
    who = judge_of(obs, validator, connector)
    first = await _ask(obs, validator, obs.output, reference, criteria, metadata, connector)  # the output as a
    second = await _ask(obs, validator, reference, obs.output, criteria, metadata, connector)  # the output as b
    label = params.get("label")
    for reply in (first, second):
        if isinstance(reply, str):
            return AssertionResult(type="pairwise", passed=False, message=reply, expected=criteria, error=True, judged=Judged(validator=validator, connector=who, label=label))
    assert isinstance(first, dict) and isinstance(second, dict)
    picks = ({"a": "output", "b": "reference", "tie": "tie"}[first["choice"]], {"a": "reference", "b": "output", "tie": "tie"}[second["choice"]])
    wins = [p != "reference" for p in picks]
    reasons = f"output first: {picks[0]} ({first.get('reason', '')}); output second: {picks[1]} ({second.get('reason', '')})"
    if wins[0] != wins[1]:
        return AssertionResult(type="pairwise", passed=False, message=f"inconclusive: the judge chose {picks[0]} with the output first and {picks[1]} with it "
                               f"second — its verdict follows the order, not the answers", expected=criteria, actual=reasons, error=True,
                               judged=Judged(validator=validator, connector=who, label=label, consistent=False))
    message = "" if wins[0] else f"validator preferred the reference in both orders: {second.get('reason') or first.get('reason') or 'no reason'}"
    return against_label(AssertionResult(type="pairwise", passed=wins[0], message=message, expected=criteria, actual=reasons,
                                         judged=Judged(validator=validator, connector=who, verdict=wins[0], label=label, consistent=True)), obs, params)
