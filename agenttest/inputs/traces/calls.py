"""What the importer reads out of any recording: model calls and tool runs, with their messages in the
chat-completions form a case's ``input`` takes (FORMATS §3), and where each was written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agenttest.errors import Location
from agenttest.inputs.traces.otlp import Place

Message = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Call:
    """One model call: the messages sent and the messages answered."""

    start: int  # ns since the epoch, or the order in the file
    input: tuple[Message, ...]
    output: tuple[Message, ...]
    where: Place | Location
    trace: str = ""  # the trace id (OTLP), else ""
    conversation: str = ""  # gen_ai.conversation.id, or a chat log's conversation key
    model: str = ""
    usage: tuple[int, int] = (0, 0)  # input and output tokens
    error: str = ""  # the call failed (span status ERROR)
    agent: str = ""  # gen_ai.agent.name
    tools: tuple[str, ...] = ()  # the tools the model was offered


@dataclass(frozen=True, kw_only=True)
class ToolRun:
    """One tool execution (an ``execute_tool`` span)."""

    start: int
    name: str
    call_id: str
    arguments: Any  # None: not recorded
    result: Any  # None: not recorded
    error: str
    where: Place | Location
    trace: str = ""
    conversation: str = ""


def location(where: Place | Location) -> Location:
    return where.location() if isinstance(where, Place) else where


def arguments_of(value: Any) -> Any:
    """Tool-call arguments as an object when they are JSON text of one (how a case writes them)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def result_of(value: Any) -> Any:
    """A tool result as a mock returns it: JSON text of an object or array parsed, any other value as it is."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def tool_calls(message: Message) -> list[dict[str, Any]]:
    return [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]


def call_name(call: dict[str, Any]) -> str:
    return str((call.get("function") or {}).get("name", ""))


def call_arguments(call: dict[str, Any]) -> Any:
    return arguments_of((call.get("function") or {}).get("arguments"))


def same(a: Message, b: Message) -> bool:
    """Two messages say the same thing: role, text, tool calls (names and arguments) — ids aside, since one
    recording may spell a call's id or its arguments' JSON differently in two places."""
    return key(a) == key(b)


def key(m: Message) -> tuple[Any, ...]:
    calls = tuple((call_name(c), json.dumps(call_arguments(c), sort_keys=True, default=str)) for c in tool_calls(m))
    content = text_of(m.get("content")).strip()
    if m.get("role") == "tool":
        content = json.dumps(result_of(content), sort_keys=True, default=str)
    return m.get("role"), content, calls
