"""RunConfig: the CLI flags and environment turned into one value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs to know from the command line."""

    inputs: tuple[str, ...]
    agent: str | None = None
    outputs: tuple[str, ...] = ()
    connector: str | None = None
    user: str | None = None
    team: str | None = None
    verbose: bool = False
    ctx_file: str | None = None
    simulator: str | None = None
    before: str | None = None
    after: str | None = None
    timeout: float = 300.0
    parallel: int = 1
    runs: int = 1
    run_filter: str | None = None  # --run: a regex over case ids
    keyword: str | None = None  # -k: an expression over ids, names and tags
    last_failed: bool = False  # --lf
    list_only: bool = False  # --list
    quiet: int = 0  # -q: one line per case; -qq: the summary only
    fail_fast: bool = False
    dry_run: bool = False
    app: str | None = None
    color: bool = False
    max_attachment: int = 20 * 1024 * 1024  # bytes
    strict: bool = False  # unknown keys are errors, not warnings
    seed: int = 0  # --seed: faults with a rate
    matrix: tuple[str, ...] = ()  # -c a,b: run everything on each connector (a single -c is ``connector``)
    min_pass_rate: float = 1.0  # --min-pass-rate: the gate of cases that set none
    early_stop: bool = False  # --early-stop
    budget: Any = None  # --budget: a model.Budget (config sits below model)
    record: str | None = None  # --record DIR: cassettes of every model call
    replay: str | None = None  # --replay DIR: answer model calls from cassettes
    replay_roles: tuple[str, ...] | None = None  # --replay-roles: replay only these roles (None: all)
    shard: tuple[int, int] | None = None  # --shard K/N
    baseline: str | None = None  # --baseline REPORT: compare with it and gate on regressions
    json: bool = False  # --json: NDJSON events on stdout, the console on stderr
    history: str | None = None  # --history FILE: the run history database  [default: <app root>/.agent-test/history.sqlite]
    no_history: bool = False  # --no-history: this run is not recorded
