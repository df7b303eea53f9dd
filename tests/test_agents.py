"""App root and agent IDs, connector files, and the agent run: prompts, tool loop, hooks."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from agenttest.app.folders import App, find_root
from agenttest.agents.catalog import Catalog
from agenttest.app.yaofiles import blank_comments
from agenttest.errors import AgentError, AgentTestError
from agenttest.model import Context
from helpers import Answer

TOOLS = [{"name": "create_expense", "description": "file", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}},
         {"name": "explode", "description": "raises", "parameters": {"type": "object", "properties": {}}}]
TOOLS_PY = """
def create_expense(ctx, amount, type="travel"):
    return {"id": "EXP-1", "amount": amount, "user": ctx.user_id}

def explode(ctx):
    raise RuntimeError("tool blew up")
"""


def run(agent, messages, **kw):
    return asyncio.run(agent.run(Context(), messages, **kw))


# ---- app root and IDs -----------------------------------------------------------------------


def test_root_from_flag_env_and_walking_up(app, tmp_path, monkeypatch):
    app.agent("expense")
    case_file = app.file("assistants/expense/tests/inputs.jsonl", "")
    assert find_root(None, str(case_file)) == str(app.root)
    assert find_root(str(app.root), None) == os.path.abspath(app.root)
    monkeypatch.setenv("AGENTTEST_APP", str(app.root))
    assert find_root(None, None, cwd=str(tmp_path)) == os.path.abspath(app.root)
    with pytest.raises(AgentTestError, match="is not a folder"):
        find_root(str(tmp_path / "nope"), None)


def test_agent_ids_with_and_without_assistants_prefix(app):
    app.agent("expense")
    app.agent("workers.test.validator")
    a = Catalog(App(str(app.root)))
    assert a.agent("assistants.expense").spec.path == a.agent("expense").spec.path
    assert a.agent("workers.test.validator").spec.id == "workers.test.validator"
    assert a.app.agent_ids() == ["expense", "workers.test.validator"]


def test_unknown_agent_lists_known_ones_with_did_you_mean(app):
    app.agent("expense")
    with pytest.raises(AgentTestError) as info:
        Catalog(App(str(app.root))).agent("expnse")
    text = info.value.format_message()
    assert "unknown agent 'expnse'" in text and "did you mean 'expense'?" in text and "known agents: expense" in text


def test_package_yao_comments_and_unknown_keys(app):
    folder = app.agent("bot")
    (folder / "package.yao").write_text('// comment\n{"name": "Bot", /* block */ "connector": "fake", "team_notes": "x", "label": "Yao key",}\n')
    a = Catalog(App(str(app.root)))
    assert a.agent("bot").spec.name == "Bot"
    assert any(w.endswith("'team_notes' is not a field of package.yao; ignored") for w in a.warnings)
    assert any(w.endswith("ignored (not used by agent-test): label") for w in a.warnings)
    with pytest.raises(AgentTestError, match="'team_notes' is not a field of package.yao; unknown keys are errors with --strict"):
        Catalog(App(str(app.root)), strict=True).agent("bot")
    (folder / "package.yao").write_text('{"name": "Bot", "conector": "fake"}')
    with pytest.raises(AgentTestError, match="package.yao:1:17: 'conector' is not a field of package.yao; did you mean 'connector'?"):
        Catalog(App(str(app.root))).agent("bot")
    (folder / "package.yao").write_text('// the bot\n{"name": "Bot", /* a\nblock */\n  "conector": "fake",\n}\n')  # the place past comments
    with pytest.raises(AgentTestError, match="package.yao:4:3: 'conector' is not a field of package.yao; did you mean 'connector'?"):
        Catalog(App(str(app.root))).agent("bot")


def test_comments_blanked_keep_strings():
    assert json.loads(blank_comments('{"url": "http://x//y", /* c */ "a": [1,],}')) == {"url": "http://x//y", "a": [1]}


def test_invalid_json_past_a_block_comment_is_shown_at_its_line(tmp_path):
    from agenttest.app.yaofiles import read_jsonc

    path = tmp_path / "package.yao"
    path.write_text('/* a comment\nof three\nlines */\n{"name": "Bot",\n  "connector" "fake"}\n')
    with pytest.raises(AgentTestError) as raised:
        read_jsonc(str(path))
    (problem,) = raised.value.problems
    assert problem.location is not None and problem.location.line == 5  # the block comment's lines counted


def test_connector_files_env_substitution_and_implicit_openai(app, monkeypatch):
    app.connector("team.gpt", {"type": "openai", "options": {"model": "gpt-x", "host": "http://127.0.0.1:1", "key": "$ENV.TEAM_KEY"}})
    a = Catalog(App(str(app.root)))
    with pytest.raises(AgentTestError, match="environment variable TEAM_KEY is not set"):
        a.connector("team.gpt")
    monkeypatch.setenv("TEAM_KEY", "sk-team-secret")
    assert a.connector("team.gpt").model == "gpt-x"
    assert "sk-team-secret" in list(a.secrets)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AgentTestError, match="OPENAI_API_KEY is not set"):
        a.connector("openai.gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert a.connector("openai.gpt-4o-mini").model == "gpt-4o-mini"
    with pytest.raises(AgentTestError, match="unknown connector 'team.gtp'; did you mean 'team.gpt'"):
        a.connector("team.gtp")


# ---- running an agent ---------------------------------------------------------------------------


def test_prompts_come_first_and_the_tool_loop_runs(app, server):
    def brain(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            return Answer(f"Filed: {json.loads(last['content'])['id']}")
        return Answer("", tool_calls=[{"name": "create_expense", "arguments": {"amount": 12}}])

    server.responder = brain
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY, "prompts.yml": "- role: system\n  content: Be brief.\n"})
    agent = Catalog(App(str(app.root))).agent("bot")
    reply = run(agent, [{"role": "user", "content": "file 12"}])
    assert reply.text == "Filed: EXP-1"
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.result, call.error) == ("create_expense", {"amount": 12}, {"id": "EXP-1", "amount": 12, "user": "test-user"}, None)
    assert call.duration_ms >= 0 and reply.model_calls == 2
    first, second = server.bodies()
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "create_expense"
    assert second["messages"][-1]["role"] == "tool"
    assert reply.usage.total_tokens == 30


def test_tool_errors_and_unknown_tools_go_back_to_the_model(app, server):
    def brain(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            return Answer("sorry: " + " | ".join(m["content"] for m in req["messages"] if m["role"] == "tool"))
        return Answer("", tool_calls=[{"name": "explode", "arguments": {}}, {"name": "teleport", "arguments": {}},
                                      {"name": "create_expense", "arguments": "{not json"}])

    server.responder = brain
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    reply = run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "go"}])
    errors = [c.error for c in reply.tool_calls]
    assert errors[0] == "RuntimeError: tool blew up"
    assert errors[1] == "agent bot has no tool 'teleport'"
    assert errors[2].startswith("invalid arguments for create_expense")
    assert "tool blew up" in reply.text and "teleport" in reply.text


def test_a_tools_arguments_named_what_or_timeout_reach_the_tool(app, server):
    """The model's arguments are the tool's, whatever their names: ``timeout`` is not taken for the call's
    deadline, nor ``what`` for its label (the second was a TypeError)."""
    def brain(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            return Answer("got " + last["content"])
        return Answer("", tool_calls=[{"name": "fetch", "arguments": {"url": "u", "timeout": 0.01, "what": "page"}}])

    server.responder = brain
    fetch = [{"name": "fetch", "description": "fetch", "parameters": {"type": "object", "properties": {
        "url": {"type": "string"}, "timeout": {"type": "number"}, "what": {"type": "string"}}}}]
    slow = "import time\ndef fetch(ctx, url, timeout, what):\n    time.sleep(0.2)\n    return {'url': url, 'timeout': timeout, 'what': what}\n"
    app.agent("bot", tools=fetch, files={"src/tools.py": slow})
    reply = run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "go"}])
    (call,) = reply.tool_calls
    assert call.error is None and call.result == {"url": "u", "timeout": 0.01, "what": "page"}


def test_tool_loop_is_bounded(app, server):
    server.responder = lambda req: Answer("", tool_calls=[{"name": "create_expense", "arguments": {"amount": 1}}])
    app.agent("bot", tools=TOOLS, files={"src/tools.py": TOOLS_PY}, max_tool_rounds=3)
    with pytest.raises(AgentError, match="tool loop exceeded 3 rounds"):
        run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "go"}])
    assert len(server.requests) == 4


def test_declared_tool_without_function_is_a_load_error(app):
    app.agent("bot", tools=TOOLS, files={"src/tools.py": "def create_expense(ctx, amount):\n    return 1\ndef explod(ctx):\n    pass\n"})
    with pytest.raises(AgentTestError, match="tool 'explode' has no function.*did you mean 'explod'"):
        Catalog(App(str(app.root))).agent("bot")


def test_create_and_next_hooks(app, server):
    server.responder = lambda req: Answer(json.dumps({"seen": [m["content"] for m in req["messages"]]}))
    index = """
    def create(ctx, messages):
        return {"messages": [{"role": "system", "content": "injected"}] + messages}

    def next(ctx, payload):
        return {"data": {"wrapped": payload["completion"]["content"], "n": len(payload["messages"])}}
    """
    app.agent("bot", files={"src/index.py": index})
    reply = run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "q"}])
    assert reply.has_data and reply.output["wrapped"] == '{"seen": ["injected", "q"]}' and reply.output["n"] == 3


def test_the_create_hook_gets_the_system_prompts_and_what_it_returns_replaces_them(app, server):
    """As docs/app.md says: ``messages`` starts with the app's and the agent's prompts (variables substituted),
    the case's messages after; the returned list is the whole conversation sent, prompts included."""
    server.responder = lambda req: Answer(json.dumps([m["content"] for m in req["messages"]]))
    app.file("agent/prompts.yml", "- role: system\n  content: GLOBAL\n")
    index = """
    def create(ctx, messages):
        seen = [m["role"] + ":" + m["content"] for m in messages]
        if messages[-1]["content"] == "drop":
            return {"messages": [m for m in messages if m["role"] != "system"] + [{"role": "user", "content": "|".join(seen)}]}
        return None
    """
    app.agent("bot", files={"src/index.py": index, "prompts.yml": "- role: system\n  content: Agent $CTX.ASSISTANT_ID\n"})
    kept = run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "keep"}])
    assert json.loads(kept.output) == ["GLOBAL", "Agent bot", "keep"]
    sent = json.loads(run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "drop"}]).output)
    assert sent == ["drop", "system:GLOBAL|system:Agent bot|user:drop"], sent


