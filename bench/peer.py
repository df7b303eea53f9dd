"""``python -m bench --peer promptfoo``: the same workloads through promptfoo and agent-test, side by side
against the same loopback server, runs interleaved. Skipped with a note when promptfoo is not installed;
never run in CI. Install (bench/RESULTS.md): Node 20.20+ (``apt-get install nodejs``), then
``npm install -g promptfoo@0.121.20`` (0.122 and later need Node 22.22+: ``npm install -g promptfoo``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

from workloads import HISTORY, NEEDLE, standard_cases

# (cases, latency, concurrency, in-flight limit of the endpoint or 0) — the measurements
WORKLOADS = [(200, 0.05, 20, 0), (1000, 0.2, 100, 0), (200, 0.1, 20, 4)]


def promptfoo() -> list[str] | None:
    """How to run promptfoo here: ``$PROMPTFOO`` (a path), else ``promptfoo`` on the PATH."""
    exe = os.environ.get("PROMPTFOO") or shutil.which("promptfoo")
    return [exe] if exe and os.path.exists(exe) else None


def version(cmd: list[str]) -> str:
    proc = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=120, env=_env())
    return (proc.stdout.strip().splitlines() or ["?"])[-1] if proc.returncode == 0 else ""


def _env() -> dict[str, str]:
    return {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1", "NO_COLOR": "1",
            "PROMPTFOO_DISABLE_SHARING": "1", "OPENAI_API_KEY": "bench-key"}


def config(b: Any, n: int, name: str) -> str:
    """A promptfoo config with the same conversation and assertion as agent-test's standard cases."""
    system = [{"role": "system", "content": "You are the agent under test."}]
    prompt = json.dumps(system + HISTORY + [{"role": "user", "content": "Yes, confirm #{{ i }}"}])
    data = {
        "description": f"agent-test bench: {name}",
        "prompts": [{"id": "chat", "raw": prompt}],
        "providers": [{"id": "openai:chat:bench-model", "config": {"apiBaseUrl": b.server.url, "apiKey": "bench-key"}}],
        "tests": [{"vars": {"i": i}, "assert": [{"type": "contains", "value": NEEDLE}]} for i in range(n)],
    }
    path = os.path.join(b.tmp, f"promptfoo-{name}.json")
    with open(path, "w") as fh:
        json.dump(data, fh)
    return path


def run_promptfoo(b: Any, cmd: list[str], path: str, concurrency: int) -> tuple[Any, dict[str, int]]:
    out = os.path.join(b.tmp, "promptfoo-out.json")
    home = os.path.join(b.tmp, "promptfoo-home")
    os.makedirs(home, exist_ok=True)
    os.environ["PROMPTFOO_CONFIG_DIR"] = home  # its database and cache stay in the throwaway folder
    m = b.measure([*cmd, "eval", "-c", path, "--max-concurrency", str(concurrency), "--no-cache", "--no-progress-bar", "--no-table",
                   "--no-write", "-o", out], ok=(0, 1, 100))
    with open(out) as fh:
        stats = json.load(fh).get("results", {}).get("stats", {})
    return m, {k: int(stats.get(k, 0)) for k in ("successes", "failures", "errors")}


def compare(b: Any) -> None:
    """Each workload: agent-test then promptfoo, interleaved, medians; rows for both."""
    cmd = promptfoo()
    if cmd is None:
        b.notes.append("promptfoo is not installed (no `promptfoo` on the PATH and no $PROMPTFOO): the peer was skipped. "
                       "Install it with Node 20.20+ as `npm install -g promptfoo@0.121.20` (or Node 22.22+ and `npm install -g promptfoo`).")
        print(b.notes[-1], flush=True)
        return
    b.start_up()
    startup = peer_start_up(b, cmd)
    b.notes.append(f"Peer: promptfoo {version(cmd)} on Node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}, "
                   "`promptfoo eval --max-concurrency N --no-cache --no-write`; its provider is `openai:chat` at the same server.")
    for n, latency, concurrency, limit in WORKLOADS:
        n = b.size(n)
        name = f"{n}-{int(latency * 1000)}ms-{concurrency}" + (f"-limit{limit}" if limit else "")
        cases = b.cases(f"peer-{name}", standard_cases(n))
        pf_config = config(b, n, name)
        ours, theirs = [], []
        for _ in range(b.repeats()):
            b.server.configure(latency, 0.1, limit=limit, retry_after="1")
            report = os.path.join(b.tmp, "peer-report.json")
            m = b.invoke(["-i", cases, "-n", "bot", "--parallel", str(concurrency), "-o", report])
            with open(report) as fh:
                s = json.load(fh)["summary"]
            ours.append((m, s["passed"], s["errors"] + s["timeouts"] + s["failed"]))
            b.server.configure(latency, 0.1, limit=limit, retry_after="1")
            pm, stats = run_promptfoo(b, cmd, pf_config, concurrency)
            theirs.append((pm, stats["successes"], stats["failures"] + stats["errors"]))
        ideal = n * latency / (min(concurrency, limit) if limit else concurrency)
        what = f"{n} × {latency * 1000:.0f} ms, concurrency {concurrency}" + (f", {limit} in flight allowed (429 beyond)" if limit else "")
        for who, runs, own_startup in (("agent-test", ours, b.startup), ("promptfoo", theirs, startup)):
            m, passed, lost = sorted(runs, key=lambda r: r[0].wall)[len(runs) // 2]
            b.row(f"{who}: {what}: {passed} passed, {lost} not", m, n, ideal + own_startup, "—", "(side by side)", None)


def peer_start_up(b: Any, cmd: list[str]) -> float:
    """promptfoo's own start-up: one test at 0 ms, best of a few (its ideals add it, as agent-test's add its own)."""
    path = config(b, 1, "start-up")
    b.server.configure(0.0, 0.0)
    best = min((run_promptfoo(b, cmd, path, 1) for _ in range(1 if b.smoke else 3)), key=lambda r: r[0].wall)[0]
    b.row("  promptfoo: 1 test, 0 ms (best of 3)", best, 1, None, 1, "(its ideals)", None)
    return best.wall
