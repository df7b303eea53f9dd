"""The run history (FORMATS §16): every run recorded in SQLite unless --no-history, a versioned and migrated
schema, concurrent runs, no secret stored; ``agent-test history`` and ``agent-test view``'s pages and server."""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.error
import urllib.request
import zlib
from dataclasses import replace

import pytest

from helpers import cli

from agenttest.errors import AgentTestError
from agenttest.history import store
from agenttest.history.store import History
from agenttest.model import CaseKey, CaseResult, Gate, RunReport
from agenttest.history import server
from agenttest.util.secrets import Secrets

SECRET = "sk-test-0123456789abcdef"


def _report(*results: CaseResult, gates: tuple[Gate, ...] = ()) -> RunReport:
    return RunReport(results=results, started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:01Z", duration_ms=1000.0,
                     agent_id="bot", connector="mock", gates=gates)


@pytest.fixture
def app(tmp_path, monkeypatch):
    from agenttest.app.scaffold import init

    monkeypatch.delenv("AGENTTEST_HISTORY", raising=False)  # these tests check the default place

    init(str(tmp_path / "app"))
    return tmp_path / "app"


def test_every_run_is_recorded_beside_the_app_root(app):
    assert cli("-i", "tests", "-q", cwd=app).exit_code == 0
    assert cli("-i", "tests/cases.jsonl", "-q", "--run", "greets", cwd=app).exit_code == 0
    with History(str(app / ".agent-test" / "history.sqlite"), create=False) as history:
        runs = history.runs()
        assert [(r.id, r.inputs, r.cases, r.passed, r.pass_rate, r.exit_code) for r in runs] == [
            (2, "tests/cases.jsonl", 1, 1, 100.0, 0), (1, "tests", 7, 7, 100.0, 0)]
        assert [r["id"] for r in history.report(1)["results"]][:2] == ["greets", "asks-number"]
        assert [(v.run_id, v.verdict) for v in history.case("greets")] == [(2, "passed"), (1, "passed")]
        assert history.report(99) is None


def test_no_history_history_file_dry_run_and_list(app, tmp_path):
    assert cli("-i", "tests", "-q", "--no-history", cwd=app).exit_code == 0
    assert cli("-i", "tests", "--dry-run", cwd=app).exit_code == 0
    assert cli("-i", "tests", "--list", cwd=app).exit_code == 0
    assert not (app / ".agent-test" / "history.sqlite").exists()
    other = tmp_path / "elsewhere" / "runs.sqlite"
    assert cli("-i", "tests", "-q", "--history", str(other), cwd=app).exit_code == 0
    with History(str(other), create=False) as history:
        assert len(history.runs()) == 1


def test_the_history_keeps_the_json_report_as_written_and_encodes_one_when_none_is(app):
    """A run that writes a JSON report hands its text to the history (the report is encoded once); a run
    with only other formats has the history encode the report itself: both read back the same results."""
    assert cli("-i", "tests", "-q", "-o", "out.json", cwd=app).exit_code == 0
    assert cli("-i", "tests", "-q", "-o", "out.md", cwd=app).exit_code == 0
    with History(str(app / ".agent-test" / "history.sqlite"), create=False) as history:
        blob = history.db.execute("SELECT report FROM runs WHERE id = 1").fetchone()[0]
        assert zlib.decompress(blob).decode() == (app / "out.json").read_text(encoding="utf-8")
        first, second = history.report(1), history.report(2)
    assert first is not None and second is not None
    assert [r["id"] for r in first["results"]] == [r["id"] for r in second["results"]] and len(first["results"]) == 7
    assert first["summary"]["passed"] == second["summary"]["passed"] == 7


