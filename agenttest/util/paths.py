"""Paths: where a case came from, written the same on every machine."""

from __future__ import annotations

import os

from agenttest.errors import AgentTestError


def source_key(file: str, root: str) -> str:
    """Where a case came from, the same on every machine: a case file relative to the app root with ``/``
    (``tests/inputs.jsonl``); anything else (``agents:…``, ``<message>``) as written."""
    if not file or not os.path.isfile(file):
        return file
    rel = os.path.relpath(os.path.realpath(file), os.path.realpath(root))
    if rel.startswith(".."):
        rel = os.path.join("_outside", os.path.basename(file))
    return rel.replace(os.sep, "/")


def inside(root: str, ident: str, *base: str, suffix: str = "", what: str = "ID") -> str:
    """``<root>/<base…>/a/b<suffix>`` for the dotted ``ident`` ``a.b`` — never a path outside ``root``: an
    absolute or empty segment, a separator, ``..``, or a symlink leading out is an AgentTestError naming
    ``what`` (nothing is read, imported or sent before this check has passed)."""
    segments = ident.split(".")
    if not ident or any(not s or "/" in s or "\\" in s or "\0" in s for s in segments):
        raise AgentTestError(f"{what} '{ident}' is not an ID inside the app: IDs are dotted names (a.b), not paths",
                             hint=f"it names a file under {os.path.join(root, *base)}; paths, '..' and absolute names are refused")
    path = os.path.join(root, *base, *segments) + suffix
    real, top = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, top]) != top:
        raise AgentTestError(f"{what} '{ident}' leads outside the app root: {path} is a link to {real}",
                             hint=f"keep what the app uses inside {root}")
    return path
