"""The load workloads (issue 19): a rate-limited endpoint (429 beyond R requests in flight), 1,000 ×
200 ms at ``--parallel 200`` next to the SDK alone, 100,000 cases on the mock connector (peak memory,
the JSON report streamed), and start-up to the first request with where its time goes (``-X importtime``)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from workloads import standard_cases, write_standard


class Measure:
    """A wall time alone (a phase measured at the server), shaped as the harness's Measure for its row."""

    def __init__(self, wall: float):
        self.wall, self.cpu, self.rss_mb, self.code = wall, 0.0, 0.0, 0


def rate_limited(b: Any) -> None:
    """600 cases at --parallel 50 through an endpoint that allows R in flight: wall against the limit's
    ideal (N × latency / R), and every case must pass (none lost to a 429)."""
    n, latency, limit, parallel = b.size(600), 0.1, 8, 50
    path = b.cases("rate-limited", standard_cases(n))
    out = os.path.join(b.tmp, "rate-limited.json")

    def once() -> tuple[Any, int]:
        b.server.configure(latency, 0.1, limit=limit, retry_after="1")
        return b.invoke(["-i", path, "-n", "bot", "--parallel", str(parallel), "-o", out]), b.server.peak_in_flight

    m, peak = b.median(once)
    with open(out) as fh:
        summary = json.load(fh)["summary"]
    lost = summary["errors"] + summary["timeouts"] + summary["failed"]
    absorbed = summary.get("load", {}).get("absorbed", 0)
    ideal = n * latency / limit + b.startup
    b.row(f"{n} standard, {latency * 1000:.0f} ms, {limit} in flight allowed (429 + Retry-After beyond), --parallel {parallel}: "
          f"{lost} lost, {absorbed} × 429 absorbed", m, n, ideal, peak, "0 lost; ≤ 1.3 × ideal", lost == 0 and m.wall <= 1.3 * ideal)


def rate_limited_ms(b: Any) -> None:
    """Issue 57's stub: 200 × 100 ms at --parallel 20 through an endpoint that takes 4 in flight and answers the
    rest with 429, ``Retry-After: 1`` and ``retry-after-ms: 100`` (OpenAI sends both). Every case must pass, within
    1.15 × the limit's ideal (N × latency / 4 plus start-up); the row says the concurrency the throttle found and the
    429s it took, and a note shows its limit over the run (the report's ``summary.load`` timeline)."""
    n, latency, limit, parallel = b.size(200), 0.1, 4, 20
    path = b.cases("rate-limited-ms", standard_cases(n))
    out = os.path.join(b.tmp, "rate-limited-ms.json")

    def once() -> tuple[Any, tuple[dict, float]]:
        b.server.configure(latency, 0.1, limit=limit, retry_after="1", retry_after_ms="100")
        m = b.invoke(["-i", path, "-n", "bot", "--parallel", str(parallel), "-o", out])
        stats = b.server.stats()
        with open(out) as fh:
            return m, (json.load(fh)["summary"], stats["last_at"] - stats["first_at"])

    m, (summary, phase) = b.median(once)
    lost = summary["errors"] + summary["timeouts"] + summary["failed"]
    load = summary.get("load", {})
    conn = next(iter(load.get("connectors", {}).values()), {})
    ideal = n * latency / limit + b.startup
    b.row(f"{n} standard, {latency * 1000:.0f} ms, {limit} in flight allowed (429, Retry-After: 1, retry-after-ms: 100), --parallel {parallel}: "
          f"{lost} lost, {load.get('rate_limited', 0)} × 429, concurrency found {conn.get('found', '?')}", m, n, ideal, conn.get("peak_in_flight", "—"),
          "0 lost; ≤ 1.15 × ideal", lost == 0 and m.wall <= 1.15 * ideal)
    work = n * latency / limit  # the run phase's ideal: the endpoint busy at its limit from the first request to the last answer
    b.row("  its run phase at the server (first request → last answer; ideal: N × latency / limit)", Measure(phase), n, work, "—",
          "(the throttle alone, start-up aside)", None)
    b.notes.append(f"The throttle's concurrency over the {n} × {latency * 1000:.0f} ms run through {limit} in flight (the median run; "
                   f"seconds from its first request → the limit): {timeline_text(conn.get('timeline', []))}.")
    print(b.notes[-1], flush=True)


def timeline_text(points: list[list[float]], most: int = 40) -> str:
    """``0.00 s 20 → 0.11 s 4 → …``: the limit's changes, the first ``most`` and the last few when there are more."""
    said = [f"{t:.2f} s {level}" for t, level in points]
    if len(said) > most:
        said = said[:most - 5] + [f"… ({len(said) - most} more)"] + said[-5:]
    return " → ".join(said) or "no change"