@pytest.mark.parametrize("fork", [False, True])
def test_a_recording_begun_before_the_reports_keeps_the_json_report_once_written(tmp_path, fork):
    """The recording begins once the report is decided (forked: its verdicts go in while the reports are written)
    and keeps the JSON report's text as written once it is told where; told there is none, it encodes the report;
    a run whose reports were not written (``abandon``) is not recorded, and leaves no process behind."""
    results = (CaseResult(key=CaseKey(id="a"), status="passed", input="hi", output="ok"),)
    path = str(tmp_path / "h.sqlite")
    recording = store.Recording(path, _report(*results), 0, ["t.jsonl"], Secrets(), fork=fork)
    written = tmp_path / "out.json"
    written.write_text('{"results": []}\n' * 5000, encoding="utf-8")  # after the recording began
    recording.written(str(written))
    assert recording.wait() == ""
    other = store.Recording(path, _report(*results), 1, ["t.jsonl"], Secrets(), fork=fork)
    other.written(None)
    assert other.wait() == ""
    left = store.Recording(path, _report(*results), 1, ["t.jsonl"], Secrets(), fork=fork)
    child = left._child
    left.abandon()
    assert left.wait() == ""
    if child is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(child.pid, 0)  # killed and reaped
    with History(path, create=False) as history:
        assert [(r.id, r.exit_code) for r in history.runs()] == [(2, 1), (1, 0)]
        blob = history.db.execute("SELECT report FROM runs WHERE id = 1").fetchone()[0]
        assert zlib.decompress(blob).decode() == written.read_text(encoding="utf-8")
        encoded = history.report(2)
    assert encoded is not None and [r["id"] for r in encoded["results"]] == ["a"]


def test_the_command_records_its_run_from_a_copy_of_itself(app, tmp_path):
    """``agent-test`` (its own process) records the run in a forked copy while it writes the reports and the
    summary: the JSON report's text as written is kept, a run without one has its report encoded there, and
    a history that cannot be written is still a warning; the command waits for the recording."""
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agenttest", *args], cwd=app, capture_output=True, text=True, timeout=120)

    assert run("-i", "tests", "-q", "-o", "out.json").returncode == 0
    assert run("-i", "tests", "-q", "-o", "out.md").returncode == 0
    with History(str(app / ".agent-test" / "history.sqlite"), create=False) as history:
        assert [(r.id, r.cases, r.passed) for r in history.runs()] == [(2, 7, 7), (1, 7, 7)]
        blob = history.db.execute("SELECT report FROM runs WHERE id = 1").fetchone()[0]
        assert zlib.decompress(blob).decode() == (app / "out.json").read_text(encoding="utf-8")
        second = history.report(2)
        assert second is not None and len(second["results"]) == 7 and [v.verdict for v in history.case("greets")] == ["passed"] * 2
    (app / "taken").write_text("a file where the history's folder would be")
    failed = run("-i", "tests", "-q", "--history", "taken/h.sqlite")
    assert failed.returncode == 0 and "warning: the run was not added to the history taken/h.sqlite" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_a_history_that_cannot_be_written_is_a_warning_not_a_failure(app):
    (app / "taken").write_text("a file where the history's folder would be")
    result = cli("-i", "tests", "-q", "--history", "taken/h.sqlite", cwd=app)
    assert result.exit_code == 0 and "warning: the run was not added to the history taken/h.sqlite" in result.stderr
    (app / "folder").mkdir()  # a folder or a device is known to be wrong before the run: said then
    result = cli("-i", "tests", "-q", "--history", "folder", cwd=app)
    assert result.exit_code == 2 and "Error: --history folder is a folder: the run history is a SQLite file" in result.stderr


def test_a_failing_run_is_recorded_with_its_verdicts_and_exit_code(tmp_path):
    path = str(tmp_path / "h.sqlite")
    failed = CaseResult(key=CaseKey(file="t.jsonl", id="b"), status="failed", error="output does not contain 'x'", output="nope")
    with History(path) as history:
        history.record(_report(CaseResult(key=CaseKey(file="t.jsonl", id="a"), status="passed", output="fine"), failed, CaseResult(key=CaseKey(id="c"), status="skipped")), 1, ["t.jsonl"])
        run = history.runs()[0]
        assert (run.cases, run.passed, run.failed, run.skipped, run.pass_rate, run.exit_code) == (3, 1, 1, 1, 50.0, 1)
        (b,) = history.case("b")
        assert (b.verdict, b.reason, b.output, b.runs, b.passed) == ("failed", "output does not contain 'x'", "nope", 1, 0)


