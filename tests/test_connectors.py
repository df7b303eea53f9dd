"""The openai connector through the real SDK against the loopback server; the mock connector's rules."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys

import pytest

from agenttest.connectors import ChatRequest, ConnectorSpec, create
from agenttest.connectors.openai import normalize_base_url, verifying_context
from agenttest.connectors.throttle import Traffic
from agenttest.errors import AgentTestError, CallError as AgentError
from helpers import REPO, Answer, AppBuilder, OpenAIServer

KEY = "sk-live-DO-NOT-LEAK-123456"


def connector(server, **options):
    """The connector alone: one attempt per call."""
    return create(ConnectorSpec("fake", "openai", {"model": "m1", "host": server.host, "key": KEY, **options}))


def throttled(server, parallel=4, **options):
    """The connector as a run uses it: throttled and retried."""
    return Traffic(parallel).wrap(connector(server, **options))


def complete(conn, messages=None, **kw):
    """One call in its own event loop; the connector's clients are closed in it, as a run closes them."""
    async def once():
        try:
            return await conn.complete(ChatRequest(messages or [{"role": "user", "content": "hi"}], **kw))
        finally:
            await conn.aclose()

    return asyncio.run(once())


def test_plain_completion_records_usage_and_passes_options(server):
    server.responder = lambda req: Answer("hello there", usage=(12, 3))
    result = complete(connector(server, temperature=0.1), options={"max_tokens": 50, "extra_body": {"top_k": 5}})
    assert result.content == "hello there"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.total_tokens) == (12, 3, 15)
    body = server.bodies()[0]
    assert body["model"] == "m1" and body["temperature"] == 0.1 and body["max_tokens"] == 50
    assert body["top_k"] == 5 and "extra_body" not in body  # extra_body is merged into the body, as the SDK does
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_plain_and_streamed(server, stream):
    server.responder = lambda req: Answer("", tool_calls=[{"name": "create_expense", "arguments": {"type": "travel", "amount": 3500}},
                                                          {"name": "lookup", "arguments": {"q": "policy"}}])
    tools = [{"name": "create_expense", "description": "", "parameters": {"type": "object", "properties": {}}}]
    result = complete(connector(server, stream=stream), tools=tools)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("create_expense", {"type": "travel", "amount": 3500}), ("lookup", {"q": "policy"})]
    assert all(c.id for c in result.tool_calls)
    body = server.bodies()[0]
    assert body["tools"][0] == {"type": "function", "function": tools[0]}
    assert bool(body.get("stream")) is stream


def test_streamed_text_and_usage(server):
    server.responder = lambda req: Answer("a longer streamed answer, in pieces", usage=(7, 9))
    result = complete(connector(server, stream=True))
    assert result.content == "a longer streamed answer, in pieces"
    assert result.usage.total_tokens == 16
    assert server.bodies()[0]["stream_options"] == {"include_usage": True}


def test_429_then_success_is_retried(server):
    calls = []

    def responder(req):
        calls.append(1)
        if len(calls) == 1:
            return Answer(status=429, error="slow down", headers={"retry-after-ms": "10"})
        return Answer("finally")

    server.responder = responder
    assert complete(throttled(server)).content == "finally"
    assert len(calls) == 2
    server.reset()
    server.responder = lambda req: Answer(status=429, error="slow down")
    with pytest.raises(AgentError, match="model error 429 .*slow down"):  # one attempt: the throttle retries, not the connector
        complete(connector(server))
    assert len(server.requests) == 1


def test_persistent_500_becomes_an_agent_error_without_the_key(server):
    server.responder = lambda req: Answer(status=500, error=f"upstream exploded (key {KEY})", headers={"retry-after-ms": "1"})
    with pytest.raises(AgentError) as info:
        complete(throttled(server, max_retries=1))
    text = str(info.value)
    assert text.startswith("model error 500 from 127.0.0.1:") and "upstream exploded" in text and text.endswith("(after 1 retry)")
    assert KEY not in text and "***" in text
    assert len(server.requests) == 2  # one retry, bounded


