"""The run history (FORMATS §16): every run's report and its cases' verdicts in one SQLite database,
``<app root>/.agent-test/history.sqlite``. The schema is versioned (``PRAGMA user_version``) and migrated
on open; WAL and a busy timeout let runs that finish at the same moment all be recorded. What is stored
has its secrets redacted first."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agenttest.errors import AgentTestError
from agenttest.history.codec import report_dict
from agenttest.model import CaseResult, Gate, RunReport
from agenttest.util.secrets import Secrets
from agenttest.util.text import shorten
from agenttest.verdicts.gates import in_order, key_of, walk

FOLDER, NAME = ".agent-test", "history.sqlite"
BUSY_MS = 30_000  # a run waits this long for another run's write before giving up

# each step takes the database from version i to i + 1; a step is never edited once released, only added
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at TEXT NOT NULL, completed_at TEXT NOT NULL, duration_ms REAL NOT NULL,
        inputs TEXT NOT NULL, agent TEXT NOT NULL, connector TEXT NOT NULL,
        cases INTEGER NOT NULL, passed INTEGER NOT NULL, failed INTEGER NOT NULL, flaky INTEGER NOT NULL,
        skipped INTEGER NOT NULL, pass_rate REAL, exit_code INTEGER NOT NULL, version TEXT NOT NULL,
        report BLOB NOT NULL  -- the JSON report, zlib-compressed
    );
    CREATE TABLE verdicts (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        file TEXT NOT NULL, case_id TEXT NOT NULL, connector TEXT NOT NULL, verdict TEXT NOT NULL,
        runs INTEGER NOT NULL, passed INTEGER NOT NULL, flaky INTEGER NOT NULL, duration_ms REAL NOT NULL,
        output TEXT NOT NULL, reason TEXT NOT NULL,
        PRIMARY KEY (run_id, file, case_id, connector)
    );
    CREATE INDEX verdicts_by_case ON verdicts (case_id, file);
    """,
    """
    ALTER TABLE runs ADD COLUMN tokens INTEGER;
    ALTER TABLE runs ADD COLUMN cost REAL;
    """,
    """
    ALTER TABLE runs ADD COLUMN not_run INTEGER;
    """,
)
VERSION = len(MIGRATIONS)


