"""Restoring a B world from ``base_snapshot`` against seeding it from ``from_file`` (docs/formats-b.md).

``python -m bench.snapshots [--entities N] [--repeat K]`` writes a world of N entities (orders, customers,
products of the shop pack) as JSONL rows, as a scenario that seeds it with ``from_file`` and as one that restores
it from a snapshot ``agent-test snapshot`` wrote, then loads each scenario K times the way a run does
(``inputs.formats.b.build``: read, check, seed, hash for the identity) and prints the median CPU time of each and
their ratio. ``--smoke`` runs it at a tiny size (the test suite does, so the harness cannot rot)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

SCENARIO = """\
meta: {{name: big, schema_version: "1.0"}}
task: {{prompt: "count the orders"}}
world:
{world}
tools: [shop]
assertions:
  - id: loaded
    expr: size(world.shop.orders) > 0
"""


def rows(count: int) -> list[str]:
    """``count`` entities as JSONL rows of the shop pack's collections (qualified for the snapshot)."""
    out = []
    for i in range(1, count + 1):
        kind = ("orders", "customers", "products")[i % 3]
        data = {"id": i, "status": "paid", "total": i * 1.5, "customer_id": i % 997, "note": f"entity {i} of the bench world"}
        out.append(json.dumps({"collection": kind, "data": data}))
    return out


def prepare(folder: str, count: int) -> tuple[str, str]:
    """The two scenarios, seeding and restoring the same world."""
    from agenttest.inputs.formats.b.snapshots import snapshot

    lines = rows(count)
    with open(os.path.join(folder, "rows.jsonl"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "qualified.jsonl"), "w") as fh:
        fh.write("\n".join(line.replace('"collection": "', '"collection": "shop.', 1) for line in lines) + "\n")
    snapshot(os.path.join(folder, "qualified.jsonl"), os.path.join(folder, "base.sqlite"))
    seeded, restored = os.path.join(folder, "seeded.yaml"), os.path.join(folder, "restored.yaml")
    with open(seeded, "w") as fh:
        fh.write(SCENARIO.format(world="  shop:\n    from_file: rows.jsonl"))
    with open(restored, "w") as fh:
        fh.write(SCENARIO.format(world="  base_snapshot: base.sqlite"))
    return seeded, restored


def timed(path: str, repeat: int) -> float:
    from agenttest.inputs.formats.b.build import build

    times = []
    for _ in range(repeat):
        start = time.process_time()  # CPU time: on a shared machine, wall time measures the neighbours
        built = build(path)
        times.append(time.process_time() - start)
        assert built.case is not None, built.problems
    return statistics.median(times)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(prog="python -m bench.snapshots")
    parser.add_argument("--entities", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a tiny size, once")
    args = parser.parse_args(argv)
    count, repeat = (300, 1) if args.smoke else (args.entities, args.repeat)
    with tempfile.TemporaryDirectory(prefix="agent-test-bench-") as folder:
        seeded, restored = prepare(folder, count)
        timed(restored, 1)  # the CEL parser and the packs, once per process: paid by neither figure
        seed_s, restore_s = timed(seeded, repeat), timed(restored, repeat)
    figures = {"entities": count, "seed_s": seed_s, "restore_s": restore_s, "ratio": restore_s / seed_s if seed_s else 0.0}
    print(f"{count:,} entities, CPU seconds, median of {repeat}: from_file {seed_s:.3f} s, base_snapshot {restore_s:.3f} s "
          f"({figures['ratio']:.2f} × seeding, {seed_s / restore_s if restore_s else 0:.1f}× faster)")
    return figures


if __name__ == "__main__":
    main()