def test_400_is_not_retried(server):
    server.responder = lambda req: Answer(status=400, error="bad request: model not found")
    with pytest.raises(AgentError, match="model error 400 .*model not found"):
        complete(throttled(server))
    assert len(server.requests) == 1


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_unreachable_host_is_an_agent_error(monkeypatch, transport):
    monkeypatch.setenv("AGENTTEST_HTTP", transport)
    conn = create(ConnectorSpec("x", "openai", {"model": "m", "host": "http://127.0.0.1:9", "max_retries": 0}))
    with pytest.raises(AgentError, match="cannot reach 127.0.0.1:9: connection refused"):
        complete(conn)


def test_slow_reply_is_interrupted_by_a_deadline(server):
    server.responder = lambda req: Answer("late", delay=60)
    conn = connector(server)

    async def go():
        async with asyncio.timeout(0.3):
            await conn.complete(ChatRequest([{"role": "user", "content": "x"}]))

    with pytest.raises(TimeoutError):
        asyncio.run(go())
    assert server.left() == 1  # interrupted: the connection closed before the 60 s answer, not waited out


def test_malformed_json_response_is_an_agent_error(server):
    server.responder = lambda req: Answer(raw="{not json")
    with pytest.raises(AgentError):
        complete(connector(server, max_retries=0))


@pytest.mark.parametrize("given, expected", [
    ("http://h:8000", "http://h:8000/v1"), ("http://h:8000/", "http://h:8000/v1"),
    ("http://h:8000/v1", "http://h:8000/v1"), ("https://api.x.com/compatible-mode/v1/", "https://api.x.com/compatible-mode/v1"),
])
def test_base_url_with_or_without_v1(given, expected):
    assert normalize_base_url(given) == expected


def test_base_url_option_and_repr_hide_the_key(server):
    server.responder = lambda req: Answer("ok")
    conn = create(ConnectorSpec("fake", "openai", {"model": "m", "base_url": server.url, "key": KEY}))
    assert complete(conn).content == "ok"
    assert KEY not in repr(conn) and KEY not in repr(conn.spec)


@pytest.mark.parametrize("which", ["sdk", "httpx2"])
def test_the_clients_url_merge_is_kept_per_url_text_and_follows_a_new_base_url(which):
    """connectors/openai.lean: the SDK's and httpx2's URL merge, kept per URL text — the same URLs as the
    classes underneath give, one object per text, a new one when the base URL changes."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    from agenttest.connectors.openai import lean

    async def go():
        if which == "sdk":
            plain, made = (AsyncOpenAI(api_key="k", base_url="http://h:1/v1"), lean(AsyncOpenAI, "_prepare_url")(api_key="k", base_url="http://h:1/v1"))
            merge = "_prepare_url"
        else:
            plain, made = (DefaultAioHttpClient(base_url="http://h:1/v1"), lean(DefaultAioHttpClient, "_merge_url")(base_url="http://h:1/v1"))
            merge = "_merge_url"
        try:
            assert isinstance(made, type(plain)) and lean(type(plain), merge) is type(made)  # made once
            for url in ("/chat/completions", "chat/completions", "http://elsewhere:2/x?y=1", "/models?limit=2"):
                got = getattr(made, merge)(url)
                assert str(got) == str(getattr(plain, merge)(url)) and getattr(made, merge)(url) is got
            first = getattr(made, merge)("/chat/completions")
            made.base_url = plain.base_url = "http://other:3/v2"
            moved = getattr(made, merge)("/chat/completions")
            assert str(moved) == str(getattr(plain, merge)("/chat/completions")) == "http://other:3/v2/chat/completions"
            assert moved is not first
        finally:
            for client in (plain, made):
                await (client.close() if which == "sdk" else client.aclose())

    asyncio.run(go())


def test_a_client_without_the_url_merge_is_used_as_it_is():
    from agenttest.connectors.openai import lean

    class Other:
        pass

    assert lean(Other, "_prepare_url") is Other


def test_connector_without_model_and_unknown_type():
    with pytest.raises(AgentTestError, match="'options.model' is missing"):
        create(ConnectorSpec("c", "openai", {}))
    with pytest.raises(AgentTestError, match="did you mean 'openai'"):
        create(ConnectorSpec("c", "opena1", {}))


# ---- mock ------------------------------------------------------------------------------------


MOCK_RULES = """
rules:
  - tool: create_expense
    reply: "Done: {{ tool_result.id }}"
  - user: '(?i)^yes'
    conversation: 'for \\$(?P<amount>\\d+)'
    tool_calls: [{name: create_expense, arguments: {amount: "{{ amount }}"}}]
  - system: 'pirate'
    user: hello
    reply: "Ahoy"
  - user: 'json please'
    json: {ok: true}
  - user: 'broken'
    error: "simulated outage"
