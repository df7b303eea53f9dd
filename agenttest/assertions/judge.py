"""The ``agent`` assertion: a validator agent judges the output (FORMATS §4, validator protocol)."""

from __future__ import annotations

from typing import Any

from agenttest.errors import CallError
from agenttest.model import AssertionResult, Judged
from agenttest.speed.records import replace
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
        return AssertionResult(type="agent", passed=False, message=f"validator {validator}: {exc}", expected=criteria, error=True)
    except CallError as exc:
        return AssertionResult(type="agent", passed=False, message=f"validator {validator} could not be called: {exc}", expected=criteria, error=True)
    reason = str(value.get("reason", ""))
    score = value.get("score")
    score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
    details = {k: v for k, v in value.items() if k not in ("passed", "reason", "score")} or None
    message = "" if value["passed"] else f"validator: {reason or 'criteria not met'}"
    return AssertionResult(type="agent", passed=value["passed"], message=message, expected=criteria, actual=reason, score=score, details=details)


OPTIONS = {"type": "object", "properties": {"connector": {"type": "string"}, "metadata": {"type": "object"}}}


def _needs(params: dict[str, Any]) -> list[Need]:
    return [Need("agent", agent_id(params["use"]), "use", (params.get("options") or {}).get("connector"))]


LABEL = {"type": "boolean", "description": "a person's verdict on this output for this criterion (pairwise: that it should win or tie), for judge calibration"}
JUDGE_RUNS = {"type": "integer", "minimum": 1, "maximum": 15, "description": "ask the validator this many times; the majority decides"}


@register("agent", fields={"use": {"type": "string"}, "value": {"description": "the criteria"}, "options": OPTIONS, "label": LABEL,
                           "judge_runs": JUDGE_RUNS}, check=_check, needs=_needs)
async def agent(params: dict[str, Any], obs: Observation) -> AssertionResult:
    options = params.get("options") or {}
    metadata = dict(options.get("metadata") or {})
    criteria = params.get("value", metadata.pop("criteria", None))
    metadata.pop("criteria", None)
    if obs.judge is None:
        return AssertionResult(type="agent", passed=False, message="no caller to reach the validator", error=True)
    validator, connector = agent_id(params["use"]), options.get("connector")
    asks = [await ask_validator(obs.judge, validator, obs.output, obs.input, criteria, metadata, connector)
            for _ in range(params.get("judge_runs", 1))]  # one after another: a replay answers them in the order they were asked
    return against_label(majority(asks, judged_by(obs, params, validator, connector)), obs, params)


def tests_the_judge(obs: Observation) -> bool:
    """A judge-only case written with its output (not a rescored recording): its labelled judgements test the judge."""
    case = obs.case
    return case is not None and case.given is not None and not case.given.recorded


def against_label(result: AssertionResult, obs: Observation, params: dict[str, Any]) -> AssertionResult:
    """In a judge-only case, a labelled judgement passes when the judge agrees with the label (a judge that rightly
    fails a bad output is right), the judge's own verdict said in the message; ``negate`` is then moot (the label
    is on the verdict before it), so it is undone in advance. Elsewhere the judgement is the agent's verdict."""
    judged, label = result.judged, params.get("label")
    if judged is None or judged.verdict is None or not isinstance(label, bool) or result.error or not tests_the_judge(obs):
        return result
    agrees = judged.verdict is label
    said = f"the judge {'passed' if judged.verdict else 'failed'} it, labelled {'pass' if label else 'fail'}"
    message = f"judge {'agrees' if agrees else 'disagrees'} with the label: {said}" + (f" ({result.message})" if result.message else "")
    return replace(result, passed=agrees is not bool(params.get("negate")), message=message)


def judged_by(obs: Observation, params: dict[str, Any], validator: str, connector: str | None) -> Judged:
    """Who judges (the validator on the connector it runs on), a person's label, and the judge gate the case sets."""
    gate = obs.case.judge if obs.case is not None and obs.case.judge is not None else (None, None)
    return Judged(validator=validator, connector=judge_of(obs, validator, connector), label=params.get("label"),
                  min_agreement=gate[0], min_kappa=gate[1])


def judge_of(obs: Observation, validator: str, connector: str | None) -> str:
    """The connector the validator runs on: the assertion's, else the validator agent's own."""
    find = getattr(obs.judge, "connector_of", None)
    if find is None:
        return connector or ""
    try:
        return str(find(validator, connector))
    except Exception:  # an unknown agent is said by the call itself
        return connector or ""


def majority(asks: list[AssertionResult], who: Judged) -> AssertionResult:
    """The verdict of ``judge_runs`` asks: the majority of the ones that gave a verdict (a tie does not pass); with
    none, the first ask's error. The votes go with it: a judge that disagrees with itself shows as such."""
    votes = tuple(None if a.error else a.passed for a in asks)
    yes, no = votes.count(True), votes.count(False)
    kept = () if len(asks) == 1 else votes
    if not yes and not no:
        return replace(asks[0], judged=replace(who, votes=kept))
    passed = yes > no
    chosen = next(a for a, v in zip(asks, votes) if v is passed) if yes != no else next(a for a, v in zip(asks, votes) if v is False)
    judged = replace(who, verdict=passed if yes != no else None, votes=kept)
    if len(asks) == 1:
        return replace(chosen, judged=judged)
    said = f"{yes} of {yes + no} votes passed" + (f", {len(asks) - yes - no} gave none" if yes + no < len(asks) else "")
    message = "" if passed else (chosen.message or "validator: criteria not met") + f" ({said}{'; a tie does not pass' if yes == no else ''})"
    return replace(chosen, passed=passed, message=message, judged=judged)
