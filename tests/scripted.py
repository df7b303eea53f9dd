"""A responder for end-to-end tests: the last user message says what the fake model does.

``say:TEXT`` answers TEXT · ``slow:SECONDS:TEXT`` answers after a delay · ``fail:STATUS`` errors ·
``tool:NAME:JSON`` calls a tool, then answers ``done: <result>`` · ``flaky:TEXT`` alternates TEXT / "nope"
· anything else is echoed."""

from __future__ import annotations

import itertools
import json
import threading

from openai_server import Answer, last_user

_flip = itertools.count()
_lock = threading.Lock()


def scripted(req: dict) -> Answer:
    messages = req.get("messages", [])
    if messages and messages[-1].get("role") == "tool":
        return Answer("done: " + messages[-1]["content"])
    text = last_user(req)
    if text.startswith("say:"):
        return Answer(text[4:])
    if text.startswith("slow:"):
        _, seconds, rest = text.split(":", 2)
        return Answer(rest, delay=float(seconds))
    if text.startswith("fail:"):
        return Answer(status=int(text[5:]), error=f"simulated {text[5:]}", headers={"retry-after-ms": "1"})
    if text.startswith("tool:"):
        _, name, args = text.split(":", 2)
        return Answer("", tool_calls=[{"name": name, "arguments": json.loads(args)}])
    if text.startswith("flaky:"):
        with _lock:
            n = next(_flip)
        return Answer(text[6:] if n % 2 == 0 else "nope")
    return Answer(f"echo: {text}")
