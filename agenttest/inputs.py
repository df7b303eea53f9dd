"""``-i``: a case file, a literal message, a generator (``agents:ID?count=N``, ``scripts:mod.func``),
or script tests (``scripts.<name>``) — all become a list of Cases."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl

from .errors import AgentTestError, InputError, Problem
from .loading import SUFFIXES, load_file, make_case, parse_text
from .model import Case

Kind = Literal["file", "message", "agents", "scripts", "script-tests"]


@dataclass(frozen=True)
class Source:
    kind: Kind
    value: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str | None:
        return self.value if self.kind == "file" else None

    def describe(self, count: int) -> str:
        noun = "test case" if count == 1 else "test cases"
        if self.kind == "message":
            return f"message ({count} {noun})"
        shown = self.value if self.kind != "agents" else f"agents:{self.value}"
        if self.kind == "scripts":
            shown = f"scripts:{self.value}"
        elif self.kind == "script-tests":
            shown = f"scripts.{self.value}"
        return f"{shown} ({count} {noun})"


def classify(text: str) -> Source:
    if text.startswith("agents:"):
        ref, _, query = text[len("agents:"):].partition("?")
        if not ref:
            raise AgentTestError("-i agents: needs a generator agent ID", hint="e.g. -i \"agents:workers.test.generator?count=10\"")
        return Source("agents", ref, dict(parse_qsl(query, keep_blank_values=True)))
    if text.startswith("scripts:"):
        ref, _, query = text[len("scripts:"):].partition("?")
        if "." not in ref:
            raise AgentTestError(f"-i {text}: a script generator is scripts:<module>.<function>")
        return Source("scripts", ref, dict(parse_qsl(query, keep_blank_values=True)))
    if text.startswith("scripts.") and not os.path.exists(text) and " " not in text:
        return Source("script-tests", text[len("scripts."):])
    if os.path.exists(text) or text.lower().endswith(SUFFIXES):
        return Source("file", text)
    if not text.strip():
        raise AgentTestError("-i is empty", hint="give a case file, a message, or agents:/scripts: generator")
    return Source("message", text)


def literal_case(message: str) -> Case:
    from .errors import Location

    raw = {"id": "message", "input": message}
    return make_case(raw, Location("<message>"), os.getcwd())


def load(source: Source, default_simulator: str | None) -> list[Case]:
    """File and message sources; generators go through ``generate`` (they need the runtime)."""
    if source.kind == "file":
        return load_file(source.value, default_simulator)
    if source.kind == "message":
        return [literal_case(source.value)]
    raise AssertionError(source.kind)


def target_info(agent: Any) -> dict[str, Any]:
    if agent is None:
        return {"id": "", "description": "", "tools": []}
    return {"id": agent.spec.id, "description": agent.spec.description, "tools": [dict(t) for t in agent.spec.tools]}


def _params(source: Source) -> tuple[int, str, dict[str, Any]]:
    params = dict(source.params)
    count_text = params.pop("count", "5")
    try:
        count = int(count_text)
        if count < 1:
            raise ValueError
    except ValueError:
        raise AgentTestError(f"-i {source.value}: count must be a whole number ≥ 1, got {count_text!r}") from None
    return count, params.pop("focus", ""), params


def _case_list(value: Any) -> list[Any]:
    if isinstance(value, dict) and isinstance(value.get("cases"), list):
        return value["cases"]
    if isinstance(value, list):
        return value
    raise ValueError(f"expected a JSON array of cases or {{\"cases\": [...]}}, got {type(value).__name__}")


def validate_generated(items: list[Any], label: str, default_simulator: str | None) -> list[Case]:
    """Validate generated cases like a file; problems point into a saved copy of the generated JSON."""
    text = json.dumps(items, ensure_ascii=False, indent=2)
    try:
        return parse_text(text, label, default_simulator, os.getcwd(), kind=".json")
    except InputError as exc:
        fd, path = tempfile.mkstemp(prefix="agent-test-generated-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        problems = [Problem(p.message, p.location and type(p.location)(path, p.location.line, p.location.column), p.hint) for p in exc.problems]
        problems.append(Problem(f"the cases {label} generated are saved in {path}"))
        raise InputError(problems) from None


async def generate(source: Source, runtime: Any, default_simulator: str | None) -> list[Case]:
    """Ask a generator agent or call a generator script for cases."""
    from .workers import ProtocolError, ask_json

    count, focus, extra = _params(source)
    info = target_info(runtime.agent)
    if source.kind == "agents":
        payload = {"target_agent": info, "count": count, "focus": focus, "extra": extra}
        try:
            items = await ask_json(runtime, source.value, payload, "generator", _case_list)
        except ProtocolError as exc:
            raise AgentTestError(f"generator agents:{source.value}: {exc}") from None
        except Exception as exc:  # an agent failure here means nothing can run
            raise AgentTestError(f"generator agents:{source.value} failed: {exc}") from None
        return validate_generated(items, f"agents:{source.value}", default_simulator)
    fn = runtime.script(source.value)
    import asyncio

    try:
        returned = await asyncio.to_thread(fn, info, {"count": count, "focus": focus, **extra})
    except Exception as exc:
        raise AgentTestError(f"generator scripts:{source.value} raised {type(exc).__name__}: {exc}") from None
    if isinstance(returned, str):
        from .jsontext import find_json

        found, returned = find_json(returned)
        if not found:
            raise AgentTestError(f"generator scripts:{source.value} returned text with no JSON")
    try:
        items = _case_list(returned)
    except ValueError as exc:
        raise AgentTestError(f"generator scripts:{source.value}: {exc}") from None
    return validate_generated(items, f"scripts:{source.value}", default_simulator)


def normalized(case: Case) -> dict[str, Any]:
    """A case as one JSON object that ``-i`` loads back: input as messages, assertions spelled out."""
    out: dict[str, Any] = {}
    for key, value in case.raw.items():
        if key in ("assert", "assertions", "input", "checkpoints"):
            continue
        out[key] = value
    if case.messages:
        out["input"] = list(case.messages)
    if case.assertions:
        out["assertions"] = [dict(a.params, type=a.type) for a in case.assertions]
    if case.checkpoints:
        out["checkpoints"] = [
            {k: v for k, v in {"id": c.id, "description": c.description or None, "assertion": dict(c.assertion.params, type=c.assertion.type),
             "after": list(c.after) or None, "required": None if c.required else False}.items() if v is not None}
            for c in case.checkpoints
        ]
    return out
