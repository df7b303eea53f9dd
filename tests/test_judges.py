"""Agent-driven testing: validator assertions, script assertions and generators, end to end."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, last_user, report


@pytest.fixture
def judged(app, server):
    """An agent under test that echoes, and a validator agent whose replies each test scripts."""
    app.agent("bot")
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n"})
    return app


def route(validator_replies):
    """Responder: the agent under test says 'Your expense was submitted'; the validator answers from the list."""
    replies = iter(validator_replies)

    def responder(req):
        if req["messages"][0].get("content") == "You are a validator.":
            item = next(replies)
            return item if isinstance(item, Answer) else Answer(item)
        return Answer("Your expense was submitted")

    return responder


def run_agent_case(app, tmp_path, assertion):
    path = app.cases("cases.jsonl", [{"id": "a", "input": "file it", "assertions": [assertion]}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out))
    return result, report(out)["results"][0]


JUDGE = {"type": "agent", "use": "agents:judge", "value": "Says the expense was submitted"}


def test_validator_pass_with_score_and_protocol(judged, server, tmp_path):
    server.responder = route(['{"passed": true, "reason": "it says submitted", "score": 0.9}'])
    result, r = run_agent_case(judged, tmp_path, {**JUDGE, "options": {"metadata": {"tone": "formal"}}})
    assert result.exit_code == 0
    a = r["assertions"][0]
    assert a["passed"] and a["score"] == 0.9 and a["actual"] == "it says submitted"
    sent = json.loads(last_user(server.bodies()[-1]))
    assert sent == {"output": "Your expense was submitted", "input": "file it", "criteria": "Says the expense was submitted", "tone": "formal"}


def test_validator_fail_reason_is_the_message(judged, server, tmp_path):
    server.responder = route(['Verdict:\n```json\n{"passed": false, "reason": "no reference number"}\n```'])
    result, r = run_agent_case(judged, tmp_path, JUDGE)
    assert result.exit_code == 1 and r["status"] == "failed"
    assert r["assertions"][0]["message"] == "validator: no reference number"


def test_malformed_reply_is_corrected_once(judged, server, tmp_path):
    server.responder = route(["I think it is fine!", 'Sure: {"passed": true, "reason": "ok"} done'])
    result, r = run_agent_case(judged, tmp_path, JUDGE)
    assert result.exit_code == 0, result.output
    correction = server.bodies()[-1]["messages"]
    assert correction[-2] == {"role": "assistant", "content": "I think it is fine!"}
    assert "could not be used: the reply holds no valid JSON" in correction[-1]["content"]


@pytest.mark.parametrize("replies, why", [
    (["no json", "still no json"], "unusable reply after one correction: the reply holds no valid JSON; reply: 'still no json'"),
    (['{"reason": "x"}', '{"reason": "y"}'], "the JSON has no 'passed' field"),
    (['{"passed": "yes"}', '{"passed": "yes"}'], "'passed' must be true or false"),
    (['{"passed": true, "score": "high"}'] * 2, "'score' must be a number, got 'high'"),
    (['{"passed": false} then {"passed": true}'] * 2, "the reply holds 2 different JSON documents: which one is meant is unclear"),
    (['{&#34;passed&#34;: true, &#34;reason&#34;: &#34;ok&#34;}'] * 2, "the reply's JSON is HTML-escaped"),
    (["", "  "], "the reply is empty; reply: (empty)"),
    ([Answer('{"passed": true, "reason": "it is', finish_reason="length")] * 2, "the reply was cut at its token limit"),
])
def test_unusable_replies_make_the_case_an_error_naming_the_judge(judged, server, tmp_path, replies, why):
    """A judge's fault is not the agent's failure (issue 51 item 3): one correction, then the case is an error."""
    server.responder = route(replies)
    result, r = run_agent_case(judged, tmp_path, JUDGE)
    assert r["status"] == "error" and r["error_by"] == "validator", r
    assert r["error"].startswith("validator judge: unusable reply after one correction: ") and why in r["error"]
    assert "Traceback" not in result.output
    assert "Errors:    1 (1 judge; the agent's: 0)" in result.output


def test_an_html_escaped_verdict_is_corrected_and_then_counts(judged, server, tmp_path):
    server.responder = route(['{&#34;passed&#34;: true, &#34;reason&#34;: &#34;ok&#34;}', '{"passed": true, "reason": "ok"}'])
    result, r = run_agent_case(judged, tmp_path, JUDGE)
    assert r["status"] == "passed", r
    assert "HTML-escaped" in server.bodies()[-1]["messages"][-1]["content"]


def test_the_same_verdict_twice_is_not_ambiguous(judged, server, tmp_path):
    server.responder = route(['{"passed": true} so: {"passed": true}'])
    assert run_agent_case(judged, tmp_path, JUDGE)[1]["status"] == "passed"


def test_validator_that_cannot_be_called_makes_the_case_an_error(judged, server, tmp_path):
    server.responder = route([Answer(status=503, error="judge down", headers={"retry-after-ms": "1"})] * 6)
    result, r = run_agent_case(judged, tmp_path, JUDGE)
    assert result.exit_code == 1 and r["status"] == "error"
    assert "could not be called" in r["assertions"][0]["message"] and "503" in r["assertions"][0]["message"]


def test_unknown_validator_is_a_load_error(judged, tmp_path):
    path = judged.cases("cases.jsonl", [{"id": "a", "input": "x", "assertions": [{**JUDGE, "use": "agents:juge"}]}])
    result = cli("-i", str(path), "-n", "bot")
    column = path.read_text().index('"agents:juge"') + 1  # the problem points at the 'use' that names it
    assert result.exit_code == 2 and f"{path}:1:{column}: unknown agent 'juge'; did you mean 'judge'?" in result.stderr


# ---- script assertions -------------------------------------------------------------------------

CHECKS = '''
def as_bool(output, input, value):
    return value in output

def as_pass(output, input, value):
    return {"pass": value in output, "message": f"looked for {value}"}

def as_passed(output, input, value):
    return {"passed": value["word"] in output, "message": "meta" if value["word"] in output else "missing word"}

def raises(output, input, value):
    raise ValueError("bad data")

def returns_none(output, input, value):
    return None

def pass_as_text(output, input, value):
    return {"pass": "false"}
'''


@pytest.mark.parametrize("assertion, status, message", [
    ({"type": "script", "script": "scripts.checks.as_bool", "value": "submitted"}, "passed", None),
    ({"type": "script", "script": "scripts.checks.as_bool", "value": "approved"}, "failed", "script checks.as_bool: returned false"),
    ({"type": "script", "use": "scripts:checks.as_pass", "value": "submitted"}, "passed", None),
    ({"type": "script", "use": "scripts:checks.as_pass", "value": "nope"}, "failed", "script checks.as_pass: looked for nope"),
    ({"type": "script", "use": "scripts:checks.as_passed", "options": {"metadata": {"word": "expense"}}}, "passed", None),
    ({"type": "script", "use": "scripts:checks.as_passed", "options": {"metadata": {"word": "zzz"}}}, "failed", "script checks.as_passed: missing word"),
    ({"type": "script", "script": "scripts.checks.raises"}, "error", "script checks.raises raised ValueError: bad data (checks.py:"),
    ({"type": "script", "script": "scripts.checks.returns_none"}, "error", "returned None"),
    ({"type": "script", "script": "scripts.checks.pass_as_text"}, "error", "returned {'pass': 'false'}; 'pass' must be true or false"),
])
def test_script_return_shapes(app, server, tmp_path, assertion, status, message):
    server.responder = route([])
    app.agent("bot")
    app.file("scripts/checks.py", CHECKS)
    _, r = run_agent_case(app, tmp_path, assertion)
    a = r["assertions"][0]
    assert r["status"] == status and a["passed"] is (status == "passed")
    if message:
        assert message in a["message"] and message in r["error"] if status == "error" else message in a["message"]


def test_missing_script_module_or_function_is_exit_2(app, tmp_path):
    app.agent("bot")
    app.file("scripts/checks.py", CHECKS)
    path = app.cases("cases.jsonl", [
        {"id": "a", "input": "x", "assertions": [{"type": "script", "script": "scripts.checks.as_bol"}]},
        {"id": "b", "input": "x", "assertions": [{"type": "script", "script": "scripts.nothere.fn"}]}])
    result = cli("-i", str(path), "-n", "bot")
    assert result.exit_code == 2
    assert "has no function 'as_bol'; did you mean 'as_bool'?" in result.stderr
    assert "nothere.py does not exist" in result.stderr


# ---- generators -----------------------------------------------------------------------------------

GENERATED = [{"id": "g1", "input": "hello", "assertions": [{"type": "contains", "value": "submitted"}]},
             {"id": "g2", "input": [{"role": "user", "content": "hi"}], "expected": "Your expense was submitted"}]


@pytest.fixture
def generating(app, server):
    app.agent("bot", tools=[{"name": "t1", "description": "d", "parameters": {"type": "object", "properties": {}}}],
              files={"src/tools.py": "def t1(ctx):\n    return 1\n"})
    app.agent("gen", files={"prompts.yml": "- role: system\n  content: You generate.\n"})
    return app


def gen_route(reply):
    def responder(req):
        if req["messages"][0].get("content") == "You generate.":
            return Answer(reply)
        return Answer("Your expense was submitted")

    return responder


@pytest.mark.parametrize("reply", [
    json.dumps(GENERATED),
    json.dumps({"cases": GENERATED}),
    "Here are your cases:\n```json\n" + json.dumps(GENERATED, indent=2) + "\n```\nEnjoy.",
])
def test_generator_agent_shapes_run_against_the_target(generating, server, tmp_path, reply):
    server.responder = gen_route(reply)
    out = tmp_path / "r.json"
    result = cli("-i", "agents:gen?count=2&focus=edge-cases&lang=fr", "-n", "bot", "-o", str(out), cwd=generating.root)
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in report(out)["results"]] == ["g1", "g2"]
    sent = json.loads(last_user(server.bodies()[0]))
    assert sent["count"] == 2 and sent["focus"] == "edge-cases" and sent["extra"] == {"lang": "fr"}
    assert sent["target_agent"] == "bot"  # the agent id string, as Yao's design shows it
    assert sent["target_agent_info"]["id"] == "bot" and sent["target_agent_info"]["tools"][0]["name"] == "t1"


def test_generator_dry_run_writes_loadable_jsonl_without_calling_the_target(generating, server, tmp_path):
    server.responder = gen_route(json.dumps(GENERATED))
    out = tmp_path / "gen.jsonl"
    result = cli("-i", "agents:gen?count=2", "-n", "bot", "--dry-run", "-o", str(out), cwd=generating.root)
    assert result.exit_code == 0
    assert len(server.requests) == 1  # the generator only
    assert [json.loads(x)["id"] for x in result.stdout.splitlines()] == ["g1", "g2"]
    again = cli("-i", str(out), "-n", "bot", "-o", str(tmp_path / "r.json"), cwd=generating.root)
    assert again.exit_code == 0


def test_invalid_generated_cases_are_exit_2_with_locations(generating, server):
    bad = [{"id": "g1", "input": "x", "assertions": [{"type": "contans", "value": "y"}]}, {"id": "g1", "inptu": "x"}]
    server.responder = gen_route(json.dumps(bad))
    result = cli("-i", "agents:gen", "-n", "bot", cwd=generating.root)
    assert result.exit_code == 2
    err = result.stderr
    assert "agent-test-generated-" in err and ".json:7:" in err and "unknown assertion type 'contans'" in err
    assert "missing required field 'input'" in err  # generated cases keep their known keys: 'inptu' was dropped
    saved = err.split("are saved in ")[1].split()[0]
    assert json.load(open(saved)) == bad


def test_generator_reply_without_cases(generating, server):
    server.responder = gen_route("I cannot do that")
    result = cli("-i", "agents:gen", "-n", "bot", cwd=generating.root)
    assert result.exit_code == 2 and "unusable reply after one correction: the reply holds no valid JSON; reply: 'I cannot do that'" in result.stderr
    assert len(server.requests) == 2


def test_script_generator(generating, server, tmp_path):
    server.responder = gen_route("")
    generating.file("scripts/gen.py", '''
    def cases(target, params):
        return {"cases": [{"id": f"s{i}", "input": target["id"], "assertions": [{"type": "contains", "value": "submitted"}]}
                          for i in range(int(params["count"]))]}
    ''')
    out = tmp_path / "r.json"
    result = cli("-i", "scripts:gen.cases?count=3", "-n", "bot", "-o", str(out), cwd=generating.root)
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in report(out)["results"]] == ["s0", "s1", "s2"]
    r = cli("-i", "scripts:gen.nope", "-n", "bot", cwd=generating.root)
    assert r.exit_code == 2 and "has no function 'nope'" in r.stderr


def test_workers_get_their_test_mode_and_metadata_in_ctx(app, server, tmp_path):
    """A worker's create hook sees ctx.test_mode and the protocol metadata."""
    seen = tmp_path / "seen.json"
    index = f'''
import json
def create(ctx, messages):
    with open({str(seen)!r}, "w") as fh:
        json.dump({{"mode": ctx.test_mode, "metadata": ctx.metadata}}, fh)
'''
    app.agent("bot")
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: You are a validator.\n", "src/index.py": index})
    server.responder = route(['{"passed": true}'])
    _, r = run_agent_case(app, tmp_path, {**JUDGE, "options": {"metadata": {"tone": "formal"}}})
    assert r["status"] == "passed"
    assert json.loads(seen.read_text()) == {"mode": "validator", "metadata": {"test_mode": "validator", "criteria": "Says the expense was submitted", "tone": "formal"}}


def test_yao_style_hyphenated_script_names(app, server, tmp_path):
    server.responder = route([])
    app.agent("bot")
    app.file("scripts/tests.py", "def validate_expense(output, input, value):\n    return value['min_amount'] < 100\n")
    _, r = run_agent_case(app, tmp_path, {"type": "script", "use": "scripts:tests.validate-expense", "options": {"metadata": {"min_amount": 10}}})
    assert r["status"] == "passed"


def test_a_generator_on_an_openai_connector_leaves_no_unclosed_session_on_stderr(generating, server, tmp_path):
    """The generator's client is made in the controller before the workers fork: a worker lets its copy be, never
    collecting it (aiohttp says "Unclosed client session" of a session collected unclosed)."""
    import os
    import subprocess
    import sys

    server.responder = gen_route(json.dumps(GENERATED))
    for workers in ("1", "2"):
        proc = subprocess.run([sys.executable, "-m", "agenttest", "-i", "agents:gen?count=2", "-n", "bot", "--workers", workers,
                               "-o", str(tmp_path / "r.json")], cwd=generating.root, capture_output=True, text=True, timeout=120,
                              env=os.environ)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Unclosed" not in proc.stderr and proc.stderr == "", proc.stderr
