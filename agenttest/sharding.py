"""``--shard K/N``: a deterministic 1/N of the selected cases, by a hash of where each case came from and
its id — the same on every machine and Python version (SHA-256, not ``hash()``), so N CI machines given
1/N … N/N run every case exactly once."""

from __future__ import annotations

import hashlib
import os
import re

from .model import Case


def parse(text: str) -> tuple[int, int]:
    """``"2/3"`` → (2, 3). Raises ValueError saying what is accepted."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not K/N (e.g. 1/3: the first of three shards)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"{text!r}: K must be between 1 and N (N ≥ 1)")
    return k, n


def source_key(file: str, root: str) -> str:
    """Where a case came from, the same on every machine: a case file relative to the app root with ``/``
    (``tests/inputs.jsonl``); anything else (``agents:…``, ``<message>``) as written."""
    if not file or not os.path.isfile(file):
        return file
    rel = os.path.relpath(os.path.realpath(file), os.path.realpath(root))
    if rel.startswith(".."):
        rel = os.path.join("_outside", os.path.basename(file))
    return rel.replace(os.sep, "/")


def shard_of(case: Case, root: str, count: int) -> int:
    """The shard (1…count) a case belongs to."""
    digest = hashlib.sha256(f"{source_key(case.file, root)}\n{case.id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def take(cases: list[Case], shard: tuple[int, int], root: str) -> list[Case]:
    """The cases of shard K of N, in their order."""
    k, n = shard
    return [c for c in cases if shard_of(c, root, n) == k]
