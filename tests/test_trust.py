"""Issue 28 from the command line: verdicts a CI can trust (no false green, reasons that say why, diffs
without noise) and what a new user trips over (pipes, habits, real Yao files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, cli, report

SEARCH_TOOL = [{"name": "search", "description": "find books", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]
SEARCH_RULES = """\
rules:
  - name: ask
    user: 'find (?P<q>\\w+)'
    tool_calls:
      - name: search
        arguments: {q: "{{ q }}"}
  - name: {name}
    tool: search
    reply: "Top hit: {template}"
default: hi
"""
SEARCH_TOOLS_PY = "def search(ctx, q):\n    return {'results': [{'title': 'Dune'}], 'count': 1}\n"


def _bookshop(app, template: str, name: str = "found"):
    rules = SEARCH_RULES.replace("{name}", name).replace("{template}", template)
    app.agent("shop", connector="mock", tools=SEARCH_TOOL, files={"mock.yml": rules, "src/tools.py": SEARCH_TOOLS_PY})
    return app.cases("assistants/shop/tests/t.jsonl", [{"id": "find", "input": "find dune", "assert": [{"type": "contains", "value": "Top hit"}]}])


def test_mock_template_with_a_missing_field_is_the_cases_error_not_a_pass(offline_app, tmp_path):
    path = _bookshop(offline_app, "{{ tool_result.results[0].name }}")
    result = cli("-i", str(path), "-o", str(tmp_path / "r.json"))
    (row,) = report(tmp_path / "r.json")["results"]
    assert result.exit_code == 1 and row["status"] == "error"
    assert row["error"] == ("agent error: mock rule 'found': a template names a missing field: {{ tool_result.results[0].name }}: "
                            "tool_result.results[0] has no 'name' (its keys: title)")
    path = _bookshop(offline_app, "{{ tool_result.hits.0 }}")
    result = cli("-i", str(path), "-o", str(tmp_path / "r.json"))
    assert "tool_result has no 'hits' (its keys: results, count)" in report(tmp_path / "r.json")["results"][0]["error"]


def test_mock_template_indexes_lists_with_brackets_or_dots(offline_app, tmp_path):
    for template in ("{{ tool_result.results[0].title }}", "{{ tool_result.results.0.title }}"):
        path = _bookshop(offline_app, template)
        result = cli("-i", str(path), "-o", str(tmp_path / "r.json"))
        (row,) = report(tmp_path / "r.json")["results"]
        assert result.exit_code == 0 and row["output"] == "Top hit: Dune", template


def test_strict_accepts_yao_package_keys_and_rejects_unknown_mock_keys(offline_app):
    yao = {"sandbox": {"image": "x"}, "capabilities": {"vision": True}, "__yao_created_by": "u1", "__yao_team_id": "t1"}
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"}, **yao)
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "hello", "assert": [{"type": "contains", "value": "hi"}]}])
    ok = cli("-i", str(path), "--strict", "-o", str(offline_app.root / "r.json"))
    assert ok.exit_code == 0, ok.output + ok.stderr
    (offline_app.root / "assistants/bot/mock.yml").write_text("default: hi\nflavour: x\n")
    lenient = cli("-i", str(path), "-o", str(offline_app.root / "r.json"))
    assert lenient.exit_code == 0 and "'flavour' is not a field of mock.yml; ignored" in lenient.output
    strict = cli("-i", str(path), "--strict", "-o", str(offline_app.root / "r.json"))
    assert strict.exit_code == 2 and "'flavour' is not a field of mock.yml; unknown keys are errors with --strict" in strict.stderr
    (offline_app.root / "assistants/bot/package.yao").write_text(json.dumps({"name": "bot", "connector": "mock", "colour": "x"}))
    unknown = cli("-i", str(path), "--strict")
    assert unknown.exit_code == 2 and "'colour' is not a field of package.yao" in unknown.stderr


LONG = "I would like to order three copies of the collected works of Ursula K. Le Guin, please, in hardcover"


def _talker(app):
    """An offline agent with a tool that changes the world, and a mock simulator."""
    tools = [{"name": "order", "description": "order books", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}]
    rules = ("rules:\n  - user: 'three'\n    tool_calls: [{name: order, arguments: {n: 3}}]\n  - tool: order\n"
             "    reply: 'Ordered: {{ tool_result.n }} copies of everything you asked for, in hardcover'\ndefault: ok\n")
    tools_py = "def order(ctx, n):\n    ctx.world['orders'].append(n)\n    return {'n': n}\n"
    app.agent("shop", connector="mock", tools=tools, files={"mock.yml": rules, "src/tools.py": tools_py})
    app.agent("sim", connector="mock", files={"mock.yml": "default:\n  json: {message: '" + LONG + "', goal_achieved: false}\n"})


def test_verbose_shows_what_each_assertion_checked_and_whole_dynamic_turns(offline_app):
    _talker(offline_app)
    state = [{"type": "state", "path": "$.orders[0]", "value": 3}, {"type": "state", "path": "$.orders", "value": [3]}]
    path = offline_app.cases("assistants/shop/tests/t.jsonl", [
        {"id": "std", "input": LONG, "world": {"orders": []}, "assert": state},
        {"id": "dyn", "world": {"orders": []}, "simulator": {"use": "sim"},
         "checkpoints": [{"id": "ordered", "assert": {"type": "tool_called", "value": "order"}}],
         "assert": [{"type": "state", "path": "$.orders[0]", "value": 3}, {"type": "state", "path": "$.orders", "value": [3]}]},
    ])
    result = cli("-i", str(path), "-n", "shop", "-v", "-o", str(offline_app.root / "r.json"))
    assert result.exit_code == 0, result.output
    assert '│  ✓ state path=$.orders[0] value=3' in result.output and '│  ✓ state path=$.orders value=[3]' in result.output
    assert f'Turn 1: "{LONG}" → "Ordered: 3 copies of everything you asked for, in hardcover"' in result.output
    assert "1 turn, 1/1 checkpoints" in result.output and "1 turns" not in result.output
    tree = result.output.split("► [dyn]")[1]
    assert "\n  ✓ state path=$.orders[0] value=3\n  ✓ state path=$.orders value=[3]\n" in tree  # the final assertions, with paths
    first = report(offline_app.root / "r.json")["results"][0]["assertions"][0]
    assert first["checked"] == "path=$.orders[0] value=3"
    quiet = cli("-i", str(path), "-n", "shop", "-q")
    assert "1 turn, 1/1 checkpoints" in quiet.output and "1 turns" not in quiet.output
    short = cli("-i", str(path), "-n", "shop")
    assert f'Turn 1: "{LONG}"' not in short.output  # without -v, the tree stays a glimpse


def test_failing_every_run_is_failing_not_highly_unstable(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [
        {"id": "never", "input": "x", "assert": [{"type": "contains", "value": "bye"}]},
        {"id": "always", "input": "x", "assert": [{"type": "contains", "value": "hi"}]}])
    result = cli("-i", str(path), "--runs", "5", "-o", str(tmp_path / "r.json"))
    classes = {s["id"]: s["classification"] for s in report(tmp_path / "r.json")["summary"]["stability"]}
    assert result.exit_code == 1 and classes == {"never": "failing", "always": "stable"}
    assert "highly_unstable" not in result.output


def test_ctrl_c_before_any_case_finished_is_not_a_100_percent_pass_rate(offline_app, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import REPO

    offline_app.agent("bot", connector="mock", files={"mock.yml": "rules:\n  - user: slow\n    delay: 30\n    reply: late\ndefault: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [{"id": f"c{i}", "input": "slow"} for i in range(3)])
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "-i", str(path), "-o", str(tmp_path / "r.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    seen, deadline = "", time.time() + 120
    while "► [c0]" not in seen and time.time() < deadline:  # the first case is running
        seen += os.read(proc.stdout.fileno(), 4096).decode()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    stdout = seen + stdout
    assert proc.returncode == 130, stderr
    assert "Pass Rate: 0.0% (of the 0 that ran)" in stdout and "100.0%" not in stdout
    assert "Not run:   3 (interrupted)" in stdout and "INTERRUPTED after 0 of 3 tests" in stdout
    assert report(tmp_path / "r.json")["summary"]["pass_rate"] == 0.0


BUGGY_TOOLS_PY = """\
def search(ctx, q):
    print(f"searching {q}")
    return {"results": [], "per_page": 10 / len(q.strip("dune"))}
