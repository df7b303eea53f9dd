"""Record and replay (FORMATS §9) end to end: a suite recorded against a loopback server of the test's
own, replayed with that server stopped; misses, --replay-roles, record+replay, bad cassettes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import Answer, AppBuilder, OpenAIServer, cli, last_user, report

KEY = "sk-test-SECRET-0123456789"
TOOLS = [{"name": "create_expense", "description": "file", "parameters": {"type": "object", "properties": {}}}]
GENERATED = [{"id": "g1", "input": "file my expense", "assert": {"type": "contains", "value": "type"}},
             {"id": "g2", "input": "yes", "assert": {"type": "tool_called", "name": "create_expense"}}]
CHECKPOINTS = [
    {"id": "ask_type", "assertion": {"type": "contains", "value": "type"}},
    {"id": "filed", "after": ["ask_type"], "assertion": {"type": "tool_called", "name": "create_expense"}},
    {"id": "judged", "after": ["filed"], "assertion": {"type": "agent", "use": "agents:judge", "value": "confirms the filing"}},
]
CASES = [
    {"id": "plain", "input": "I need to file an expense", "assert": [{"type": "contains", "value": "type"}]},
    {"id": "tool", "input": "yes", "assert": [{"type": "tool_called", "name": "create_expense"}, {"type": "contains", "value": "EXP-1"}]},
    {"id": "judged", "input": "yes", "assert": [{"type": "agent", "use": "agents:judge", "value": "gives a reference"}]},
    {"id": "failing", "input": "hello", "assert": [{"type": "contains", "value": "never said"}]},
    {"id": "dynamic", "simulator": {"use": "sim", "options": {"metadata": {"persona": "new hire", "goal": "file $50"}}},
     "checkpoints": CHECKPOINTS, "max_turns": 4},
]


class World:
    """Answers by who is asking (the system prompt): the agent by keyword, the simulator by turn, the
    judge by the output, the generator with GENERATED."""

    def __init__(self, agent_type_word: str = "type"):
        self.word = agent_type_word

    def __call__(self, req):
        first = req["messages"][0]
        system = first.get("content") if first.get("role") == "system" else ""
        if system == "SIM":
            turn = json.loads(req["messages"][1]["content"])["turn_number"]
            lines = ["I need to file an expense", "Dinner, $50", "yes"]
            return Answer(json.dumps({"message": lines[min(turn, 3) - 1], "goal_achieved": False, "reasoning": f"turn {turn}"}))
        if system == "JUDGE":
            output = json.loads(last_user(req))["output"]
            return Answer(json.dumps({"passed": "EXP-1" in str(output), "reason": "looked for EXP-1"}))
        if system == "GEN":
            return Answer(json.dumps(GENERATED))
        if req["messages"][-1]["role"] == "tool":
            return Answer("Submitted! Reference EXP-1")
        text = last_user(req).lower()
        if "yes" in text:
            return Answer("", tool_calls=[{"name": "create_expense", "arguments": {"amount": 50, "type": "meals"}}])
        if "expense" in text or "$" in text:
            return Answer(f"What {self.word} of expense? Please confirm the amount.")
        return Answer("How can I help?")


@pytest.fixture
def own(tmp_path, monkeypatch):
    """A loopback server of this test's own (the test stops it), and an app pointed at it."""
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)
    monkeypatch.delenv("AGENTTEST_APP", raising=False)
    server = OpenAIServer(World()).start()
    app = AppBuilder(tmp_path / "app", server)
    app.agent("bot", tools=TOOLS, files={"src/tools.py": "def create_expense(ctx, **kw):\n    return {'id': 'EXP-1'}\n",
                                         "prompts.yml": "- role: system\n  content: You file expenses.\n"})
    for name, prompt in (("sim", "SIM"), ("judge", "JUDGE"), ("gen", "GEN")):
        app.agent(name, files={"prompts.yml": f"- role: system\n  content: {prompt}\n"})
    app.cases("tests/cases.jsonl", CASES)
    yield app, server
    server.stop()


def run(app, *args, out="r.json"):
    path = app.root / out
    result = cli("-i", str(app.root / "tests" / "cases.jsonl"), "-n", "bot", "-o", str(path), *args, cwd=app.root)
    return result, report(path)


