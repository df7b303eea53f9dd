"""RunConfig: the CLI flags and environment turned into one value, built in one place (``from_flags``)
and reported in one place (``options``): a new flag is a field here, an option in the CLI, and the code
that uses it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from agenttest.errors import AgentTestError


MAX_RUNS = 1000  # the most runs of a case: --runs, and a case's own "runs"

# the environment's settings a run reads (docs/scale.md, docs/connectors.md): each name, what it accepts
RAY_SHIP = "AGENTTEST_RAY_SHIP"  # 1: ship the app folder to a cluster joined by its address even when it is on this machine
SILENCES = ("AGENTTEST_WORKER_SILENCE", "AGENTTEST_RAY_SILENCE")  # seconds a worker, an actor may stay silent
TRANSPORTS = ("aiohttp", "httpx")  # AGENTTEST_HTTP: the openai connector's HTTP transport


def check_environment() -> None:
    """The run's settings from the environment, each as it accepts it, before anything runs. Raises AgentTestError."""
    for name in SILENCES:
        text = os.environ.get(name)
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 < value < float("inf"):
            raise AgentTestError(f"{name}={text!r}: give the seconds a worker may stay silent before it is taken for lost, "
                                 "a positive number", hint=f"e.g. {name}=10, or unset it for the default")
    ship = os.environ.get(RAY_SHIP)
    if ship and ship.strip() not in ("0", "1"):
        raise AgentTestError(f"{RAY_SHIP}={ship!r}: give 1 to ship the app folder to a Ray cluster on this machine, or 0",
                             hint=f"e.g. {RAY_SHIP}=1 (nodes in containers of their own), or unset it: actors on this machine read the app where it is")
    transport = os.environ.get("AGENTTEST_HTTP")
    if transport and transport.strip().lower() not in TRANSPORTS:
        raise AgentTestError(f"AGENTTEST_HTTP={transport!r}: give the openai connector's HTTP transport, "
                             f"{' or '.join(TRANSPORTS)}", hint="e.g. AGENTTEST_HTTP=httpx, or unset it for the default (aiohttp when installed)")


def _reported(name: str | None = None, show: Any = None) -> Any:
    """Metadata of a field that the report's ``metadata.options`` lists (under ``name``, shown by ``show``)."""
    return {"option": name, "show": show}


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything a run needs to know from the command line."""

    inputs: tuple[str, ...]
    agent: str | None = None
    outputs: tuple[str, ...] = ()
    connector: str | None = field(default=None, metadata=_reported())
    user: str | None = field(default=None, metadata=_reported())
    team: str | None = field(default=None, metadata=_reported())
    verbose: bool = False
    ctx_file: str | None = field(default=None, metadata=_reported("ctx"))
    simulator: str | None = field(default=None, metadata=_reported())
    before: str | None = field(default=None, metadata=_reported())
    after: str | None = field(default=None, metadata=_reported())
    timeout: float = field(default=300.0, metadata=_reported(show=lambda v: v))
    parallel: int = field(default=1, metadata=_reported(show=lambda v: v))
    runs: int = field(default=1, metadata=_reported(show=lambda v: v))
    run_filter: str | None = field(default=None, metadata=_reported("run"))  # --run: a regex over case ids
    keyword: str | None = field(default=None, metadata=_reported("k"))  # -k: an expression over ids, names and tags
    last_failed: bool = field(default=False, metadata=_reported())  # --lf
    list_only: bool = False  # --list
    quiet: int = 0  # -q: one line per case; -qq: the summary only
    fail_fast: bool = field(default=False, metadata=_reported())
    dry_run: bool = False
    app: str | None = None
    color: bool = False
    max_attachment: int = 20 * 1024 * 1024  # bytes
    strict: bool = False  # unknown keys are errors, not warnings
    max_cases: int = field(default=10_000, metadata=_reported(show=lambda v: v if v != 10_000 else None))  # cases a file's variants may make
    seed: int = field(default=0, metadata=_reported(show=lambda v: v or None))  # --seed: faults with a rate
    allow_external_writes: bool = field(default=False, metadata=_reported())  # cases whose policy writes external records run
    matrix: tuple[str, ...] = field(default=(), metadata=_reported("connectors", lambda v: list(v) or None))  # -c a,b
    min_pass_rate: float = field(default=1.0, metadata=_reported(show=lambda v: v if v != 1.0 else None))
    early_stop: bool = field(default=False, metadata=_reported())  # --early-stop
    budget: Any = field(default=None, metadata=_reported(show=lambda v: v.limits() if v is not None else None))  # a model.Budget
    record: str | None = field(default=None, metadata=_reported())  # --record DIR: cassettes of every model call
    replay: str | None = field(default=None, metadata=_reported())  # --replay DIR: answer model calls from cassettes
    replay_roles: tuple[str, ...] | None = field(default=None, metadata=_reported(show=lambda v: ",".join(v) if v else None))
    shard: tuple[int, int] | None = field(default=None, metadata=_reported(show=lambda v: f"{v[0]}/{v[1]}" if v else None))
    baseline: str | None = field(default=None, metadata=_reported())  # --baseline REPORT: compare and gate on regressions
    fail_on: str = field(default="significant", metadata=_reported("fail_on_regression", lambda v: v if v != "significant" else None))  # or "any"
    alpha: float = field(default=0.05, metadata=_reported(show=lambda v: v if v != 0.05 else None))  # --alpha: paired comparisons
    confidence: float = field(default=0.95, metadata=_reported(show=lambda v: v))  # --confidence: every interval
    judge_min_agreement: float | None = field(default=None, metadata=_reported())  # the judge gate (FORMATS §19)
    judge_min_kappa: float | None = field(default=None, metadata=_reported())
    calls: str = field(default="failed", metadata=_reported(show=lambda v: v if v != "failed" else None))  # --calls none|failed|all
    report_world: str = field(default="full", metadata=_reported(show=lambda v: v if v != "full" else None))  # or "changes"
    json: bool = False  # --json: NDJSON events on stdout, the console on stderr
    workers: int = field(default=1, metadata=_reported(show=lambda v: v if v != 1 else None))  # 0: cases run in this process
    executor: str = field(default="local", metadata=_reported(show=lambda v: v if v != "local" else None))  # --executor local|ray
    ray_address: str | None = None  # --ray-address (else RAY_ADDRESS; else a local Ray)
    history: str | None = None  # --history FILE: the run history database  [default: <app root>/.agent-test/history.sqlite]
    no_history: bool = False  # --no-history: this run is not recorded

    @classmethod
    def from_flags(cls, flags: dict[str, Any], **more: Any) -> RunConfig:
        """The run command's flags (named as the fields are) → a RunConfig. ``-c`` given once is the
        connector; several are a model matrix."""
        values = {f.name: flags[f.name] for f in fields(cls) if f.name in flags}
        connectors = tuple(flags.get("connector") or ())
        values.update(connector=connectors[0] if len(connectors) == 1 else None, matrix=connectors if len(connectors) > 1 else ())
        return cls(**{**values, **more})

    def options(self) -> dict[str, Any]:
        """The options the report keeps (``metadata.options``): what was set, by its report name."""
        out = {}
        for f in fields(self):
            if "option" not in f.metadata:
                continue
            value = getattr(self, f.name)
            show = f.metadata["show"]
            shown = show(value) if show is not None else value
            if shown not in (None, False):
                out[f.metadata["option"] or f.name] = shown
        return out