@dataclass(frozen=True, kw_only=True)
class RunRow:
    """One recorded run, as the history lists it."""

    id: int
    started_at: str
    inputs: str
    agent: str
    connector: str
    cases: int
    passed: int
    failed: int  # cases that did not pass (failed, errored or timed out)
    flaky: int
    skipped: int
    pass_rate: float | None  # percent of the cases that ran; None when none ran
    exit_code: int
    duration_ms: float
    version: str
    tokens: int | None = None
    cost: float | None = None
    not_run: int | None = None  # cases selected that did not run (Ctrl-C, SIGTERM, --fail-fast); None: not recorded

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C or SIGTERM (its exit code says so): what ran is not what was selected."""
        return self.exit_code in (130, 143)

    def cases_text(self) -> str:
        """The cases it ran, ``9 of 200`` when some did not run."""
        return f"{self.cases} of {self.cases + self.not_run}" if self.not_run else str(self.cases)

    def pass_rate_text(self) -> str:
        """The pass rate of the cases that ran, said to be of those only when the run was cut short."""
        rate = f"{self.pass_rate}%" if self.pass_rate is not None else "—"
        if self.interrupted:
            return f"{rate} (interrupted)"
        return f"{rate} (stopped early)" if self.not_run else rate


@dataclass(frozen=True, kw_only=True)
class VerdictRow:
    """One case's (× connector's) verdict in one recorded run."""

    run_id: int
    started_at: str
    file: str
    case_id: str
    connector: str
    verdict: str  # passed, failed, error, timeout, skipped
    runs: int
    passed: int
    flaky: bool
    duration_ms: float
    output: str
    reason: str


def default_path(root: str) -> str:
    return os.path.join(root, FOLDER, NAME)


def locate(history_file: str | None, app_dir: str | None) -> str:
    """``--history FILE``, else ``$AGENTTEST_HISTORY``, else the history of the app root (``--app``, or the one
    around the current folder)."""
    from agenttest.app.folders import find_root

    if history_file or os.environ.get("AGENTTEST_HISTORY"):
        return history_file or os.environ["AGENTTEST_HISTORY"]
    root = find_root(app_dir, None)
    if root is None:
        raise AgentTestError("no app root found here (a folder with assistants/ or app.yao), so no run history",
                             hint="run it in your app, or pass --app DIR or --history FILE")
    return default_path(root)


class History:
    """An open history database (created and migrated as needed)."""

    def __init__(self, path: str, create: bool = True):
        if not create and not os.path.isfile(path):
            raise AgentTestError(f"{path}: no run history yet", hint="run agent-test first (every run is recorded), or pass --history FILE")
        try:
            if create:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.db = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            _use_wal(self.db)
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise AgentTestError(f"{path}: cannot open the run history: {exc}",
                                     hint="pass --history FILE for another file, or --no-history") from None
            raise AgentTestError(f"{path}: the run history stayed locked by another process for {BUSY_MS / 1000:g} s ({exc})",
                                 hint="let the other run finish, or pass --history FILE for another file, or --no-history") from None
        except sqlite3.DatabaseError as exc:
            raise AgentTestError(f"{path}: not a run history database: {exc}",
                                 hint="pass --history FILE for another file, or --no-history") from None
        self.path = path

    def _migrate(self) -> None:
        """Bring the schema to VERSION, inside one write transaction (two runs never migrate at once)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            current = self.db.execute("PRAGMA user_version").fetchone()[0]
            if current > VERSION:
                raise AgentTestError(f"the run history was written by a newer agent-test (schema {current}, this one knows {VERSION})",
                                     hint="upgrade agent-test, or pass --history FILE for another file")
            for step in MIGRATIONS[current:]:
                for statement in _statements(step):
                    self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version = {VERSION}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, report: RunReport, exit_code: int, inputs: Sequence[str], secrets: Secrets | None = None,
               document: bytes | None = None) -> int:
        """Add a run; returns its id. Secrets are redacted from everything stored. ``document``: the run's JSON
        report as written (zlib-compressed, its secrets already redacted), kept instead of encoding it again."""
        hide = secrets or Secrets()
        report = hide.scrub(report)
        blob = document or zlib.compress(hide.redact(json.dumps(report_dict(report), ensure_ascii=False, default=str)).encode(), 3)
        from agenttest.version import __version__

        # the verdicts go into the table as they are made (100,000 of them held at once were ~30 MB), counted on the
        # way: the run's row is written first and its counts set once they are known, in one transaction
        counts = dict.fromkeys(("cases", "passed", "failed", "flaky", "skipped"), 0)

        def rows(run_id: int) -> Iterator[tuple[Any, ...]]:
            for v in case_verdicts(report, run_id):
                counts["cases"] += 1
                counts["passed" if v.verdict == "passed" else "skipped" if v.verdict == "skipped" else "failed"] += 1
                counts["flaky"] += v.flaky
                yield (run_id, v.file, v.case_id, v.connector, v.verdict, v.runs, v.passed, int(v.flaky), v.duration_ms, v.output, v.reason)

        row = (report.started_at, report.completed_at, round(report.duration_ms, 1), hide.redact(", ".join(inputs)), report.agent_id,
               report.connector, int(exit_code), __version__, report.summary.usage.total_tokens, _cost(report), _cases_not_run(report), blob)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            run_id = self.db.execute(
                "INSERT INTO runs (started_at, completed_at, duration_ms, inputs, agent, connector, cases, passed, failed, flaky,"
                " skipped, pass_rate, exit_code, version, tokens, cost, not_run, report) VALUES (?,?,?,?,?,?,0,0,0,0,0,NULL,?,?,?,?,?,?)", row).lastrowid
            assert run_id is not None
            self.db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows(run_id))
            counted = counts["passed"] + counts["failed"]
            self.db.execute("UPDATE runs SET cases = ?, passed = ?, failed = ?, flaky = ?, skipped = ?, pass_rate = ? WHERE id = ?",
                            (counts["cases"], counts["passed"], counts["failed"], counts["flaky"], counts["skipped"],
                             round(100.0 * counts["passed"] / counted, 1) if counted else None, run_id))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        assert run_id is not None
        return int(run_id)

    def runs(self, limit: int | None = None) -> list[RunRow]:
        """The recorded runs, newest first."""
        names = [f for f in RunRow.__dataclass_fields__]
        query = f"SELECT {', '.join(names)} FROM runs ORDER BY id DESC" + (" LIMIT ?" if limit else "")
        return [RunRow(**dict(zip(names, row))) for row in self.db.execute(query, (limit,) if limit else ())]

    def report(self, run_id: int) -> dict[str, Any] | None:
        """A recorded run's JSON report, or None when there is no such run."""
        row = self.db.execute("SELECT report FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(zlib.decompress(row[0]).decode()) if row else None

    def case(self, case_id: str, file: str | None = None) -> list[VerdictRow]:
        """One case's verdicts across the recorded runs, newest first (every file's, unless ``file`` is given)."""
        rows = self.db.execute(
            "SELECT v.run_id, r.started_at, v.file, v.case_id, v.connector, v.verdict, v.runs, v.passed, v.flaky, v.duration_ms,"
            " v.output, v.reason FROM verdicts v JOIN runs r ON r.id = v.run_id WHERE v.case_id = ? AND (? IS NULL OR v.file = ?)"
            " ORDER BY v.run_id DESC, v.connector", (case_id, file, file))
        names = list(VerdictRow.__dataclass_fields__)
        return [replace(VerdictRow(**dict(zip(names, row))), flaky=bool(row[8])) for row in rows]


def _busy(exc: sqlite3.Error) -> bool:
    """Another connection holds the lock (SQLITE_BUSY or SQLITE_LOCKED, extended codes included)."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the database in WAL mode (it stays so once set). Switching a new file's mode takes its lock
    without waiting on the busy timeout, so when another run is switching it at the same moment this waits
    and tries again, up to BUSY_MS."""
    deadline = time.monotonic() + BUSY_MS / 1000
    pause = 0.005
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _cases_not_run(report: RunReport) -> int:
    """Cases (× connectors) selected that got no run, as ``cases`` counts them: not the runs not run (``--runs``).
    A gate with neither runs nor skipped runs is one that no result reached."""
    if not report.gates:
        return report.not_run
    return sum(1 for g in report.gates if g.runs == 0 and g.skipped == 0)


def _cost(report: RunReport) -> float | None:
    priced = [s.cost for r in report.results for s in r.spend if s.cost is not None]
    return round(sum(priced), 8) if priced else None


def case_verdicts(report: RunReport, run_id: int = 0) -> Iterator[VerdictRow]:
    """Each case's (× connector's) verdict over its runs, as the run ``run_id``'s row of the history: its gate's
    when it has one, else its result's status. Made one at a time (100,000 held at once were ~30 MB)."""
    results = report.results
    keys = lambda: ((g.file, g.id, g.connector) for g in report.gates)  # noqa: E731
    if report.gates and in_order(results, keys()):  # the report's order: no dict of 100,000 keys
        for g, (key, runs) in zip(report.gates, walk(results, keys())):
            if runs:
                yield _verdict(key, runs, g, run_id, report.started_at)
        return
    groups: dict[tuple[str, str, str], list[CaseResult]] = {}
    for r in results:
        groups.setdefault(key_of(r), []).append(r)
    gates: dict[tuple[str, str, str], Gate] = {(g.file, g.id, g.connector): g for g in report.gates}
    for key, runs in groups.items():
        yield _verdict(key, runs, gates.get(key), run_id, report.started_at)


def _verdict(key: tuple[str, str, str], runs: Sequence[CaseResult], gate: Gate | None, run_id: int, started_at: str) -> VerdictRow:
    ran = [r for r in runs if r.status != "skipped"]
    first_bad = next((r for r in ran if r.status != "passed"), None)
    passed = len(ran) if first_bad is None else sum(1 for r in ran if r.status == "passed")
    verdict: str
    if gate is not None:
        verdict = gate.verdict if gate.verdict in ("passed", "failed", "incomplete") else "skipped"
    else:
        verdict = first_bad.status if first_bad is not None else "passed" if ran else "skipped"
    took = runs[0].duration_ms if len(runs) == 1 else sum(r.duration_ms for r in runs) / len(runs)
    return VerdictRow(run_id=run_id, started_at=started_at, file=key[0], case_id=key[1], connector=key[2], verdict=verdict, runs=len(ran),
                      passed=passed, flaky=0 < passed < len(ran), duration_ms=round(took, 1),
                      output=shorten(runs[0].output, 300) if runs[0].output is not None else "",
                      reason=first_bad.reasons[0] if first_bad is not None and first_bad.reasons else "")


def record_run(path: str, report: RunReport, exit_code: int, inputs: Sequence[str], secrets: Secrets, document: bytes | None = None) -> str:
    """Record a run, best effort: the run's verdict never depends on its history. Returns a warning, or ""."""
    try:
        with History(path) as history:
            history.record(report, exit_code, inputs, secrets, document)
    except (AgentTestError, OSError, sqlite3.Error) as exc:
        text = exc.format_message() if isinstance(exc, AgentTestError) else str(exc)
        return secrets.redact(f"the run was not added to the history {path}: {text}")
    return ""
