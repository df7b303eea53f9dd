"""The dialects OpenAI-compatible servers speak (docs/servers.md): how an assistant message that carries tool
calls gives its ``content`` (``null`` as OpenAI writes it, ``""``, or left out — llama-cpp-python answers 500
to ``null``), whether a tool loop streams, and which server errors are the request's own fault, the same on
every attempt (a validation error is not retried)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agenttest.errors import AgentTestError, Location
from agenttest.model import Message

NULL, EMPTY, OMIT = None, "", "omit"
TOOL_CONTENT = (NULL, EMPTY, OMIT)
FELL_BACK = ('{where} answered {status} to "content": null beside tool_calls; the request was sent again with "content": "" '
             'and will be for the rest of the run: set "tool_content": "" on connector {name} to say so')

# what a server says when the request itself is wrong: another attempt gets the same answer
_VALIDATION = re.compile(r"validation error|input should be|field required|extra inputs are not permitted|is not valid under|"
                         r"unprocessable|invalid_request_error|is not of type|expected (a |an )?(string|object|array)", re.IGNORECASE)


def tool_content_of(options: dict[str, Any], name: str, path: str | None) -> tuple[Any, bool]:
    """A connector's ``tool_content`` and whether it was given (if not, a 500 on ``null`` is retried with ``""``)."""
    if "tool_content" not in options:
        return NULL, False
    value = options["tool_content"]
    if value not in TOOL_CONTENT:
        raise AgentTestError(f"connector {name}: 'tool_content' must be null, \"\" or \"omit\", not {value!r:.60}",
                             Location(path) if path else None,
                             "what an assistant message with tool calls says as its content: null (OpenAI), \"\" (llama-cpp-python), "
                             "\"omit\" (no content key) — docs/servers.md")
    return value, True


def has_null_tool_content(messages: Sequence[Message]) -> bool:
    """Whether an assistant message with tool calls has ``content: null`` (what some servers refuse)."""
    return any(m.get("role") == "assistant" and m.get("tool_calls") and "content" in m and m["content"] is None for m in messages)


def shaped(messages: Sequence[Message], tool_content: Any) -> list[Message]:
    """The messages with each assistant tool-call message's empty content as the dialect writes it."""
    if tool_content is NULL:
        return list(messages)
    out = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls") and not m.get("content"):
            m = {k: v for k, v in m.items() if k != "content"}
            if tool_content != OMIT:
                m["content"] = tool_content
        out.append(m)
    return out


def deterministic(status: int, text: str) -> bool:
    """Whether a failed request fails the same way on every attempt: a 5xx that says the request did not
    validate (a server's pydantic error, answered as 500 by some). 4xx are never retried anyway."""
    return status >= 500 and status not in (502, 503, 504) and bool(_VALIDATION.search(text))
