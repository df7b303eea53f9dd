"""``agent-test snapshot``: a world written as a ``base_snapshot`` file — the world of a B scenario, seeded as a run
seeds it, or of JSONL rows ``{"collection": "pack.collection", "data"}``."""

from __future__ import annotations

from agenttest.errors import InputError, Problem
from agenttest.inputs.formats.b.build import build
from agenttest.inputs.formats.b.worlds import fixture_rows, qualified_world, write_snapshot


def snapshot(source: str, output: str) -> tuple[int, str]:
    """``agent-test snapshot``: the world of a B scenario (seeded as a run seeds it) or of a JSONL file of
    ``{"collection": "pack.collection", "data"}`` lines, written to ``output``; (entities, content digest)."""
    if source.lower().endswith(".jsonl"):
        problems: list[Problem] = []
        world = qualified_world(fixture_rows(source, problems, qualified=True))
        if problems:
            raise InputError(problems)
    else:
        built = build(source)
        if built.case is None:
            raise InputError(built.problems)
        world = built.case.world or {}
    content = write_snapshot(output, world)
    return sum(len(items) for holder in world.values() for items in holder.values()), content