def test_a_next_hooks_data_is_json_as_a_tools_result_is(app, server):
    """The Next hook's data is the case's output: sets, bytes, integer keys and tuples get their JSON form (as a
    tool's result does) before any assertion sees them — an assertion checked ``"{'b', 'a'}"`` while the report
    showed ``["a", "b"]`` (a new user's trial); a value with no JSON form is the hook's error, never a ``str()``."""
    server.responder = lambda req: Answer("ok")
    index = """
    def next(ctx, payload):
        if payload["messages"][-2]["content"] == "loop":
            loop = []
            loop.append(loop)
            return {"data": {"loop": loop}}
        return {"data": {"s": {"b", "a"}, 2: b"raw\\xff", "t": (1, 2)}}
    """
    app.agent("bot", files={"src/index.py": index})
    reply = run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "q"}])
    assert reply.output == {"s": ["a", "b"], "2": "raw\\xff", "t": [1, 2]}, reply.output
    with pytest.raises(AgentError, match="next hook returned a circular structure .*which cannot be the case's output"):
        run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "loop"}])


def test_a_create_hook_that_returns_no_messages_is_an_error_before_any_call(app, server):
    server.responder = lambda req: Answer("ok")
    app.agent("bot", files={"src/index.py": "def create(ctx, messages):\n    return {'messages': []}\n"})
    with pytest.raises(AgentError, match="create hook returned an empty 'messages' list: the model would be sent no messages"):
        run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "q"}])
    assert server.requests == []


def test_failing_hook_is_an_agent_error(app, server):
    app.agent("bot", files={"src/index.py": "def create(ctx, messages):\n    raise KeyError('nope')\n"})
    with pytest.raises(AgentError, match="create hook failed: KeyError"):
        run(Catalog(App(str(app.root))).agent("bot"), [{"role": "user", "content": "q"}])


def test_connector_override_and_missing_connector(app, server):
    server.responder = lambda req: Answer(req["model"])
    app.connector("other", {"type": "openai", "options": {"model": "other-model", "host": server.host}})
    app.agent("bot")
    agent = Catalog(App(str(app.root))).agent("bot")
    assert run(agent, [{"role": "user", "content": "q"}]).text == "fake-model"
    assert run(agent, [{"role": "user", "content": "q"}], connector="other").text == "other-model"
    app.agent("lonely", connector="")
    with pytest.raises(AgentTestError, match="has no connector"):
        Catalog(App(str(app.root))).agent("lonely").connector_id()