default: "default reply"
"""


def mock(tmp_path):
    (tmp_path / "mock.yml").write_text(MOCK_RULES)
    return create(ConnectorSpec("mock", "mock", {}))


def ask(conn, tmp_path, messages):
    return asyncio.run(conn.complete(ChatRequest(messages, agent_dir=str(tmp_path))))


def test_mock_rules_in_order(tmp_path):
    conn = mock(tmp_path)
    assert ask(conn, tmp_path, [{"role": "user", "content": "anything"}]).content == "default reply"
    assert ask(conn, tmp_path, [{"role": "system", "content": "You are a pirate"}, {"role": "user", "content": "hello"}]).content == "Ahoy"
    assert ask(conn, tmp_path, [{"role": "user", "content": "hello"}]).content == "default reply"
    assert json.loads(ask(conn, tmp_path, [{"role": "user", "content": "json please"}]).content) == {"ok": True}


def test_mock_tool_calls_with_captures_and_tool_results(tmp_path):
    conn = mock(tmp_path)
    history = [{"role": "assistant", "content": "Create it for $250?"}, {"role": "user", "content": "Yes"}]
    first = ask(conn, tmp_path, history)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("create_expense", {"amount": 250})]
    history += [{"role": "assistant", "content": None, "tool_calls": [{"id": first.tool_calls[0].id, "type": "function", "function": {"name": "create_expense", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": '{"id": "EXP-9"}'}]
    assert ask(conn, tmp_path, history).content == "Done: EXP-9"


TYPED_RULES = """
rules:
  - user: 'order (?P<n>[\\d,]+)(?: express (?P<flag>\\w+))?'
    tool_calls:
      - name: lookup
        arguments: {order_id: "{{ n }}", qty: "{{ n }}", price: "{{ n }}", express: "{{ flag }}", note: "{{ n }}",
                    ref: "{{ n }}", tags: ["{{ n }}"], label: "order {{ n }}"}
