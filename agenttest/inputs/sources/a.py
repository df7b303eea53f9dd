"""``-i a:FILE``, or a ``.json`` file of that shape: a scenario suite of seed format A (docs/formats-a.md)."""

from __future__ import annotations

from dataclasses import dataclass

from agenttest.inputs.formats import a
from agenttest.inputs.sources.seeds import Format, SeedFile
from agenttest.plugins import SOURCES

FORMAT = Format(name="scenario suite (A)", keys=("schemaVersion", "scenarios"), recognises=a.recognises, check=a.check,
                convert=a.convert, original=a.original, shape="a suite is an object with schemaVersion: 1 and scenarios")


@dataclass(frozen=True)
class ScenarioSuite(SeedFile):
    format = FORMAT


SOURCES.add("a:", ScenarioSuite)
