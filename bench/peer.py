"""``python -m bench --peer promptfoo`` (or ``inspect``, or ``all``): the same workloads through agent-test,
the openai SDK alone on the same transport, and each peer that is installed, side by side against the same
loopback server, runs interleaved. A peer that is not installed is skipped with a note; never run in CI.
Install (bench/RESULTS.md): promptfoo with Node 20.20+ (``apt-get install nodejs``), then
``npm install -g promptfoo@0.121.20`` (0.122 and later need Node 22.22+: ``npm install -g promptfoo``);
Inspect AI in a virtual environment of its own: ``pip install inspect-ai openai``, then ``$INSPECT`` its
``bin/inspect`` (or ``inspect`` on the PATH)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from typing import Any

from workloads import HISTORY, NEEDLE, standard_cases

# (cases, latency, concurrency, in-flight limit of the endpoint or 0) — the measurements
WORKLOADS = [(200, 0.05, 20, 0), (2000, 0.0, 50, 0), (1000, 0.2, 100, 0), (200, 0.1, 20, 4)]
# issue 30's and 57's bars: promptfoo's wall ÷ agent-test's at least this; agent-test within 1.10 × the SDK
# alone; the rate-limited run within 1.15 × its ideal. The endpoint's limit answers 429 with issue 57's headers:
# ``Retry-After: 1`` and ``retry-after-ms: 100`` (the second is honoured first).
PROMPTFOO_BAR = {(200, 0.05, 20, 0): 3.0, (2000, 0.0, 50, 0): 5.0, (200, 0.1, 20, 4): 1.6}
SDK_BAR, LIMIT_BAR = 1.10, 1.15
RETRY_AFTER = {"retry_after": "1", "retry_after_ms": "100"}


def promptfoo() -> list[str] | None:
    """How to run promptfoo here: ``$PROMPTFOO`` (a path), else ``promptfoo`` on the PATH."""
    exe = os.environ.get("PROMPTFOO") or shutil.which("promptfoo")
    return [exe] if exe and os.path.exists(exe) else None


def inspect() -> list[str] | None:
    """How to run Inspect AI here: ``$INSPECT`` (its ``bin/inspect``), else ``inspect`` on the PATH."""
    exe = os.environ.get("INSPECT") or shutil.which("inspect")
    return [exe] if exe and os.path.exists(exe) else None


def run_inspect(b: Any, cmd: list[str], n: int, concurrency: int) -> tuple[Any, dict[str, int]]:
    """``inspect eval`` of bench/inspect_task.py (chat completions, not the Responses API), its log read back."""
    logs = os.path.join(b.tmp, "inspect-logs")
    shutil.rmtree(logs, ignore_errors=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("inspect_task.py", "workloads.py"):  # inspect eval takes a task path relative to where it runs
        shutil.copy(os.path.join(here, name), b.tmp)
    env = {"BENCH_CASES": str(n), "OPENAI_API_KEY": "bench-key", "OPENAI_BASE_URL": b.server.url}
    m = b.measure(["env", *(f"{k}={v}" for k, v in env.items()), *cmd, "eval", "inspect_task.py",
                   "--model", "openai/bench-model", "-M", "responses_api=false", "--max-connections", str(concurrency),
                   "--max-retries", "100", "--display", "none", "--log-dir", logs, "--log-format", "json"], ok=(0, 1))
    logged = glob.glob(os.path.join(logs, "*.json"))
    if len(logged) != 1:
        raise SystemExit(f"inspect eval wrote no log in {logs} (exit {m.code})")
    path = logged[0]
    with open(path) as fh:
        results = json.load(fh).get("results") or {}
    done = int(results.get("completed_samples", 0))
    accuracy = next((s["metrics"]["accuracy"]["value"] for s in results.get("scores", []) if "accuracy" in s.get("metrics", {})), 0.0)
    passed = round(done * accuracy)
    return m, {"successes": passed, "failures": n - passed, "errors": 0}


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


def peers(which: str) -> dict[str, list[str]]:
    """The installed peers asked for (``promptfoo``, ``inspect`` or ``all``), by name."""
    found = {"promptfoo": promptfoo() if which in ("promptfoo", "all") else None, "Inspect AI": inspect() if which in ("inspect", "all") else None}
    return {name: cmd for name, cmd in found.items() if cmd is not None}


def compare(b: Any, which: str = "promptfoo") -> None:
    """Each workload: agent-test, the SDK alone (same transport) and each installed peer, interleaved; medians."""
    found = peers(which)
    missing = [name for name in (["promptfoo"] if which in ("promptfoo", "all") else []) + (["Inspect AI"] if which in ("inspect", "all") else [])
               if name not in found]
    for name in missing:
        b.notes.append(f"{name} is not installed: the peer was skipped. "
                       + ("Install it with Node 20.20+ as `npm install -g promptfoo@0.121.20` (or Node 22.22+ and `npm install -g promptfoo`)."
                          if name == "promptfoo" else "Install it in a virtual environment of its own (`pip install inspect-ai openai`) and set $INSPECT to its bin/inspect."))
        print(b.notes[-1], flush=True)
    b.start_up()
    startups = {name: peer_start_up(b, name, cmd) for name, cmd in found.items()}
    if "promptfoo" in found:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        b.notes.append(f"Peer: promptfoo {version(found['promptfoo'])} on Node {node}, `promptfoo eval --max-concurrency N --no-cache --no-write`; "
                       "its provider is `openai:chat` at the same server.")
    if "Inspect AI" in found:
        b.notes.append(f"Peer: Inspect AI {version(found['Inspect AI'])}, `inspect eval bench/inspect_task.py --model openai/bench-model "
                       "-M responses_api=false --max-connections N` (chat completions; its `includes` scorer).")
    for n, latency, concurrency, limit in WORKLOADS:
        n = b.size(n)
        name = f"{n}-{int(latency * 1000)}ms-{concurrency}" + (f"-limit{limit}" if limit else "")
        cases = b.cases(f"peer-{name}", standard_cases(n))
        pf_config = config(b, n, name) if "promptfoo" in found else ""
        auto = f"agent-test --workers auto ({cores()} cores)"
        runs: dict[str, list[tuple[Any, int, int]]] = {"agent-test": [], auto: [], "openai SDK alone": [], **{p: [] for p in found}}
        for _ in range(b.repeats()):
            b.server.configure(latency, 0.1, limit=limit, **RETRY_AFTER)
            report = os.path.join(b.tmp, "peer-report.json")
            m = b.invoke(["-i", cases, "-n", "bot", "--parallel", str(concurrency), "-o", report])
            with open(report) as fh:
                s = json.load(fh)["summary"]
            runs["agent-test"].append((m, s["passed"], s["errors"] + s["timeouts"] + s["failed"]))
            b.server.configure(latency, 0.1, limit=limit, **RETRY_AFTER)  # the same, one worker process per core
            m = b.invoke(["-i", cases, "-n", "bot", "--parallel", str(concurrency), "-o", report, "--workers", "auto"])
            with open(report) as fh:
                s = json.load(fh)["summary"]
            runs[auto].append((m, s["passed"], s["errors"] + s["timeouts"] + s["failed"]))
            if not limit:  # the SDK alone has no throttle: against a rate limit it would only fail
                b.server.configure(latency, 0.1)
                sdk, _ = b.sdk(n, latency, concurrency, "create")
                runs["openai SDK alone"].append((sdk, n, 0))
            for peer, cmd in found.items():
                b.server.configure(latency, 0.1, limit=limit, **RETRY_AFTER)
                pm, stats = run_promptfoo(b, cmd, pf_config, concurrency) if peer == "promptfoo" else run_inspect(b, cmd, n, concurrency)
                runs[peer].append((pm, stats["successes"], stats["failures"] + stats["errors"]))
        ideal = n * latency / (min(concurrency, limit) if limit else concurrency)
        what = f"{n} × {latency * 1000:.0f} ms, concurrency {concurrency}" + (f", {limit} in flight allowed (429 beyond)" if limit else "")
        medians = {who: sorted(r, key=lambda r: r[0].wall)[len(r) // 2] for who, r in runs.items() if r}
        ours = medians["agent-test"][0].wall
        theirs = medians["promptfoo"][0].wall if "promptfoo" in medians else None
        bar = None if b.smoke else PROMPTFOO_BAR.get((n, latency, concurrency, limit))
        for who, (m, passed, lost) in medians.items():
            own = {"agent-test": b.startup, auto: b.startup, "openai SDK alone": b.sdk_startup}.get(who) or startups[who]
            times = m.wall / ours
            target, met = f"its wall ÷ agent-test's: {times:.2f}", None
            if who == "agent-test":
                target = "(side by side)"
                if limit:
                    target, met = f"all pass; ≤ {LIMIT_BAR:.2f} × ideal", lost == 0 and m.wall <= LIMIT_BAR * (ideal + own)
            elif who == auto:  # not the default: the bars are judged on the row above; this one says what the cores give
                target = f"÷ agent-test: {times:.2f}" + (f"; promptfoo ÷ it: {theirs / m.wall:.2f}" if theirs else "")
            elif who == "openai SDK alone":
                target, met = f"agent-test ÷ it: {1 / times:.2f} (≤ {SDK_BAR:.2f})", 1 / times <= SDK_BAR
            elif who == "promptfoo" and bar is not None:
                target, met = f"its wall ÷ agent-test's: {times:.2f} (≥ {bar:g})", times >= bar
            b.row(f"{who}: {what}: {passed} passed, {lost} not", m, n, ideal + own, "—", target, met)


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def peer_start_up(b: Any, name: str, cmd: list[str]) -> float:
    """A peer's own start-up: one test at 0 ms, best of a few (its ideals add it, as agent-test's add its own)."""
    b.server.configure(0.0, 0.0)
    path = config(b, 1, "start-up") if name == "promptfoo" else ""
    once = (lambda: run_promptfoo(b, cmd, path, 1)) if name == "promptfoo" else (lambda: run_inspect(b, cmd, 1, 1))
    best = min((once() for _ in range(1 if b.smoke else 3)), key=lambda r: r[0].wall)[0]
    b.row(f"  {name}: 1 test, 0 ms (best of {1 if b.smoke else 3})", best, 1, None, 1, "(its ideals)", None)
    return best.wall