def wide(b: Any) -> None:
    """1,000 × 200 ms at --parallel 200, next to the SDK alone (``chat.completions.create``, as its users
    write it) on the same server, the runs interleaved so that both see the same machine. At this width
    both are CPU-bound on two cores (~2 ms of CPU a call), so the SDK alone, not N × latency / parallel,
    is the bar."""
    n, latency, parallel = b.size(1000), 0.2, 200
    path = b.cases(f"wide{n}", standard_cases(n))
    ours, theirs = [], []
    for _ in range(b.repeats()):
        ours.append(b.agent_test(path, latency, parallel))
        theirs.append(b.sdk(n, latency, parallel, "create"))
    (m, peak), (sdk, sdk_peak) = (sorted(runs, key=lambda r: r[0].wall)[len(runs) // 2] for runs in (ours, theirs))
    b.row(f"{n} standard, 200 ms, --parallel {parallel} (median of {b.repeats()})", m, n, n * latency / parallel + b.startup, peak,
          "≤ 1.10 × the SDK alone", m.wall <= 1.1 * sdk.wall)
    b.row("  openai SDK alone (create), same workload, runs interleaved", sdk, n, n * latency / parallel + b.sdk_startup, sdk_peak,
          "(peer, same run)", None)


def mock_10k(b: Any) -> None:
    """10,000 cases on the mock connector, the default workers: the runner's own cost, no network. With
    ``--against TREE`` (another agent-test source tree, e.g. a git worktree of round 1's commit 36027b7) the
    same run through that tree, interleaved, medians of three: the ratio is the regression or the gain."""
    n = b.size(10_000)
    path = b.cases("mock10k", standard_cases(n))
    args = ["-i", path, "-n", "mockbot", "--parallel", "20", "-o", os.path.join(b.tmp, "mock10k.json")]
    ours: list[Any] = []
    theirs: list[Any] = []
    for _ in range(b.repeats()):
        ours.append(b.invoke([*args, *own_history(b, "ours")]))
        if b.against:
            theirs.append(b.measure([sys.executable, "-m", "agenttest", *args, *own_history(b, "against", b.against)], env={"PYTHONPATH": b.against}))
    m = sorted(ours, key=lambda r: r.wall)[len(ours) // 2]
    if not theirs:
        b.row(f"{n} standard on the mock connector (median of {b.repeats()})", m, n, None, 0, "", None)
        return
    other = sorted(theirs, key=lambda r: r.wall)[len(theirs) // 2]
    ratio = m.wall / other.wall
    b.row(f"{n} standard on the mock connector (median of {b.repeats()})", m, n, other.wall, 0,
          f"÷ {os.path.basename(b.against.rstrip('/'))}: {ratio:.2f} (≤ 1.00)", ratio <= 1.0)
    b.row(f"  the same through {b.against}", other, n, None, 0, "(the tree compared, same run)", None)


def own_history(b: Any, name: str, tree: str | None = None) -> list[str]:
    """``--history`` in a file of each tree's own: sharing the app's, the older tree met a history written by a newer
    agent-test (a schema it does not know), said so and recorded nothing — a run's history (~0.15 s of CPU at 10,000
    cases) paid by one side only. A tree older than ``--history`` records none (round 1's had no history)."""
    if tree is not None:
        try:
            with open(os.path.join(tree, "agenttest", "cli.py"), encoding="utf-8") as fh:
                if '"--history"' not in fh.read():
                    return []
        except OSError:
            return []
    return ["--history", os.path.join(b.tmp, f"history-{name}.sqlite")]


def huge_mock(b: Any) -> None:
    """100,000 cases on the mock connector: no network, the runner and the report alone."""
    n = b.size(100_000)
    path = b.cases("huge", standard_cases(n))
    out = os.path.join(b.tmp, "huge.json")
    m = b.invoke(["-i", path, "-n", "mockbot", "--parallel", "20", "-o", out])
    size = os.path.getsize(out) / 2**20
    b.row(f"{n} standard on the mock connector, --parallel 20 (memory; a {size:.0f} MB JSON report)", m, n, None, 0, "≤ 300 MB",
          m.rss_mb <= 300)


def million(b: Any) -> None:
    """Issue 57: N mock cases (``--cases``, a million by default) run to the end streamed — the case file read as the
    cases run, the results spooled to disk — with JSON, JSONL and JUnit reports: wall, CPU, peak memory (< 1 GB), and
    that every report was written whole (its last part read back, not the whole file). ``--smoke``: 200 cases, streamed
    all the same (AGENTTEST_STREAM_OVER=100). `--workers 0`: a streamed run runs its cases in its own process."""
    n = 200 if b.smoke else b.cases_n
    path = os.path.join(b.tmp, f"million{n}.jsonl")
    write_standard(path, n)
    outs = [os.path.join(b.tmp, f"million.{ext}") for ext in ("json", "jsonl", "xml")]
    env = {"AGENTTEST_STREAM_OVER": "100"} if b.smoke else {}
    m = b.measure([*_cli(), "-i", path, "-n", "mockbot", "--parallel", "20", "--workers", "0", "-q", *(a for o in outs for a in ("-o", o))], env=env)
    written = [_whole(o, n) for o in outs]
    if all(written):
        b.million_report = (outs[0], n)  # the viewer's paged row opens this report when it runs later in the same bench
    said = ", ".join(f"{os.path.basename(o)} {os.path.getsize(o) / 2**20:.0f} MB" if ok else f"{os.path.basename(o)} NOT WHOLE"
                     for o, ok in zip(outs, written))
    b.row(f"{n} standard on the mock connector, streamed, --parallel 20 (memory; {said})", m, n, None, 0, "< 1 GB, every report whole",
          m.rss_mb < 1024 and all(written))


def _cli() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "agent-test")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "agenttest"]


def _whole(path: str, n: int) -> bool:
    """Whether a report of ``n`` results was written to its end: its last bytes read back (the JSONL's summary line,
    the JSON's closing metadata, JUnit's closing tag and count)."""
    if not os.path.exists(path):
        return False
    with open(path, "rb") as fh:
        head = fh.read(4096).decode("utf-8", "replace")
        fh.seek(max(0, os.path.getsize(path) - 65536))
        tail = fh.read().decode("utf-8", "replace")
    if path.endswith(".jsonl"):
        return json.loads(tail.rstrip("\n").rsplit("\n", 1)[-1])["summary"]["total"] == n
    if path.endswith(".json"):
        return f'"total": {n},' in head and tail.rstrip().endswith("}") and '"metadata"' in tail
    return f'tests="{n}"' in head and tail.rstrip().endswith("</testsuites>")


def first_request(b: Any) -> None:
    """From spawning to the first request reaching the server, next to the SDK alone sending one request (issue 57:
    ≤ 0.85 × the SDK alone's, same run), the commands interleaved, medians of 7 (with ``--against TREE``, that tree's
    too); then where agent-test's start-up goes. Its first requests leave while the SDK imports (connectors/early.py)."""
    path = b.cases("first", standard_cases(1))
    sdk = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk_alone.py"), b.server.url, "1", "1", "create"]
    cmds = [_command(path), sdk] + ([_command(path)] if b.against else [])
    envs = [None, None] + ([{"PYTHONPATH": b.against}] if b.against else [])
    ours, theirs, *before = _to_first_request(b, *cmds, pick=statistics.median, envs=envs, times=7)
    rows = [("start-up to the first request (median of 7)", ours, f"≤ 0.85 × the SDK alone ({ours / theirs:.2f} ×)", ours <= 0.85 * theirs),
            ("  openai SDK alone: start-up to its request (median of 7)", theirs, "(peer, same run)", None)]
    if before:
        rows.append((f"  the same through {b.against} (median of 7)", before[0], f"(the tree compared: {before[0] / theirs:.2f} × the SDK alone)", None))
    for name, took, target, met in rows:
        b.rows.append({"workload": name, "wall": f"{took:.3f} s", "ideal": "—", "ratio": "—", "cpu/case": "—", "peak in-flight": "—",
                       "peak RSS": "—", "target": target, "met": "—" if b.smoke or met is None else ("yes" if met else "NO")})
        print("  ".join(f"{k}={v}" for k, v in b.rows[-1].items()), flush=True)
    b.notes.append(import_times(path, b.tmp))


def _to_first_request(b: Any, *cmds: list[str], pick: Any = min, envs: list[dict[str, str] | None] | None = None, times: int = 5) -> list[float]:
    """Each command's time from spawning to its first request reaching the server (``pick`` of its runs: the best,
    or the median), the commands run in turn (A B A B …: a machine whose speed drifts from minute to minute drifts
    for both); ``envs``: each command's extra environment variables."""
    took: list[list[float]] = [[] for _ in cmds]
    for _ in range(1 if b.smoke else times):
        for i, cmd in enumerate(cmds):
            b.server.configure(0.0, 0.0)
            extra = (envs or [None] * len(cmds))[i] or {}
            spawned = time.time()
            subprocess.run(cmd, cwd=b.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env={**os.environ, **extra})
            first = float(b.server.stats()["first_at"])
            took[i].append(first - spawned if first else float("inf"))
    return [pick(t) for t in took]


def _command(path: str, *python: str) -> list[str]:
    return [sys.executable, *python, "-m", "agenttest", "-i", path, "-n", "bot", "-o", os.path.join(os.path.dirname(path), "first.json")]


def import_times(path: str, cwd: str, top: int = 8) -> str:
    """Where start-up goes: the slowest imports of a real one-case run (``python -X importtime``)."""
    proc = subprocess.run(_command(path, "-X", "importtime"), cwd=cwd, capture_output=True, text=True, check=False)
    packages: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        parts = line[len("import time:"):].split("|") if line.startswith("import time:") else []
        if len(parts) == 3 and parts[1].strip().isdigit() and parts[2].startswith(" ") and not parts[2].startswith("  "):
            name = parts[2].strip().split(".")[0]  # imported at the top level: cumulative times do not overlap
            packages[name] = packages.get(name, 0) + int(parts[1])
    total = sum(packages.values())
    heavy = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    listed = ", ".join(f"{name} {us / 1000:.0f} ms" for name, us in heavy)
    return f"Imports of a one-case run (`-X importtime`, top-level, cumulative): {total / 1000:.0f} ms in all; {listed}."
