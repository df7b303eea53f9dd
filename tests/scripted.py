"""A responder for end-to-end tests: the last user message says what the fake model does.

``say:TEXT`` answers TEXT · ``slow:SECONDS:TEXT`` answers after a delay · ``fail:STATUS`` errors ·
``tool:NAME:JSON`` calls a tool, then answers ``done: <result>`` · ``flaky:TEXT`` alternates TEXT / "nope"
· ``pattern:SPEC:TEXT`` answers TEXT or "nope" by a pattern (below) · anything else is echoed.

``pattern:PPF:ok``: the n-th request carrying this very message (per model) answers ``ok`` when the
n-th letter of the pattern (cycling) is ``P``, else ``nope``. Counting is per message and model, so a
case's pass rate is known exactly whatever else runs beside it under ``--parallel``. A SPEC of
``model-a=P;model-b=PF`` gives each model its own pattern (a model matrix). Use a fresh ``Scripted()``
per test for patterns; ``scripted`` is a shared instance."""

from __future__ import annotations

import itertools
import json
import threading

from openai_server import Answer, last_user


class Scripted:
    def __init__(self) -> None:
        self._flip = itertools.count()
        self._seen: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def count(self, model: str, message: str) -> int:
        """How many requests with this model and message came before this one."""
        with self._lock:
            n = self._seen.get((model, message), 0)
            self._seen[(model, message)] = n + 1
            return n

    def __call__(self, req: dict) -> Answer:
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
            with self._lock:
                n = next(self._flip)
            return Answer(text[6:] if n % 2 == 0 else "nope")
        if text.startswith("pattern:"):
            _, spec, rest = text.split(":", 2)
            model = req.get("model", "")
            pattern = pattern_for(spec, model)
            n = self.count(model, text)
            return Answer(rest if pattern[n % len(pattern)] == "P" else "nope")
        return Answer(f"echo: {text}")


def pattern_for(spec: str, model: str) -> str:
    """``PF`` for every model, or ``model-a=P;model-b=PF`` per model."""
    if "=" not in spec:
        return spec
    patterns = dict(item.split("=", 1) for item in spec.split(";"))
    return patterns[model]


scripted = Scripted()
