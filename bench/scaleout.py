"""Controller and workers (FORMATS §15): start-up to the first request with the default worker process
next to the cases run in the controller itself (``--workers 0``, the round-2 model); 2,000 single-call
cases at 0 ms with ``--workers 1`` and ``--workers 2`` (the ratio is the speed-up); and the cost per case of
Ray actors next to local workers, as the slope between two suite sizes (so Ray's own start-up, a local
cluster of its own each run, cancels out). The Ray rows need the ``ray`` extra and are skipped by --smoke."""

from __future__ import annotations

import importlib.util
from typing import Any

from load import _command, _to_first_request
from workloads import standard_cases


def _row(b: Any, name: str, wall: str, ideal: str, ratio: str, cpu: str, target: str, met: bool | None) -> None:
    b.rows.append({"workload": name, "wall": wall, "ideal": ideal, "ratio": ratio, "cpu/case": cpu, "peak in-flight": "—",
                   "peak RSS": "—", "target": target, "met": "—" if b.smoke or met is None else ("yes" if met else "NO")})
    print("  ".join(f"{k}={v}" for k, v in b.rows[-1].items()), flush=True)


def start_up(b: Any) -> None:
    """The worker model's start-up against the cases in the controller's own process."""
    path = b.cases("first-w", standard_cases(1))
    worker, inline = _to_first_request(b, _command(path), _command(path) + ["--workers", "0"])
    _row(b, "start-up to the first request, one worker process (best of 5)", f"{worker:.3f} s", f"{inline:.3f} s",
         f"{worker - inline:+.3f} s", "—", "≤ in-process + 0.05 s", worker <= inline + 0.05)
    _row(b, "  the same in the controller's process (--workers 0)", f"{inline:.3f} s", "—", "—", "—", "(its ideal)", None)


def speed_up(b: Any) -> None:
    """2,000 single-call cases at 0 ms: two workers on two cores against one."""
    n = b.size(2000)
    path = b.cases(f"w{n}", standard_cases(n))
    one, _ = b.median(lambda: b.agent_test(path, 0.0, 20, "--workers", "1", jitter=0.0))
    two, peak = b.median(lambda: b.agent_test(path, 0.0, 20, "--workers", "2", jitter=0.0))
    _row(b, f"{n} standard, 0 ms, --parallel 20, --workers 1 (median of {b.repeats()})", f"{one.wall:.2f} s", "—", "—",
         f"{one.cpu / n * 1000:.2f} ms", "", None)
    _row(b, "  the same with --workers 2 (speed-up in ratio)", f"{two.wall:.2f} s", f"{one.wall:.2f} s", f"{one.wall / two.wall:.2f}x",
         f"{two.cpu / n * 1000:.2f} ms", "≥ 1.6x on 2 cores", one.wall / two.wall >= 1.6)


def ray_overhead(b: Any) -> None:
    """Ray actors against local workers: the wall time each case adds (the slope between 100 and 400 cases)."""
    if b.smoke or importlib.util.find_spec("ray") is None:
        return
    small, big = 100, 400
    paths = {n: b.cases(f"ray{n}", standard_cases(n)) for n in (small, big)}
    walls: dict[str, dict[int, float]] = {}
    for name, flags in (("local", ["--workers", "2"]), ("ray", ["--executor", "ray", "--workers", "2"])):
        walls[name] = {n: b.agent_test(paths[n], 0.0, 20, *flags, jitter=0.0)[0].wall for n in (small, big)}
    slope = {name: (w[big] - w[small]) / (big - small) * 1000 for name, w in walls.items()}
    _row(b, f"Ray actors vs local workers: wall per case ({small}→{big} cases, 0 ms, 2 workers)", f"{walls['ray'][big]:.2f} s",
         f"{walls['local'][big]:.2f} s", f"{slope['ray'] - slope['local']:+.2f} ms/case", f"ray {slope['ray']:.2f}, local {slope['local']:.2f} ms",
         "(reported)", None)
    b.notes.append(f"Ray's own start-up (a local cluster each run, in the wall of the Ray rows): "
                   f"{walls['ray'][small] - walls['local'][small] - small * (slope['ray'] - slope['local']) / 1000:.1f} s.")


def workloads(b: Any) -> dict[str, Any]:
    return {"workers_start_up": lambda: start_up(b), "workers_speed_up": lambda: speed_up(b), "ray_overhead": lambda: ray_overhead(b)}
