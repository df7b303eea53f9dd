"""``--executor ray`` (FORMATS §15) on a real local Ray (two CPUs), started once for this module: the same
verdicts as local workers, a lost actor is a lost worker, the app folder is shipped with the runtime
environment when agent-test joins a cluster by its address. Needs the ``ray`` extra."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from helpers import REPO, Answer, cli, report, tool_app

ray = pytest.importorskip("ray")

TOOLS_PY = """
import ctypes
def segfault(ctx):
    ctypes.string_at(0)
"""
RULES = ('rules:\n  - tool: "*"\n    reply: "done"\n  - user: "^call segfault"\n    tool_calls: [{name: segfault}]\n'
         'default: "echo: {{ user }}"\n')


@pytest.fixture(scope="module")
def cluster():
    """A local Ray on loopback, in a folder of its own; its workers have the environment the connectors' $ENV
    names, as a cluster's would."""
    from agenttest.runner import raycluster

    os.environ.setdefault("FAKE_OPENAI_KEY", "sk-test-SECRET-0123456789")
    folder = tempfile.mkdtemp(prefix="agt-", dir="/tmp")
    try:
        with raycluster._loopback_node():
            context = ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                               configure_logging=False, _temp_dir=os.path.join(folder, "r"))
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


def suite(n: int) -> list[dict]:
    return [{"id": f"c{i:02d}", "input": f"say:ok #{i}", "assert": {"type": "contains", "value": "ok" if i % 3 else "nope"}} for i in range(n)]


def test_the_same_verdicts_as_local_workers(cluster, app, server):
    server.responder = lambda req: Answer("ok")
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", suite(8))
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--parallel", "4", "--runs", "2", "--executor", "ray", "--workers", "2")
    assert result.exit_code == 1, result.output
    got = report(out)["results"]
    assert [(r["id"], r["run"], r["status"]) for r in got] == [(f"c{i:02d}", run, "failed" if i % 3 == 0 else "passed")
                                                                for i in range(8) for run in (1, 2)], [r.get("error") for r in got if r["status"] == "error"]
    assert len(server.requests) == 16  # every run called the model once, from the actors


def test_an_actor_that_segfaults_is_a_lost_worker_and_the_run_goes_on(cluster, offline_app, tmp_path):
    app = offline_app
    app.file("assistants/bot/src/tools.py", textwrap.dedent(TOOLS_PY))
    app.file("assistants/bot/mock.yml", RULES)
    tool = {"name": "segfault", "description": "crash", "parameters": {"type": "object", "properties": {}}}
    app.file("assistants/bot/package.yao", json.dumps({"name": "bot", "connector": "mock", "tools": [tool]}))
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "crash", "input": "call segfault"}, {"id": "fine", "input": "hi"}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--executor", "ray")
    assert result.exit_code == 1, result.output
    got = {r["id"]: r for r in report(out)["results"]}
    assert got["crash"]["status"] == "error" and got["crash"]["error"].startswith("worker lost: ")
    assert "(the case took down 2 workers)" in got["crash"]["error"]
    assert got["fine"]["status"] == "passed"


def test_joining_a_cluster_by_address_ships_the_app_folder(cluster, offline_app, tmp_path):
    app = offline_app
    app.file("assistants/bot/mock.yml", 'default: "echo: {{ user }}"\n')
    app.file("assistants/bot/package.yao", json.dumps({"name": "bot", "connector": "mock"}))
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": f"c{i}", "input": f"hi {i}",
                                                            "assert": {"type": "contains", "value": f"echo: hi {i}"}} for i in range(4)])
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "-o", str(out), "--executor", "ray",
                           "--ray-address", cluster, "--workers", "2"], capture_output=True, text=True, env=env, cwd=app.root, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report(out)["summary"]["passed"] == 4 and "Traceback" not in proc.stderr


LOOK_PY = """
import json, os
def look(ctx):
    seen = []
    for top, dirs, files in os.walk(os.getcwd()):
        seen += [os.path.relpath(os.path.join(top, n), os.getcwd()) for n in dirs + files]
    return json.dumps(sorted(seen))
"""


