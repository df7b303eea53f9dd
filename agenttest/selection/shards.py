"""``--shard K/N``: a deterministic 1/N of the selected cases. Each case is placed by a hash of where it
came from and its id — the same on every machine and Python version (SHA-256, not ``hash()``) — and the
cases, in hash order, are dealt to the shards in turn, so that N CI machines given 1/N … N/N run every case
exactly once and shards differ in size by one case at most."""

from __future__ import annotations

import hashlib
import re

from agenttest.model import Case
from agenttest.util.paths import source_key


def parse(text: str) -> tuple[int, int]:
    """``"2/3"`` → (2, 3). Raises ValueError saying what is accepted."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not K/N (e.g. 1/3: the first of three shards)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"{text!r}: K must be between 1 and N (N ≥ 1)")
    return k, n


def placement(case: Case, root: str) -> bytes:
    """Where a case falls in the dealing order: SHA-256 of its source and id."""
    return hashlib.sha256(f"{source_key(case.file, root)}\n{case.id}".encode()).digest()


def shards(cases: list[Case], count: int, root: str) -> list[int]:
    """The shard (1…count) of each case, in the cases' order."""
    order = sorted(range(len(cases)), key=lambda i: (placement(cases[i], root), i))
    out = [0] * len(cases)
    for turn, i in enumerate(order):
        out[i] = turn % count + 1
    return out


def take(cases: list[Case], shard: tuple[int, int], root: str) -> list[Case]:
    """The cases of shard K of N, in their order."""
    k, n = shard
    return [c for c, s in zip(cases, shards(cases, n, root)) if s == k]
