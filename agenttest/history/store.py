"""The run history (FORMATS §16): every run's report and its cases' verdicts in one SQLite database,
``<app root>/.agent-test/history.sqlite``. The schema is versioned (``PRAGMA user_version``) and migrated
on open; WAL and a busy timeout let runs that finish at the same moment all be recorded. What is stored
has its secrets redacted first."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agenttest.errors import AgentTestError
from agenttest.reporting.codec import report_dict
from agenttest.reporting.evidence import span
from agenttest.model import CaseKey, CaseResult, Gate, RunReport
from agenttest.model.results import LOST_ONCE, percent_of
from agenttest.util import forked
from agenttest.util.secrets import Secrets
from agenttest.util.text import shorten
from agenttest.stats.intervals import wilson
from agenttest.verdicts import evidence

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
    """
    ALTER TABLE runs ADD COLUMN pass_rate_low REAL;
    ALTER TABLE runs ADD COLUMN pass_rate_high REAL;
    """,
    """
    CREATE TABLE judges (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        validator TEXT NOT NULL, connector TEXT NOT NULL, labelled INTEGER NOT NULL, judgements INTEGER NOT NULL,
        agreement REAL, kappa REAL, tpr REAL, tnr REAL, precision REAL, flip_rate REAL, swap_consistency REAL, gate TEXT,
        PRIMARY KEY (run_id, validator, connector)
    );
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
    pass_rate_low: float | None = None  # the pass rate's Wilson interval over the cases, in percent (at the run's --confidence)
    pass_rate_high: float | None = None

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C or SIGTERM (its exit code says so): what ran is not what was selected."""
        return self.exit_code in (130, 143)

    def cases_text(self) -> str:
        """The cases it ran, ``9 of 200`` when some did not run."""
        return f"{self.cases} of {self.cases + self.not_run}" if self.not_run else str(self.cases)

    def pass_rate_text(self) -> str:
        """The pass rate of the cases that ran with its interval (``85.0% (71–93%)``), said to be of those only when the
        run was cut short."""
        rate = f"{self.pass_rate}%" if self.pass_rate is not None else "—"
        if self.pass_rate is not None and self.pass_rate_low is not None and self.pass_rate_high is not None:
            rate += f" ({span(self.pass_rate_low / 100, self.pass_rate_high / 100).replace('%–', '–', 1)})"  # rounded as the reports round it
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


@dataclass(frozen=True, kw_only=True)
class JudgeRow:
    """One judge's (validator × connector's) figures against the labels in one recorded run."""

    run_id: int
    started_at: str
    validator: str
    connector: str
    labelled: int
    judgements: int
    agreement: float | None
    kappa: float | None
    tpr: float | None
    tnr: float | None
    precision: float | None
    flip_rate: float | None
    swap_consistency: float | None
    gate: str | None  # "passed", "failed", or None when no gate was set


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
        """``create``: for a run, which records itself (else ``agent-test history`` or ``view``, which only read)."""
        check_path(path, reading=not create)
        remedy = "pass --history FILE for another file" + (", or --no-history" if create else "")  # --no-history: a run's flag
        if not create and not os.path.isfile(path):
            raise AgentTestError(f"{path}: no run history yet", hint="run agent-test first (every run is recorded), or pass --history FILE")
        try:
            if create:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.db = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            self.db.execute("BEGIN")  # its version and its tables read as of one moment (another run may be creating them)
            try:
                found = self.db.execute("PRAGMA user_version").fetchone()[0]
                if found <= VERSION:  # another program's database is refused before anything is changed in it (its journal mode)
                    _ours(self.db, found, remedy)
            finally:
                self.db.execute("ROLLBACK")
            _use_wal(self.db)
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except AgentTestError as exc:
            self.db.close()
            raise AgentTestError(f"{path}: {exc.problems[0].message}", hint=exc.problems[0].hint) from None
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise AgentTestError(f"{path}: cannot open the run history: {exc}",
                                     hint=remedy) from None
            raise AgentTestError(f"{path}: the run history stayed locked by another process for {BUSY_MS / 1000:g} s ({exc})",
                                 hint=f"let the other run finish, or {remedy}") from None
        except sqlite3.DatabaseError as exc:
            raise AgentTestError(f"{path}: not a run history database: {exc}", hint=remedy) from None
        self.path = path

    def _migrate(self) -> None:
        """Bring the schema to VERSION, inside one write transaction (two runs never migrate at once)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            current = self.db.execute("PRAGMA user_version").fetchone()[0]
            if current > VERSION:
                raise AgentTestError(f"the run history was written by a newer agent-test (schema {current}, this one knows {VERSION})",
                                     hint="upgrade agent-test, or pass --history FILE for another file")
            _ours(self.db, current)
            for step in MIGRATIONS[current:]:
                for statement in _statements(step):
                    self.db.execute(statement)
            _ours(self.db, VERSION)
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
               document: bytes | None | Callable[[], bytes | None] = None) -> int:
        """Add a run; returns its id. Secrets are redacted from everything stored. ``document``: the run's JSON
        report as written (zlib-compressed, its secrets already redacted), kept instead of encoding it again —
        or what gives it, asked once the verdicts are in (``Recording``: the report is being written meanwhile)."""
        hide = secrets or Secrets()
        report = hide.scrub(report)
        from agenttest.version import __version__

        # the verdicts go into the table as they are made (100,000 of them held at once were ~30 MB), counted on the
        # way: the run's row is written first and its counts (and its report) set once they are known, in one transaction
        counts = dict.fromkeys(("cases", "passed", "failed", "flaky", "skipped"), 0)

        def rows(run_id: int) -> Iterator[tuple[Any, ...]]:
            for row in verdict_rows(report, run_id):
                verdict, flaky = row[4], row[7]
                counts["cases"] += 1
                counts["passed" if verdict == "passed" else "skipped" if verdict == "skipped" else "failed"] += 1
                counts["flaky"] += flaky
                yield row

        row = (report.started_at, report.completed_at, round(report.duration_ms, 1), hide.redact(", ".join(inputs)), report.agent_id,
               report.connector, int(exit_code), __version__, report.summary.usage.total_tokens, _cost(report), _cases_not_run(report))
        self.db.execute("BEGIN IMMEDIATE")
        try:
            run_id = self.db.execute(
                "INSERT INTO runs (started_at, completed_at, duration_ms, inputs, agent, connector, cases, passed, failed, flaky,"
                " skipped, pass_rate, exit_code, version, tokens, cost, not_run, report) VALUES (?,?,?,?,?,?,0,0,0,0,0,NULL,?,?,?,?,?,X'')", row).lastrowid
            assert run_id is not None
            self.db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows(run_id))
            self.db.executemany("INSERT OR REPLACE INTO judges VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", judge_rows(report, run_id))
            given = document() if callable(document) else document
            blob = given or zlib.compress(hide.redact(json.dumps(report_dict(report), ensure_ascii=False, default=str)).encode(), LEVEL)
            counted = counts["passed"] + counts["failed"]
            low, high = wilson(counts["passed"], counted, evidence.level(report)) or (None, None)
            self.db.execute("UPDATE runs SET cases = ?, passed = ?, failed = ?, flaky = ?, skipped = ?, pass_rate = ?, pass_rate_low = ?,"
                            " pass_rate_high = ?, report = ? WHERE id = ?",
                            (counts["cases"], counts["passed"], counts["failed"], counts["flaky"], counts["skipped"],
                             percent_of(counts["passed"], counted) if counted else None, _percent(low), _percent(high), blob, run_id))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        assert run_id is not None
        return int(run_id)

    def runs(self, limit: int | None = None) -> list[RunRow]:
        """The recorded runs, newest first."""
        names = list(RunRow.__dataclass_fields__)
        query = f"SELECT {', '.join(names)} FROM runs ORDER BY id DESC" + (" LIMIT ?" if limit else "")
        return [RunRow(**dict(zip(names, row))) for row in self.db.execute(query, (limit,) if limit else ())]

    def report(self, run_id: int) -> dict[str, Any] | None:
        """A recorded run's JSON report, or None when there is no such run."""
        row = self.db.execute("SELECT report FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(zlib.decompress(row[0]).decode()) if row else None

    def judges(self, limit: int | None = None) -> list[JudgeRow]:
        """Each judge's figures in the last ``limit`` recorded runs, newest first (judge agreement over time)."""
        rows = self.db.execute(
            "SELECT j.run_id, r.started_at, j.validator, j.connector, j.labelled, j.judgements, j.agreement, j.kappa, j.tpr, j.tnr,"
            " j.precision, j.flip_rate, j.swap_consistency, j.gate FROM judges j JOIN runs r ON r.id = j.run_id"
            " WHERE j.run_id IN (SELECT id FROM runs ORDER BY id DESC" + (" LIMIT ?)" if limit else ")") + " ORDER BY j.run_id DESC, j.validator, j.connector",
            (limit,) if limit else ())
        names = list(JudgeRow.__dataclass_fields__)
        return [JudgeRow(**dict(zip(names, row))) for row in rows]

    def case(self, case_id: str, file: str | None = None) -> list[VerdictRow]:
        """One case's verdicts across the recorded runs, newest first (every file's, unless ``file`` is given)."""
        rows = self.db.execute(
            "SELECT v.run_id, r.started_at, v.file, v.case_id, v.connector, v.verdict, v.runs, v.passed, v.flaky, v.duration_ms,"
            " v.output, v.reason FROM verdicts v JOIN runs r ON r.id = v.run_id WHERE v.case_id = ? AND (? IS NULL OR v.file = ?)"
            " ORDER BY v.run_id DESC, v.connector", (case_id, file, file))
        names = list(VerdictRow.__dataclass_fields__)
        return [replace(VerdictRow(**dict(zip(names, row))), flaky=bool(row[8])) for row in rows]


def check_path(path: str, shown: str | None = None, reading: bool = False) -> None:
    """A history is a regular file (or none yet): ``--history /dev/null``, a folder or a pipe is said before SQLite
    opens it (and leaves a ``/dev/null-journal`` beside it). ``shown``: the path as the user wrote it."""
    if os.path.exists(path) and not os.path.isfile(path):
        what = "a folder" if os.path.isdir(path) else "not a regular file (a device, a pipe or a socket)"
        raise AgentTestError(f"--history {shown or path} is {what}: the run history is a SQLite file",
                             hint="pass --history FILE for a file" + ("" if reading else ", or --no-history not to record the run"))


@functools.cache
def _schema_at(version: int) -> dict[str, tuple[str, ...]]:
    """The tables and columns a history of schema ``version`` has: its migrations run on an empty database in memory."""
    db = sqlite3.connect(":memory:")
    try:
        for step in MIGRATIONS[:version]:
            for statement in _statements(step):
                db.execute(statement)
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {n: tuple(c[1] for c in db.execute(f"PRAGMA table_info({n})")) for n in names}
    finally:
        db.close()


def _ours(db: sqlite3.Connection, version: int, remedy: str = "pass --history FILE for another file, or --no-history") -> None:
    """The database is a run history of schema ``version`` (0: an empty file): a SQLite file of something else
    is refused, never migrated into (the caller's transaction is rolled back)."""
    tables = {name: [c[1] for c in db.execute(f"PRAGMA table_info({name})")]
              for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    if version == 0 and not tables:
        return
    expected = _schema_at(version or VERSION)
    missing = [f"{table}.{column}" for table, columns in expected.items() for column in columns if column not in tables.get(table, ())]
    if missing or version == 0:  # tables, but no schema version of ours: another program's database
        held = ", ".join(sorted(tables)) or "none"
        said = missing or [f"{t}.{c}" for t, cs in expected.items() for c in cs]
        raise AgentTestError(f"not a run history of agent-test: a SQLite database of something else (its tables: {held}; "
                             f"a history has {', '.join(said[:4])}{' …' if len(said) > 4 else ''})",
                             hint=remedy)


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


def judge_rows(report: RunReport, run_id: int) -> list[tuple[Any, ...]]:
    """The run's judges as rows of the ``judges`` table."""
    return [(run_id, c.validator, c.connector, c.labelled, c.judgements, c.agreement.rate if c.agreement is not None else None, c.kappa, c.tpr,
             c.tnr, c.precision, c.flip_rate, c.swap_consistency, ("failed" if c.shortfalls else "passed") if c.gated else None)
            for c in evidence.of(report).judges]


def _percent(rate: float | None) -> float | None:
    """An interval's end in percent, kept to 1e-6: rounded once when shown (``span``), as the reports round it — not
    twice (9.45 kept as 9.5 was shown 10%, the reports' 9%)."""
    return None if rate is None else round(100 * rate, 6)


def _cases_not_run(report: RunReport) -> int:
    """Cases (× connectors) selected that got no run, as ``cases`` counts them: not the runs not run (``--runs``).
    A gate with neither runs nor skipped runs is one that no result reached."""
    if not report.gates:
        return report.not_run
    return sum(1 for g in report.gates if g.runs == 0 and g.skipped == 0)


def _cost(report: RunReport) -> float | None:
    priced = [s.cost for r in report.results for s in r.spend if s.cost is not None]
    return round(sum(priced), 8) if priced else None


def verdict_rows(report: RunReport, run_id: int = 0) -> Iterator[tuple[Any, ...]]:
    """Each case's (× connector's) verdict over its runs, as the run ``run_id``'s row of the ``verdicts`` table (its
    columns, in order): its gate's when it has one, else its result's status. Made one at a time (100,000 held at
    once were ~30 MB), as tuples (an object made for each was half of recording a run)."""
    for key, gate, runs in report.groups():  # the report's order
        if runs:
            yield _verdict(key, runs, gate, run_id)


def _verdict(key: CaseKey, runs: Sequence[CaseResult], gate: Gate | None, run_id: int) -> tuple[Any, ...]:
    first = runs[0]
    if len(runs) == 1:  # one run, most cases: no lists
        ran = 0 if first.status == "skipped" else 1
        passed = int(first.status == "passed")
        first_bad = first if ran and not passed else None
        took = first.duration_ms
    else:
        ran_runs = [r for r in runs if r.status != "skipped"]
        ran = len(ran_runs)
        first_bad = next((r for r in ran_runs if r.status != "passed"), None)
        passed = ran if first_bad is None else sum(1 for r in ran_runs if r.status == "passed")
        took = sum(r.duration_ms for r in runs) / len(runs)
    verdict: str
    if gate is not None:
        verdict = gate.verdict if gate.verdict in ("passed", "failed", "incomplete") else "skipped"
    else:
        verdict = "failed" if first_bad is not None else "passed" if ran else "skipped"
    if verdict == "failed" and first_bad is not None:  # as the viewer says it: runs that all errored are an error
        kinds = {first_bad.status} if len(runs) == 1 else {r.status for r in runs if r.status not in ("passed", "skipped")}
        verdict = kinds.pop() if len(kinds) == 1 else "failed"
    return (run_id, key.file, key.id, key.connector, verdict, ran, passed, int(0 < passed < ran), round(took, 1),
            shorten(said.output, 300) if (said := first_bad or first).output is not None else "",  # the output its reason is from
            first_bad.reasons[0] if first_bad is not None and first_bad.reasons else _crash(runs))


def _crash(runs: Sequence[CaseResult]) -> str:
    """For a case whose runs all passed: a run that passed only when run again after its worker was lost."""
    return next((w for r in runs if r.warnings for w in r.warnings if w.startswith(LOST_ONCE)), "")


def record_run(path: str, report: RunReport, exit_code: int, inputs: Sequence[str], secrets: Secrets,
               document: bytes | None | Callable[[], bytes | None] = None) -> str:
    """Record a run, best effort: the run's verdict never depends on its history. Returns a warning, or ""."""
    try:
        with History(path) as history:
            history.record(report, exit_code, inputs, secrets, document)
    except (AgentTestError, OSError, sqlite3.Error) as exc:
        text = exc.format_message() if isinstance(exc, AgentTestError) else str(exc)
        return secrets.redact(f"the run was not added to the history {path}: {text}")
    return ""


LEVEL = 3  # zlib's level for the history's copy of a report: a 14 MB report of 10,000 results compresses in 0.04 s, not
# 0.11 s at the default 6, into 196 KB, not 172 KB
WAIT = 600.0  # seconds a run waits for its recording (a lock held past BUSY_MS is said sooner, by the recording)


def compressed(path: str) -> bytes:
    """The report written at ``path``, as the history keeps it (read a megabyte at a time: a 100,000-case report
    is never held whole)."""
    packer, parts = zlib.compressobj(LEVEL), []
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            parts.append(packer.compress(chunk))
    parts.append(packer.flush())
    return b"".join(parts)


class Recording:
    """Adding a run to the history, begun as soon as its report is decided — the verdicts go in while the reports are
    written and the summary printed — and kept once the JSON report is written (``written``; or left, ``abandon``): in
    agent-test's own process (``fork``: the speed machinery installed), in a forked copy of it, on the other core
    (recording 10,000 verdicts is ~0.25 s); elsewhere (a library caller, the tests in-process) at ``wait``. The JSON
    report as written is kept (its text, not encoded again); a run without one has its report encoded. ``wait`` gives
    ``record_run``'s warning, or "". The run's verdict never depends on its history."""

    def __init__(self, path: str, report: RunReport, exit_code: int, inputs: Sequence[str], secrets: Secrets, fork: bool = False):
        self.path = path
        self._secrets = secrets
        self._json: str | None = None  # the JSON report as written (``written``), in this process
        self._receive: Callable[[], bytes] | None = None  # in the forked copy: what the command says once its reports are written
        self._record = lambda: record_run(path, report, exit_code, inputs, secrets, _document_aside(self._written))  # noqa: E731
        self._child: forked.Child | None = None
        if fork and forked.available():
            try:
                self._child = forked.Child(self._in_child)
            except OSError:  # no process to be had (EAGAIN, ENOMEM): recorded here, at ``wait``
                self._child = None

    def written(self, json_report: str | None) -> None:
        """The reports are written: ``json_report`` is the JSON report's file (None: the run wrote none)."""
        self._json = json_report
        if self._child is not None:
            self._child.send(WRITTEN + (os.fsencode(json_report) if json_report else b""))

    def abandon(self) -> None:
        """The reports were not written (the run ended another way): nothing is recorded."""
        if self._child is not None:  # killed in its transaction: SQLite rolls it back (the next to open the history does)
            self._child.stop()
            self._child = None
        self._record = lambda: ""  # noqa: E731

    def _written(self) -> str | None:
        """Where the JSON report was written: said by the command (the forked copy waits for it), or known here."""
        if self._receive is None:
            return self._json
        said = self._receive()  # b"" if the command never said (``wait`` sends nothing then): the report is encoded
        return os.fsdecode(said[len(WRITTEN):]) if said.startswith(WRITTEN) and len(said) > len(WRITTEN) else None

    def _in_child(self, receive: Callable[[], bytes]) -> str:
        self._receive = receive
        try:
            return self._record()
        except Exception as exc:  # noqa: BLE001 — a bug of ours: said, never the run's end
            return self._secrets.redact(f"the run was not added to the history {self.path}: internal error: {type(exc).__name__}: {exc}")

    def wait(self) -> str:
        if self._child is None:
            return self._record()
        try:
            return self._child.result(WAIT)
        except forked.Lost as exc:
            return self._secrets.redact(f"the run was not added to the history {self.path}: its recording was lost: {exc}")


WRITTEN = b"W"  # what the command tells its forked recording once its reports are written (then the JSON report's path)


def _document_aside(written: Callable[[], str | None]) -> Callable[[], bytes | None]:
    """``_document(written())`` on a thread of its own from now — waiting there for the reports to be written, then
    compressing (zlib and the reads let go of the GIL) — while the verdicts go into the history; what it gave (or
    raised) once asked for. At 100,000 cases the report is 140 MB: ~0.2 s of compressing off the recording's
    critical path, which the run waits for."""
    box: list[Any] = []

    def work() -> None:
        try:
            box.append((_document(written()), None))
        except BaseException as exc:  # noqa: BLE001 — raised where it is asked for, as it would have been
            box.append((None, exc))

    thread = threading.Thread(target=work, name="agenttest-history-document", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to be had: compressed when asked for
        return lambda: _document(written())

    def given() -> bytes | None:
        thread.join()
        document, raised = box[0]
        if raised is not None:
            raise raised
        return document  # type: ignore[no-any-return]
    return given


def _document(written: str | None) -> bytes | None:
    """The compressed text of the report written at ``written``; None (the history encodes the report) when there is
    none or it cannot be read back."""
    if not written:
        return None
    try:
        return compressed(written)
    except OSError:
        return None
