"""The JSON protocols of worker agents (validator, simulator, generator): ask, parse, correct once.

A reply is unusable when it is empty, cut at its token limit, HTML-escaped (``&#34;`` for quotes), holds no
JSON, holds two different JSON documents, or its JSON has the wrong shape: the worker is told what was wrong
once, and a second unusable reply is a ProtocolError — the worker's fault, which makes the case ``error``
naming it and its reply (never the agent's failure, never text sent on to the agent as the user's words)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from agenttest.util.text import find_json, json_documents, shorten

T = TypeVar("T")
CORRECTION = (
    "Your previous reply could not be used: {problem}. Reply again with only the JSON described in "
    "your instructions, no prose."
)
SHOWN = 300  # characters of an unusable reply kept in the error
_ESCAPED = re.compile(r"&(#34|#x22|quot|#123|#125|lbrace|rbrace);", re.IGNORECASE)
# what a reply that set out to be the protocol's JSON looks like (a simulator's plain text is taken as the
# user's message; a reply like these, cut or broken, is not)
_ATTEMPTED = re.compile(r'^\s*(```|[{\[])|"(message|input|goal_achieved|reasoning|passed|cases)"\s*:', re.IGNORECASE)


class Said(str):
    """A worker's reply text, and whether the model stopped at its token limit (``finish_reason: length``)."""

    truncated: bool = False

    def __new__(cls, text: str, truncated: bool = False) -> Said:
        made = super().__new__(cls, text)
        made.truncated = truncated
        return made


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
    saying what is wrong); on an unusable reply, ask once more with a short correction. A reply with no JSON
    at all, which does not look like JSON cut or broken, goes to ``no_json`` when given (the simulator's
    plain text is the user's message)."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)}
    ]
    meta = {"test_mode": test_mode, **(metadata or {})}
    reply = await judge.ask(agent_id, messages, test_mode, meta, connector)
    try:
        return read(reply, parse, no_json)
    except ValueError as exc:
        problem = str(exc)
    messages += [
        {"role": "assistant", "content": str(reply)},
        {"role": "user", "content": CORRECTION.format(problem=problem)},
    ]
    second = await judge.ask(agent_id, messages, test_mode, meta, connector)
    try:
        return read(second, parse, no_json)
    except ValueError as exc:
        raise ProtocolError(f"unusable reply after one correction: {exc}; reply: {shown(second)}", str(second)) from None


def shown(reply: str) -> str:
    """An unusable reply as an error shows it: quoted, on one line, cut."""
    return repr(shorten(str(reply), SHOWN)) if str(reply).strip() else "(empty)"


def read(reply: str, parse: Callable[[Any], T], no_json: Callable[[str], T] | None = None) -> T:
    """The protocol's value in one reply; ValueError says why the reply cannot be used."""
    text = str(reply)
    if getattr(reply, "truncated", False):
        raise ValueError("the reply was cut at its token limit (finish_reason: length)")
    if not text.strip():
        raise ValueError("the reply is empty")
    documents = json_documents(text)
    if not documents:
        import html  # here: only a reply with no JSON needs it, and every start-up imports this module

        if _ESCAPED.search(text) and find_json(html.unescape(text))[0]:
            raise ValueError("the reply's JSON is HTML-escaped (&#34; or &quot; where quotes belong)")
        if no_json is not None and not _ATTEMPTED.search(text):
            return no_json(text)
        raise ValueError("the reply holds no valid JSON" + (" (it looks cut off or broken)" if _ATTEMPTED.search(text) else ""))
    if len(documents) > 1:
        raise ValueError(f"the reply holds {len(documents)} different JSON documents: which one is meant is unclear")
    return parse(documents[0])
