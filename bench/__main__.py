"""``python -m bench``: run each workload through the installed CLI as a subprocess, next to the openai
SDK alone on the same server, and print wall time, the ideal, their ratio, CPU per case, peak
in-flight requests and peak memory; and the HTML viewer of a 10,000-case report in headless Chromium. ``--smoke`` runs every workload once at a tiny size;
``--write`` saves the table to bench/RESULTS.md; ``--peer promptfoo`` runs the peer's workloads side
by side with promptfoo when it is installed (bench/peer.py)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import calls  # noqa: E402
import load  # noqa: E402
import raytwo  # noqa: E402
import scaleout  # noqa: E402
import viewer  # noqa: E402
from sdk_alone import transport_name  # noqa: E402
from workloads import dynamic_cases, expected_runs_with_early_stop, flaky_cases, make_app, standard_cases, write_cases  # noqa: E402


class Server:
    """bench/server.py in its own process, so its work does not share a GIL with anything measured."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py"), str(self.port)], stdout=subprocess.PIPE, text=True)
        if self.proc.stdout is None or self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("the benchmark server did not start")
        self.host = f"http://127.0.0.1:{self.port}"
        self.url = self.host + "/v1"

    def call(self, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        with urllib.request.urlopen(urllib.request.Request(self.host + path, data=data, method="POST" if data else "GET")) as r:
            return json.loads(r.read())

    def configure(self, latency: float, jitter: float = 0.1, limit: int = 0, retry_after: str = "1", retry_after_ms: str = "") -> None:
        """Latency (± jitter), and with ``limit`` a 429 with Retry-After (and retry-after-ms, when given) to any
        request beyond it in flight."""
        self.call("/config", {"latency": latency, "jitter": jitter, "limit": limit, "retry_after": retry_after, "retry_after_ms": retry_after_ms})

    def stats(self) -> dict:
        return self.call("/stats")

    @property
    def peak_in_flight(self) -> int:
        return int(self.stats()["peak_in_flight"])

    @property
    def requests(self) -> int:
        return int(self.call("/stats")["requests"])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@dataclass
class Measure:
    wall: float
    cpu: float
    rss_mb: float
    code: int


class Spawner:
    """bench/spawner.py, started before the harness grows: it runs every timed command (see its docstring)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "spawner.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, cmd: list[str], cwd: str, env: dict[str, str]) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"cmd": cmd, "cwd": cwd, "env": env}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


SPAWNER: Spawner | None = None


def run(cmd: list[str], cwd: str, ok: tuple[int, ...] = (0, 1), env: dict[str, str] | None = None) -> Measure:
    """Run a command, returning wall time, user+system CPU and peak RSS of that process."""
    global SPAWNER
    if SPAWNER is None:
        SPAWNER = Spawner()
    got = SPAWNER.run(cmd, cwd, {**os.environ, "NO_COLOR": "1", **(env or {})})
    if got["code"] not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {got['code']}:\n{got['tail']}")
    return Measure(got["wall"], got["cpu"], got["rss_mb"], got["code"])


def _compiled(package: str) -> None:
    """The package's bytecode written, as pip writes it for an installed package: an editable install run
    with PYTHONDONTWRITEBYTECODE=1 (some CI images set it) would compile every module on every start-up."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)
    # and the compiled dataclass methods agenttest keeps beside its bytecode (agenttest/speed/classcache.py),
    # which a first run writes unless PYTHONDONTWRITEBYTECODE is set
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", WARM], env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# every module a run imports, so that the kept dataclass methods (and the fast __init__ of the hot classes) cover them all
WARM = ("import importlib, pkgutil, agenttest\n"
        "from agenttest import speed\n"
        "speed.install()  # as the command does: the kept methods are written by the speed machinery\n"
        "for m in pkgutil.walk_packages(agenttest.__path__, 'agenttest.'):\n"
        "    try:\n        importlib.import_module(m.name)\n    except Exception:\n        pass\n")


def cli() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "agent-test")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "agenttest"]


