"""``agent-test convert FILE``: a file in a seed format (FORMATS §18) written as agent-test's own case file — JSON
or YAML (``--format``, else the extension of ``-o``; JSON on stdout without either) — so that a team can move over
for good; running either gives the same verdicts.

A format plugs in by one registration: its ``-i`` source's factory (in ``plugins.SOURCES``) has
``convert(path) -> {"suite"?, "cases"}``, the native document of the file (raising ``InputError`` with the file's
problems), beside the ``recognises(path)`` that finds its files by their shape (``sources.shapes``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Literal

from agenttest import plugins
from agenttest.errors import AgentTestError
from agenttest.plugins import SOURCES
from agenttest.util import files

Style = Literal["json", "yaml"]
SUFFIXES = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}
Convert = Callable[[str], dict[str, Any]]


def converters() -> dict[str, Convert]:
    """Every registered source that converts: its prefix → its factory's ``convert``."""
    plugins.load()
    found = {prefix: getattr(SOURCES.get(prefix), "convert", None) for prefix in SOURCES}
    return {prefix: fn for prefix, fn in found.items() if callable(fn)}


def converter_of(text: str) -> tuple[Convert, str]:
    """The conversion of the file ``text`` names and its path: forced with a prefix (``a:FILE``), else the format
    that recognises the file by its shape."""
    known = converters()
    for prefix in sorted(SOURCES, key=len, reverse=True):
        if text.startswith(prefix):
            return _of(prefix, known, text[len(prefix):]), text[len(prefix):]
    if not os.path.isfile(text):
        raise AgentTestError(f"input file '{text}' does not exist" if not os.path.exists(text) else f"{text} is not a file",
                             hint="e.g. agent-test convert suite.json -o cases.json")
    for prefix in SOURCES:
        recognises = getattr(SOURCES.get(prefix), "recognises", None)
        if recognises is not None and recognises(text):
            return _of(prefix, known, text), text
    raise AgentTestError(f"{text} is in no seed format agent-test converts (it may already be a case file of its own)",
                         hint=f"force a format with its prefix: {', '.join(f'{p}{text}' for p in known)}")


def _of(prefix: str, known: dict[str, Convert], path: str) -> Convert:
    if prefix not in known:
        raise AgentTestError(f"{path}: a '{prefix}' input has no case file of agent-test's own to convert into; it runs as found (-i {prefix}{path})",
                             hint=f"convert reads {', '.join(f'{p}FILE' for p in known)}")
    return known[prefix]


def render(native: dict[str, Any], style: Style) -> str:
    """The native document as JSON or YAML: a file with a suite keeps its wrapper, else a list of cases."""
    data: Any = native if "suite" in native else native["cases"]
    if style == "yaml":
        import yaml

        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120))
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def style_of(output: str | None, style: str | None) -> Style:
    """``--format``, else what ``-o``'s extension says (JSON on stdout)."""
    suffix = os.path.splitext(output or "")[1].lower()
    if output is not None and suffix not in SUFFIXES:
        raise AgentTestError(f"-o {output}: convert writes .json, .yaml or .yml", hint="e.g. -o cases.json")
    said: Style = "yaml" if SUFFIXES.get(suffix) == "yaml" else "json"
    if style is not None and output is not None and style != said:
        raise AgentTestError(f"--format {style} does not match -o {output}", hint=f"give -o a .{style} file, or leave --format out")
    return "yaml" if style == "yaml" else said


def convert(text: str, output: str | None, style: str | None = None) -> str:
    """Convert; write ``output`` (atomically) when given; return what was written (or is to be printed)."""
    chosen = style_of(output, style)
    fn, path = converter_of(text)
    rendered = render(fn(path), chosen)
    if output is not None:
        files.prepare(output)
        files.write_atomic(output, rendered)
    return rendered