def test_a_run_cut_short_is_listed_with_the_cases_it_did_not_run(tmp_path):
    """Ctrl-C after 9 of 200 cases: 9 passed, but the run is not listed as a green run of 9 cases."""
    from agenttest.history.runs import run_lines

    ran = [CaseResult(key=CaseKey(file="t.jsonl", id=f"c{i}"), status="passed") for i in range(9)]
    with History(str(tmp_path / "h.sqlite")) as history:
        history.record(replace(_report(*ran), interrupted=True, not_run=191), 130, ["t.jsonl"])
        history.record(replace(_report(CaseResult(key=CaseKey(file="t.jsonl", id="a"), status="failed")), stopped_early=True, not_run=4), 1, ["t.jsonl"])
        history.record(_report(*ran), 0, ["t.jsonl"])
        whole, failfast, cut = history.runs()
    assert (cut.cases, cut.not_run, cut.pass_rate, cut.interrupted) == (9, 191, 100.0, True)
    assert (cut.cases_text(), cut.pass_rate_text()) == ("9 of 200", "100.0% (70–100%) (interrupted)")  # Wilson over 9 cases
    assert (failfast.cases_text(), failfast.pass_rate_text()) == ("1 of 5", "0.0% (0–79%) (stopped early)")
    assert (whole.not_run, whole.cases_text(), whole.pass_rate_text(), whole.interrupted) == (0, "9", "100.0% (70–100%)", False)
    assert (round(whole.pass_rate_low, 4), whole.pass_rate_high) == (70.0855, 100.0)  # kept unrounded: rounded once, when shown
    lines = run_lines([whole, failfast, cut])
    assert "9 of 200" in lines[3] and "100.0% (70–100%) (interrupted)" in lines[3] and lines[3].split()[-1] == "130"
    assert "1 of 5 (1 not passing)" in lines[2] and "(stopped early)" in lines[2]
    assert "of" not in lines[1].split() and "(interrupted)" not in lines[1]


def test_a_run_short_of_all_is_never_listed_as_100_percent(tmp_path):
    """4,999 of 5,000 passed was listed '100.0%' by `agent-test history` and the history viewer (found by a new-user
    trial): the recorded rate takes the digits it takes not to read 100."""
    ran = [CaseResult(key=CaseKey(file="t.jsonl", id=f"c{i}"), status="failed" if i == 7 else "passed") for i in range(5000)]
    with History(str(tmp_path / "h.sqlite")) as history:
        history.record(_report(*ran), 1, ["t.jsonl"])
        (run,) = history.runs()
    assert run.pass_rate == 99.98 and run.pass_rate_text().startswith("99.98% (") and "100.0%" not in run.pass_rate_text()


def test_with_runs_a_run_cut_short_counts_cases_not_runs(tmp_path):
    """--runs 3, 20 cases, stopped after 3 runs of case c0 and 1 of c1: 2 of 20 cases ran (not "2 of 58")."""
    ran = [CaseResult(key=CaseKey(file="t.jsonl", id="c0", connector="mock"), status="passed", run=r) for r in (1, 2, 3)]
    ran.append(CaseResult(key=CaseKey(file="t.jsonl", id="c1", connector="mock"), status="passed", run=1))
    gates = tuple(Gate(key=CaseKey(file="t.jsonl", id=f"c{i}", connector="mock"), planned=3, runs=3 if i == 0 else int(i == 1), passed=3 if i == 0 else int(i == 1),
                       min_pass_rate=1.0) for i in range(20))
    with History(str(tmp_path / "h.sqlite")) as history:
        history.record(replace(_report(*ran, gates=gates), interrupted=True, not_run=56), 130, ["t.jsonl"])
        (run,) = history.runs()
    assert (run.cases, run.not_run, run.cases_text()) == (2, 18, "2 of 20")


def test_gated_runs_are_recorded_by_their_gate_and_flaky_is_kept(tmp_path):
    runs = [CaseResult(key=CaseKey(id="a", connector="mock"), status=s, run=i + 1) for i, s in enumerate(("passed", "failed", "passed"))]
    gate = Gate(key=CaseKey(id="a", connector="mock"), planned=3, runs=3, passed=2, min_pass_rate=0.5)
    with History(str(tmp_path / "h.sqlite")) as history:
        history.record(_report(*runs, gates=(gate,)), 0, ["t"])
        (a,) = history.case("a")
        assert (a.verdict, a.flaky, a.runs, a.passed) == ("passed", True, 3, 2)
        assert history.runs()[0].flaky == 1


