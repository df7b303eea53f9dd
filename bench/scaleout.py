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


def workers_pay(b: Any) -> None:
    """Issue 57, item 4: a CPU-bound workload (each case one tool call doing ~20 ms of Python, on the mock
    connector) with ``--workers 2`` against ``--workers 1``, and an I/O-bound one (200 × 50 ms at 20) with
    ``--workers 1`` and ``2`` against ``--workers 0``; the variants interleaved, medians."""
    n = b.size(400)
    cpu = b.cases(f"cpu{n}", standard_cases(n))
    walls: dict[str, list[Any]] = {"1": [], "2": []}
    for _ in range(b.repeats()):
        for workers in walls:
            walls[workers].append(b.agent_test(cpu, 0.0, 20, "--workers", workers, agent="cpubot")[0])
    one, two = (sorted(walls[w], key=lambda m: m.wall)[len(walls[w]) // 2] for w in ("1", "2"))
    _row(b, f"{n} cases × a 20 ms Python tool (CPU-bound), --parallel 20, --workers 1 (median of {b.repeats()})", f"{one.wall:.2f} s",
         "—", "—", f"{one.cpu / n * 1000:.2f} ms", "", None)
    _row(b, "  the same with --workers 2 (speed-up in ratio)", f"{two.wall:.2f} s", f"{one.wall:.2f} s", f"{one.wall / two.wall:.2f}x",
         f"{two.cpu / n * 1000:.2f} ms", "≥ 1.6x on 2 cores", one.wall / two.wall >= 1.6)
    n = b.size(200)
    io = b.cases(f"io{n}", standard_cases(n))
    runs: dict[str, list[Any]] = {"0": [], "1": [], "2": []}
    for _ in range(b.repeats()):
        for workers in runs:
            runs[workers].append(b.agent_test(io, 0.05, 20, "--workers", workers)[0])
    med = {w: sorted(r, key=lambda m: m.wall)[len(r) // 2] for w, r in runs.items()}
    _row(b, f"{n} standard, 50 ms, --parallel 20 (I/O-bound), --workers 0 (median of {b.repeats()})", f"{med['0'].wall:.2f} s", "—", "—",
         f"{med['0'].cpu / n * 1000:.2f} ms", "(its ideal)", None)
    for w in ("1", "2"):
        ratio = med[w].wall / med["0"].wall
        _row(b, f"  the same with --workers {w} (÷ --workers 0)", f"{med[w].wall:.2f} s", f"{med['0'].wall:.2f} s", f"{ratio:.2f}",
             f"{med[w].cpu / n * 1000:.2f} ms", "≤ 1.05 × --workers 0", ratio <= 1.05)


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
    return {"workers_start_up": lambda: start_up(b), "workers_speed_up": lambda: speed_up(b), "workers_pay": lambda: workers_pay(b),
            "ray_overhead": lambda: ray_overhead(b)}
