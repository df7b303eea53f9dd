"""Issue 57, item 5: a two-node Ray cluster on this machine, loopback only — ``ray start --head --node-ip-address
127.0.0.1`` and a second ``ray start --address`` joining it, each node a session of this benchmark's own — runs
2,000 × 50 ms at ``--parallel 50`` through ``--executor ray --ray-address`` (2 actors), next to the local executor
(``--workers 2``) on the same cases, interleaved. The cluster's processes (found by its folder in their command
lines, and their children) are killed by their ids at the end; never ``ray stop``, which stops every Ray of the user.

Where the wall goes, from the server's clock: the start (to the first request: for Ray, joining the cluster and each
actor's process, imports and plan), the cases (the first request to the last answer), the end (the last answer to
the exit: stopping the actors, leaving the cluster, the report); the per-case overhead is the cases' part over
the local executor's, per case. Each node's raylet log says how many worker processes it started for the run:
an actor on each node (one CPU each) is a node that ran cases."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from workloads import make_app, standard_cases, write_cases


def ray_two_node(b: Any) -> None:
    if b.smoke or shutil.which("ray", path=os.path.dirname(sys.executable)) is None:
        return
    n, latency, parallel = 2000, 0.05, 50
    app = tempfile.mkdtemp(prefix="agt-ray-app-")  # an app of its own, read in place by the actors (every node on loopback)
    folder = tempfile.mkdtemp(prefix="agtr-", dir="/tmp")  # short: Ray's socket paths are bounded
    make_app(app, b.server.host)
    path = os.path.join(app, "cases.jsonl")
    write_cases(path, standard_cases(n))
    # `ray start` as its CLI, with Ray's turning of a loopback node address into this machine's network address left
    # out (as agent-test's own local Ray does, runner/raycluster.py): every service binds the node address, 127.0.0.1
    ray = [sys.executable, "-c", "import sys; from ray._private import services; services.resolve_ip_for_localhost = lambda host: host; "
           "from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"]
    port = _free_port()
    try:
        began = time.perf_counter()
        _ray([*ray, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--temp-dir", folder, "--num-cpus", "1",
              "--include-dashboard", "false", "--dashboard-host", "127.0.0.1", "--disable-usage-stats"])
        _ray([*ray, "start", "--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"])
        up = time.perf_counter() - began
        from agenttest.runner.raycluster import exposed

        beyond = sorted({a for pid in _ours(folder, port) for a in exposed(pid)})
        if beyond:  # nothing of this machine listens beyond loopback: stopped, not measured
            b.notes.append(f"Ray two-node: not measured — the cluster listened beyond loopback ({', '.join(beyond[:3])}); it was stopped.")
            print(b.notes[-1], flush=True)
            return
        walls: dict[str, list[Any]] = {"local": [], "ray": []}
        phases: dict[str, list[tuple[float, float, float]]] = {"local": [], "ray": []}  # (to the first request, cases, end)
        started: list[list[int]] = []  # worker processes each node started, per Ray run
        flags = {"local": ["--workers", "2"], "ray": ["--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--workers", "2"]}
        for _ in range(b.repeats()):
            for name in walls:
                b.server.configure(latency, 0.1)
                before, began = _workers_started(folder), time.time()
                m = b.measure(_cli() + ["-i", path, "-n", "bot", "--parallel", str(parallel), "--app", app, "-o", os.path.join(app, "r.json"),
                                        *flags[name]])
                walls[name].append(m)
                seen = b.server.stats()
                phases[name].append((seen["first_at"] - began, seen["last_at"] - seen["first_at"], began + m.wall - seen["last_at"]))
                if name == "ray":
                    started.append([after - was for after, was in zip(_workers_started(folder), before)])
        local, on_ray = (sorted(walls[k], key=lambda m: m.wall)[len(walls[k]) // 2] for k in ("local", "ray"))
        ratio = on_ray.wall / local.wall
        b.row(f"{n} standard, 50 ms, --parallel {parallel}, local executor --workers 2 (median of {b.repeats()})", local, n,
              n * latency / parallel + b.startup, "—", "(its bar)", None)
        b.row(f"  the same on a two-node Ray cluster (loopback; --executor ray --workers 2): ÷ local {ratio:.2f}", on_ray, n, local.wall, "—",
              "≤ 1.3 × the local executor", ratio <= 1.3)
        first, cases, end = ({k: statistics.median(p[i] for p in phases[k]) for k in phases} for i in range(3))
        nodes = ", ".join("+".join(str(c) for c in run) for run in started)
        b.notes.append(f"Ray two-node: both nodes up in {up:.1f} s (`ray start --head --node-ip-address 127.0.0.1` and `ray start --address`, "
                       f"one CPU each, outside the runs measured); per case over the local executor: {(on_ray.wall - local.wall) / n * 1000:+.2f} ms "
                       f"of wall. Medians, Ray | local: to the first request {first['ray']:.2f} | {first['local']:.2f} s, the cases (first request "
                       f"to last answer) {cases['ray']:.2f} | {cases['local']:.2f} s ({(cases['ray'] - cases['local']) / n * 1000:+.2f} ms a case), "
                       f"the end (last answer to exit) {end['ray']:.2f} | {end['local']:.2f} s. Worker processes started by the head + "
                       f"second node in each Ray run: {nodes} (an actor on each node: both ran cases).")
        print(b.notes[-1], flush=True)
    finally:
        _kill_cluster(folder, port)
        shutil.rmtree(app, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


def _workers_started(folder: str) -> list[int]:
    """How many worker processes each node's raylet has started so far (head first), from its log in the cluster's folder."""
    logs = os.path.join(folder, "session_latest", "logs")
    counts = []
    for name in ("raylet.out", "raylet.1.out"):
        try:
            with open(os.path.join(logs, name), errors="replace") as fh:
                counts.append(sum("Started worker process" in line for line in fh))
        except OSError:
            counts.append(0)
    return counts


def _cli() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "agent-test")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "agenttest"]


def _ray(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_cluster(folder: str, port: int) -> None:
    """Every process of the cluster (``_ours``), by id: SIGTERM, then SIGKILL."""
    ours = _ours(folder, port)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in ours:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(2)


def _ours(folder: str, port: int) -> set[int]:
    """Every process whose command line names the cluster's folder or its GCS address, and their descendants."""
    parents: dict[int, int] = {}
    ours: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().decode(errors="replace")
            with open(f"/proc/{entry}/stat") as fh:
                parents[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if folder in cmdline or f"127.0.0.1:{port}" in cmdline:
            ours.add(int(entry))
    ours.discard(os.getpid())
    grown = True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in ours and pid not in ours}
        ours |= more
        grown = bool(more)
    return ours
