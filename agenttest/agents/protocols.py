"""The JSON protocols of worker agents (validator, simulator, generator): ask, parse, correct once."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from agenttest.util.text import find_json, shorten

T = TypeVar("T")
CORRECTION = (
    "Your previous reply could not be used: {problem}. Reply again with only the JSON described in "
    "your instructions, no prose."
)


class ProtocolError(Exception):
    """A worker agent's reply did not follow its JSON protocol (after one correction)."""

    def __init__(self, message: str, reply: str):
        super().__init__(message)
        self.reply = reply


async def ask_json(
    judge: Any,
    agent_id: str,
    payload: dict[str, Any],
    test_mode: str,
    parse: Callable[[Any], T],
    connector: str | None = None,
    metadata: dict[str, Any] | None = None,
    no_json: Callable[[str], T] | None = None,
) -> T:
    """Send ``payload`` as one JSON user message; parse the reply with ``parse`` (which raises ValueError
    saying what is wrong); on a malformed reply, ask once more with a short correction. A reply with no
    JSON at all goes to ``no_json`` when given (the simulator's plain text is the user's message)."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)}
    ]
    meta = {"test_mode": test_mode, **(metadata or {})}
    reply = await judge.ask(agent_id, messages, test_mode, meta, connector)
    if no_json is not None and reply.strip() and not find_json(reply)[0]:
        return no_json(reply)
    try:
        return _parse(reply, parse)
    except ValueError as exc:
        problem = str(exc)
    messages += [
        {"role": "assistant", "content": reply},
        {"role": "user", "content": CORRECTION.format(problem=problem)},
    ]
    second = await judge.ask(agent_id, messages, test_mode, meta, connector)
    try:
        return _parse(second, parse)
    except ValueError as exc:
        raise ProtocolError(f"{exc} (after one correction); reply: {shorten(second, 200)}", second) from None


def _parse(reply: str, parse: Callable[[Any], T]) -> T:
    found, value = find_json(reply)
    if not found:
        raise ValueError("the reply holds no JSON")
    return parse(value)

