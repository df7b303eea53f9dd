"""speed/collector.py: no collection while modules import, the collector left as it was; freezing and the
run's thresholds only in a process the CLI has claimed (checked in a fresh interpreter, never this one)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from agenttest.speed import collector

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


def _cycles(n: int) -> list[list]:
    made = []
    for _ in range(n):
        a: list = []
        a.append(a)
        made.append(a)
    return made


def test_nothing_is_collected_while_importing_and_the_collector_is_back_after():
    starts: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            starts.append(info["generation"])

    assert gc.isenabled()
    frozen, thresholds = gc.get_freeze_count(), gc.get_threshold()
    gc.callbacks.append(seen)
    try:
        with collector.importing():
            assert not gc.isenabled()
            made = _cycles(20 * gc.get_threshold()[0])  # twenty times what starts a collection
            inside = len(starts)
        assert inside == 0
        assert gc.isenabled()
        _cycles(2 * gc.get_threshold()[0])
        assert starts, "the collector is on again after the block"
    finally:
        gc.callbacks.remove(seen)
    assert (gc.get_freeze_count(), gc.get_threshold()) == (frozen, thresholds)  # not claimed: nothing frozen
    del made


def test_a_collector_that_was_off_stays_off_and_an_error_inside_restores_it():
    gc.disable()
    try:
        with collector.importing():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    try:
        with collector.importing():
            raise ImportError("no such module")
    except ImportError:
        pass
    assert gc.isenabled()


def _fresh(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_claimed_process_freezes_what_its_imports_made_and_runs_at_the_run_thresholds():
    state = _fresh("""
import gc, json
from agenttest.speed import collector
before = gc.get_freeze_count()
collector.run_begins()  # not claimed: nothing changes
unclaimed = [gc.get_freeze_count() - before, gc.get_threshold()]
collector.claim()
with collector.importing():
    kept = [[i] for i in range(50000)]  # imports nothing: nothing frozen (a connector made mid-run, say)
nothing_imported = gc.get_freeze_count() - before
with collector.importing():
    import colorsys  # a module nothing else here imports
    made = [[i] for i in range(50000)]
after_import = gc.get_freeze_count() - before
collector.run_begins()
print(json.dumps({"unclaimed": unclaimed, "nothing_imported": nothing_imported, "after_import": after_import, "run": gc.get_threshold(), "on": gc.isenabled()}))
""")
    assert state["unclaimed"] == [0, list(gc.get_threshold())]  # a library caller's collector is theirs
    assert state["nothing_imported"] == 0
    assert state["after_import"] >= 50000  # what the block made is frozen, never scanned again
    assert state["run"] == list(collector.RUN_THRESHOLDS) and state["on"] is True


def test_importing_agenttest_leaves_a_library_callers_collector_as_it_was():
    state = _fresh("""
import gc, json
gc.set_threshold(1234, 5, 6)
import agenttest, agenttest.cli
from agenttest.connectors import ConnectorSpec, create
create(ConnectorSpec(id="m", type="mock", options={}))
print(json.dumps({"on": gc.isenabled(), "thresholds": gc.get_threshold(), "frozen": gc.get_freeze_count()}))
""")
    assert state == {"on": True, "thresholds": [1234, 5, 6], "frozen": 0}


def test_reading_a_report_back_runs_no_collection_and_leaves_the_collector_as_it_was(tmp_path, monkeypatch):
    """A report read back is millions of objects and no cycle: the collector does not pass over them while
    they are made (``collector.paused``), and is on again after — also when the report is refused."""
    from agenttest.errors import AgentTestError
    from agenttest.model import CaseKey, CaseResult, RunReport
    from agenttest.reporting import codec

    results = tuple(CaseResult(key=CaseKey("t.jsonl", f"c{i}", "mock"), status="passed", input=f"hi {i}", output="ok", index=i)
                    for i in range(3 * gc.get_threshold()[0]))  # enough objects to start collections
    path = tmp_path / "r.json"
    path.write_text(json.dumps(codec.report_dict(RunReport(results=results, started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:01Z",
                                                           duration_ms=1000.0, environment={"user_id": "u", "team_id": "t", "locale": "en-us"}))))
    starts: list[int] = []
    inside: list[int] = []
    decoded = codec._decoded

    def watched(where: str, text: str):
        before = len(starts)
        try:
            return decoded(where, text)
        finally:
            inside.append(len(starts) - before)

    monkeypatch.setattr(codec, "_decoded", watched)
    gc.callbacks.append(lambda phase, info: starts.append(1) if phase == "start" else None)
    try:
        assert gc.isenabled()
        assert len(codec.read(str(path)).results) == len(results)
        assert inside == [0] and gc.isenabled()
        path.write_text('{"results": 5}')
        try:
            codec.read(str(path))
        except AgentTestError:
            pass
        assert inside == [0, 0] and gc.isenabled()
    finally:
        gc.callbacks.pop()