def test_joining_a_cluster_by_address_ships_the_app_but_no_key_report_memory_or_cassette(cluster, tmp_path):
    """AGENTTEST_RAY_SHIP=1 ships the app folder to a cluster on this machine too (its nodes in containers of their own),
    as to a cluster elsewhere: without keys, reports (those of -o included), the --lf memory or the cassettes recorded."""
    root = tool_app(tmp_path / "app", ("look",), LOOK_PY).parent.parent
    secret = "sk-dotenv-" + "Q" * 40
    files = {".env": f"OPENAI_API_KEY={secret}\n", ".env.local": secret, "reports/old.json": secret, ".agent-test/lastfailed.json": "{}",
             "cassettes/cases/a.jsonl": secret, "tapes/cases/a.jsonl": secret, "replays/cases/a.jsonl": "", "certs/server.pem": secret,
             "last[1].json": secret}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "cases.jsonl").write_text(json.dumps({"id": "look", "input": "call look"}) + "\n")
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "AGENTTEST_RAY_SHIP": "1"}
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", "cases.jsonl", "-n", "bot", "-o", str(out), "-o", "last[1].json",
                           "--executor", "ray", "--ray-address", cluster, "--record", "tapes", "--replay", "replays", "--replay-roles", "simulator"],
                          capture_output=True, text=True, env=env, cwd=root, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = report(out)["results"]
    seen = json.loads(result["tool_calls"][0]["result"])
    shipped = {Path(p).parts[0] for p in seen}
    assert {"assistants", "connectors", "cases.jsonl", "replays"} <= shipped, seen  # the app, and the cassettes it replays
    assert shipped.isdisjoint({".env", ".env.local", "reports", ".agent-test", "cassettes", "tapes", "last[1].json"}), seen
    assert not any(p.endswith(".pem") for p in seen), seen


WHERE_PY = """
import json, os
def where(ctx):
    return json.dumps({"cwd": os.getcwd(), "tools": os.path.dirname(os.path.abspath(__file__))})
"""


def test_joining_a_cluster_on_this_machine_by_address_reads_the_app_where_it_is(cluster, tmp_path):
    """Every node of the cluster on loopback: the actors read the app in place, as a local Ray's and local workers do —
    no copy of it is made (its tools are the app's own files) and none of it is uploaded to the cluster."""
    from agenttest.runner import raycluster

    agent = tool_app(tmp_path / "app", ("where",), WHERE_PY)
    root = agent.parent.parent
    (root / "cases.jsonl").write_text(json.dumps({"id": "where", "input": "call where"}) + "\n")
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("AGENTTEST_RAY_SHIP", None)
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", "cases.jsonl", "-n", "bot", "-o", str(out), "--executor", "ray",
                           "--ray-address", cluster], capture_output=True, text=True, env=env, cwd=root, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = report(out)["results"]
    where = json.loads(result["tool_calls"][0]["result"])
    assert os.path.realpath(where["tools"]) == os.path.realpath(agent / "src"), where
    assert os.path.realpath(where["cwd"]) == os.path.realpath(root), where
    assert raycluster.sees(str(root), raycluster.app_identity(str(root)))


def test_an_actor_that_does_not_see_the_controllers_app_folder_says_so(tmp_path):
    """An actor reading the app in place checks it is the controller's folder (a node in a container of its own sees
    another, or none, at the same path)."""
    from agenttest.runner import raycluster

    (tmp_path / "app").mkdir()
    (tmp_path / "other").mkdir()
    mine = raycluster.app_identity(str(tmp_path / "app"))
    assert raycluster.sees(str(tmp_path / "app"), mine)
    assert not raycluster.sees(str(tmp_path / "other"), mine)
    assert not raycluster.sees(str(tmp_path / "gone"), mine)
    assert raycluster.app_identity(str(tmp_path / "gone")) is None


def _actors_alive() -> int:
    from ray._private import state

    return sum(1 for a in state.actors().values() if a.get("State") == "ALIVE" and a.get("ActorClassName", "").endswith("ActorWorker"))


def test_joining_by_address_a_run_whose_cases_do_not_load_is_exit_2_and_ends_the_actors_it_began(cluster, offline_app, tmp_path):
    """Joining a cluster by its address, the actors are created as the run opens, while the cases load: cases that
    do not load are said (exit 2, located, no traceback, nothing of the actors' background start), and the actors
    begun are ended with the run."""
    import time

    app = offline_app
    app.file("assistants/bot/mock.yml", 'default: "hi"\n')
    app.file("assistants/bot/package.yao", json.dumps({"name": "bot", "connector": "mock"}))
    path = app.root / "cases.jsonl"
    path.write_text('{"id": "a", "input": "hi"}\n{"id": "b", "input": \n')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "-n", "bot", "-o", str(tmp_path / "r.json"), "--executor", "ray",
                           "--ray-address", cluster, "--workers", "2"], capture_output=True, text=True, env=env, cwd=app.root, timeout=180)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cases.jsonl:2" in proc.stderr and "Traceback" not in proc.stderr and "Task exception" not in proc.stderr, proc.stderr
    assert not (tmp_path / "r.json").exists()
    ends = time.monotonic() + 60  # a killed actor takes a moment to be said dead
    while _actors_alive() and time.monotonic() < ends:
        time.sleep(0.2)
    assert _actors_alive() == 0


BATCH_PY = """
import os
MARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "marks")  # beside the app's folders
def boom(ctx):
    raise ValueError("boom in user code")
def nap(ctx):
    import time
    ends = time.time() + 60  # in flight until the crash below (its run again finds the mark at once)
    while time.time() < ends and not os.path.exists(os.path.join(MARK, "crashed")):
        time.sleep(0.05)
    return "napped"
def crash(ctx):
    import ctypes
    open(os.path.join(MARK, "crashed"), "w").close()
    ctypes.string_at(0)
"""


