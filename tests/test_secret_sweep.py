"""Issue 50's sweep: a long key (164 characters) echoed by a tool, written in a case id and in a connector id,
with failing assertions, under --workers 0, 1, 2 and --executor ray. No 12-character piece of it in any output
(console, --json events, the five report formats, the history database, cassettes, lastfailed, file names),
and every verdict, gate, history row and --lf selection is what it is with a short key (not a secret)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from helpers import REPO, Answer, cli

KEY = "sk_live_" + "".join("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789_-"[(i * 7 + i // 5) % 61] for i in range(156))
SHORT = "k_short"  # under 8 characters: not taken for a secret
PIECE = 12
FORMATS = (".json", ".jsonl", ".md", ".html", ".xml")
VAULT = [{"name": "vault", "description": "open the vault", "parameters": {"type": "object", "properties": {}}}]


def pieces(key: str) -> list[str]:
    return [key[i:i + PIECE] for i in range(len(key) - PIECE + 1)]


def leaks(text: str, key: str = KEY) -> list[str]:
    """The pieces of ``key`` in ``text``, as written or with the escapes of Markdown, HTML and JSON undone."""
    import html

    forms = {text, text.replace("\\", ""), html.unescape(text)}
    return [p for p in pieces(key) if any(p in form for form in forms)]


def responder(req):
    """The agent calls its vault tool once, then says what the tool returned."""
    if req["messages"][-1]["role"] == "tool":
        return Answer("the vault said " + req["messages"][-1]["content"] + " and that is all")
    return Answer("", tool_calls=[{"name": "vault", "arguments": {}}])


def make_app(app, server, key: str):
    """The connector ``conn-<key>`` with the key from $ENV.SWEEP_KEY; the agent's tool returns the key."""
    os.environ["SWEEP_KEY"] = key
    app.connector(f"conn-{key}", {"type": "openai", "options": {"model": "fake-model", "host": server.host, "key": "$ENV.SWEEP_KEY",
                                                               "max_retries": 0}})
    app.agent("bot", connector=f"conn-{key}", tools=VAULT,
              files={"src/tools.py": "import os\n\ndef vault(ctx):\n    return {'secret': os.environ['SWEEP_KEY']}\n"})
    server.responder = responder
    return app.cases("assistants/bot/tests/inputs.jsonl", [
        {"id": f"leak-{key}", "input": "open the vault", "assert": [
            {"type": "contains", "value": "never said"}, {"type": "not_contains", "value": "vault said"},
            {"type": "regex", "value": "^nothing$"}, {"type": "tool_result", "value": {"tool": "vault", "result": {"secret": "x"}}},
            {"type": "equals", "value": "no"}]},
        {"id": "plain-pass", "input": "open the vault", "assert": {"type": "contains", "value": "vault said"}},
        {"id": "plain-fail", "input": "open the vault", "assert": {"type": "contains", "value": "never said"}},
    ])


def outputs(tmp: Path) -> list[str]:
    return [a for ext in FORMATS for a in ("-o", str(tmp / f"r{ext}"))]


def history_text(path: Path) -> str:
    """Every value of every table of the history database, compressed reports decompressed."""
    out = []
    with sqlite3.connect(path) as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in db.execute(f"SELECT * FROM {table}"):
                for value in row:
                    if isinstance(value, bytes):
                        try:
                            value = zlib.decompress(value).decode()
                        except zlib.error:
                            value = value.decode("utf-8", "replace")
                    out.append(str(value))
    return "\n".join(out)


def history_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT file, case_id, connector, verdict, runs, passed, flaky, reason FROM verdicts ORDER BY run_id, rowid").fetchall()


def normal(value, key: str):
    """``value`` with the key (as written, or hidden) made one placeholder, so the two runs compare."""
    text = json.dumps(value, sort_keys=True, default=str)
    return json.loads(text.replace(key, "KEY").replace("***", "KEY"))


class Ran:
    """What a run of the command in a process of its own said, as click's Result says it."""

    def __init__(self, proc: subprocess.CompletedProcess):
        self.exit_code, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.output = proc.stdout