class Bench:
    def __init__(self, smoke: bool, against: str | None = None):
        self.smoke = smoke
        self.against = against  # another agent-test source tree to run the mock workload through
        if against:
            import compileall

            compileall.compile_dir(os.path.join(against, "agenttest"), quiet=1)
        self.tmp = tempfile.mkdtemp(prefix="agent-test-bench-")
        _compiled("agenttest")
        self.server = Server()
        make_app(self.tmp, self.server.host)
        self.rows: list[dict[str, str]] = []
        self.notes: list[str] = []  # printed and written after the table
        self.startup = self.sdk_startup = 0.0

    cases_n = 1_000_000  # the million workload's size (--cases)

    def size(self, n: int) -> int:
        return max(2, n // 200) if self.smoke else n

    def cases(self, name: str, cases: list[dict]) -> str:
        path = os.path.join(self.tmp, f"{name}.jsonl")
        write_cases(path, cases)
        return path

    def repeats(self) -> int:
        return 1 if self.smoke else 3

    def invoke(self, args: list[str]) -> Measure:
        """agent-test with these arguments, in the benchmark app."""
        return run(cli() + args, self.tmp)

    def measure(self, cmd: list[str], ok: tuple[int, ...] = (0, 1), env: dict[str, str] | None = None) -> Measure:
        """Any command (a peer, another tree), in the benchmark app's folder."""
        return run(cmd, self.tmp, ok, env)

    def agent_test(self, path: str, latency: float, parallel: int, *extra: str, agent: str = "bot", jitter: float = 0.1) -> tuple[Measure, int]:
        self.server.configure(latency, jitter)
        m = run(cli() + ["-i", path, "-n", agent, "--parallel", str(parallel), "-o", os.path.join(self.tmp, "report.json"), *extra], self.tmp)
        return m, self.server.peak_in_flight

    def median(self, measure) -> tuple[Measure, int]:
        """The run with the median wall time of a few (noise on a shared 2-core machine is real)."""
        runs = sorted((measure() for _ in range(self.repeats())), key=lambda r: r[0].wall)
        return runs[len(runs) // 2]

    def sdk(self, n: int, latency: float, parallel: int, how: str, jitter: float = 0.1) -> tuple[Measure, int]:
        self.server.configure(latency, jitter)
        m = run([sys.executable, os.path.join(HERE, "sdk_alone.py"), self.server.url, str(n), str(parallel), how], self.tmp, ok=(0,))
        return m, self.server.peak_in_flight

    def row(self, name: str, m: Measure, n: int, ideal: float | None, peak: int | str, target: str, met: bool | None) -> None:
        self.rows.append({
            "workload": name, "wall": f"{m.wall:.2f} s", "ideal": f"{ideal:.2f} s" if ideal else "—",
            "ratio": f"{m.wall / ideal:.2f}" if ideal else "—", "cpu/case": f"{m.cpu / n * 1000:.2f} ms",
            "peak in-flight": str(peak), "peak RSS": f"{m.rss_mb:.0f} MB", "target": target,
            "met": "—" if met is None or self.smoke else ("yes" if met else "NO"),
        })
        print("  ".join(f"{k}={v}" for k, v in self.rows[-1].items()), flush=True)

    # -- workloads ------------------------------------------------------------------------------

    def help(self) -> None:
        """--help, --version and --list of 20 cases (issue 57: each < 0.2 s), next to the interpreter alone
        (``python -c pass``), the commands interleaved, medians of 7: on a loaded machine, read the difference."""
        listed = self.cases("listed", standard_cases(20))
        cmds = {"python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"], "agent-test --help": cli() + ["--help"],
                "agent-test --version": cli() + ["--version"], "agent-test -i 20 cases --list": cli() + ["-i", listed, "-n", "bot", "--list"]}
        walls: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(1 if self.smoke else 7):
            for name, cmd in cmds.items():
                walls[name].append(run(cmd, self.tmp).wall)
        bare = statistics.median(walls["python -c pass (the interpreter alone)"])
        for name in cmds:
            m = Measure(statistics.median(walls[name]), 0.0, 0.0, 0)
            target = "(its floor)" if name.startswith("python") else f"< 0.20 s ({m.wall - bare:+.2f} s over the interpreter)"
            self.row(f"{name} (median)", m, 1, None, "—", target, None if name.startswith("python") else m.wall < 0.2)

    def start_up(self) -> None:
        path = self.cases("one", standard_cases(1))
        runs = [self.agent_test(path, 0.0, 1)[0] for _ in range(1 if self.smoke else 5)]
        m = min(runs, key=lambda r: r.wall)
        self.startup = m.wall
        self.row("start-up: 1 case, 0 ms (best of 5)", m, 1, None, 1, "(used in the ideals)", None)
        sdk = min((self.sdk(1, 0.0, 1, "post")[0] for _ in range(1 if self.smoke else 5)), key=lambda r: r.wall)
        self.sdk_startup = sdk.wall
        self.row("  openai SDK alone: 1 request (best of 5)", sdk, 1, None, 1, "(its ideals)", None)

    def overhead(self) -> None:
        """CPU per case as the slope between two sizes (start-up cancels out), the CLI next to the SDK alone."""
        big, small, par = self.size(2000), self.size(200), 10
        a_big, peak = self.agent_test(self.cases("o-big", standard_cases(big)), 0.0, par)
        a_small, _ = self.agent_test(self.cases("o-small", standard_cases(small)), 0.0, par)
        slope = lambda b, s: (b.cpu - s.cpu) / (big - small) * 1000  # noqa: E731
        cli_slope = slope(a_big, a_small)
        self.row(f"{big} standard, 0 ms, --parallel {par}", a_big, big, None, peak, "", None)
        sdk = {}
        for how in ("create", "post"):
            (s_big, s_peak), (s_small, _) = self.sdk(big, 0.0, par, how), self.sdk(small, 0.0, par, how)
            sdk[how] = slope(s_big, s_small)
            self.row(f"openai SDK alone ({how}), same {big}", s_big, big, None, s_peak, "", None)
        for how, target in (("post", "≤ 1.00 ms"), ("create", "")):
            extra = cli_slope - sdk[how]
            self.rows.append({"workload": f"runner's own CPU per case vs SDK {how}", "wall": "—", "ideal": "—", "ratio": "—",
                              "cpu/case": f"{cli_slope:.2f} − {sdk[how]:.2f} = {extra:+.2f} ms", "peak in-flight": "—", "peak RSS": "—",
                              "target": target, "met": "—" if self.smoke or not target else ("yes" if extra <= 1.0 else "NO")})
            print("  ".join(f"{k}={v}" for k, v in self.rows[-1].items()), flush=True)

    def runner_alone(self) -> None:
        """The runner with the mock connector: no network, no SDK — its own CPU per case."""
        big, small = self.size(2000), self.size(200)
        a_big = min((self.agent_test(self.cases("m-big", standard_cases(big)), 0.0, 10, agent="mockbot")[0] for _ in range(self.repeats())), key=lambda m: m.cpu)
        a_small = min((self.agent_test(self.cases("m-small", standard_cases(small)), 0.0, 10, agent="mockbot")[0] for _ in range(self.repeats())), key=lambda m: m.cpu)
        self.row(f"{big} standard on the mock connector", a_big, big, None, 0, "", None)
        per_case = (a_big.cpu - a_small.cpu) / (big - small) * 1000
        self.rows.append({"workload": "the runner alone: CPU per case (slope, mock connector)", "wall": "—", "ideal": "—", "ratio": "—",
                          "cpu/case": f"{per_case:.2f} ms", "peak in-flight": "—", "peak RSS": "—", "target": "", "met": "—"})
        print("  ".join(f"{k}={v}" for k, v in self.rows[-1].items()), flush=True)

    def standard(self, n: int, latency: float, parallel: int, target: str, check, jitter: float = 0.1) -> None:
        n = self.size(n)
        path = self.cases(f"s{n}", standard_cases(n))
        m, peak = self.median(lambda: self.agent_test(path, latency, parallel, jitter=jitter))
        ideal = n * latency / parallel + self.startup
        how = f"{latency * 1000:.0f} ms" + ("" if jitter else " exactly")
        self.row(f"{n} standard, {how}, --parallel {parallel} (median of {self.repeats()})", m, n, ideal, peak, target, check(m.wall, ideal) if target else None)
        sdk, sdk_peak = self.median(lambda: self.sdk(n, latency, parallel, "post", jitter))
        sdk_ideal = n * latency / parallel + self.sdk_startup
        self.row("  openai SDK alone (post), same workload", sdk, n, sdk_ideal, sdk_peak,
                 f"agent-test ÷ it: {m.wall / sdk.wall:.2f} (≤ 1.10)", m.wall <= 1.1 * sdk.wall)

    def dynamic(self) -> None:
        n, latency, parallel = self.size(20) if not self.smoke else 2, 0.05, 20
        path = self.cases("dyn", dynamic_cases(n))
        m, peak = self.median(lambda: self.agent_test(path, latency, parallel))
        ideal = 5 * latency * max(1, n / parallel) + self.startup  # 3 agent + 2 simulator calls in sequence
        self.row(f"{n} dynamic × 3 turns, 50 ms, --parallel {parallel} (median of {self.repeats()})", m, n, ideal, peak, "≤ 1.50 s", m.wall <= 1.5)

    def early_stop(self) -> None:
        """--early-stop on N cases × 10 runs whose agent fails 3 runs in 10: with the default gate (pass^10)
        a case's verdict is settled at its first failure, so most requests need not be made."""
        n, runs, latency = self.size(200), 10, 0.02
        parallel = min(20, n)  # more slots than cases would start every run of a case at once: nothing to save
        path = self.cases("flaky", flaky_cases(n))
        planned = n * runs
        full, peak = self.agent_test(path, latency, parallel, "--runs", str(runs))
        made_full = self.server.requests
        self.row(f"{n} cases × --runs {runs}, 30% failures, 20 ms, --parallel {parallel}", full, planned, None, peak, "", None)
        early, peak = self.agent_test(path, latency, parallel, "--runs", str(runs), "--early-stop")
        made = self.server.requests
        self.row("  the same with --early-stop", early, planned, None, peak, "", None)
        ideal = expected_runs_with_early_stop(n, runs)  # at --parallel 1: exactly the runs up to each first failure
        saved = planned - made
        self.rows.append({"workload": "--early-stop: requests saved", "wall": f"{early.wall / full.wall:.2f} of the time",
                          "ideal": f"{(planned - ideal) / planned:.2f} saved", "ratio": f"{saved / planned:.2f} saved",
                          "cpu/case": "—", "peak in-flight": "—", "peak RSS": "—",
                          "target": f"{made} of {planned} requests made (full run: {made_full})", "met": "—"})
        print("  ".join(f"{k}={v}" for k, v in self.rows[-1].items()), flush=True)

    def replay(self) -> None:
        """A recorded run replayed from its cassettes (no server, no SDK call) against the same run live."""
        n, latency, parallel = self.size(1000), 0.05, 20
        path = self.cases(f"rec{n}", standard_cases(n))
        tapes = os.path.join(self.tmp, "cassettes")
        ideal = n * latency / parallel + self.startup
        live, peak = self.median(lambda: self.agent_test(path, latency, parallel))
        self.row(f"{n} standard, 50 ms, --parallel {parallel}, live (median of {self.repeats()})", live, n, ideal, peak, "", None)
        recording, peak = self.median(lambda: self.agent_test(path, latency, parallel, "--record", tapes))
        self.row(f"  the same, live with --record (median of {self.repeats()})", recording, n, ideal, peak, "", None)
        self.server.configure(latency)
        replayed = min((run(cli() + ["-i", path, "-n", "bot", "--parallel", str(parallel), "--replay", tapes,
                                     "-o", os.path.join(self.tmp, "report.json")], self.tmp) for _ in range(self.repeats())),
                       key=lambda m: m.wall)
        requests = int(self.server.call("/stats").get("requests", 0))
        self.row(f"  replay of the recorded {n} (ideal: the live run; best of {self.repeats()})", replayed, n, live.wall,
                 self.server.peak_in_flight, "≤ 0.50 × live", replayed.wall <= 0.5 * live.wall)
        if requests:
            raise SystemExit(f"the replay sent {requests} requests to the server")

    def dry_run(self) -> None:
        n = self.size(10000)
        path = self.cases("dry", standard_cases(n))
        m = run(cli() + ["-i", path, "--dry-run", "-n", "bot"], self.tmp)
        self.row(f"--dry-run of {n} cases", m, n, None, 0, "≤ 2.00 s", m.wall <= 2.0)

    def scale(self) -> None:
        n = self.size(10000)
        m, peak = self.agent_test(self.cases("scale", standard_cases(n)), 0.0, 20)
        self.row(f"{n} standard, 0 ms, --parallel 20 (memory)", m, n, None, peak, "≤ 200 MB", m.rss_mb <= 200)

    def workloads(self) -> dict[str, Callable[[], None]]:
        """Every workload by name, in order (``--only NAME`` runs one, after the start-up it needs)."""
        return {
            "help": self.help, "start_up": self.start_up, "overhead": self.overhead, "runner_alone": self.runner_alone,
            "standard_50ms": lambda: self.standard(200, 0.05, 20, "≤ 1.50 s", lambda wall, ideal: wall <= 1.5),
            "standard_200ms": lambda: self.standard(400, 0.2, 50, "≤ 1.2 × ideal", lambda wall, ideal: wall <= 1.2 * ideal),
            "standard_exact": lambda: self.standard(400, 0.2, 50, "", None, jitter=0.0),
            "dynamic": self.dynamic, "early_stop": self.early_stop, "replay": self.replay, "dry_run": self.dry_run, "scale": self.scale,
            "rate_limited": lambda: load.rate_limited(self), "rate_limited_ms": lambda: load.rate_limited_ms(self), "wide": lambda: load.wide(self),
            "mock_10k": lambda: load.mock_10k(self), "huge_mock": lambda: load.huge_mock(self),
            "million": lambda: load.million(self), "first_request": lambda: load.first_request(self),
            **scaleout.workloads(self), "ray_two_node": lambda: raytwo.ray_two_node(self),
            "viewer": lambda: viewer.viewer(self), "viewer_paged": lambda: viewer.paged(self),
            "calls": lambda: calls.calls(self),
        }

    def all(self, only: str | None = None) -> None:
        workloads = self.workloads()
        if only:
            unknown = [name for name in only.split(",") if name not in workloads]
            if unknown:
                raise SystemExit(f"--only: no workload {', '.join(unknown)} (there are: {', '.join(workloads)})")
            self.start_up()
            for name in only.split(","):
                workloads[name]()
            return
        for workload in workloads.values():
            workload()

    def table(self) -> str:
        keys = list(self.rows[0])
        lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(r[k] for k in keys) + " |" for r in self.rows]
        return "\n".join(lines)


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({model or platform.machine()}), {mem:.0f} GiB, {platform.system()} {platform.release()}, Python {platform.python_version()}"