"""
LOOKUP = {"name": "lookup", "description": "", "parameters": {"type": "object", "properties": {
    "order_id": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": ["number", "null"]},
    "express": {"type": "boolean"}, "ref": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "tags": {"type": "array", "items": {"type": "string"}}, "label": {"type": "string"}}}}


def typed_call(tmp_path, text, tools=()):
    (tmp_path / "mock.yml").write_text(TYPED_RULES)
    conn = create(ConnectorSpec("mock", "mock", {}))
    request = ChatRequest([{"role": "user", "content": text}], tools, agent_dir=str(tmp_path))
    (call,) = asyncio.run(conn.complete(request)).tool_calls
    return call.arguments


@pytest.mark.parametrize("tools", [[LOOKUP], [{"type": "function", "function": LOOKUP}]])
def test_mock_tool_arguments_take_the_type_the_tool_schema_gives(tmp_path, tools):
    """A string property stays a string ("1042", not 1042); number, integer and boolean properties are
    converted; a property the schema does not declare (note) gets the untyped rule."""
    assert typed_call(tmp_path, "order 1042 express true", tools) == {
        "order_id": "1042", "qty": 1042, "price": 1042, "express": True, "note": 1042, "ref": "1042",
        "tags": ["1042"], "label": "order 1042"}
    assert typed_call(tmp_path, "order 1,042 express no", tools)["express"] == "no"  # not a boolean: left as written
    assert typed_call(tmp_path, "order 1,042", tools)["qty"] == 1042


def test_mock_tool_arguments_without_a_schema_turn_digits_into_numbers(tmp_path):
    assert typed_call(tmp_path, "order 1042 express true") == {
        "order_id": 1042, "qty": 1042, "price": 1042, "express": "true", "note": 1042, "ref": 1042,
        "tags": [1042], "label": "order 1042"}
    other = {**LOOKUP, "name": "other"}  # the schemas of other tools do not apply
    assert typed_call(tmp_path, "order 7", [other])["order_id"] == 7


def test_mock_counts_words_alike_on_every_path_and_numbers_its_calls_after_an_error(tmp_path):
    """Usage is the words of the messages and of the reply, whether the reply is fixed, a default alone (no
    rules), made from a template, or the content is a list of parts or a long text; a call ids its tool calls
    by the calls that answered (an error rule's does not count)."""
    long = "word " * 2000  # past the counted texts' size
    parts = [{"type": "text", "text": "two words"}, {"type": "text", "text": "three more words"}]
    messages = [{"role": "system", "content": "You are a pirate"}, {"role": "user", "content": long},
                {"role": "user", "content": parts}, {"role": "user", "content": None}, {"role": "user", "content": "hello"}]
    pirate = ask(mock(tmp_path), tmp_path, messages)
    assert pirate.content == "Ahoy" and pirate.usage.prompt_tokens == 4 + 2000 + 5 + 0 + 1 and pirate.usage.completion_tokens == 1
    only = tmp_path / "only"
    only.mkdir()
    (only / "mock.yml").write_text("default: 'fixed reply of five words'\n")
    conn = create(ConnectorSpec("mock", "mock", {}))
    fixed = ask(conn, only, messages)
    assert fixed.content == "fixed reply of five words" and fixed.usage.total_tokens == 2010 + 5
    conn = mock(tmp_path)
    with pytest.raises(AgentError, match="simulated outage"):
        ask(conn, tmp_path, [{"role": "user", "content": "broken"}])
    (call,) = ask(conn, tmp_path, [{"role": "assistant", "content": "Create it for $250?"}, {"role": "user", "content": "Yes"}]).tool_calls
    assert call.id == "call_mock_1_0"


def test_mock_error_rule_and_bad_rules_file(tmp_path):
    conn = mock(tmp_path)
    with pytest.raises(AgentError, match="simulated outage"):
        ask(conn, tmp_path, [{"role": "user", "content": "broken"}])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "mock.yml").write_text("rules:\n  - usr: x\n")
    with pytest.raises(AgentTestError, match="unknown rule key 'usr'"):
        conn.rules_for(str(bad))
    with pytest.raises(AgentTestError, match="does not exist"):
        conn.rules_for(str(tmp_path / "nowhere"))


def test_arguments_sent_as_an_object_and_odd_responses(server):
    import json as _json

    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": {"a": 1}}}]}}]}
    server.responder = lambda req: Answer(raw=_json.dumps(body))
    (call,) = complete(connector(server)).tool_calls
    assert call.arguments == {"a": 1}
    server.responder = lambda req: Answer(raw=_json.dumps({"id": "x", "object": "chat.completion", "choices": []}))
    with pytest.raises(AgentError, match="the response has no choices"):
        complete(connector(server))
    server.responder = lambda req: Answer(raw=_json.dumps({"id": "x", "choices": [{"index": 0, "message": None}]}))
    with pytest.raises(AgentError, match="unexpected response"):
        complete(connector(server))


@pytest.mark.parametrize("transport, pools", [("httpx", 3), ("aiohttp", 1)])
def test_many_calls_in_flight_are_spread_over_several_connection_pools_on_httpx(server, monkeypatch, transport, pools):
    """httpcore's pool scans every connection per request: one pool per SHARD calls in flight; aiohttp's needs one."""
    from agenttest.connectors.openai import SHARD

    monkeypatch.setenv("AGENTTEST_HTTP", transport)
    server.responder = lambda req: Answer("ok", delay=1.0)  # long enough that all are in flight on a loaded machine
    conn = connector(server)

    async def go():
        replies = await asyncio.gather(*(conn.complete(ChatRequest([{"role": "user", "content": str(i)}])) for i in range(SHARD * 2 + 5)))
        made = [type(c._client).__name__ for c in conn._clients]
        await conn.aclose()
        return replies, made

    replies, made = asyncio.run(go())
    assert all(r.content == "ok" for r in replies) and len(made) == pools and conn._clients == []
    assert all(("Aio" in name) == (transport == "aiohttp") for name in made), made
    assert server.peak_in_flight == SHARD * 2 + 5


