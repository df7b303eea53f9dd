"""Outside the app root, and a tool that changes the working directory (issue 25, items 3 and 4): every
ID-to-path lookup stays inside the app root — absolute segments, ``..`` and symlinks out are exit 2 naming
the field, and the outside code never runs; ``os.chdir`` in a tool moves no report and no cassette."""

from __future__ import annotations

import json
import os

import pytest

from helpers import Answer, cli, report


@pytest.fixture
def outside(app, tmp_path):
    """Code and a connector outside the app root that, if ever loaded, leave a mark."""
    evil = tmp_path / "evil"
    evil.mkdir()
    mark = tmp_path / "MARK"
    code = f"open({str(mark)!r}, 'w').write('ran')\ndef check(output, input, value):\n    return True\n"
    (evil / "x.py").write_text(code)
    (evil / "conn.conn.yao").write_text(json.dumps({"type": "openai", "options": {"model": "m", "host": "http://127.0.0.1:9", "key": "$ENV.FAKE_OPENAI_KEY"}}))
    agent = evil / "agent"
    agent.mkdir()
    (agent / "package.yao").write_text(json.dumps({"name": "evil", "connector": "fake"}))
    (agent / "src").mkdir()
    (agent / "src" / "index.py").write_text(code)
    app.agent("bot")
    app.agent_outside, app.evil, app.mark = agent, evil, mark
    return app


def variants(o):
    evil = str(o.evil)
    return {
        "options.connector": ({"options": {"connector": f"{evil}/conn"}}, "connector"),
        "script": ({"assert": {"type": "script", "script": f"scripts.{evil}/x.check"}}, "script"),
        "use": ({"assert": {"type": "agent", "use": f"agents:{evil}/agent", "value": "ok"}}, "agent"),
        "simulator.use": ({"simulator": {"use": f"{evil}/agent"}, "checkpoints": [{"id": "c", "assert": {"type": "contains", "value": "x"}}]},
                          "simulator"),
        "dotdot connector": ({"options": {"connector": "../../evil/conn"}}, "connector"),
        "before": ({"before": f"{evil}/x.check"}, "before"),
    }


@pytest.mark.parametrize("name", ["options.connector", "script", "use", "simulator.use", "dotdot connector", "before"])
def test_an_id_that_is_a_path_out_of_the_app_is_exit_2_and_runs_nothing(outside, server, name):
    extra, field = variants(outside)[name]
    path = outside.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", **extra}])
    for flags in ([], ["--dry-run"], ["--list"]):
        result = cli("-i", str(path), "-o", str(outside.root / "r.json"), *flags) if not flags else cli("-i", str(path), *flags)
        if flags and result.exit_code == 0:
            continue  # previews that do not resolve the case's references (nothing is loaded then either)
        assert result.exit_code == 2, (flags, result.output)
        assert "Traceback" not in result.stderr and f"{path}:1:" in result.stderr, result.stderr
        assert "inside the app" in result.stderr or "outside the app root" in result.stderr, result.stderr
    assert not outside.mark.exists()  # the outside code never ran
    assert server.requests == []  # and no key went anywhere


def test_a_symlink_out_of_the_app_is_exit_2(outside, server):
    (outside.root / "scripts").mkdir()
    os.symlink(outside.evil / "x.py", outside.root / "scripts" / "linked.py")
    os.symlink(outside.evil / "conn.conn.yao", outside.root / "connectors" / "linked.conn.yao")
    cases = [{"id": "a", "input": "hi", "assert": {"type": "script", "script": "scripts.linked.check"}},
             {"id": "b", "input": "hi", "options": {"connector": "linked"}}]
    path = outside.cases("assistants/bot/tests/inputs.jsonl", cases)
    result = cli("-i", str(path), "-o", str(outside.root / "r.json"))
    assert result.exit_code == 2, result.output
    assert "script module 'linked' leads outside the app root" in result.stderr
    assert "connector 'linked' leads outside the app root" in result.stderr
    assert not outside.mark.exists() and server.requests == []


CHDIR_TOOLS = [{"name": "wander", "description": "d", "parameters": {"type": "object", "properties": {}}}]


def test_a_tool_that_changes_the_working_directory_moves_nothing(app, server, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    app.agent("bot", tools=CHDIR_TOOLS, files={"src/tools.py": f"import os\ndef wander(ctx):\n    os.chdir({str(elsewhere)!r})\n    return 'moved'\n"})
    server.responder = lambda req: Answer("done") if req["messages"][-1]["role"] == "tool" else Answer("", tool_calls=[{"name": "wander", "arguments": {}}])
    cases = [{"id": f"c{i}", "input": "go", "assert": {"type": "tool_called", "value": "wander"}} for i in range(3)]
    app.cases("assistants/bot/tests/inputs.jsonl", cases)
    work = app.root
    result = cli("-i", "assistants/bot/tests/inputs.jsonl", "-o", "out/r.json", "-o", "out/r.md", "--record", "tapes", cwd=work)
    assert result.exit_code == 0, result.output
    assert report(work / "out" / "r.json")["summary"]["passed"] == 3 and (work / "out" / "r.md").is_file()
    tapes = sorted(p.name for p in (work / "tapes").rglob("*.jsonl"))
    assert tapes == ["c0.jsonl", "c1.jsonl", "c2.jsonl"]  # one name per case, all in the folder asked for
    assert list(elsewhere.iterdir()) == []


def test_a_report_target_that_is_an_input_of_the_run_is_refused_before_anything_runs(offline_app, tmp_path, monkeypatch):
    """-o cases.jsonl for -i cases.jsonl (one letter off) would replace the suite with a report: exit 2, the file kept."""
    from helpers import cli

    offline_app.agent("bot", connector="mock", files={"mock.yml": "rules:\n  - user: '.*'\n    reply: hello\n"})
    path = offline_app.cases("cases.jsonl", [{"id": "a", "input": "hi"}])
    before = path.read_text()
    monkeypatch.chdir(path.parent)
    for args in (["-o", str(path)], ["-o", "./cases.jsonl", "--dry-run"], ["-o", "cases.jsonl", "-o", "r.json"]):
        result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), *args)
        assert result.exit_code == 2 and "is an input of this run" in result.output, result.output
        assert path.read_text() == before
    ok = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "-o", "report.json")
    assert ok.exit_code == 0, ok.output