"""


def test_a_tool_that_raises_says_where_in_report_console_and_markdown(offline_app, tmp_path):
    rules = SEARCH_RULES.replace("{name}", "found").replace("{template}", "{{ tool_result }}")
    offline_app.agent("shop", connector="mock", tools=SEARCH_TOOL, files={"mock.yml": rules, "src/tools.py": BUGGY_TOOLS_PY})
    path = offline_app.cases("assistants/shop/tests/t.jsonl", [
        {"id": "find", "input": "find dune", "tags": ["search", "smoke"], "assert": [{"type": "contains", "value": "Dune"}]},
        {"id": "bye", "input": "bye", "tags": ["smoke"], "assert": [{"type": "contains", "value": "hi"}]},
        {"id": "coped", "input": "find dune", "assert": [{"type": "contains", "value": "Top hit"}]}])
    out = [str(tmp_path / f"r.{ext}") for ext in ("json", "md", "xml", "html")]
    result = cli("-i", str(path), *[x for o in out for x in ("-o", o)])
    data = report(out[0])
    call = data["results"][0]["tool_calls"][0]
    assert call["error"] == "ZeroDivisionError: division by zero" and call["location"] == "tools.py:3"
    assert 'tools.py", line 3, in search' in call["traceback"] and "agenttest" not in call["traceback"]
    assert data["results"][0]["stdout"] == "searching dune\n"
    assert "└─ tool search raised ZeroDivisionError: division by zero at tools.py:3 (-v: its traceback)" in result.output
    verbose = cli("-i", str(path), "-v")
    assert "→ error: ZeroDivisionError: division by zero (tools.py:3)" in verbose.output
    assert 'tools.py", line 3, in search' in verbose.output and "│  stdout: searching dune" in verbose.output
    md = (tmp_path / "r.md").read_text()
    assert "(raised at `tools.py:3`)" in md and "**Tool `search` raised** at `tools.py:3`" in md
    assert 'tools.py", line 3, in search' in md and "searching dune" in md
    assert "## Tags" in md and "| search | 1 | 0 | 1 | 0% |" in md and "| smoke | 2 | 1 | 1 | 50% |" in md
    assert "| Tags |" in md and "| search, smoke |" in md
    assert '<property name="tags" value="search,smoke" />' in (tmp_path / "r.xml").read_text()
    assert "<h2>Tags</h2>" in (tmp_path / "r.html").read_text()
    assert "  Tags:\n    tag     cases  passed  not passed  pass rate\n    search  1      0       1           0%\n    smoke   2" in result.output
    coped = cli("-i", str(path), "-k", "coped")  # the agent coped with the error: the case line says nothing more
    assert coped.exit_code == 0 and "raised" not in coped.output


def _two_connectors(app):
    app.connector("stub", {"type": "mock", "options": {"rules": "stub.yml"}})
    app.agent("bot", connector="mock", files={"mock.yml": "default: hello there\n", "stub.yml": "default: bye\n"})
    return app.cases("assistants/bot/tests/t.jsonl", [
        {"id": "greet", "input": "hi", "assert": [{"type": "contains", "value": "hello"}]},
        {"id": "any", "input": "hi", "assert": [{"type": "regex", "value": "."}]}])


def test_diff_of_more_runs_saying_the_same_is_not_changed(offline_app, tmp_path):
    path = _two_connectors(offline_app)
    one, five = tmp_path / "one.json", tmp_path / "five.json"
    assert cli("-i", str(path), "-o", str(one)).exit_code == 0
    assert cli("-i", str(path), "--runs", "5", "-o", str(five)).exit_code == 0
    result = cli("diff", str(one), str(five), "-o", str(tmp_path / "d.md"), "-o", str(tmp_path / "d.json"))
    assert result.exit_code == 0 and "CHANGED" not in result.output
    assert json.loads((tmp_path / "d.json").read_text())["counts"]["changed"] == 0
    assert f"Output: {tmp_path / 'd.md'}" in result.output and f"Output: {tmp_path / 'd.json'}" in result.output


def test_diff_against_a_matrix_compares_connector_by_connector(offline_app, tmp_path):
    path = _two_connectors(offline_app)
    single, matrix = tmp_path / "single.json", tmp_path / "matrix.json"
    assert cli("-i", str(path), "-o", str(single)).exit_code == 0
    assert cli("-i", str(path), "-c", "mock,stub", "-o", str(matrix)).exit_code == 1
    result = cli("diff", str(single), str(matrix), "-o", str(tmp_path / "d.json"), "--fail-on-regression")
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["counts"]["regressed"] == 0 and "runs passed" not in result.output
    # nothing regressed, but greet on stub is new and fails: the gate of --baseline, which diff's is, fails on it
    assert result.exit_code == 1 and result.output.splitlines()[-1] == "  --fail-on-regression: fails — 1 new not passing (greet on stub)"
    assert {(c["id"], c["connector"], c["kind"]) for c in data["cases"]} == {
        ("greet", "mock", "unchanged"), ("any", "mock", "unchanged"), ("greet", "stub", "new"), ("any", "stub", "new")}


def test_re_recording_the_same_conversation_gives_the_same_cassette_bytes(app, server, tmp_path):
    import uuid

    from helpers import Answer

    def endpoint(request):  # a real endpoint makes up new tool-call ids on every call
        if request["messages"][-1]["role"] == "tool":
            return Answer("Found: Dune")
        return Answer(tool_calls=[{"name": "search", "arguments": {"q": "dune"}}], call_ids=[f"call_{uuid.uuid4().hex[:12]}"])

    server.responder = endpoint
    app.agent("shop", tools=SEARCH_TOOL, files={"src/tools.py": SEARCH_TOOLS_PY})
    path = app.cases("assistants/shop/tests/t.jsonl", [{"id": "find", "input": "find dune", "assert": [{"type": "contains", "value": "Dune"}]}])
    texts = []
    for attempt in ("a", "b"):
        tapes = tmp_path / attempt
        assert cli("-i", str(path), "--record", str(tapes), "-o", str(tmp_path / f"{attempt}.json")).exit_code == 0
        (tape,) = tapes.rglob("*.jsonl")
        texts.append(tape.read_text())
    assert texts[0] == texts[1] and '"id": "call_1"' in texts[0] and '"tool_call_id":"call_1"' in texts[0].replace(" ", "")
    replayed = cli("-i", str(path), "--replay", str(tmp_path / "a"), "-o", str(tmp_path / "r.json"))
    assert replayed.exit_code == 0
    assert report(tmp_path / "r.json")["results"][0]["tool_calls"][0]["id"] == report(tmp_path / "a.json")["results"][0]["tool_calls"][0]["id"]


def test_merge_keeps_the_stability_figures_of_a_cases_runs_field(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [
        {"id": f"c{i}", "input": "x", "runs": 3, "assert": [{"type": "contains", "value": "hi"}]} for i in range(4)])
    shards = [tmp_path / f"s{k}.json" for k in (1, 2)]
    for k, out in enumerate(shards, 1):
        assert cli("-i", str(path), "--shard", f"{k}/2", "-o", str(out)).exit_code == 0
    assert all(report(s)["summary"].get("stability") for s in shards if report(s)["results"])
    result = cli("merge", *map(str, shards), "-o", str(tmp_path / "all.json"))
    merged = report(tmp_path / "all.json")["summary"]
    assert result.exit_code == 0 and len(merged["stability"]) == 4 and merged["stable_cases"] == 4
    assert {s["runs"] for s in merged["stability"]} == {3}


def test_a_reader_that_leaves_early_gets_no_broken_pipe_traceback_and_the_report_is_written(offline_app, tmp_path):
    import os
    import subprocess
    import sys

    from helpers import REPO

    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [{"id": f"c{i}", "input": "x" * 400, "assert": {"type": "contains", "value": "hi"}} for i in range(40)])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for extra in ([], ["--json"]):
        shell = f"{sys.executable} -m agenttest -i {path} -o {tmp_path / 'r.json'} {' '.join(extra)} | head -3"
        done = subprocess.run(["bash", "-c", f"set -o pipefail; {shell}"], capture_output=True, text=True, env=env, timeout=120)
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr and "Exception ignored" not in done.stderr, (extra, done.stderr)
        assert len(done.stdout.splitlines()) == 3
    assert len(report(tmp_path / "r.json")["results"]) == 40


@pytest.mark.parametrize("sdk_first", [False, True], ids=["early", "sdk-first"])
def test_the_sdk_is_imported_before_the_first_case_not_during_it(app, server, tmp_path, sdk_first):
    """The first call to a local endpoint took 0.7–1.1 s: the openai SDK's import, made at that call. It is made
    before the first case now (when the run warms its connectors), so a case's time (and deadline) is the call's
    own — or, where the first requests can leave exactly as the SDK sends them (connectors/early.py), beside
    them: not before the case, and not in its call either (an ``OPENAI_*`` variable keeps the SDK first). (A fresh
    process: the test's own process has imported the SDK long ago.)"""
    import os
    import subprocess
    import sys

    from helpers import REPO

    seen = tmp_path / "seen.txt"
    app.agent("bot", files={"src/env_test.py": f"import sys\ndef Before(ctx, case):\n    open({str(seen)!r}, 'a').write(str('openai' in sys.modules))\n"})
    path = app.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before"}])
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("OPENAI_") and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    done = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "-o", str(tmp_path / "r.json")], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(REPO), **({"OPENAI_ORG_ID": "org-1"} if sdk_first else {})}, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen.read_text() == str(sdk_first)
    assert len(server.requests) == 1


