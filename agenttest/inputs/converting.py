"""``agent-test convert FILE``: a file in a seed format (FORMATS §18) written as agent-test's own case file — JSON
or YAML, by the extension of ``-o`` (JSON on stdout without it) — so that a team can move over for good; running
either gives the same verdicts."""

from __future__ import annotations

import json
import os
from typing import Any

from agenttest.errors import AgentTestError, InputError
from agenttest.inputs.sources import classify, seeds
from agenttest.inputs.sources.files import CaseFile
from agenttest.inputs.sources.seeds import SeedFile
from agenttest import plugins
from agenttest.plugins import SOURCES
from agenttest.util import files

SUFFIXES = (".json", ".yaml", ".yml")


def source_of(text: str) -> SeedFile:
    """The seed file ``text`` names: forced with its prefix (``a:FILE``), else recognised by its shape."""
    plugins.load()
    source = classify(text)
    if isinstance(source, CaseFile):
        for prefix in SOURCES:
            factory = SOURCES.get(prefix)
            if isinstance(factory, type) and issubclass(factory, SeedFile) and factory.recognises(source.path):
                return factory(source.path)
        if not os.path.exists(source.path):
            raise AgentTestError(f"input file '{source.path}' does not exist")
        known = ", ".join(p for p in SOURCES if isinstance(SOURCES.get(p), type) and issubclass(SOURCES.get(p), SeedFile))
        raise AgentTestError(f"{source.path} is in no seed format agent-test converts (it may already be a case file of its own)",
                             hint=f"force a format with its prefix: {known}")
    if not isinstance(source, SeedFile):
        raise AgentTestError(f"convert reads a file in a seed format, not {text!r}", hint="e.g. agent-test convert suite.json -o cases.json")
    return source


def converted(text: str) -> dict[str, Any]:
    """The native document of the seed file ``text`` names; its problems (exit 2, located) if it is not what its
    document says."""
    source = source_of(text)
    _, native, problems = seeds.read(source.format, source.path)
    if native is None:
        raise InputError(problems)
    return native if "suite" in native else native["cases"] if len(native) == 1 else native


def render(native: Any, output: str | None) -> str:
    """The native document as the output's extension asks (JSON without one)."""
    if output is not None and output.lower().endswith((".yaml", ".yml")):
        import yaml

        return str(yaml.safe_dump(native, sort_keys=False, allow_unicode=True, width=120))
    return json.dumps(native, indent=2, ensure_ascii=False) + "\n"


def convert(text: str, output: str | None) -> str:
    """Convert; write ``output`` (atomically) when given; return what was written (or is to be printed)."""
    if output is not None and not output.lower().endswith(SUFFIXES):
        raise AgentTestError(f"-o {output}: convert writes .json, .yaml or .yml", hint="e.g. -o cases.json")
    rendered = render(converted(text), output)
    if output is not None:
        files.prepare(output)
        files.write_atomic(output, rendered)
    return rendered