def _verdicts(path):
    return [(r["id"], r["run"], r["status"], (r.get("error") or "")[:40]) for r in report(path)["results"]]


def test_units_go_in_batches_and_come_back_in_order_each_its_own_even_with_failures_in_the_middle(cluster, tmp_path):
    """Many units on each actor at once (sent together, taken back together): every result is its own unit's, in
    the report's order, the same verdicts as local workers — a failing case and a tool that raises among them."""
    root = tool_app(tmp_path / "app", ("boom",), BATCH_PY).parent.parent
    cases = [{"id": f"c{i:02d}", "input": "call boom" if i == 7 else f"say {i}",
              "assert": {"type": "contains", "value": "nope" if i % 5 == 3 else ("boom" if i == 7 else f"echo: say {i}")}} for i in range(24)]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    args = ["-i", str(root / "cases.jsonl"), "-n", "bot", "--parallel", "12", "--runs", "2", "--app", str(root)]
    on_ray = cli(*args, "-o", str(tmp_path / "ray.json"), "--executor", "ray", "--workers", "2")
    local = cli(*args, "-o", str(tmp_path / "local.json"), "--workers", "2")
    assert on_ray.exit_code == local.exit_code == 1, on_ray.output
    got = _verdicts(tmp_path / "ray.json")
    assert got == _verdicts(tmp_path / "local.json")
    assert [(i, run) for i, run, *_ in got] == [(f"c{i:02d}", run) for i in range(24) for run in (1, 2)]
    assert {s for i, _, s, _ in got if i in ("c03", "c08", "c13", "c18", "c23")} == {"failed"}
    assert {s for i, _, s, _ in got if i not in ("c03", "c07", "c08", "c13", "c18", "c23")} == {"passed"}, got
    assert [r["input"] for r in report(tmp_path / "ray.json")["results"]] == [c["input"] for c in cases for _ in (1, 2)]


def test_an_actor_that_dies_with_units_in_flight_ends_only_the_culprit_as_error(cluster, tmp_path):
    """An actor holding several units when one of them crashes it: the others are run again, each alone on a fresh
    actor, and pass (said on their results); only the culprit is an error."""
    root = tool_app(tmp_path / "app", ("nap", "crash"), BATCH_PY).parent.parent
    (root / "marks").mkdir()
    cases = [{"id": f"n{i}", "input": "call nap"} for i in range(2)] + [{"id": "crash", "input": "call crash"}] + \
            [{"id": f"n{i}", "input": "call nap"} for i in range(2, 4)]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    result = cli("-i", str(root / "cases.jsonl"), "-n", "bot", "--parallel", "5", "--app", str(root), "-o", str(tmp_path / "r.json"),
                 "--executor", "ray", "--workers", "1")
    assert result.exit_code == 1, result.output
    got = {r["id"]: r for r in report(tmp_path / "r.json")["results"]}
    assert list(got) == ["n0", "n1", "crash", "n2", "n3"]
    assert got["crash"]["status"] == "error" and got["crash"]["error"].startswith("worker lost: ")
    assert "(the case took down 2 workers)" in got["crash"]["error"]
    for name in ("n0", "n1", "n2", "n3"):
        assert got[name]["status"] == "passed", got[name]
        assert any(w.startswith("its worker was lost while it ran") for w in got[name]["warnings"]), got[name]


def test_an_actor_collects_garbage_as_a_local_worker_does_and_the_test_process_as_it_was(cluster, tmp_path):
    """An actor's process is Ray's for the actor alone: the speed machinery is on before its imports, what its start-up
    made is frozen and the run's thresholds are set, as in the command and its local workers — never in the process that
    runs agent-test as a library."""
    import gc

    from agenttest.speed.collector import RUN_THRESHOLDS

    tool = "import gc, json\nfrom agenttest import speed\ndef thresholds(ctx):\n    return json.dumps([gc.get_threshold(), speed.installed()])\n"
    root = tool_app(tmp_path / "app", ("thresholds",), tool).parent.parent
    (root / "cases.jsonl").write_text(json.dumps({"id": "gc", "input": "call thresholds"}) + "\n")
    ours = gc.get_threshold()
    result = cli("-i", str(root / "cases.jsonl"), "-n", "bot", "--app", str(root), "-o", str(tmp_path / "r.json"), "--executor", "ray")
    assert result.exit_code == 0, result.output
    (got,) = report(tmp_path / "r.json")["results"]
    thresholds, installed = json.loads(got["tool_calls"][0]["result"])
    assert thresholds == list(RUN_THRESHOLDS)
    assert installed  # the speed machinery, as in the command: the actor's imports take the compiled dataclass methods
    assert gc.get_threshold() == ours != RUN_THRESHOLDS