# every workload must produce its row; `python -m bench --smoke` (a CI step) checks that they all run
SMOKE_WORKLOADS = ("agent-test --help", "agent-test --version", "--list (median)", "start-up: 1 case", "standard, 0 ms", "openai SDK alone (create)", "openai SDK alone (post)",
                   "runner's own CPU per case vs SDK post", "standard, 50 ms, --parallel 20", "standard, 200 ms, --parallel 50",
                   "dynamic × 3 turns", "--early-stop: requests saved", "replay of the recorded", "--dry-run of", "(memory)",
                   "in flight allowed (429 + Retry-After beyond)",
                   "in flight allowed (429, Retry-After: 1, retry-after-ms: 100)", "its run phase at the server",
                   "standard, 200 ms, --parallel 200", "SDK alone (create), same workload, runs interleaved",
                   "on the mock connector, --parallel 20 (memory", "on the mock connector, streamed", "standard on the mock connector (median of", "start-up to the first request",
                   "one worker process", "with --workers 2", "a 20 ms Python tool (CPU-bound)", "(I/O-bound), --workers 0", "(÷ --workers 0)",
                   "HTML report size vs its JSON report", "report to its first screen", "a filter chip applied", "a search applied",
                   "--calls none:", "--calls all:", "report keeping every call", "model call card opened")


