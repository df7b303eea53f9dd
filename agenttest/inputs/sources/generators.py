"""Generators: ``-i agents:ID?count=N&focus=…`` (a generator agent writes the cases) and ``-i scripts:mod.func?count=N``
(a Python function returns them); what they give is validated as a case file is."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl

from agenttest.agents.protocols import ProtocolError, ask_json
from agenttest.errors import AgentTestError, CallError, Location, Problem
from agenttest.inputs.documents import Loaded, case_list
from agenttest.inputs.reading import parse
from agenttest.inputs.sources.base import LoadEnv, NotAFile, Source
from agenttest.plugins import SOURCES
from agenttest.runtime import usercalls
from agenttest.util.text import find_json


@dataclass(frozen=True)
class _Generator(NotAFile):
    ref: str
    params: dict[str, str] = field(default_factory=dict)
    prefix = ""

    @property
    def text(self) -> str:  # type: ignore[override]
        return f"{self.prefix}:{self.ref}"

    def settings(self) -> tuple[int, str, dict[str, Any]]:
        """``count`` (default 5), ``focus`` and the other query parameters."""
        params = dict(self.params)
        count_text = params.pop("count", "5")
        try:
            count = int(count_text)
            if count < 1:
                raise ValueError
        except ValueError:
            raise AgentTestError(f"-i {self.text}: count must be a whole number ≥ 1, got {count_text!r}") from None
        return count, params.pop("focus", ""), params

    def validate(self, items: list[Any], env: LoadEnv) -> Loaded:
        """Validate generated cases like a file (no more than ``count`` of them); problems point into a
        saved copy of the generated JSON."""
        count = self.settings()[0]
        if not items:  # never a silent green
            return Loaded(problems=[Problem(f"{self.text} generated no test cases", None, "check the generator's prompt or code")])
        dropped = len(items) - count
        items = items[:count]
        text = json.dumps(items, ensure_ascii=False, indent=2)
        policy = replace(env.policy, lenient=not env.policy.strict)  # model output: keep what is known
        loaded = parse(text, self.text, env.default_simulator, os.getcwd(), kind=".json", policy=policy)
        if dropped > 0:
            loaded.warnings.append(f"{self.text} returned {count + dropped} cases for count={count}; the last {dropped} were dropped")
        if loaded.problems:
            fd, path = tempfile.mkstemp(prefix="agent-test-generated-", suffix=".json")
            hide = env.caller.catalog.secrets.redact if env.caller is not None else str
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(hide(text) + "\n")  # kept for the user to read: never with a key in it
            loaded.problems = [Problem(p.message, p.location and Location(path, p.location.line, p.location.column), p.hint)
                               for p in loaded.problems]
            loaded.problems.append(Problem(f"the cases {self.text} generated are saved in {path}"))
        return loaded


def _listed(value: Any) -> list[Any]:
    return case_list(value)[1]


class GeneratorAgent(_Generator):
    """``agents:ID?count=N&focus=…``: a generator agent writes the cases."""

    prefix = "agents"

    async def load(self, env: LoadEnv) -> Loaded:
        assert env.caller is not None
        count, focus, extra = self.settings()
        info = env.agent.spec.info() if env.agent else {"id": "", "description": "", "tools": []}
        # target_agent is the agent's id, as Yao's design passes it; what the agent is (description, tools) beside it
        payload = {"target_agent": info["id"], "target_agent_info": info, "count": count, "focus": focus, "extra": extra}
        try:
            async with asyncio.timeout(env.timeout):
                items = await ask_json(env.caller, self.ref, payload, "generator", _listed,
                                       metadata={"target_agent": info["id"], "target_agent_info": info, "count": count, "focus": focus})
        except TimeoutError:
            raise AgentTestError(f"generator {self.text} did not answer within {env.timeout:g}s (--timeout)",
                                 hint="raise --timeout, or check the generator's endpoint") from None
        except ProtocolError as exc:
            raise AgentTestError(f"generator {self.text}: {exc}") from None
        except CallError as exc:
            raise AgentTestError(f"generator {self.text} failed: {exc}") from None
        return self.validate(items, env)


class GeneratorScript(_Generator):
    """``scripts:mod.func?count=N``: a Python function returns the cases."""

    prefix = "scripts"

    async def load(self, env: LoadEnv) -> Loaded:
        assert env.caller is not None
        count, focus, extra = self.settings()
        fn = env.caller.script(self.ref)
        info = env.agent.spec.info() if env.agent else {"id": "", "description": "", "tools": []}
        try:
            returned = await usercalls.call(fn, info, {"count": count, "focus": focus, **extra}, what=f"generator {self.text}",
                                            timeout=env.timeout)
        except CallError as exc:
            raise AgentTestError(str(exc)) from None
        if isinstance(returned, str):
            found, returned = find_json(returned)
            if not found:
                raise AgentTestError(f"generator {self.text} returned text with no JSON")
        try:
            items = _listed(returned)
        except ValueError as exc:
            raise AgentTestError(f"generator {self.text}: {exc}") from None
        return self.validate(items, env)


@SOURCES.register("agents:")
def _generator_agent(rest: str) -> Source:
    ref, _, query = rest.partition("?")
    if not ref:
        raise AgentTestError("-i agents: needs a generator agent ID", hint="e.g. -i \"agents:workers.test.generator?count=10\"")
    return GeneratorAgent(ref, dict(parse_qsl(query, keep_blank_values=True)))


@SOURCES.register("scripts:")
def _generator_script(rest: str) -> Source:
    ref, _, query = rest.partition("?")
    if "." not in ref:
        raise AgentTestError(f"-i scripts:{rest}: a script generator is scripts:<module>.<function>")
    return GeneratorScript(ref, dict(parse_qsl(query, keep_blank_values=True)))