def test_a_gate_cut_short_before_its_runs_decided_it_is_recorded_incomplete(tmp_path):
    run = CaseResult(key=CaseKey(id="a", connector="mock"), status="passed", run=1)
    gate = Gate(key=CaseKey(id="a", connector="mock"), planned=2, runs=1, passed=1)
    assert gate.verdict == "incomplete"
    with History(str(tmp_path / "h.sqlite")) as history:
        history.record(_report(run, gates=(gate,)), 130, ["t"])
        (a,) = history.case("a")
        assert (a.verdict, a.runs, a.passed) == ("incomplete", 1, 1)  # not "skipped": it ran, and nothing decided it
        assert (history.runs()[0].passed, history.runs()[0].failed) == (0, 1)


def test_the_history_never_holds_a_secret(tmp_path):
    path = tmp_path / "h.sqlite"
    leaked = CaseResult(key=CaseKey(id="a"), status="failed", input=f"key {SECRET}", output=f"your key is {SECRET}", error=f"saw {SECRET}")
    with History(str(path)) as history:
        history.record(_report(leaked), 1, [f"say {SECRET}"], Secrets([SECRET]))
        stored = history.report(1)
        assert SECRET not in str(stored) and "your key is ***" in str(stored) and history.runs()[0].inputs == "say ***"
        assert SECRET not in str([vars(v) for v in history.case("a")])
    blobs = sqlite3.connect(path).execute("SELECT report FROM runs").fetchall()
    assert SECRET.encode() not in path.read_bytes() and SECRET.encode() not in zlib.decompress(blobs[0][0])


