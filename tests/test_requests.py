"""What reaches a request body (FORMATS §1–§2): only chat-completions parameters, against a loopback
server that rejects unknown request keys with 400 as OpenAI does. Yao's context options go to
``ctx.options``; a connector's ``proxy`` is its base URL; ``capabilities`` and ``thinking`` are never sent."""

from __future__ import annotations

import json

from helpers import Answer, cli, report
from scripted import scripted

YAO_OPTIONS = {"mode": "task", "search": False, "skip": {"history": True, "trace": True, "keyword": True},
               "disable_global_prompts": True, "locale": "zh-cn"}
PARAMETERS = {"temperature": 0.2, "top_p": 0.9, "max_tokens": 64, "seed": 7, "stop": ["\n\n"], "user": "tester",
              "extra_body": {"service_tier": "default"}}
TOOLS = [{"name": "context", "description": "what ctx holds", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = "def context(ctx):\n    return {'options': ctx.options, 'locale': ctx.locale, 'meta': ctx.metadata}\n"
YAO_CONNECTOR = {
    "label": "DeepSeek V3", "type": "openai",
    "options": {"model": "deepseek-chat", "key": "$ENV.FAKE_OPENAI_KEY", "proxy": None, "temperature": 0.5,
                "capabilities": {"tool_calls": True, "streaming": True, "json": True, "max_input_tokens": 65536},
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "pricing": {"input": 0.27, "output": 1.1}, "max_concurrency": 4, "rpm": 6000},
}


def yao_app(app, server, **capabilities):
    conn = json.loads(json.dumps(YAO_CONNECTOR))
    conn["options"]["proxy"] = server.host  # Yao's proxy is the API base
    conn["options"]["capabilities"].update(capabilities)
    app.connector("deepseek.v3", conn)
    app.agent("bot", connector="deepseek.v3", tools=TOOLS, files={"src/tools.py": TOOLS_PY},
              options={"max_tokens": 32, "presence_penalty": 0.1})
    return app


def test_a_case_with_every_yao_option_passes_against_a_strict_endpoint(app, server):
    server.strict = True
    server.responder = scripted
    yao_app(app, server)
    path = app.cases("assistants/bot/tests/inputs.jsonl", [
        {"id": "yao", "input": 'tool:context:{}', "options": {**YAO_OPTIONS, **PARAMETERS, "metadata": {"scenario": "a"}},
         "assert": [{"type": "contains", "value": "done:"}]},
    ])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 0, result.output
    bodies = server.bodies()
    assert len(bodies) == 2  # the tool call, then the answer: both accepted
    first = bodies[0]
    assert set(first) == {"model", "messages", "tools", "temperature", "top_p", "max_tokens", "seed", "stop", "user",
                          "presence_penalty", "service_tier"}
    assert first["model"] == "deepseek-chat" and first["max_tokens"] == 64  # the case's over package.yao's 32
    assert first["temperature"] == 0.2 and first["presence_penalty"] == 0.1 and first["service_tier"] == "default"
    tool = report(out)["results"][0]["tool_calls"][0]["result"]
    assert tool["options"] == YAO_OPTIONS and tool["locale"] == "zh-cn" and tool["meta"] == {"scenario": "a"}


def test_the_strict_endpoint_does_reject_what_it_does_not_know(app, server):
    """The server mode itself: a key OpenAI does not know is a 400 naming it (so the test above can fail)."""
    import asyncio

    from agenttest.connectors import ChatRequest, ConnectorSpec, create

    server.strict = True
    conn = create(ConnectorSpec("x", "openai", {"model": "m", "host": server.host, "extra_body": {"mode": "task", "search": False}}))
    from agenttest.errors import CallError

    try:
        asyncio.run(conn.complete(ChatRequest([{"role": "user", "content": "hi"}])))
    except CallError as exc:
        assert "model error 400" in str(exc) and "Unrecognized request argument supplied: mode, search" in str(exc)
    else:
        raise AssertionError("the strict server accepted unknown keys")


def test_capabilities_tool_calls_false_sends_no_tools(app, server):
    server.strict = True
    server.responder = lambda req: Answer("plain answer")
    yao_app(app, server, tool_calls=False)
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "t", "input": "hi", "options": {"tool_choice": "auto", "parallel_tool_calls": False}}])
    result = cli("-i", str(path), "-o", str(app.root / "r.json"))
    assert result.exit_code == 0, result.output
    (body,) = server.bodies()
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body


def test_unknown_options_are_warned_about_once_and_never_sent(app, server):
    server.strict = True
    server.responder = scripted
    app.connector("odd", {"type": "openai", "options": {"model": "m", "host": server.host, "top_k": 3, "safe_mode": True}})
    app.agent("bot", connector="odd", tools=TOOLS, files={"src/tools.py": TOOLS_PY}, options={"temprature": 0.3, "temperature": 0.1})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [
        {"id": "a", "input": "tool:context:{}", "options": {"category": "smoke", "route": "fast"}},
        {"id": "b", "input": "say:ok", "options": {"category": "smoke"}},
    ])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "connector odd" in text and "'top_k', 'safe_mode' are not chat-completions parameters; not sent" in text
    assert "package.yao: options: 'temprature' is not a chat-completions parameter; not sent" in text
    assert text.count("'category' is not a model parameter") == 1 and "'route' is not a model parameter" in text
    assert all(set(b) <= {"model", "messages", "tools", "temperature"} for b in server.bodies())
    assert report(out)["results"][0]["tool_calls"][0]["result"]["options"] == {"category": "smoke", "route": "fast"}


