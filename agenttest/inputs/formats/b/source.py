"""``-i b:FILE``, and a B file given as a plain ``-i FILE`` (or found in a folder): recognised by its shape — a YAML
mapping with ``meta.schema_version``, ``task``, ``world`` and ``tools`` — and loaded as one scenario case. With
``--strict``, lint's findings are problems too (nothing runs)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from agenttest.errors import AgentTestError
from agenttest.inputs.documents import Loaded
from agenttest.inputs.formats.b.shape import recognises
from agenttest.inputs.sources.base import OneFile
from agenttest.plugins import SOURCES

PREFIX = "b:"


def ignores(path: str) -> bool:
    """A file a folder of B scenarios holds that is not a case file: a pack.yaml, or a from_file fixture."""
    name = os.path.basename(path).lower()
    if name in ("pack.yaml", "pack.yml") or name.endswith((".pack.yaml", ".pack.yml")):
        return True
    if not name.endswith(".jsonl"):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = next((line for line in fh if line.strip()), "")
    except OSError:
        return False
    return first.lstrip().startswith('{"collection"')


@dataclass(frozen=True)
class ScenarioFile(OneFile):
    """One B file: one scenario case."""

    def describe(self, count: int) -> str:
        return f"{self.path} (B scenario)"

    async def load(self, env: object) -> Loaded:
        strict = bool(getattr(getattr(env, "policy", None), "strict", False))
        return await asyncio.to_thread(load, self.path, strict)


def load(path: str, strict: bool = False) -> Loaded:
    from agenttest.inputs.formats.b import build  # here: every start-up imports this module (its shape is checked)

    built = build.build(path)
    if built.case is None:
        return Loaded(problems=built.problems)
    loaded = Loaded([built.case])
    if strict:
        from agenttest.inputs.formats.b import lint

        loaded.problems += lint.as_problems(lint.lint(built))
    return loaded


def _source(rest: str) -> ScenarioFile:
    if not rest.strip():
        raise AgentTestError("-i b: needs a B scenario file", hint="e.g. -i b:scenarios/refund.yaml")
    return ScenarioFile(rest)


_source.recognises = recognises  # type: ignore[attr-defined]  # a plain -i FILE of this shape is read as B
_source.ignores = ignores  # type: ignore[attr-defined]  # what a folder of scenarios holds beside them
SOURCES.add(PREFIX, _source)