# Issue 57's rows that are agent-test's alone, run after the peers' workloads by ``--peer`` (rows 1–5 of its
# "done when": start-up and the first request, the rate limit's timeline, 100,000 cases, a million streamed and
# its report in the paged viewer, workers, Ray)
ISSUE_57 = ("help", "first_request", "rate_limited_ms", "huge_mock", "million", "viewer_paged", "workers_pay", "ray_two_node")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="every workload once at a tiny size (no targets)")
    parser.add_argument("--write", action="store_true", help="write the table into bench/RESULTS.md")
    parser.add_argument("--peer", choices=["promptfoo", "inspect", "all"], help="run the peers' workloads side by side with agent-test and the SDK alone (never in CI)")
    parser.add_argument("--only", metavar="WORKLOAD", help="run one workload, or several separated by commas (for working on them; never --write)")
    parser.add_argument("--against", metavar="TREE", help="another agent-test source tree (a git worktree of an older commit): "
                                                          "the mock workload runs through it too, interleaved")
    parser.add_argument("--cases", type=int, default=1_000_000, metavar="N", help="the size of the million workload (default 1,000,000)")
    args = parser.parse_args()
    if args.against and not os.path.isfile(os.path.join(args.against, "agenttest", "__init__.py")):
        parser.error(f"--against {args.against}: no agenttest/ package there (give the root of a source tree)")
    global SPAWNER
    SPAWNER = Spawner()  # first, while this process is small
    bench = Bench(args.smoke, os.path.abspath(args.against) if args.against else None)
    bench.cases_n = args.cases
    load = os.getloadavg()[0]
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}; transport: {transport_name()}", flush=True)
    try:
        if args.peer:
            import peer

            peer.compare(bench, args.peer)
            if not args.smoke:  # the rest of issue 57's rows, in the same run: what no peer is measured on
                workloads = bench.workloads()
                for name in ISSUE_57:
                    workloads[name]()
        else:
            bench.all(args.only)
    finally:
        bench.server.stop()
        shutil.rmtree(bench.tmp, ignore_errors=True)  # the throwaway app, its cases and reports
    table = bench.table()
    print()
    print(table)
    for note in bench.notes:
        print(f"\n{note}")
    if args.write and not args.smoke and not args.only:
        path = os.path.join(HERE, "RESULTS.md")
        marker = f"results-{args.peer}" if args.peer else "results"
        text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
        if f"<!-- {marker} -->" not in text:
            text += f"\n<!-- {marker} -->\n<!-- /{marker} -->\n"
        head, _, rest = text.partition(f"<!-- {marker} -->")
        _, _, tail = rest.partition(f"<!-- /{marker} -->")
        command = f"python -m bench --peer {args.peer} --write" if args.peer else "python -m bench --write"
        notes = "".join(f"\n\n{n}" for n in bench.notes)
        block = (f"<!-- {marker} -->\nMachine: {machine()}; load average at the start {load:.1f} (2 cores shared with other work). "
                 f"Transport: the SDK on {transport_name()}, for agent-test and the SDK alone. Command: `{command}`.\n\n{table}{notes}\n<!-- /{marker} -->")
        with open(path, "w") as fh:
            fh.write(head + block + tail)
    if args.smoke and not args.peer and not args.only:
        missing = [w for w in SMOKE_WORKLOADS if not any(w in r["workload"] for r in bench.rows)]
        if missing:
            sys.exit(f"smoke: no row for {', '.join(missing)}")
    elif any(r["met"] == "NO" for r in bench.rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
