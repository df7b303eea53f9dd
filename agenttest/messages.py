"""Input normalization (FORMATS §3): strings, messages and histories; ``file://`` attachments."""

from __future__ import annotations

import base64
import mimetypes
import os
from typing import Any

from .errors import CallError
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


def resolve(messages: Any, base_dir: str) -> list[Message]:
    """Turn ``image``/``audio``/``file`` parts into the OpenAI wire shapes, reading ``file://`` paths
    relative to ``base_dir``. A missing file raises CallError (the case becomes an error)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            m = {**m, "content": [_part(p, base_dir) for p in content]}
        out.append(m)
    return out


def _read(source: str, base_dir: str) -> tuple[str, bytes]:
    path = source[len("file://"):]
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))
    try:
        with open(full, "rb") as fh:
            return full, fh.read()
    except OSError as exc:
        raise CallError(f"attachment {source}: {exc.strerror or exc} ({full})") from None


def _data_url(full: str, data: bytes, default: str) -> str:
    mime = mimetypes.guess_type(full)[0] or default
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _part(part: dict[str, Any], base_dir: str) -> dict[str, Any]:
    kind = part.get("type")
    source = str(part.get("source") or part.get("url") or "")
    is_file = source.startswith("file://")
    if kind == "image":
        if is_file:
            full, data = _read(source, base_dir)
            return {"type": "image_url", "image_url": {"url": _data_url(full, data, "image/png")}}
        return {"type": "image_url", "image_url": {"url": source, **({"detail": part["detail"]} if "detail" in part else {})}}
    if kind in ("audio", "input_audio") and is_file:
        full, data = _read(source, base_dir)
        fmt = os.path.splitext(full)[1].lstrip(".").lower() or "wav"
        return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt}}
    if kind == "file" and is_file:
        full, data = _read(source, base_dir)
        return {
            "type": "file",
            "file": {"filename": os.path.basename(full), "file_data": _data_url(full, data, "application/octet-stream")},
        }
    return part
