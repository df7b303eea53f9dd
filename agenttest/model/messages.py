"""Input normalization (FORMATS §3): strings, messages and histories — in Yao's forms too — and their text."""

from __future__ import annotations

import json
import os
from typing import Any

from agenttest.model import Message


def normalize(value: Any) -> tuple[Message, ...]:
    """A string, one message or a list of messages → a history of messages: role defaults to user, a
    single part object as content becomes a list of one part, tool-call arguments given as an object
    become the JSON string the API expects."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return ({"role": "user", "content": value},)
    if isinstance(value, dict):
        value = [value]
    return tuple(_message(m) for m in value)


def _message(m: dict[str, Any]) -> Message:
    out = m if "role" in m else {"role": "user", **m}
    if "content" not in out:  # a real transcript's assistant message with only tool_calls or a refusal
        out = {**out, "content": None}
    if isinstance(out.get("content"), dict):
        out = {**out, "content": [out["content"]]}
    calls = out.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(_arguments(c), (dict, list)) for c in calls):
        out = {**out, "tool_calls": [_stringified(c) for c in calls]}
    return out


def _arguments(call: Any) -> Any:
    return call.get("function", {}).get("arguments") if isinstance(call, dict) and isinstance(call.get("function"), dict) else None


def _stringified(call: dict[str, Any]) -> dict[str, Any]:
    args = _arguments(call)
    if not isinstance(args, (dict, list)):
        return call
    return {**call, "function": {**call["function"], "arguments": json.dumps(args, ensure_ascii=False)}}


def last_user_content(messages: Any) -> tuple[str, list[str]]:
    """The last user message as (its text, the names of its attachments)."""
    for m in reversed(list(messages)):
        if m.get("role") == "user":
            return split_content(m.get("content"))
    return "", []


def split_content(content: Any) -> tuple[str, list[str]]:
    """A message's content as (its text, the names of its attachments)."""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return content_text(content), []
    names = [attachment_name(p) for p in content if isinstance(p, dict) and p.get("type") not in ("text", "data")]
    text = content_text([p for p in content if isinstance(p, dict) and p.get("type") in ("text", "data")])
    return text, names


def content_text(content: Any) -> str:
    """The text of a message's content; attachments appear as ``[name]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append(part.get("text", ""))
        elif kind == "data":
            parts.append(json.dumps(part.get("data"), ensure_ascii=False, separators=(",", ":")))
        elif kind is not None:
            parts.append(f"[{attachment_name(part)}]")
    return " ".join(p for p in parts if p)


def attachment_name(part: dict[str, Any]) -> str:
    if isinstance(part.get("name"), str) and part["name"]:
        return part["name"]
    source = part.get("source") or part.get("url") or ""
    if isinstance(part.get("image_url"), dict):
        source = part["image_url"].get("url", "")
    if isinstance(source, str) and source and not source.startswith("data:"):
        return os.path.basename(source.rstrip("/")) or part.get("type", "attachment")
    return part.get("type", "attachment")
