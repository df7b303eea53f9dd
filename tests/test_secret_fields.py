"""Issue 50, item 2: what is secret is decided by the connector field that carries it (key, token, password,
headers, a URL's user and password), not by ``$ENV`` — a model name from $ENV is shown as it is — and
identity (case ids, connector ids) is matched on the values as they are, so a case whose id holds a secret
keeps its verdict, its gate, its history row and its place in --lf."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers import Answer, cli, report

MODEL = "gpt-4o-mini-2024-07-18"


def _verdicts(history) -> list[tuple[str, str]]:
    with sqlite3.connect(history) as db:
        return db.execute("SELECT case_id, verdict FROM verdicts ORDER BY rowid").fetchall()


def test_a_model_name_from_env_is_no_secret_and_ids_that_hold_it_keep_their_verdicts(app, server, tmp_path, monkeypatch):
    history = tmp_path / "h.sqlite"
    monkeypatch.setenv("AGENTTEST_HISTORY", str(history))
    monkeypatch.setenv("THE_MODEL", MODEL)
    app.connector(f"on-{MODEL}", {"type": "openai", "options": {"model": "$ENV.THE_MODEL", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY",
                                                             "max_retries": 0}})
    app.agent("bot", connector=f"on-{MODEL}")
    server.responder = lambda req: Answer(f"hello from {req['model']}")
    path = app.cases("assistants/bot/tests/t.jsonl", [
        {"id": f"asks-{MODEL}", "input": "hi", "assert": {"type": "contains", "value": "bonjour"}},
        {"id": "greets", "input": "hi", "assert": {"type": "contains", "value": "hello"}}])
    ran = cli("-i", str(path), "--runs", "2", "-o", str(tmp_path / "r.json"))
    assert ran.exit_code == 1, ran.output
    assert f"[asks-{MODEL}] (run 1/2)" in ran.output and "***" not in ran.output and "not run" not in ran.output.lower()
    got = report(tmp_path / "r.json")
    assert {(g["id"], g["connector"], g["verdict"]) for g in got["summary"]["gates"]} == {
        (f"asks-{MODEL}", f"on-{MODEL}", "failed"), ("greets", f"on-{MODEL}", "passed")}
    assert got["results"][0]["output"] == f"hello from {MODEL}"
    assert _verdicts(history) == [(f"asks-{MODEL}", "failed"), ("greets", "passed")]
    again = cli("-i", str(path), "--lf", "-o", str(tmp_path / "lf.json"))
    assert again.exit_code == 1 and "--lf: running the 1 of 2 cases that did not pass last time" in again.output, again.output
    assert [r["id"] for r in report(tmp_path / "lf.json")["results"]] == [f"asks-{MODEL}"]


def test_credential_fields_are_hidden_and_other_values_are_not(app, server, tmp_path, monkeypatch):
    """The key, headers from $ENV and a URL's password are hidden in what the endpoint echoes; a header written
    in the file, and the model from $ENV, are shown."""
    monkeypatch.setenv("TEAM_HEADER", "team-header-value-0042")
    monkeypatch.setenv("API_KEY_HEADER", "header-api-key-0042")
    monkeypatch.setenv("PROXY_PASSWORD", "proxy-password-0042")
    monkeypatch.setenv("THE_MODEL", MODEL)
    host = server.host.replace("http://", "http://robot:$ENV.PROXY_PASSWORD@")
    app.connector("guarded", {"type": "openai", "options": {
        "model": "$ENV.THE_MODEL", "host": host, "key": "$ENV.FAKE_OPENAI_KEY", "max_retries": 0,
        "headers": {"X-Team": "$ENV.TEAM_HEADER", "X-Api-Key": "$ENV.API_KEY_HEADER", "X-Client": "agent-test-suite-client"}}})
    app.agent("bot", connector="guarded")
    names = ("X-Team", "X-Api-Key", "X-Client")

    def echo(req):
        sent = {k.lower(): v for k, v in server.requests[-1]["headers"].items()}
        return Answer(" | ".join(f"{n}={sent.get(n.lower())}" for n in names) + f" | model={req['model']} | auth={sent.get('authorization')}")

    server.responder = echo
    path = app.cases("assistants/bot/tests/t.jsonl", [{"id": "echo", "input": "hi", "assert": {"type": "contains", "value": "model"}}])
    ran = cli("-i", str(path), "-v", "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.md"))
    assert ran.exit_code == 0, ran.output
    output = report(tmp_path / "r.json")["results"][0]["output"]
    assert output == f"X-Team=*** | X-Api-Key=*** | X-Client=agent-test-suite-client | model={MODEL} | auth=Basic ***"
    for text in (ran.output, (tmp_path / "r.json").read_text(), (tmp_path / "r.md").read_text()):
        for secret in ("team-header-value-0042", "proxy-password-0042", "header-api-key-0042", "sk-test-SECRET-0123456789"):
            assert secret not in text


def test_which_fields_count():
    """The decision itself, on a connector file as written and as read."""
    from agenttest.app.credentials import credentials

    found = {"K": "sk-env-key-0042", "M": MODEL, "H": "https://api.example.com/v1", "T": "tok-0042-abcdef", "OPENAI_API_KEY": "sk-named-0042",
             "U": "user-0042-long", "P": "pass-0042-long", "BOARD": "board-0042-value"}
    raw = {"type": "openai", "options": {"model": "$ENV.M", "host": "$ENV.H", "key": "$ENV.K", "api_key": "literal-0042-key",
                                         "max_tokens": "4096-4096-4096", "keywords": "not-a-secret-0042", "organization": "$ENV.BOARD",
                                         "headers": {"X-Anything": "$ENV.T", "Content-Type": "application/json",
                                                     "Authorization": "Bearer literal-bearer-0042"},
                                         "extra": "$ENV.OPENAI_API_KEY", "proxy": "http://$ENV.U:$ENV.P@proxy:3128"}}

    def substituted(value):
        if isinstance(value, dict):
            return {k: substituted(v) for k, v in value.items()}
        for name, v in found.items():
            value = value.replace(f"$ENV.{name}", v)
        return value

    got = dict(credentials(raw, substituted(raw), found))
    assert got == {"sk-env-key-0042": "K", "tok-0042-abcdef": "T", "sk-named-0042": "OPENAI_API_KEY", "user-0042-long": "",
                   "pass-0042-long": "", "dXNlci0wMDQyLWxvbmc6cGFzcy0wMDQyLWxvbmc=": ""}  # named: the short-value warning says which
    for shown in (MODEL, "https://api.example.com/v1", "4096-4096-4096", "not-a-secret-0042", "application/json", "board-0042-value",
                  "literal-0042-key", "Bearer literal-bearer-0042"):
        assert shown not in got


@pytest.mark.parametrize("value", ["http://[::1:@x", "http://@", "http://a b@c", "mailto:x@y", 17, None, ["$ENV.K"]])
def test_odd_values_are_no_crash(value):
    from agenttest.app.credentials import credentials

    raw = {"options": {"host": value, "note": value}}
    got = credentials(raw, raw, {"K": "sk-0123456789"})
    assert all(isinstance(v, str) and v for v, _ in got) and all(v in str(value) for v, _ in got)


def test_an_mcp_servers_token_and_credential_env_are_secrets_its_paths_are_not(app, tmp_path, monkeypatch):
    """An MCP file's authorization_token and an env entry named for a credential are hidden; a path from $ENV
    (which every case file's name may hold) is not."""
    from agenttest.app.folders import App
    from agenttest.app.mcpfiles import read
    from agenttest.util.secrets import Secrets

    monkeypatch.setenv("GH_TOKEN", "ghp_0123456789abcdef")
    monkeypatch.setenv("WORKDIR", str(tmp_path))
    path = app.file("mcps/gh.mcp.yao", json.dumps({"transport": "stdio", "command": "python", "arguments": ["$ENV.WORKDIR/server.py"],
                                                    "env": {"GITHUB_TOKEN": "$ENV.GH_TOKEN", "HOME_DIR": "$ENV.WORKDIR"}}))
    secrets = Secrets()
    read(str(path), "gh", App(str(app.root)), None, secrets, [])
    assert list(secrets) == ["ghp_0123456789abcdef"]


def test_the_credentials_of_a_connector_the_run_does_not_use_are_hidden_too(app, server, monkeypatch):
    """A tool printing $OTHER_KEY, the key of a connector file the run never uses, showed it (only the run's own
    connectors were known)."""
    from scripted import scripted

    monkeypatch.setenv("OTHER_KEY", "sk-other-UNUSED-0123456789abcdef")
    monkeypatch.setenv("OTHER_MODEL", "a-model-name-from-env")
    app.connector("spare.one", {"type": "openai", "options": {"model": "$ENV.OTHER_MODEL", "key": "$ENV.OTHER_KEY"}})
    tools = [{"name": "leak", "description": "d", "parameters": {"type": "object", "properties": {}}}]
    app.agent("bot", tools=tools, files={"src/tools.py": "import os\ndef leak(ctx):\n    print(os.environ['OTHER_KEY'])\n"
                                                          "    return {'key': os.environ['OTHER_KEY'], 'model': os.environ['OTHER_MODEL']}\n"})
    server.responder = scripted
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "tool:leak:{}", "assert": [{"type": "contains", "value": "done"}]}])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out), "-v")
    assert result.exit_code == 0, result.output
    written = out.read_text()
    assert "sk-other-UNUSED" not in result.output and "sk-other-UNUSED" not in written and "0123456789abcdef" not in written
    assert '"key": "***"' in written and "a-model-name-from-env" in written  # a model name is not a secret