def in_a_process(*args: str, cwd: Path) -> Ran:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return Ran(subprocess.run([sys.executable, "-m", "agenttest", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300))


def scenario(app, server, tmp: Path, key: str, workers: str, ray: bool = False) -> dict:
    """One run of the suite (console, five reports, cassettes, history; with ``ray``, in a process of its own on a
    local Ray), the same with --json, a replay of the cassettes, and an --lf run after them."""
    path = make_app(app, server, key)
    history = tmp / f"history-{len(key)}-{workers}.sqlite"
    os.environ["AGENTTEST_HISTORY"] = str(history)
    tapes = tmp / "tapes"
    common = ["-i", str(path), "--runs", "2", "--workers", workers, "-c", f"conn-{key}"]
    first = [*common, "-v", "--record", str(tapes), *outputs(tmp)]
    ran = in_a_process(*first, "--executor", "ray", cwd=app.root) if ray else cli(*first, cwd=app.root)
    events = cli(*common, "--json", "--no-history", cwd=app.root)
    replayed = cli(*common, "--replay", str(tapes), "--no-history", "-o", str(tmp / "replay.json"), cwd=app.root)
    again = cli(*common, "--lf", "-o", str(tmp / "lf.json"), cwd=app.root)
    assert ran.exit_code == 1 and (tmp / "r.json").exists(), ran.output + ran.stderr
    texts = {"console": ran.output + ran.stderr, "events": events.stdout + events.stderr, "lf console": again.output + again.stderr,
             "replay console": replayed.output + replayed.stderr, "replay report": (tmp / "replay.json").read_text(),
             **{f"report {ext}": (tmp / f"r{ext}").read_text() for ext in FORMATS}, "history": history_text(history),
             **{f"tape {p.name}": p.read_text() for p in tapes.rglob("*") if p.is_file()},
             **{f"app {p.relative_to(app.root)}": p.read_text() for p in (app.root / ".agent-test").rglob("*.json")},
             "file names": "\n".join(str(p.relative_to(tmp)) for p in tmp.rglob("*") if "connectors" not in p.parts)}
    rep = json.loads((tmp / "r.json").read_text())
    lf = json.loads((tmp / "lf.json").read_text())
    replay = json.loads((tmp / "replay.json").read_text())
    found = [json.loads(line) for line in events.stdout.splitlines()]
    return {
        "texts": texts,
        "exit": (ran.exit_code, events.exit_code, replayed.exit_code, again.exit_code),
        "results": normal(sorted((r["id"], r["run"], r["status"], r["connector"], [a["passed"] for a in r["assertions"]]) for r in rep["results"]), key),
        "gates": normal(sorted((g["id"], g["connector"], g["verdict"], g["runs"], g["passed"]) for g in rep["summary"]["gates"]), key),
        "summary": normal({k: rep["summary"][k] for k in ("total", "passed", "failed", "errors", "skipped", "not_run") if k in rep["summary"]}, key),
        "events": normal(sorted((e["id"], e["run"], e["status"]) for e in found if e["event"] == "result"), key),
        "failed ids": normal(sorted(e.get("failed_ids", []) for e in found if e["event"] == "summary"), key),
        "history": normal([row[1:7] for row in history_rows(history)], key),
        "replay": normal(sorted((r["id"], r["run"], r["status"]) for r in replay["results"]), key),
        "lf": normal(sorted((r["id"], r["run"], r["status"]) for r in lf["results"]), key),
        "console not run": [line for line in ran.output.splitlines() if "not run" in line.lower()],
    }


def check(app, server, tmp_path, workers: str, ray: bool = False) -> None:
    short = scenario(app, server, tmp_path / "short", SHORT, workers)
    for name in list((app.root / "connectors").glob("conn-*")):
        name.unlink()
    (app.root / ".agent-test" / "lastfailed.json").unlink()
    long = scenario(app, server, tmp_path / "long", KEY, workers, ray)
    found = {where: leaks(text) for where, text in long["texts"].items()}
    problems = [f"{where}: {len(p)} pieces of the key, from {p[0]!r}" for where, p in found.items() if p]
    problems += [f"{what}: {long[what]} with the long key, {short[what]} with a short one" for what in
                 ("exit", "results", "gates", "summary", "events", "failed ids", "history", "replay", "lf", "console not run") if long[what] != short[what]]
    assert not problems, "\n".join(problems)
    assert "***" in long["texts"]["console"] and "***" in long["texts"]["report .json"]
    assert short["exit"] == (1, 1, 1, 1)
    assert short["lf"] == [["leak-KEY", 1, "failed"], ["leak-KEY", 2, "failed"], ["plain-fail", 1, "failed"], ["plain-fail", 2, "failed"]]


@pytest.mark.parametrize("workers", ["0", "1", "2"])
def test_no_piece_of_a_long_key_anywhere_and_the_same_verdicts_as_a_short_one(app, server, tmp_path, monkeypatch, workers):
    monkeypatch.setenv("SWEEP_KEY", "")
    check(app, server, tmp_path, workers)


def test_under_ray_too(app, server, tmp_path, monkeypatch):
    """One run on a local Ray that the command starts (the actors resolve the connector and run the tool), its
    outputs swept and its verdicts, history and --lf memory compared with local workers' on a short key."""
    pytest.importorskip("ray")
    monkeypatch.setenv("SWEEP_KEY", "")
    check(app, server, tmp_path, "2", ray=True)
