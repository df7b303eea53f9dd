"""Whether a file is a B scenario, by its shape: a YAML mapping with ``meta.schema_version``, ``task``, ``world`` and
``tools`` (block style known from its lines; anything else that names all five parsed), and why a file is none."""

from __future__ import annotations

import os
import re

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