def test_start_makes_the_first_client_before_any_call(server):
    """Catalog.warm calls start() as the run begins: the SDK's import and client set-up never count
    against a case's deadline."""
    server.responder = lambda req: Answer("ok")
    conn = connector(server)
    conn.start()
    made = list(conn._clients)
    assert len(made) == 1 and server.requests == []
    assert complete(conn).content == "ok" and len(server.requests) == 1


TLS = (str(REPO / "tests" / "tls" / "localhost.pem"), str(REPO / "tests" / "tls" / "localhost.key"))  # self-signed, for 127.0.0.1


def test_the_prepared_tls_context_is_the_one_the_sdk_would_make():
    """The context made on another thread while the SDK imports verifies as the SDK's transport's own does."""
    httpcore2 = pytest.importorskip("httpcore2")  # the SDK's transport library (openai >= 3)
    ours, theirs = verifying_context(), httpcore2.default_ssl_context()
    assert isinstance(ours, ssl.SSLContext)
    assert (ours.verify_mode, ours.check_hostname, ours.protocol) == (ssl.CERT_REQUIRED, True, theirs.protocol)
    assert (ours.options, ours.minimum_version, ours.verify_flags) == (theirs.options, theirs.minimum_version, theirs.verify_flags)
    assert ours.cert_store_stats() == theirs.cert_store_stats()


def test_the_first_client_uses_the_prepared_tls_context_and_platform(server, monkeypatch):
    """Made on another thread as the connector is made; the client is given it (the SDK does not make its own)."""
    import platform

    from agenttest.connectors.openai import prepared_context

    monkeypatch.delenv("AGENTTEST_HTTP", raising=False)
    conn = connector(server)
    context = prepared_context()
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    conn.start()
    transport = conn._clients[0]._client._transport  # the SDK's aiohttp transport
    assert transport.ssl_context is context
    assert platform._platform_cache  # platform.platform() ran: the SDK's headers need no `uname -p` of their own
    asyncio.run(conn.aclose())