def test_list_and_dry_run_check_the_connectors_without_importing_the_sdk(app, tmp_path):
    """--list and --dry-run make the run's connectors to check them (a bad option is still their problem) but send
    nothing: the SDK's import (0.5–1 s) is left to a run (issue 57: --list under 0.2 s)."""
    import os
    import subprocess
    import sys

    from helpers import REPO

    app.agent("bot")
    path = app.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "hi"}])
    probe = ("import sys\nfrom agenttest import cli\n"
             "try:\n    cli.main(prog_name='agent-test')\nexcept SystemExit:\n    pass\n"
             "print('openai imported' if 'openai' in sys.modules else 'no openai')\n")
    for flag in ("--list", "--dry-run"):
        done = subprocess.run([sys.executable, "-c", probe, "-i", str(path), flag], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
        assert done.stdout.splitlines()[-1] == "no openai", done.stdout + done.stderr
        assert "a" in done.stdout  # the case was listed
    app.connector("fake", {"type": "openai", "options": {"model": "m1", "key": "k", "timeout": "soon"}})
    done = subprocess.run([sys.executable, "-m", "agenttest", "-i", str(path), "--list"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert done.returncode == 2, done.stderr  # the connector was still made and checked
    assert "connector fake (" in done.stderr and "'timeout' must be a number of seconds > 0, not 'soon'" in done.stderr and "Traceback" not in done.stderr


def test_init_writes_a_gitignore_and_default_reports_go_to_one_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    assert cli("init", str(tmp_path / "shop")).exit_code == 0
    app = tmp_path / "shop"
    ignored = (app / ".gitignore").read_text().split()
    assert {"reports/", "output-*.json", ".agent-test/"} <= set(ignored)
    for _ in range(2):
        ran = cli("-i", "tests", cwd=app)
        assert ran.exit_code == 0
    reports = sorted((app / "reports").glob("output-*.json"))
    assert len(reports) == 2 and not list((app / "tests").glob("output-*"))
    named = ran.output.split("Output: ")[1].split()[0]
    assert named.startswith("reports/output-") and (app / named).is_file()
    again = cli("-i", "tests", "--list", cwd=app)  # the reports folder holds no cases
    assert again.exit_code == 0 and "reports/" not in again.output


def _without_root_powers(argv):
    """argv run so that file permissions bind: as root, with the capabilities that pass them by dropped (setpriv)."""
    if os.geteuid() != 0:
        return argv
    drop = "-dac_override,-dac_read_search,-fowner"
    return ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}", *argv]


def test_a_report_folder_that_cannot_be_written_is_a_usage_error_before_anything_runs(tmp_path, monkeypatch):
    """An app whose reports/ cannot be made (a file in the way) or written (read-only): one line, exit 2, no
    traceback — for a run, --dry-run and --list alike — and nothing is made by a preview. (It was an internal
    error, exit 3, with a traceback.)"""
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    assert cli("init", str(tmp_path / "shop")).exit_code == 0
    app = tmp_path / "shop"
    (app / "reports").write_text("not a folder")
    for extra in ((), ("--dry-run",), ("--list",)):
        said = cli("-i", "tests", *extra, cwd=app)
        assert said.exit_code == 2, (extra, said.output)
        assert f"cannot write the run's report in reports/: {app / 'reports'} is a file" in said.stderr and "Traceback" not in said.output
        assert "-o FILE" in said.stderr
    (app / "reports").unlink()
    assert cli("-i", "tests", "--dry-run", cwd=app).exit_code == 0 and not (app / "reports").exists()
    assert cli("-i", "tests", "-o", str(tmp_path / "elsewhere.json"), cwd=app).exit_code == 0  # the way out works
    for folder in (f"{tmp_path}/", f"{tmp_path}/new/"):  # an -o that names a folder is said as such, not as a format
        said = cli("-i", "tests", "-o", folder, cwd=app)
        assert said.exit_code == 2 and f"-o {folder}: is a folder; give a file name" in said.stderr, said.output
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("AGENTTEST_APP", None)
    for path in (app, *app.rglob("*")):
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        for extra in ((), ("--dry-run",)):
            ran = subprocess.run(_without_root_powers([sys.executable, "-m", "agenttest", "-i", "tests", *extra]), cwd=app,
                                 capture_output=True, text=True, env=env, timeout=120)
            assert ran.returncode == 2, ran.stdout + ran.stderr
            assert "cannot write the run's report in reports/: Permission denied" in ran.stderr and "Traceback" not in ran.stderr
    finally:
        for path in (app, *app.rglob("*")):
            path.chmod(path.stat().st_mode | 0o200)


def test_init_says_what_is_in_the_way_in_a_line(tmp_path):
    """init into a file, an app that exists, or a read-only folder: exit 2 and a line, never a traceback; the
    hint names another folder than the one that failed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("AGENTTEST_APP", None)

    def init(target):
        argv = [sys.executable, "-m", "agenttest", "init", target]
        return subprocess.run(_without_root_powers(argv), cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)

    (tmp_path / "afile").write_text("x")
    made = init("afile")
    assert made.returncode == 2 and "init: afile is a file" in made.stderr and "Traceback" not in made.stderr
    assert init("my-app").returncode == 0
    again = init("my-app")
    assert again.returncode == 2 and "my-app already exists and is not empty" in again.stderr and "init my-new-app" in again.stderr
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o555)
    try:
        denied = init("locked/app")
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert denied.returncode == 2 and "Traceback" not in denied.stderr, denied.stderr
    assert "init: cannot write locked/app: Permission denied" in denied.stderr and not (tmp_path / "locked" / "app").exists()


def test_k_matches_the_case_files_name(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    offline_app.cases("assistants/bot/tests/smoke.jsonl", [{"id": "a", "input": "x", "expected": "hi"}])
    offline_app.cases("assistants/bot/tests/deep.jsonl", [{"id": "b", "input": "x", "expected": "hi"},
                                                          {"id": "c", "input": "x", "tags": ["smoke"], "expected": "hi"}])
    folder = str(offline_app.root / "assistants/bot/tests")
    listed = cli("-i", folder, "--list", "-k", "smoke")
    assert listed.exit_code == 0 and "2 cases selected" in listed.output
    assert sorted(line.split()[0] for line in listed.output.splitlines()[:2]) == ["a", "c"]
    only = cli("-i", folder, "--list", "-k", "deep and not smoke")
    assert only.exit_code == 0 and "1 case selected" in only.output and only.output.startswith("b ")


def test_qq_with_one_gated_case_prints_the_gates_line_not_the_whole_table(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n"})
    cases = [{"id": f"plain{i}", "input": "x", "assert": [{"type": "contains", "value": "hi"}]} for i in range(5)]
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [*cases, {"id": "gated", "input": "x", "min_pass_rate": 0.5,
                                                               "assert": [{"type": "contains", "value": "bye"}]}])
    full = cli("-i", str(path))
    assert "plain3" in full.output.split("Gates:")[1]  # the whole table, without -qq
    brief = cli("-i", str(path), "-qq")
    summary = brief.output.split("Gates:")[1]
    assert brief.exit_code == 1 and "5/6 passed, 1 failed" in summary
    assert "plain" not in brief.output and "gated" in summary and "class" in summary  # the failed gate's row, with its header


def test_an_unknown_connector_suggests_c(offline_app):
    offline_app.agent("bot", connector="nowhere", files={"mock.yml": "default: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "x"}])
    result = cli("-i", str(path))
    assert result.exit_code == 2 and "unknown connector 'nowhere'" in result.stderr
    assert "known connectors: mock (run with one of them: -c mock); or openai.<model>" in result.stderr
    assert cli("-i", str(path), "-c", "mock").exit_code == 0


def test_same_id_in_two_files_each_result_names_its_file_and_chat_ids_differ(offline_app, tmp_path):
    seen = tmp_path / "chats.txt"
    hook = f"def Before(ctx, case):\n    open({str(seen)!r}, 'a').write(ctx.chat_id + '\\n')\n"
    offline_app.connector("stub", {"type": "mock"})
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n", "src/env_test.py": hook})
    one = offline_app.cases("assistants/bot/tests/one.jsonl", [{"id": "a", "input": "x", "before": "env_test.Before"}])
    two = offline_app.cases("assistants/bot/tests/two.jsonl", [{"id": "a", "input": "x", "before": "env_test.Before"}])
    ctx = tmp_path / "ctx.json"
    ctx.write_text('{"chat_id": "ci-42"}')
    result = cli("-i", str(one), "-i", str(two), "--ctx", str(ctx), "-c", "mock,stub", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    chats = seen.read_text().split()
    assert len(chats) == 4 and len(set(chats)) == 4 and all(c.startswith("ci-42-a-1-") for c in chats)
    assert sorted(r["file"] for r in report(tmp_path / "r.json")["results"]) == sorted([str(one), str(one), str(two), str(two)])
    assert result.output.index(str(one)) < result.output.index(str(two))  # the console names each file before its cases
    both = cli("-i", str(one), "-i", str(two), "-o", str(tmp_path / "r.md"), "-o", str(tmp_path / "r.xml"))
    md, xml = (tmp_path / "r.md").read_text(), (tmp_path / "r.xml").read_text()
    assert both.exit_code == 0 and "| ID | File |" in md and md.count("| a |") == 2
    assert xml.count(f'file="{one}"') == 1 and xml.count(f'file="{two}"') == 1
    (offline_app.root / "assistants/bot/tests/one.jsonl").write_text('{"id": "a", "input": "x"}\n{"id": "a", "input": "y"}\n')
    dup = cli("-i", str(one))
    assert dup.exit_code == 2 and f"{one}:2:8: duplicate id 'a' (first used at line 1); ids must be unique in a file" in dup.stderr


PREVIEW_BAD = {
    "unknown connector": ({"connector": "nowhere"}, {}, []),
    "unknown assertion type": ({}, {"assert": [{"type": "contans", "value": "x"}]}, []),
    "missing hook function": ({}, {"before": "env_test.Nope"}, []),
    "unknown validator agent": ({}, {"assert": [{"type": "agent", "use": "agents:nobody", "value": "is polite"}]}, []),
    "mock of a tool the agent lacks": ({}, {"mocks": [{"tool": "no_such_tool", "returns": 1}]}, []),
    "budget cost without pricing": ({}, {"budget": {"cost": 0.01}}, []),
    "unknown mock.yml key under --strict": ({"mock": "default: hi\nflavour: x\n"}, {}, ["--strict"]),
    "case option typo": ({}, {"options": {"temprature": 0.2}}, []),
    "missing script of a script assertion": ({}, {"assert": [{"type": "script", "script": "scripts.nope.check"}]}, []),
    "unknown agent": ({}, {}, ["-n", "nobody"]),
    "a simulator that does not exist": ({}, {"simulator": {"use": "nobody"}, "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "x"}}]}, []),
}


@pytest.mark.parametrize("what", list(PREVIEW_BAD))
def test_dry_run_and_list_are_exit_2_where_a_run_is(offline_app, what):
    """--dry-run and --list check what a run checks: neither says 0 where the run would say 2."""
    agent, case, flags = PREVIEW_BAD[what]
    offline_app.agent("bot", connector=agent.get("connector", "mock"), files={"mock.yml": agent.get("mock", "default: hi\n"),
                                                                              "src/env_test.py": "def Before(ctx, case):\n    pass\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "x", **case}])
    codes = {mode: cli("-i", str(path), *flags, *extra).exit_code for mode, extra in (("run", []), ("dry-run", ["--dry-run"]), ("list", ["--list"]))}
    assert codes == {"run": 2, "dry-run": 2, "list": 2}


def test_ctrl_c_with_runs_counts_runs_and_cases_apart(offline_app, tmp_path):
    """--runs 2: the banner says runs where it counts runs, and how many cases ran (it counts cases elsewhere)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import REPO

    offline_app.agent("bot", connector="mock", files={"mock.yml": "rules:\n  - user: slow\n    delay: 30\n    reply: late\ndefault: hi\n"})
    path = offline_app.cases("assistants/bot/tests/t.jsonl", [{"id": "c0", "input": "x"}, {"id": "c1", "input": "x"}, {"id": "c2", "input": "slow"}])
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "-i", str(path), "--runs", "2", "--no-history", "-o", str(tmp_path / "r.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    seen, deadline = "", time.time() + 120
    while "► [c2] (run 1/2)" not in seen and time.time() < deadline:  # c0 and c1 are done, c2 is running
        seen += os.read(proc.stdout.fileno(), 4096).decode()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    stdout = seen + stdout
    assert proc.returncode == 130, stderr
    assert "INTERRUPTED after 4 of 6 runs (2 of 3 cases ran)" in stdout and "Not run:   2 runs (interrupted)" in stdout, stdout
