"""Paths: where a case came from, written the same on every machine."""

from __future__ import annotations

import os


def source_key(file: str, root: str) -> str:
    """Where a case came from, the same on every machine: a case file relative to the app root with ``/``
    (``tests/inputs.jsonl``); anything else (``agents:…``, ``<message>``) as written."""
    if not file or not os.path.isfile(file):
        return file
    rel = os.path.relpath(os.path.realpath(file), os.path.realpath(root))
    if rel.startswith(".."):
        rel = os.path.join("_outside", os.path.basename(file))
    return rel.replace(os.sep, "/")