def test_the_prepared_tls_context_follows_ssl_cert_file(monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", TLS[0])
    context = verifying_context()
    assert context.cert_store_stats()["x509_ca"] == 1 and context.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_tls_failures_say_why_and_are_not_retried(monkeypatch, transport):
    """An untrusted certificate, or https:// to a plain HTTP server: one attempt, an error that says what to
    do (another attempt would fail the same way)."""
    from agenttest.connectors.base import Retryable

    monkeypatch.setenv("AGENTTEST_HTTP", transport)
    for tls, expected in ((TLS, "its TLS certificate is not trusted .*self-signed certificate.*SSL_CERT_FILE"),
                          (None, r"the TLS handshake failed \(WRONG_VERSION_NUMBER\) — is it http://, not https://\?")):
        with OpenAIServer(tls=tls) as server:
            host = server.host.replace("http://", "https://")
            conn = Traffic(4).wrap(create(ConnectorSpec("x", "openai", {"model": "m", "host": host, "key": KEY, "max_retries": 3})))
            with pytest.raises(AgentError, match=f"cannot connect to 127.0.0.1:{host.rsplit(':', 1)[1]}: {expected}") as caught:
                complete(conn)
            assert not isinstance(caught.value, Retryable) and "retries" not in str(caught.value)
            assert not server.requests


@pytest.mark.parametrize("trusted", [False, True])
def test_an_https_endpoint_is_verified_against_the_trust_store(tmp_path, trusted):
    """A run against an HTTPS endpoint with a self-signed certificate: refused, saying why, unless
    SSL_CERT_FILE trusts that certificate; then it passes."""
    with OpenAIServer(tls=TLS) as server:
        app = AppBuilder(tmp_path, server)
        app.agent("bot")
        env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
        env["FAKE_OPENAI_KEY"] = KEY
        if trusted:
            env["SSL_CERT_FILE"] = TLS[0]
        run = subprocess.run([sys.executable, "-m", "agenttest", "-m", "hi", "-n", "bot", "-o", "r.json", "--no-history"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    if trusted:
        assert run.returncode == 0, run.stdout + run.stderr
        assert server.bodies()[0]["messages"][-1]["content"] == "hi"
    else:
        assert run.returncode == 1, run.stdout + run.stderr
        assert not server.bodies()
        error = json.loads((tmp_path / "r.json").read_text())["results"][0]["error"]
        assert "TLS certificate is not trusted" in error and "(after" not in error, error  # said at once, not retried
    assert KEY not in run.stdout + run.stderr


def test_every_problem_of_a_mock_yml_is_said_at_once_at_its_place(tmp_path):
    """A bad pattern does not hide a typo below it; a key written twice (YAML keeps the last) is one of them;
    each at mock.yml's line and column, not at the package.yao that names the connector."""
    conn = mock(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "mock.yml").write_text("rules:\n  - user: '(unclosed'\n    reply: x\n  - usr: y\n    reply: z\n  - user: ok\n"
                                  "    reply: first\n    reply: second\ndefault: hi\ndefualt: ho\n")
    with pytest.raises(AgentTestError) as info:
        conn.rules_for(str(bad))
    said = [str(p) for p in info.value.problems]
    where = str(bad / "mock.yml")
    assert said[0] == f"{where}:8:5: 'reply' is written twice in one mapping (YAML keeps only the last); remove one of them"
    assert any(s.startswith(f"{where}:10:1: 'defualt' is not a field of mock.yml; did you mean 'default'") for s in said), said
    assert any(s.startswith(f"{where}:2:5: rules[0]: user pattern '(unclosed' does not compile") for s in said), said
    assert any(s.startswith(f"{where}:4:5: rules[1]: unknown rule key 'usr'; did you mean 'user'") for s in said), said
    assert len(said) == 4


def test_the_options_given_to_post_are_the_ones_the_sdk_would_fill_in(server):
    """``post_options`` gives the SDK each request option's own default (pydantic would resolve them per call),
    dicts copied for every call; a made-up idempotency key only where the client never sends one (OpenAI's),
    and none where it does, so that every request there keeps a key of its own."""
    from openai import AsyncOpenAI, NotGiven
    from openai._models import FinalRequestOptions

    from agenttest.connectors.openai import fresh_options, post_options

    client = AsyncOpenAI(api_key=KEY, base_url=server.host + "/v1")
    given = post_options(client)
    assert {"params", "headers", "timeout", "security"} <= given.keys() and given["idempotency_key"]
    body = {"model": "m1", "messages": []}
    plain = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data=body)
    first = fresh_options(given)
    ours = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data=body, **first)
    for name, value in plain.__dict__.items():
        mine = ours.__dict__[name]
        if name == "idempotency_key":
            assert value is None and mine == given["idempotency_key"]
        elif isinstance(value, NotGiven):  # NotGiven has no ==
            assert isinstance(mine, NotGiven), (name, mine)
        else:
            assert mine == value and type(mine) is type(value), (name, mine, value)
    again = fresh_options(given)
    assert again["security"] == first["security"] and again["security"] is not first["security"] is not given["security"]
    assert again["params"] == {} and again["params"] is not first["params"]

    class Keyed(AsyncOpenAI):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._idempotency_header = "Idempotency-Key"

    assert "idempotency_key" not in post_options(Keyed(api_key=KEY, base_url=server.host + "/v1"))


def test_calls_through_the_given_options_send_what_they_sent_before(server):
    """Two calls, plain and streamed: the key, the body and no idempotency header (OpenAI's client sends none)."""
    server.responder = lambda req: Answer("ok", usage=(2, 1))
    conn = connector(server, headers={"X-Team": "qa"})

    async def go():
        try:
            return [await conn.complete(ChatRequest([{"role": "user", "content": "hi"}], options={"stream": s})) for s in (False, True)]
        finally:
            await conn.aclose()

    replies = asyncio.run(go())
    assert [r.content for r in replies] == ["ok", "ok"] and replies[1].usage.total_tokens == 3
    for request in server.requests:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert headers["authorization"] == f"Bearer {KEY}" and headers["x-team"] == "qa" and "idempotency-key" not in headers
    assert [b.get("stream") for b in server.bodies()] == [None, True]
