"""Attachments (FORMATS §3): ``image``/``audio``/``file`` parts with ``file://`` paths become the OpenAI
wire shapes. A file is read only if it stays inside the allowed folders (the app root, and the case
file's folder for a case file — generated cases are untrusted model output), is a regular file, and is
no larger than the limit; anything else is that case's error. Called off the event loop."""

from __future__ import annotations

import base64
import json
import mimetypes
import os
import stat
from dataclasses import dataclass
from functools import cache
from typing import Any

from agenttest.errors import CallError
from agenttest.model import Message

DEFAULT_MAX_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Policy:
    """Where attachments may come from and how large they may be."""

    roots: tuple[str, ...] = ()  # real paths; empty: anywhere (library use without an app)
    max_bytes: int = DEFAULT_MAX_BYTES


@cache
def app_policy(root: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Policy:
    """The policy of a run in the app at ``root``: its real path resolved once per run, not per case."""
    return Policy((os.path.realpath(root),), max_bytes)


def has_parts(messages: Any) -> bool:
    """Whether any message has content parts (attachments, data): only those need ``resolve``."""
    return any(isinstance(m.get("content"), list) for m in messages)


def resolve(messages: Any, base_dir: str, policy: Policy = Policy()) -> list[Message]:
    """The messages with their attachments read, ``file://`` paths relative to ``base_dir``.
    A missing, forbidden or oversized file raises CallError (the case becomes an error)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            m = {**m, "content": [_part(p, base_dir, policy) for p in content]}
        out.append(m)
    return out


def _read(source: str, base_dir: str, policy: Policy) -> tuple[str, bytes]:
    path = source[len("file://"):]
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))
    real = os.path.realpath(full)  # symlinks followed: a link may not lead out of the allowed folders
    if policy.roots and not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in policy.roots):
        raise CallError(f"attachment {source}: {full} is outside the app ({', '.join(policy.roots)}); attachments must stay inside it")
    try:
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            raise CallError(f"attachment {source}: {full} is not a regular file")
        if info.st_size > policy.max_bytes:
            raise CallError(f"attachment {source}: {full} is {info.st_size:,} bytes, over the limit of {policy.max_bytes:,} (--max-attachment)")
        with open(real, "rb") as fh:
            data = fh.read(policy.max_bytes + 1)
    except OSError as exc:
        raise CallError(f"attachment {source}: {exc.strerror or exc} ({full})") from None
    if len(data) > policy.max_bytes:
        raise CallError(f"attachment {source}: {full} is over the limit of {policy.max_bytes:,} bytes (--max-attachment)")
    return full, data


def _data_url(full: str, data: bytes, default: str) -> str:
    mime = mimetypes.guess_type(full)[0] or default
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _part(part: dict[str, Any], base_dir: str, policy: Policy) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "data":  # Yao's structured data: sent as its JSON text
        return {"type": "text", "text": json.dumps(part.get("data"), ensure_ascii=False)}
    source = str(part.get("source") or part.get("url") or "")
    is_file = source.startswith("file://")
    if kind == "image":
        if is_file:
            full, data = _read(source, base_dir, policy)
            return {"type": "image_url", "image_url": {"url": _data_url(full, data, "image/png")}}
        return {"type": "image_url", "image_url": {"url": source, **({"detail": part["detail"]} if "detail" in part else {})}}
    if kind in ("audio", "input_audio") and is_file:
        full, data = _read(source, base_dir, policy)
        fmt = os.path.splitext(full)[1].lstrip(".").lower() or "wav"
        return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt}}
    if kind == "file" and is_file:
        full, data = _read(source, base_dir, policy)
        return {
            "type": "file",
            "file": {"filename": part.get("name") or os.path.basename(full), "file_data": _data_url(full, data, "application/octet-stream")},
        }
    return part
