"""``-i b:FILE``, and a B file given as a plain ``-i FILE`` (or found in a folder): recognised by its shape — a YAML
mapping with ``meta.schema_version``, ``task``, ``world`` and ``tools`` — and loaded as one scenario case. With
``--strict``, lint's findings are problems too (nothing runs)."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass

from agenttest.app.folders import App
from agenttest.errors import AgentTestError
from agenttest.inputs.documents import Loaded
from agenttest.inputs.formats.b import build
from agenttest.plugins import SOURCES

PREFIX = "b:"
_TOP = re.compile(r"^(meta|task|world|tools)\s*:", re.MULTILINE)
_VERSION = re.compile(r"^\s+schema_version\s*:", re.MULTILINE)
_WORDS = re.compile(r"\b(meta|task|world|tools|schema_version)\b")  # all five in the head: worth a parse
_SHAPE = {"meta", "task", "world", "tools", "schema_version"}
SNIFF_BYTES = 64 * 1024


def recognises(path: str) -> bool:
    """A YAML file whose top level holds meta (with schema_version), task, world and tools."""
    if not path.lower().endswith((".yaml", ".yml")) or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    if {m.group(1) for m in _TOP.finditer(head)} == {"meta", "task", "world", "tools"} and _VERSION.search(head) is not None:
        return True  # block style, the usual way: known without parsing (a YAML error in it is then B's to report)
    return {m.group(1) for m in _WORDS.finditer(head)} == _SHAPE and _parsed_shape(path)


def _parsed_shape(path: str) -> bool:
    """Whether the file parses to B's shape (flow style, ``meta: {name: x, schema_version: "1.0"}``, or JSON)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return False
    return (isinstance(data, dict) and {"meta", "task", "world", "tools"} <= set(data) and isinstance(data["meta"], dict)
            and "schema_version" in data["meta"])


def not_a_scenario(path: str) -> str | None:
    """Why ``path`` is no B scenario at all (a JSONL case file, a YAML list of cases), or None when it is one or
    may be one with mistakes in it (a YAML mapping: B's own checks then say what is wrong, at its place)."""
    if recognises(path) or not os.path.isfile(path):
        return None
    if not path.lower().endswith((".yaml", ".yml")):
        return "not a B scenario (one YAML file: meta, task, world and tools)"
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None  # B's E001 places the YAML error
    if isinstance(data, dict) and set(data) & {"meta", "task", "world", "tools"}:
        return None
    return f"not a B scenario (a YAML mapping with meta, task, world and tools; this file holds {_shape(data)})"


def _shape(data: object) -> str:
    if isinstance(data, list):
        return "a list: a case file?"
    if isinstance(data, dict):
        return "a mapping of " + ", ".join(sorted(map(str, data))[:5])
    return "no mapping" if data is None else f"a {type(data).__name__}"


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
class ScenarioFile:
    """One B file: one scenario case."""

    path: str
    needs_agent = False

    @property
    def text(self) -> str:
        return self.path

    def describe(self, count: int) -> str:
        return f"{self.path} (B scenario)"

    def report_folder(self) -> str | None:
        return os.path.dirname(self.path) or "."

    def agent_hint(self, app: App) -> str | None:
        return app.agent_above(self.path)

    async def load(self, env: object) -> Loaded:
        strict = bool(getattr(getattr(env, "policy", None), "strict", False))
        return await asyncio.to_thread(load, self.path, strict)


def load(path: str, strict: bool = False) -> Loaded:
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
