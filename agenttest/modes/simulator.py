"""Who plays the user in a dynamic case (FORMATS §5, §14): a simulator agent asked with the JSON below, or a
script of user messages said in order (an offline simulator, no model called)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenttest.errors import CallError
from agenttest.model.messages import content_text
from agenttest.model import Case, Message
from agenttest.agents.protocols import ProtocolError, ask_json
from agenttest.modes.base import CaseEnv

PLAIN_TEXT = "(the simulator replied in plain text; it was taken as the user's message)"


class SimulatorError(Exception):
    pass


def simulator_reply(value: Any) -> dict[str, Any]:
    """Check a simulator reply: ``{"message" (or "input"): str, "goal_achieved": bool}``."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    message = value.get("message", value.get("input"))
    achieved = value.get("goal_achieved", False)
    if not isinstance(achieved, bool):
        raise ValueError(f"'goal_achieved' must be true or false, got {achieved!r}")
    if not achieved and (not isinstance(message, str) or not message.strip()):
        raise ValueError("the JSON has no 'message' (or 'input') string")
    return {"message": message if isinstance(message, str) else "", "goal_achieved": achieved, "reasoning": str(value.get("reasoning", ""))}


def plain_text_reply(text: str) -> dict[str, Any]:
    """A simulator reply with no JSON at all is the user's message (as Yao takes it)."""
    return {"message": text.strip(), "goal_achieved": False, "reasoning": PLAIN_TEXT}


def payload(case: Case, history: Sequence[Message], turn_number: int, reached: Sequence[str]) -> dict[str, Any]:
    """The JSON a simulator agent receives (its one user message); with ``hide_checkpoints`` no checkpoint
    id or description is in it."""
    spec = case.simulator
    meta = dict((spec.options.get("metadata") if spec else None) or {})
    out: dict[str, Any] = {
        "persona": meta.pop("persona", ""),
        "goal": meta.pop("goal", ""),
        "conversation": [{"role": m["role"], "content": content_text(m.get("content"))}
                         for m in history if m.get("role") in ("user", "assistant") and m.get("content")],
        "turn_number": turn_number,
        "max_turns": case.max_turns,
    }
    if not (spec and spec.hide_checkpoints):
        out["checkpoints_reached"] = list(reached)
        out["checkpoints_pending"] = [c.id for c in case.checkpoints if c.id not in reached]
        out["checkpoint_descriptions"] = {c.id: c.description for c in case.checkpoints if c.description}
    out["extra"] = meta
    return out


def scripted(script: Sequence[str], said: int) -> dict[str, Any]:
    """The scripted user's next line (``said`` lines so far), then ``goal_achieved`` after the last."""
    if said < len(script):
        return {"message": script[said], "goal_achieved": False, "reasoning": f"scripted line {said + 1} of {len(script)}"}
    return {"message": "", "goal_achieved": True, "reasoning": "the script has no more lines"}


async def ask(env: CaseEnv, case: Case, history: Sequence[Message], turn_number: int, reached: Sequence[str], said: int) -> dict[str, Any]:
    """The user's next message: ``{"message", "goal_achieved", "reasoning"}`` (SimulatorError on failure)."""
    spec = case.simulator
    assert spec is not None  # a dynamic case has one (or --simulator gave one at load time)
    if spec.script is not None:
        return scripted(spec.script, said)
    data = payload(case, history, turn_number, reached)
    context = {"persona": data["persona"], "goal": data["goal"], "turn_number": turn_number, **data["extra"]}
    try:
        return await ask_json(env.caller, spec.use, data, "simulator", simulator_reply, spec.options.get("connector"), context,
                              no_json=plain_text_reply)
    except (ProtocolError, CallError) as exc:
        raise SimulatorError(f"simulator error at turn {turn_number}: simulator {spec.use}: {exc}") from None