def verdicts(data):
    """What must not change between a recording and its replay: everything but timings (and a model call's replay mark)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("duration_ms", "queued_ms", "first_byte_ms", "replayed")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(r) for r in data["results"]]


def cassette_lines(folder: Path) -> dict[str, list[dict]]:
    return {str(p.relative_to(folder)): [json.loads(x) for x in p.read_text().splitlines()] for p in sorted(folder.rglob("*.jsonl"))}


def test_record_then_replay_with_the_server_stopped_at_parallel_1_and_8(own, monkeypatch):
    app, server = own
    tapes = app.root / "cassettes"
    recorded, base = run(app, "--record", str(tapes))
    generated, gen_base = cli("-i", "agents:gen?count=2", "-n", "bot", "--record", str(tapes), "-o", str(app.root / "g.json"),
                              cwd=app.root), report(app.root / "g.json")
    assert recorded.exit_code == 1 and generated.exit_code == 0, recorded.output + generated.output
    assert [r["status"] for r in base["results"]] == ["passed", "passed", "passed", "failed", "passed"]
    calls = len(server.requests)
    server.stop()
    monkeypatch.delenv("FAKE_OPENAI_KEY")  # a replay needs no key: nothing is sent
    for parallel in ("1", "8"):
        replayed, again = run(app, "--replay", str(tapes), "--parallel", parallel, out=f"p{parallel}.json")
        assert replayed.exit_code == 1, replayed.output
        assert verdicts(again) == verdicts(base)
        gen_again = cli("-i", "agents:gen?count=2", "-n", "bot", "--replay", str(tapes), "--parallel", parallel,
                        "-o", str(app.root / "g2.json"), cwd=app.root)
        assert gen_again.exit_code == 0, gen_again.output
        assert verdicts(report(app.root / "g2.json")) == verdicts(gen_base)
    assert len(server.requests) == calls  # zero requests while replaying
    files = cassette_lines(tapes)
    generated_folder = next(name.split("/")[0] for name in files if name.endswith("/g1.jsonl"))
    assert generated_folder.startswith("agents_gen-")  # "agents:gen" as a plain file name, with a hash of the original
    assert sorted(files) == [f"{generated_folder}/g1.jsonl", f"{generated_folder}/g2.jsonl", "generation.jsonl",
                             "tests/cases/dynamic.jsonl", "tests/cases/failing.jsonl", "tests/cases/judged.jsonl",
                             "tests/cases/plain.jsonl", "tests/cases/tool.jsonl"]
    roles = [(line["role"], line["turn"]) for line in files["tests/cases/dynamic.jsonl"]]
    assert roles[:3] == [("simulator", 1), ("agent", 1), ("simulator", 2)] and ("validator", 3) in roles
    assert [line["role"] for line in files["generation.jsonl"]] == ["generator"]
    assert sum(len(v) for v in files.values()) == calls  # every call recorded once


def test_cassettes_are_stable_readable_and_hold_no_key(own):
    app, server = own
    tapes = app.root / "cassettes"
    run(app, "--record", str(tapes))
    first = {p: p.read_text() for p in tapes.rglob("*.jsonl")}
    run(app, "--record", str(tapes), "--parallel", "8")
    assert {p: p.read_text() for p in tapes.rglob("*.jsonl")} == first  # the same bytes: no timestamps, no ids that change
    text = "".join(first.values())
    assert KEY not in text and "authorization" not in text.lower() and "headers" not in text and server.host not in text
    line = (tapes / "tests" / "cases" / "tool.jsonl").read_text().splitlines()[0]
    assert line.startswith('{"role": "agent", "turn": 1, "request": {"messages": [{"content": "You file expenses.", "role": "system"}, '
                           '{"content": "yes", "role": "user"}], "model": "fake-model", "tools": [')
    entry = json.loads(line)
    assert set(entry) == {"role", "turn", "request", "response"}
    assert entry["response"]["tool_calls"] == [{"id": "call_1", "name": "create_expense", "arguments": {"amount": 50, "type": "meals"}}]


def test_runs_replay_each_run_as_recorded_at_any_parallel(own):
    app, server = own
    counter = iter(range(1, 1000))
    server.responder = lambda req: Answer(f"answer {next(counter)}")
    app.cases("tests/cases.jsonl", [{"id": "a", "input": "hi", "assert": {"type": "contains", "value": "answer"}}])
    tapes = app.root / "cassettes"
    _, base = run(app, "--record", str(tapes), "--runs", "3")
    assert [r["output"] for r in base["results"]] == ["answer 1", "answer 2", "answer 3"]
    lines = cassette_lines(tapes)["tests/cases/a.jsonl"]
    assert [line.get("run", 1) for line in lines] == [1, 2, 3]
    calls = len(server.requests)
    for parallel in ("1", "8"):
        _, again = run(app, "--replay", str(tapes), "--runs", "3", "--parallel", parallel)
        assert [(r["run"], r["output"]) for r in again["results"]] == [(1, "answer 1"), (2, "answer 2"), (3, "answer 3")]
    # runs the recording lacks are misses, not copies of run 1: a pass^5 of three measured runs is no gate
    result, more = run(app, "--replay", str(tapes), "--runs", "5")
    assert result.exit_code == 1 and len(server.requests) == calls
    assert [(r["status"], r["output"]) for r in more["results"]] == [
        ("passed", "answer 1"), ("passed", "answer 2"), ("passed", "answer 3"), ("error", None), ("error", None)]
    assert more["results"][3]["error"] == (f"replay miss: agent at turn 1: {tapes / 'tests' / 'cases' / 'a.jsonl'} holds runs 1, 2, 3 "
                                           "of this case, not run 4 (a copy of another run would measure nothing); to record it, "
                                           f"run with --replay {tapes} --record {tapes} (misses are called live and added)")
    assert more["summary"]["gates"][0]["verdict"] == "failed" and "ALL TESTS PASSED" not in result.output
    # --replay DIR --record DIR calls the two missing runs live and adds them; then all five replay
    result, topped = run(app, "--replay", str(tapes), "--record", str(tapes), "--runs", "5")
    assert result.exit_code == 0 and len(server.requests) == calls + 2
    assert [line.get("run", 1) for line in cassette_lines(tapes)["tests/cases/a.jsonl"]] == [1, 2, 3, 4, 5]
    result, again = run(app, "--replay", str(tapes), "--runs", "5")
    assert result.exit_code == 0 and [r["output"] for r in again["results"]] == ["answer 1", "answer 2", "answer 3", "answer 4", "answer 5"]


def test_a_changed_prompt_is_a_miss_naming_the_first_differing_message(own):
    app, server = own
    tapes = app.root / "cassettes"
    run(app, "--record", str(tapes))
    (app.root / "assistants" / "bot" / "prompts.yml").write_text("- role: system\n  content: You file expenses politely.\n")
    calls = len(server.requests)
    result, data = run(app, "--replay", str(tapes))
    assert result.exit_code == 1 and len(server.requests) == calls
    plain = next(r for r in data["results"] if r["id"] == "plain")
    assert plain["status"] == "error"
    assert plain["error"] == ('replay miss: agent at turn 1: message 1 (system) content: recorded "You file expenses.", '
                              f'now "You file expenses politely." (nearest: {tapes / "tests" / "cases" / "plain.jsonl"}:1); '
                              f'to record it, run with --replay {tapes} --record {tapes} (misses are called live and added)')
    dynamic = next(r for r in data["results"] if r["id"] == "dynamic")
    assert dynamic["status"] == "error" and dynamic["error"].startswith("replay miss: agent at turn 1: message 1 (system)")
    (turn,) = dynamic["turns"]  # the turn that failed is kept as it ran (issue 51); nothing after the miss is made up
    assert turn["input"] == "I need to file an expense" and turn["output"] is None and dynamic["error"] in turn["error"]


def test_a_changed_message_names_the_field_and_where_the_texts_part(own):
    app, _ = own
    tapes = app.root / "cassettes"
    run(app, "--record", str(tapes))
    app.cases("tests/cases.jsonl", [{**CASES[0], "input": "I need to file an expense for travel"}])
    result, data = run(app, "--replay", str(tapes))
    error = data["results"][0]["error"]
    assert error.startswith('replay miss: agent at turn 1: message 2 (user) content: recorded "I need to file an expense", '
                            'now "I need to file an expense for travel"')


def test_replay_roles_simulator_freezes_the_user_and_runs_the_agent_live(own):
    app, server = own
    tapes = app.root / "cassettes"
    app.cases("tests/cases.jsonl", [CASES[4]])
    _, base = run(app, "--record", str(tapes))
    assert base["results"][0]["status"] == "passed"
    server.responder = World(agent_type_word="kind")  # the agent changed: it no longer asks for the "type"
    server.requests.clear()
    result, data = run(app, "--replay", str(tapes), "--replay-roles", "simulator,validator")
    changed = data["results"][0]
    assert result.exit_code == 1 and changed["status"] == "failed", result.output
    assert [t["input"] for t in changed["turns"]] == [t["input"] for t in base["results"][0]["turns"]]  # the recorded user
    assert "kind of expense" in changed["turns"][0]["output"]
    assert changed["error"] == "simulator reported goal achieved but checkpoints missing: ask_type, filed, judged"
    assert changed["warnings"] == ["the recorded user has no turn 4: the conversation ended there (--replay-roles)"]
    assert {b["messages"][0]["content"] for b in server.bodies()} == {"You file expenses."}  # only the agent under test was called


def test_a_frozen_user_talks_to_every_live_run_the_recording_lacks(own):
    app, server = own
    tapes = app.root / "cassettes"
    app.cases("tests/cases.jsonl", [CASES[4]])
    _, base = run(app, "--record", str(tapes))  # one run recorded
    server.requests.clear()
    result, data = run(app, "--replay", str(tapes), "--replay-roles", "simulator,validator", "--runs", "2")
    assert result.exit_code == 0 and [r["status"] for r in data["results"]] == ["passed", "passed"], result.output
    recorded = [t["input"] for t in base["results"][0]["turns"]]
    assert [[t["input"] for t in r["turns"]] for r in data["results"]] == [recorded, recorded]  # run 2 hears run 1's user
    assert {b["messages"][0]["content"] for b in server.bodies()} == {"You file expenses."}  # only the agent, live
    agent_calls = sum(1 for lines in cassette_lines(tapes).values() for line in lines if line["role"] == "agent")
    assert len(server.requests) == 2 * agent_calls


def test_two_endpoints_serving_one_model_name_keep_their_own_answers(own):
    """A matrix of two connectors with the same model name (Ollama and vLLM both serving llama3.1): each
    replays its own answers, in any order and alone; another connector's recording is a miss, not a credit."""
    app, server = own
    other = OpenAIServer(lambda req: Answer("What type? (from B)")).start()
    try:
        for name, host in (("hosta", server.host), ("hostb", other.host)):
            app.connector(name, {"type": "openai", "options": {"model": "same", "host": host, "key": "$ENV.FAKE_OPENAI_KEY"}})
        app.cases("tests/cases.jsonl", [{"id": "p", "input": "I need to file an expense", "assert": {"type": "contains", "value": "from B"}}])
        tapes = app.root / "cassettes"
        _, live = run(app, "--record", str(tapes), "-c", "hosta,hostb")
        assert {r["connector"]: r["status"] for r in live["results"]} == {"hosta": "failed", "hostb": "passed"}
        lines = cassette_lines(tapes)["tests/cases/p.jsonl"]
        assert sorted(line["connector"] for line in lines) == ["hosta", "hostb"]
    finally:
        other.stop()
    for order in ("hostb,hosta", "hosta,hostb"):
        _, again = run(app, "--replay", str(tapes), "-c", order, "--parallel", "2")
        assert {r["connector"]: (r["status"], r["output"]) for r in again["results"]} == {
            r["connector"]: (r["status"], r["output"]) for r in live["results"]}
    _, alone = run(app, "--replay", str(tapes), "-c", "hostb")
    assert [(r["status"], r["output"]) for r in alone["results"]] == [("passed", "What type? (from B)")]
    app.connector("hostc", {"type": "openai", "options": {"model": "same", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY"}})
    result, third = run(app, "--replay", str(tapes), "-c", "hostc")
    assert result.exit_code == 1 and third["results"][0]["status"] == "error"
    assert third["results"][0]["error"].startswith(
        "replay miss: agent at turn 1: the same request was recorded for connector 'hosta', 'hostb', not 'hostc' (")


def test_only_what_is_sent_is_recorded_so_a_price_update_misses_nothing_and_no_proxy_password_is_kept(own):
    app, server = own

    def priced(output_price):
        app.connector("priced", {"type": "openai", "options": {
            "model": "fake-model", "host": server.host, "key": "$ENV.FAKE_OPENAI_KEY", "temperature": 0.3, "rpm": 600,
            "max_concurrency": 4, "proxy": "http://admin:literal-pass-999@127.0.0.1:9", "capabilities": {"tool_calls": True},
            "pricing": {"input": 1.0, "output": output_price}}})

    priced(6.0)
    app.cases("tests/cases.jsonl", [CASES[0]])
    tapes = app.root / "cassettes"
    _, base = run(app, "--record", str(tapes), "-c", "priced")
    (line,) = cassette_lines(tapes)["tests/cases/plain.jsonl"]
    assert line["request"]["parameters"] == {"temperature": 0.3}  # what the endpoint received, nothing else
    assert not {"pricing", "rpm", "proxy", "capabilities", "max_concurrency"} & server.bodies()[-1].keys()
    text = "".join(p.read_text() for p in tapes.rglob("*.jsonl"))
    assert "literal-pass-999" not in text and "pricing" not in text and "rpm" not in text
    priced(7.0)  # a price update: the same requests, the new cost
    result, again = run(app, "--replay", str(tapes), "-c", "priced")
    assert result.exit_code == 0 and again["results"][0]["status"] == "passed", result.output
    # a cassette recorded when the connector's other options were kept replays too
    path = tapes / "tests" / "cases" / "plain.jsonl"
    old = dict(line, request={**line["request"], "parameters": {"temperature": 0.3, "pricing": {"input": 1.0, "output": 6.0}, "rpm": 600}})
    path.write_text(json.dumps(old) + "\n")
    result, again = run(app, "--replay", str(tapes), "-c", "priced")
    assert result.exit_code == 0 and again["results"][0]["status"] == "passed", result.output


def test_replay_and_record_together_call_only_the_misses_and_add_them(own):
    app, server = own
    tapes = app.root / "cassettes"
    app.cases("tests/cases.jsonl", CASES[:2])
    run(app, "--record", str(tapes))
    before = {p.name: p.read_text() for p in tapes.rglob("*.jsonl")}
    app.cases("tests/cases.jsonl", CASES[:2] + [{"id": "new", "input": "an expense please", "assert": {"type": "contains", "value": "type"}}])
    server.requests.clear()
    result, data = run(app, "--replay", str(tapes), "--record", str(tapes))
    assert result.exit_code == 0 and [r["status"] for r in data["results"]] == ["passed"] * 3
    assert [last_user(b) for b in server.bodies()] == ["an expense please"]  # the miss only
    after = {p.name: p.read_text() for p in tapes.rglob("*.jsonl")}
    assert set(after) == {"plain.jsonl", "tool.jsonl", "new.jsonl"} and all(after[k] == v for k, v in before.items())
    server.requests.clear()
    again, _ = run(app, "--replay", str(tapes))
    assert again.exit_code == 0 and not server.requests


def test_a_recorded_model_error_replays_as_the_same_error(own):
    app, server = own
    server.responder = lambda req: Answer(status=400, error="context too long")
    app.cases("tests/cases.jsonl", CASES[:1])
    tapes = app.root / "cassettes"
    _, base = run(app, "--record", str(tapes))
    assert base["results"][0]["status"] == "error" and "context too long" in base["results"][0]["error"]
    server.stop()
    _, again = run(app, "--replay", str(tapes))
    assert again["results"][0]["error"] == base["results"][0]["error"]


def test_bad_cassette_options_and_files_are_exit_2_before_anything_runs(own):
    app, server = own
    cases = str(app.root / "tests" / "cases.jsonl")
    missing = cli("-i", cases, "-n", "bot", "--replay", str(app.root / "nowhere"), cwd=app.root)
    assert missing.exit_code == 2 and f"--replay {app.root / 'nowhere'}: no such folder" in missing.output
    alone = cli("-i", cases, "-n", "bot", "--replay-roles", "simulator", cwd=app.root)
    assert alone.exit_code == 2 and "--replay-roles needs --replay DIR" in alone.output
    typo = cli("-i", cases, "-n", "bot", "--replay", str(app.root), "--replay-roles", "simulater", cwd=app.root)
    assert typo.exit_code == 2 and "unknown role 'simulater'" in typo.output and "did you mean 'simulator'?" in typo.output
    (app.root / "afile").write_text("x")
    not_dir = cli("-i", cases, "-n", "bot", "--record", str(app.root / "afile"), cwd=app.root)
    assert not_dir.exit_code == 2 and "not a folder" in not_dir.output
    a_file = cli("-i", cases, "-n", "bot", "--replay", str(app.root / "afile"), cwd=app.root)
    assert a_file.exit_code == 2 and f"--replay {app.root / 'afile'}: a file, not a folder; give the folder that was given to --record" in a_file.output
    tapes = app.root / "cassettes"
    run(app, "--record", str(tapes))
    plain = tapes / "tests" / "cases" / "plain.jsonl"
    plain.write_text(plain.read_text() + '{"role": "agent", "turn": 1, "request": {}, "response": {}\n')
    tool = tapes / "tests" / "cases" / "tool.jsonl"
    tool.write_text('{"role": "robot", "turn": 1, "request": {}, "response": {}}\n')
    server.requests.clear()
    bad = cli("-i", cases, "-n", "bot", "--replay", str(tapes), cwd=app.root)
    assert bad.exit_code == 2 and not server.requests
    assert f"{plain}:2: not a JSON line" in bad.output and f"{tool}:1: a cassette line is" in bad.output
    assert "Traceback" not in bad.output


def test_an_offline_replay_needs_no_key_for_the_implicit_openai_connector(own, monkeypatch):
    app, server = own
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-looking-key-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    app.cases("tests/cases.jsonl", CASES[:1])
    tapes = app.root / "cassettes"
    recorded, base = run(app, "--record", str(tapes), "-c", "openai.gpt-4o-mini")
    assert recorded.exit_code == 0, recorded.output
    assert "sk-real-looking-key" not in "".join(p.read_text() for p in tapes.rglob("*.jsonl"))
    monkeypatch.delenv("OPENAI_API_KEY")
    server.stop()
    replayed, again = run(app, "--replay", str(tapes), "-c", "openai.gpt-4o-mini")
    assert replayed.exit_code == 0, replayed.output
    assert verdicts(again) == verdicts(base)
    live = cli("-i", str(app.root / "tests" / "cases.jsonl"), "-n", "bot", "-c", "openai.gpt-4o-mini", cwd=app.root)
    assert live.exit_code == 2 and "OPENAI_API_KEY is not set" in live.output  # a live run still needs it


def test_prompt_variables_that_change_every_run_are_recorded_as_written(own):
    app, server = own
    (app.root / "assistants" / "bot" / "prompts.yml").write_text(
        "- role: system\n  content: 'Now is $SYS.DATETIME (unix $SYS.UNIX); chat $CTX.CHAT_ID; year $SYS.YEAR.'\n")
    app.cases("tests/cases.jsonl", CASES[:1])
    tapes = app.root / "cassettes"
    recorded, _ = run(app, "--record", str(tapes))
    live_prompt = server.bodies()[0]["messages"][0]["content"]
    assert recorded.exit_code == 0 and "$SYS" not in live_prompt and "$CTX" not in live_prompt  # the model saw real values
    line = json.loads((tapes / "tests" / "cases" / "plain.jsonl").read_text())
    year = live_prompt.rsplit(" ", 1)[1]
    assert line["request"]["messages"][0]["content"] == f"Now is $SYS.DATETIME (unix $SYS.UNIX); chat $CTX.CHAT_ID; year {year}"
    server.stop()
    replayed, data = run(app, "--replay", str(tapes))  # another second, another chat id: still a hit
    assert replayed.exit_code == 0 and data["results"][0]["status"] == "passed", replayed.output
