"""Each ``-i`` source on its own: what ``classify`` picks, how it describes itself, what it needs, where
its report goes, which agent it implies, and what it loads (generators on the mock connector)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from agenttest.app.folders import App
from agenttest.agents.caller import Caller
from agenttest.agents.catalog import Catalog
from agenttest.errors import AgentTestError
from agenttest.runtime.context import Identity
from agenttest.inputs.sources import CaseFile, LoadEnv, Message, ScriptTests, classify, expand, meant_path
from agenttest.inputs.sources.generators import GeneratorAgent, GeneratorScript

GENERATOR_RULES = """
rules:
  - user: '"count": 2'
    json: [{"id": "g1", "input": "hello", "assert": {"type": "contains", "value": "echo"}}, {"id": "g2", "input": "bye"}]
  - user: ".*"
    reply: "no JSON here"
"""


@pytest.fixture
def env(offline_app):
    offline_app.agent("bot", connector="mock", description="echoes", files={
        "mock.yml": "default: 'echo: {{ user }}'\n",
        "src/demo_test.py": "def TestOne(t, ctx):\n    '''first'''\n    t.assert_.True_(True)\n\ndef helper():\n    pass\n\ndef TestTwo(t, ctx):\n    pass\n",
    })
    offline_app.agent("gen", connector="mock", files={"mock.yml": GENERATOR_RULES})
    offline_app.file("scripts/gens.py", "def make(agent, params):\n    return {'cases': [{'id': f'n{i}', 'input': agent['id']} for i in range(params['count'])]}\n")
    catalog = Catalog(App(str(offline_app.root)))
    return offline_app, catalog


def load(source, catalog, agent="bot"):
    async def main():
        caller = Caller(catalog, Identity())
        caller.loop = asyncio.get_running_loop()
        try:
            return await source.load(LoadEnv(None, catalog.agent(agent), caller))
        finally:
            await catalog.aclose()

    return asyncio.run(main())


def test_classify_picks_the_source():
    assert classify("agents:gen?count=2&focus=x") == GeneratorAgent("gen", {"count": "2", "focus": "x"})
    assert classify("scripts:gens.make?count=3") == GeneratorScript("gens.make", {"count": "3"})
    assert classify("scripts.demo") == ScriptTests("demo")
    assert classify("tests/missing.jsonl") == CaseFile("tests/missing.jsonl")
    assert classify("Hello there") == Message("Hello there")
    with pytest.raises(AgentTestError, match="scripts:<module>.<function>"):
        classify("scripts:nodot")
    with pytest.raises(AgentTestError, match="-i is empty"):
        classify("   ")


def test_case_file_source(env, tmp_path):
    app, catalog = env
    path = app.cases("assistants/bot/tests/cases.jsonl", [{"id": "a", "input": "hi"}])
    source = CaseFile(str(path))
    assert not source.needs_agent and source.path == str(path)
    assert source.describe(1) == f"{path} (1 test case)" and source.describe(3).endswith("(3 test cases)")
    assert source.describe(30_000).endswith("(30,000 test cases)")  # as the warnings and the summary write numbers
    assert source.report_folder() == str(path.parent)
    assert source.agent_hint(catalog.app) == "bot"
    assert CaseFile(str(tmp_path / "x.jsonl")).agent_hint(catalog.app) is None
    loaded = load(source, catalog)
    assert [c.id for c in loaded.cases] == ["a"] and not loaded.problems and loaded.cases[0].file == str(path)


def test_message_source(env):
    _, catalog = env
    source = Message("Hello there")
    assert source.describe(1) == "message (1 test case)" and source.report_folder() is None and not source.needs_agent
    (case,) = load(source, catalog).cases
    assert case.id == "message" and case.messages == ({"role": "user", "content": "Hello there"},)


def test_meant_path_finds_the_folder_or_case_file_a_one_word_message_was_meant_to_name(tmp_path):
    for folder in ("tests", ".cache", "__pycache__"):
        (tmp_path / folder).mkdir()
    for name in ("cases.jsonl", "mock.yml", "notes.txt", "output-20250101.json"):
        (tmp_path / name).write_text("{}")
    meant = {text: meant_path(text, str(tmp_path)) for text in (
        "test", "TESTS", "tsets", "cases", "case", "cases.jsnol", "mock", "notes", "output-20250101", "cache", "pycache",
        "tests please", "ts", "hello")}
    assert meant == {
        "test": "the folder 'tests/'", "TESTS": "the folder 'tests/'", "tsets": "the folder 'tests/'",
        "cases": "the file 'cases.jsonl'", "case": "the file 'cases.jsonl'", "cases.jsnol": "the file 'cases.jsonl'",
        "mock": None, "notes": None, "output-20250101": None, "cache": None, "pycache": None,  # not inputs of -i
        "tests please": None, "ts": None, "hello": None}
    assert meant_path("test", str(tmp_path / "nowhere")) is None


def test_a_near_path_is_a_problem_and_message_prefix_is_always_a_message(tmp_path, monkeypatch):
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path)
    sources, problems = expand(["test", "hello", "message:test"])
    assert [str(p) for p in problems] == ["-i 'test': no such file or folder; did you mean the folder 'tests/'?; "
                                          "to send it to the agent as a message, use -m 'test' (or -i 'message:test')"]
    assert sources == [Message("hello"), Message("test", explicit=True)]


def test_script_tests_source(env):
    _, catalog = env
    source = ScriptTests("demo")
    assert source.needs_agent and source.text == "scripts.demo" and source.report_folder() is None
    cases = load(source, catalog).cases
    assert [(c.id, c.name, c.mode) for c in cases] == [("TestOne", "first", "script"), ("TestTwo", "", "script")]
    with pytest.raises(AgentTestError, match="demo2_test.py does not exist"):
        load(ScriptTests("demo2"), catalog)


def test_generator_agent_source(env):
    _, catalog = env
    source = GeneratorAgent("gen", {"count": "2"})
    assert source.needs_agent and source.describe(2) == "agents:gen (2 test cases)"
    loaded = load(source, catalog)
    assert [c.id for c in loaded.cases] == ["g1", "g2"] and not loaded.problems
    with pytest.raises(AgentTestError, match="the reply holds no valid JSON"):
        load(GeneratorAgent("gen", {"count": "5"}), catalog)
    with pytest.raises(AgentTestError, match="count must be a whole number"):
        load(GeneratorAgent("gen", {"count": "zero"}), catalog)


def test_generator_script_source(env):
    _, catalog = env
    loaded = load(GeneratorScript("gens.make", {"count": "3"}), catalog)
    assert [(c.id, c.input) for c in loaded.cases] == [("n0", "bot"), ("n1", "bot"), ("n2", "bot")]


def test_generated_cases_with_problems_point_into_a_saved_copy(env, offline_app):
    _, catalog = env
    offline_app.file("scripts/bad.py", "def make(agent, params):\n    return [{'id': 'x'}]\n")
    loaded = load(GeneratorScript("bad.make", {}), catalog)
    assert loaded.problems and "missing required field 'input'" in loaded.problems[0].message
    saved = loaded.problems[0].location.file
    assert json.loads(open(saved).read()) == [{"id": "x"}] and f"saved in {saved}" in loaded.problems[-1].message
    os.unlink(saved)
