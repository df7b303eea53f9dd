"""The benchmark harness runs every workload once at a tiny size (a smoke test: no timing assertions)."""

from __future__ import annotations

import subprocess
import sys

from helpers import REPO


def test_bench_smoke():
    r = subprocess.run([sys.executable, "-m", "bench", "--smoke"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    for workload in ("agent-test --help", "start-up: 1 case", "standard, 0 ms", "openai SDK alone (create)", "openai SDK alone (post)",
                     "runner's own CPU per case vs SDK post", "standard, 50 ms, --parallel 20", "standard, 200 ms, --parallel 50",
                     "dynamic × 3 turns", "--dry-run of", "(memory)"):
        assert workload in r.stdout, workload
    assert "machine: " in r.stdout
