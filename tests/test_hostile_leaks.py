"""Keys echoed back (issue 25, item 2): a generator endpoint that echoes the bearer token into its cases, or a
tool that puts it in a dict key or bytes, never gets it shown — not on stdout, in a file, in an error, in
an event, or in a file name."""

from __future__ import annotations

import json
import re

import pytest

from helpers import Answer, cli, report

KEY = "sk_live_SECRET_0123456789"  # underscores: Markdown escapes them, which must not hide the key from redaction


@pytest.fixture
def echoing(app, server, monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)
    tools = [{"name": "vault", "description": "d", "parameters": {"type": "object", "properties": {}}}]
    app.agent("bot", tools=tools, files={"src/tools.py": f"def vault(ctx):\n    return {{{KEY!r}: [{KEY!r}.encode(), {{{KEY!r}}}]}}\n"})
    app.agent("gen", files={"prompts.yml": "- role: system\n  content: You generate.\n"})
    return app


def generator(cases):
    """The generator's endpoint answers ``cases``; the agent under test calls its tool once, then answers."""
    def responder(req):
        if req["messages"][0].get("content") == "You generate.":
            return Answer(json.dumps(cases))
        if req["messages"][-1]["role"] == "tool":
            return Answer("the vault said " + req["messages"][-1]["content"])
        return Answer("", tool_calls=[{"name": "vault", "arguments": {}}])
    return responder


ECHOED = [{"id": f"leak-{KEY}", "input": f"my key is {KEY}", "tags": [KEY]}]


def assert_no_key(*texts):
    for text in texts:
        assert KEY not in text and "sk\\_live" not in text, text[:2000]


def test_generated_cases_that_echo_the_key_never_show_it(echoing, server, tmp_path):
    server.responder = generator(ECHOED)
    source = "agents:gen?count=1"
    dry = cli("-i", source, "-n", "bot", "--dry-run", "-o", str(tmp_path / "cases.jsonl"), "-o", str(tmp_path / "cases.yaml"), cwd=echoing.root)
    assert dry.exit_code == 0, dry.output
    assert "***" in dry.stdout
    listed = cli("-i", source, "-n", "bot", "--list", cwd=echoing.root)
    assert listed.exit_code == 0 and "leak-***" in listed.output
    tapes, outs = tmp_path / "tapes", [tmp_path / f"r{ext}" for ext in (".json", ".md", ".html", ".xml", ".jsonl")]
    ran = cli("-i", source, "-n", "bot", "--record", str(tapes), "-v", *[a for o in outs for a in ("-o", str(o))], cwd=echoing.root)
    assert ran.exit_code == 0, ran.output
    names = [str(p.relative_to(tapes)) for p in tapes.rglob("*")]
    assert names and any("leak" in n for n in names)
    assert_no_key(dry.stdout, dry.stderr, (tmp_path / "cases.jsonl").read_text(), (tmp_path / "cases.yaml").read_text(),
                  listed.output, ran.output, ran.stderr, *names, *[p.read_text() for p in tapes.rglob("*.jsonl")],
                  *[o.read_text() for o in outs])
    assert report(outs[0])["results"][0]["tool_calls"][0]["result"] == {"***": ["***", ["***"]]}


def test_invalid_generated_cases_that_echo_the_key_never_show_it(echoing, server):
    server.responder = generator([{"id": KEY, "input": "x", "assert": {"type": f"contains-{KEY}"}}])
    for flags in ([], ["--json"]):
        result = cli("-i", "agents:gen?count=1", "-n", "bot", *flags, cwd=echoing.root)
        assert result.exit_code == 2, result.output
        saved = re.search(r"are saved in (\S+)", result.stderr).group(1)
        assert_no_key(result.stdout, result.stderr, open(saved).read())
        assert "unknown assertion type 'contains-***'" in result.stderr
        if flags:
            (event,) = [json.loads(line) for line in result.stdout.splitlines()]
            assert event["event"] == "error" and "***" in event["message"]


def test_a_password_in_the_endpoint_url_is_hidden_also_as_the_basic_auth_header_that_carries_it(app, server, monkeypatch, tmp_path):
    """``http://admin:$ENV.PASS@host`` is sent as ``Authorization: Basic base64(admin:PASS)``: an endpoint that
    echoed the header showed the password encoded in the console, every report and the cassette."""
    import base64

    password = "hunter2-password-xyz"
    encoded = base64.b64encode(f"admin:{password}".encode()).decode()
    monkeypatch.setenv("PROXY_PASS", password)
    host = server.host.replace("http://", "http://admin:$ENV.PROXY_PASS@")
    app.connector("guarded", {"type": "openai", "options": {"model": "m", "host": host, "key": "not-needed", "max_retries": 0}})
    app.agent("bot", connector="guarded")
    server.responder = lambda req: Answer("you sent " + str(server.requests[-1]["headers"].get("Authorization")))
    path = app.cases("cases.jsonl", [{"id": "echo", "input": "hi", "assert": {"type": "contains", "value": "Basic"}}])
    outs = [tmp_path / f"r{ext}" for ext in (".json", ".md", ".html", ".xml", ".jsonl")]
    ran = cli("-i", str(path), "-n", "bot", "-v", "--record", str(tmp_path / "tapes"), *[a for o in outs for a in ("-o", str(o))])
    assert ran.exit_code == 0, ran.output
    assert report(outs[0])["results"][0]["output"] == "you sent Basic ***"  # the header was sent, and echoed
    for text in (ran.output, ran.stderr, *[o.read_text() for o in outs], *[p.read_text() for p in (tmp_path / "tapes").rglob("*.jsonl")]):
        assert encoded not in text and password not in text
