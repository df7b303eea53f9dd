"""A case file (``.jsonl``, ``.json``, ``.yaml``) given with ``-i``, and when an ``-i`` value is taken for a path."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from agenttest.inputs.documents import SUFFIXES, Loaded
from agenttest.inputs.reading import load_file
from agenttest.inputs.sources.base import LoadEnv, OneFile, counted


@dataclass(frozen=True)
class CaseFile(OneFile):
    def describe(self, count: int) -> str:
        return f"{self.path} ({counted(count)})"

    async def load(self, env: LoadEnv) -> Loaded:
        return await asyncio.to_thread(load_file, self.path, env.default_simulator, env.policy)


def looks_like_a_path(text: str) -> bool:
    """FORMATS §6: a value of ``-i`` is a path when it exists or looks like one — no whitespace, and a path
    separator or a case-file suffix; anything else is a message ("Export my bookings to bookings.json")."""
    if os.path.exists(text):
        return True
    return not any(ch.isspace() for ch in text) and ("/" in text or os.sep in text or text.lower().endswith(SUFFIXES))