def test_a_case_option_that_is_a_typo_is_an_error_and_strict_refuses_any_unknown_one(app, server):
    server.responder = scripted
    app.agent("bot")
    typo = app.cases("assistants/bot/tests/typo.jsonl", [{"id": "a", "input": "say:ok", "options": {"temprature": 0.2}}])
    result = cli("-i", str(typo))
    assert result.exit_code == 2 and not server.requests, result.output
    assert "typo.jsonl:1:" in result.output and "'temprature' is not a model parameter or a Yao context option" in result.output
    assert "did you mean 'temperature'?" in result.output
    other = app.cases("assistants/bot/tests/other.jsonl", [{"id": "a", "input": "say:ok", "options": {"category": "x", "model": "gpt-4o"}}])
    warned = cli("-i", str(other), "-o", str(app.root / "r.json"))
    assert warned.exit_code == 0, warned.output
    assert "'model' is not a model parameter" in warned.output and "set options.connector or -c" in warned.output
    strict = cli("-i", str(other), "--strict")
    assert strict.exit_code == 2 and "'category' is not a model parameter" in strict.output and "--strict" in strict.output


def test_served_model_is_recorded_per_call(app, server):
    server.responder = lambda req: Answer("hi", model="gpt-4o-2024-08-06")
    app.agent("bot")
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi"}])
    out = app.root / "r.json"
    assert cli("-i", str(path), "-o", str(out)).exit_code == 0
    (call,) = report(out)["results"][0]["model_calls"]
    assert call["model"] == "gpt-4o-2024-08-06" and call["role"] == "agent" and call["connector"] == "fake"
    assert call["duration_ms"] >= 0


def _typo_connector(app, server, field, value=None):
    """``connectors/bad/h.conn.yao`` with a misspelt field on line 4, written as a user would (a comment too)."""
    app.file("connectors/bad/h.conn.yao", f"""\
        {{"type": "openai", // the loopback server
         "options": {{"model": "fake-model",
                     "key": "$ENV.FAKE_OPENAI_KEY",
                     "{field}": {json.dumps(value or server.host)}}}}}
        """)
    app.agent("bot", connector="bad.h")
    return app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "assert": [{"type": "contains", "value": "hi"}]}])


def test_a_misspelt_endpoint_is_an_error_at_load_and_the_key_goes_nowhere(app, server, monkeypatch):
    """``base_ulr`` was a warning and the run went to the default endpoint with the key (the SDK's default is
    $OPENAI_BASE_URL, here the loopback server standing in for api.openai.com: it must see no request)."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.host + "/v1")
    server.responder = lambda req: Answer("hi")
    for field, meant in (("base_ulr", "base_url"), ("hots", "host"), ("proxi", "proxy"), ("api_kye", "api_key"), ("headrs", "headers")):
        path = _typo_connector(app, server, field, {"X-Key": "$ENV.FAKE_OPENAI_KEY"} if meant == "headers" else None)
        result = cli("-i", str(path), "-o", str(app.root / "r.json"))
        assert result.exit_code == 2, result.output
        conn = app.root / "connectors" / "bad" / "h.conn.yao"
        assert f"{conn}:4:14: connector bad.h: '{field}' is not a field of an openai connector" in result.output, result.output
        assert f"did you mean '{meant}'?" in result.output and "Traceback" not in result.output
        assert "sk-test-SECRET" not in result.output
    assert server.bodies() == []


def test_an_unknown_option_holding_a_url_is_an_error(app, server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.host + "/v1")
    path = _typo_connector(app, server, "endpoint")
    result = cli("-i", str(path), "-o", str(app.root / "r.json"))
    assert result.exit_code == 2, result.output
    assert "'endpoint' is not a field of an openai connector" in result.output
    assert "the API base is 'host', 'base_url' or 'proxy'" in result.output
    assert server.bodies() == []


def test_an_unknown_parameter_far_from_any_field_is_still_a_warning(app, server):
    server.responder = lambda req: Answer("hi")
    path = _typo_connector(app, server, "tempreature", 0.3)
    text = (app.root / "connectors" / "bad" / "h.conn.yao").read_text().replace('"tempreature"', f'"host": "{server.host}", "tempreature"')
    (app.root / "connectors" / "bad" / "h.conn.yao").write_text(text)
    result = cli("-i", str(path), "-o", str(app.root / "r.json"))
    assert result.exit_code == 0, result.output
    assert "'tempreature' is not a chat-completions parameter; not sent to the model — did you mean 'temperature'?" in result.output
    assert len(server.bodies()) == 1