def _record_together(path: str, runs_each: int, openers: int = 6) -> list[BaseException]:
    """Record from `openers` threads released together by a barrier; returns what they raised."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(openers)

    def work(n: int) -> None:
        barrier.wait()
        try:
            for i in range(runs_each):
                with History(path) as history:
                    history.record(_report(CaseResult(key=CaseKey(id=f"case-{n}-{i}"), status="passed")), 0, [f"worker {n}"])
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(openers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_concurrent_runs_are_all_recorded(tmp_path):
    path = str(tmp_path / "h.sqlite")
    assert _record_together(path, runs_each=5) == []
    with History(path) as history:
        runs = history.runs()
        assert len(runs) == 30 and len({r.id for r in runs}) == 30
        assert history.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_runs_creating_a_new_history_at_the_same_moment_all_open_it(tmp_path):
    # switching a new file to WAL fails at once (no busy wait) when another connection is switching it too;
    # six openers released together on each of 40 fresh files hit that race (it failed CI one run in 30)
    for k in range(40):
        path = str(tmp_path / f"h{k}.sqlite")
        assert _record_together(path, runs_each=1) == []
        with History(path) as history:
            assert len(history.runs()) == 6


def test_a_history_that_stays_locked_is_a_clear_error(tmp_path, monkeypatch):
    path = str(tmp_path / "h.sqlite")
    History(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = DELETE")
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(store, "BUSY_MS", 200)
    try:
        with pytest.raises(AgentTestError, match=r"stayed locked by another process for 0.2 s \(database is locked\)"):
            History(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with History(path) as history:
        assert history.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_older_schema_is_migrated_and_its_runs_kept(tmp_path):
    path = tmp_path / "h.sqlite"
    db = sqlite3.connect(path)
    db.executescript(store.MIGRATIONS[0] + "PRAGMA user_version = 1;")
    db.execute("INSERT INTO runs (started_at, completed_at, duration_ms, inputs, agent, connector, cases, passed, failed, flaky, skipped,"
               " pass_rate, exit_code, version, report) VALUES ('then', 'then', 1, 'old', 'bot', 'mock', 1, 1, 0, 0, 0, 100, 0, '0.1', ?)",
               (zlib.compress(b'{"results": []}'),))
    db.commit()
    db.close()
    with History(str(path)) as history:
        assert history.db.execute("PRAGMA user_version").fetchone()[0] == store.VERSION == 5
        (old,) = history.runs()
        assert (old.inputs, old.tokens, old.cost, old.not_run) == ("old", None, None, None)
        assert (old.cases_text(), old.pass_rate_text()) == ("1", "100.0%")  # a run recorded before not_run was
        history.record(_report(CaseResult(key=CaseKey(id="a"), status="passed")), 0, ["new"])
        assert history.runs()[0].tokens == 0


def test_a_newer_schema_or_a_foreign_file_is_a_clear_error(tmp_path):
    newer = tmp_path / "newer.sqlite"
    sqlite3.connect(newer).execute("PRAGMA user_version = 99").connection.close()
    with pytest.raises(AgentTestError, match="written by a newer agent-test \\(schema 99, this one knows 5\\)"):
        History(str(newer))
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database at all " * 100)
    with pytest.raises(AgentTestError, match="garbage.sqlite: not a run history database"):
        History(str(garbage))


def test_the_history_command_lists_runs(app):
    assert cli("history", cwd=app).exit_code == 2  # nothing recorded yet
    cli("-i", "tests", "-q", cwd=app)
    cli("-i", "tests/cases.jsonl", "-c", "mock", "-q", cwd=app)
    result = cli("history", cwd=app)
    lines = result.output.splitlines()
    assert result.exit_code == 0 and lines[0].split() == ["run", "when", "inputs", "connector", "cases", "pass", "rate", "time", "exit"]
    assert lines[1].split()[0] == "#2" and "tests/cases.jsonl" in lines[1] and lines[1].split()[-1] == "0"
    assert lines[2].split()[0] == "#1" and " tests " in lines[2] and "100.0%" in lines[2]
    assert len(cli("history", "-n", "1", cwd=app).output.splitlines()) == 2


def test_history_and_view_outside_an_app_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTTEST_HISTORY", raising=False)
    result = cli("history", cwd=tmp_path)
    assert result.exit_code == 2 and "no app root found here" in result.output and "--history FILE" in result.output
    result = cli("view", "--history", str(tmp_path / "none.sqlite"), cwd=tmp_path)
    assert result.exit_code == 2 and "none.sqlite: no run history yet" in result.output
    (tmp_path / "bad.json").write_text("{")
    result = cli("view", str(tmp_path / "bad.json"), cwd=tmp_path)
    assert result.exit_code == 2 and "bad.json:1:2: not valid JSON" in result.output


def _get(url: str, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_server_pages(app):
    cli("-i", "tests", "-q", cwd=app)
    cli("-i", "tests/cases.jsonl", "-q", cwd=app)
    httpd, _ = server.start(server.Pages(history=str(app / ".agent-test" / "history.sqlite")))
    url = server.url_of(httpd)
    try:
        assert url.startswith("http://127.0.0.1:")
        status, body = _get(url)
        assert status == 200 and '"kind":"runs"' in body and "Run history" in body
        status, body = _get(url + "run/1")
        assert status == 200 and '"kind":"report"' in body and '"links":{"home":"/","case":"/case"}' in body
        assert _get(url + "case?id=greets")[0] == 200 and _get(url + "compare?a=1&b=2")[0] == 200
        assert _get(url + "run/7")[0] == 404 and _get(url + "run/x")[0] == 400 and _get(url + "nothing")[0] == 404
        assert _get(url, host="evil.example:80")[0] == 403  # a DNS name pointed at 127.0.0.1 is refused
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_view_of_one_report_file(app, tmp_path):
    cli("-i", "tests", "-q", "-o", str(tmp_path / "r.json"), cwd=app)
    from agenttest.reporting.codec import read

    pages = server.Pages(report=read(str(tmp_path / "r.json")))
    assert '"kind":"report"' in pages.get("/", {})
    with pytest.raises(server.NotFound):
        pages.get("/run/1", {})


def test_a_port_in_use_is_a_usage_error(tmp_path):
    httpd = server.make_server(server.Pages(report=replace(_report())))
    try:
        with pytest.raises(AgentTestError, match=f"cannot listen on 127.0.0.1:{httpd.server_address[1]}"):
            server.make_server(server.Pages(report=_report()), httpd.server_address[1])
    finally:
        httpd.server_close()


def test_agent_test_view_serves_until_stopped(app):
    import subprocess
    import sys

    cli("-i", "tests", "-q", cwd=app)
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "view", "--port", "0"], cwd=app, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Serving the run history ") and "history.sqlite at http://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split()[0]
        status, body = _get(url + "run/1")
        assert status == 200 and '"id":"greets"' in body
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_the_runs_page_escapes_every_column_of_the_database(app):
    """The history is a file anyone with the folder can write: a column holds text where a number belongs."""
    cli("-i", "tests", "-q", cwd=app)
    path = app / ".agent-test" / "history.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET exit_code = '<img src=x onerror=alert(1)>', connector = '<b>c</b>'")
    httpd, _ = server.start(server.Pages(history=str(path)))
    try:
        status, body = _get(server.url_of(httpd))
        static = body[body.index('<div id="static">'):]
        assert status == 200 and "<img src=x" not in static and "<b>c</b>" not in static
        assert "&lt;img src=x onerror=alert(1)&gt;" in static and "&lt;b&gt;c&lt;/b&gt;" in static
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_bad_address_or_a_damaged_report_is_a_page_and_the_server_goes_on(app):
    cli("-i", "tests", "-q", cwd=app)
    cli("-i", "tests", "-q", cwd=app)
    path = app / ".agent-test" / "history.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET report = ? WHERE id = 1", (zlib.compress(b'{"results": 5}'),))
        db.execute("UPDATE runs SET report = X'00ff' WHERE id = 2")
    httpd, _ = server.start(server.Pages(history=str(path)))
    url = server.url_of(httpd)
    try:
        status, body = _get(url + "compare?a=%C2%B2&b=1")
        assert status == 400 and "<h1>Bad request</h1><p>&#x27;²&#x27; is not a run number</p>" in body
        assert _get(url + "run/%C2%B2")[0] == 400
        status, body = _get(url + "run/" + "9" * 21)
        assert status == 404 and f"run {'9' * 21}" in body
        status, body = _get(url + "run/1")
        assert status == 500 and f"the report of run #1 in {path} cannot be read: &#x27;results&#x27; is missing or not a list" in body
        status, body = _get(url + "compare?a=2&b=1")
        assert status == 500 and "Cannot show this" in body and "internal error: error: Error -3 while decompressing data" in body
        assert _get(url)[0] == 200  # still serving
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_history_of_a_foreign_database_or_a_device_is_exit_2_and_changes_nothing(tmp_path, app):
    foreign = tmp_path / "notes.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
    clash = tmp_path / "clash.sqlite"
    with sqlite3.connect(clash) as db:
        db.execute("CREATE TABLE runs (id INTEGER, started_at TEXT)")
        db.execute("PRAGMA user_version = 3")
    for db, tables in ((foreign, "notes"), (clash, "runs")):
        result = cli("history", "--history", str(db))
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"Error: {db}: not a run history of agent-test: a SQLite database of something else (its tables: {tables}; " in result.stderr
        assert result.stderr.rstrip().endswith("; pass --history FILE for another file")  # --no-history is a run's flag
    with sqlite3.connect(foreign) as db:  # neither migrated into nor switched to WAL
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    said = ("Error: --history /dev/null is not a regular file (a device, a pipe or a socket): the run history is a SQLite file; "
            "pass --history FILE for a file")
    for command, remedy in ((("history", "--history", "/dev/null"), ""), (("view", "--history", "/dev/null"), ""),
                            (("-i", "tests", "--history", "/dev/null"), ", or --no-history not to record the run")):
        result = cli(*command, cwd=app)
        assert result.exit_code == 2 and result.stderr.rstrip().endswith(said + remedy) and "PASSED" not in result.output
    assert not (tmp_path / "dev-null-journal").exists() and not __import__("os").path.exists("/dev/null-journal")
    run = cli("-i", "tests", "--history", str(foreign), cwd=app)  # a run's recording stays best effort: a warning
    assert run.exit_code == 0 and f"warning: the run was not added to the history {foreign}: {foreign}: not a run history" in run.stderr
