"""Input normalization (FORMATS §3): strings, messages and histories, and their text."""

from __future__ import annotations

import os
from typing import Any

from .model import Message


def normalize(value: Any) -> tuple[Message, ...]:
    """A string, one message or a list of messages → a history of messages (role defaults to user)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return ({"role": "user", "content": value},)
    if isinstance(value, dict):
        value = [value]
    return tuple(m if "role" in m else {"role": "user", **m} for m in value)


def last_user_text(messages: Any) -> str:
    """The text of the last user message (for previews and mock rules)."""
    for m in reversed(list(messages)):
        if m.get("role") == "user":
            return content_text(m.get("content"))
    return ""


def content_text(content: Any) -> str:
    """The text of a message's content; attachments appear as ``[name]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            parts.append(part.get("text", ""))
        else:
            parts.append(f"[{attachment_name(part)}]")
    return " ".join(p for p in parts if p)


def attachment_name(part: dict[str, Any]) -> str:
    source = part.get("source") or part.get("url") or ""
    if isinstance(part.get("image_url"), dict):
        source = part["image_url"].get("url", "")
    if isinstance(source, str) and source and not source.startswith("data:"):
        return os.path.basename(source.rstrip("/")) or part.get("type", "attachment")
    return part.get("type", "attachment")
