"""``-i c:FILE``, or a ``.json`` file of that shape: a world scenario of seed format C (docs/formats-c.md) — ``task``
with ``initial``, or with assertions of ``path`` and ``op``; one scenario, or a list of them."""

from __future__ import annotations

from dataclasses import dataclass

from agenttest.inputs.formats import c
from agenttest.inputs.sources.seeds import Format, SeedFile
from agenttest.plugins import SOURCES

FORMAT = Format(name="world scenario (C)", keys=("task",), recognises=c.recognises, check=c.check, convert=c.convert,
                original=c.original, original_listed=c.original_listed,
                shape="a world scenario is an object with task and initial (or assertions of path and op), or a list of them")


@dataclass(frozen=True)
class WorldScenario(SeedFile):
    format = FORMAT


SOURCES.add("c:", WorldScenario)
