"""Before/After hooks, global hooks, ctx, and Python script tests — end to end."""

from __future__ import annotations

import json

import pytest

from helpers import cli, report
from scripted import scripted

ENV_TEST = '''
import json, os
LOG = os.path.join(os.path.dirname(__file__), "..", "..", "..", "hooks.log")

def log(*parts):
    with open(LOG, "a") as fh:
        fh.write(" ".join(str(p) for p in parts) + "\\n")

def BeforeAll(ctx, cases):
    log("BeforeAll", len(cases), ctx.user_id)
    return {"data": {"token": "all-123"}}

def AfterAll(ctx, results, before_data):
    log("AfterAll", [r["id"] + ":" + r["status"] for r in results], before_data["token"])

def Before(ctx, case):
    log("Before", case["id"], ctx.user_id, ctx.team_id, ctx.locale, json.dumps(ctx.metadata, sort_keys=True), case.get("metadata", {}).get("m"))
    if case["id"].startswith("bad-before"):
        raise RuntimeError("database unavailable")
    return {"data": {"case": case["id"]}}

def After(ctx, case, result, before_data):
    log("After", case["id"], result["status"], before_data["case"])
    if case["id"] == "bad-after":
        raise ValueError("cleanup failed")

def NoData(ctx, case):
    log("NoData", case["id"])
    return "plain value"

def UsesPlain(ctx, case, result, before_data):
    log("UsesPlain", before_data)

def FailAll(ctx, cases):
    raise RuntimeError("migrations failed")
'''


@pytest.fixture
def hooked(app, server):
    server.responder = scripted
    app.agent("bot", files={"src/env_test.py": ENV_TEST})
    return app


def log_lines(app):
    path = app.root / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def run(app, cases, *args):
    path = app.cases("assistants/bot/tests/cases.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "bot", "-o", str(out), *args)
    return result, (report(out) if out.exists() else None)


def hooked_case(cid, text="say:ok", **extra):
    return {"id": cid, "input": text, "before": "env_test.Before", "after": "env_test.After", **extra}


def test_order_and_data_passing(hooked):
    cases = [hooked_case("one", metadata={"m": "x"}, options={"metadata": {"k": 1}}, user="case-user"),
             hooked_case("two", "say:nope", assertions=[{"type": "contains", "value": "ok"}])]
    result, data = run(hooked, cases, "--before", "env_test.BeforeAll", "--after", "env_test.AfterAll")
    assert result.exit_code == 1
    assert log_lines(hooked) == [
        "BeforeAll 2 test-user",
        'Before one case-user test-team en-us {"k": 1, "m": "x"} x', "After one passed one",
        "Before two test-user test-team en-us {} None", "After two failed two",
        "AfterAll ['one:passed', 'two:failed'] all-123",
    ]


def test_env_alias_and_plain_return_values(hooked):
    result, data = run(hooked, [{"id": "a", "input": "say:ok", "before": "env.NoData", "after": "env.UsesPlain"}])
    assert result.exit_code == 0, result.output
    assert log_lines(hooked) == ["NoData a", "UsesPlain plain value"]


def test_failing_before_is_an_error_and_skips_after(hooked):
    result, data = run(hooked, [hooked_case("bad-before-1"), hooked_case("fine")])
    statuses = {r["id"]: (r["status"], r.get("error")) for r in data["results"]}
    assert statuses["bad-before-1"] == ("error", "before hook env_test.Before failed: RuntimeError: database unavailable (env_test.py:19)")
    assert statuses["fine"][0] == "passed"
    assert "After bad-before-1" not in " ".join(log_lines(hooked))


def test_failing_after_is_a_warning_not_a_verdict(hooked):
    result, data = run(hooked, [hooked_case("bad-after")])
    assert result.exit_code == 0
    r = data["results"][0]
    assert r["status"] == "passed" and r["warnings"] == ["after hook env_test.After failed: ValueError: cleanup failed (env_test.py:25)"]
    assert "warning: after hook env_test.After failed" in result.stdout


def test_failing_before_all_stops_everything_with_exit_2(hooked, server):
    result, data = run(hooked, [hooked_case("a")], "--before", "env_test.FailAll", "--after", "env_test.AfterAll")
    assert result.exit_code == 2 and data is None
    assert "BeforeAll failed: RuntimeError: migrations failed (env_test.py:35); no case was run" in result.stderr
    assert "Traceback" not in result.output and server.requests == [] and log_lines(hooked) == []


def test_after_all_runs_after_fail_fast(hooked):
    cases = [hooked_case("a", "say:bad", assertions=[{"type": "contains", "value": "ok"}]), hooked_case("b")]
    result, data = run(hooked, cases, "--fail-fast", "--before", "env_test.BeforeAll", "--after", "env_test.AfterAll")
    assert result.exit_code == 1
    assert log_lines(hooked)[-1] == "AfterAll ['a:failed'] all-123"


def test_hooks_with_parallel_runs_and_dynamic_cases(hooked, server):
    cases = [hooked_case(f"p{i}") for i in range(4)]
    result, data = run(hooked, cases, "--parallel", "3", "--runs", "2")
    assert result.exit_code == 0
    lines = log_lines(hooked)
    assert sorted(x.split()[1] for x in lines if x.startswith("Before")) == sorted(["p0", "p1", "p2", "p3"] * 2)
    assert len([x for x in lines if x.startswith("After")]) == 8


def test_unknown_hook_is_a_load_error(hooked):
    result, _ = run(hooked, [{"id": "a", "input": "x", "before": "env_test.Befor"}], "--after", "missing.AfterAll")
    assert result.exit_code == 2
    assert "has no function 'Befor'; did you mean 'Before'?" in result.stderr
    assert "missing_test.py does not exist" in result.stderr


def test_bad_hook_flag_is_a_usage_error(hooked):
    result, _ = run(hooked, [{"id": "a", "input": "x"}], "--before", "nodot")
    assert result.exit_code == 2 and "must be <module>.<Function>" in result.stderr


# ---- script tests ------------------------------------------------------------------------------

SCRIPT_TESTS = '''
def helper():
    return 1

def TestPasses(t, ctx):
    """passes"""
    reply = ctx.agent("bot").stream("say:Expense submitted EXP-7")
    t.log("got", reply["content"])
    t.assert_.Contains(reply["content"], "submitted")
    t.assert_.Match(reply["content"], r"EXP-\\d+")
    t.assert_.Equal({"a": [1, 2]}, {"a": [1, 2]})
    t.assert_.NotEqual(1, 2)
    getattr(getattr(t, "assert"), "True")(ctx.user_id == "test-user")
    t.assert_.False_(False)
    t.assert_.Len([1, 2, 3], 3)
    t.assert_.Greater(3, 2)
    t.assert_.Less(2, 3)
    t.assert_.Nil(None)
    t.assert_.NotNil(0)
    t.assert_.Type(3.5, "number")
    t.assert_.NotContains("abc", "z")
    t.assert_.JSONPath({"items": [{"id": 1}]}, "$.items[0].id", 1)
    t.assert_.Agent(reply["content"], "judge", {"criteria": "mentions submission"})

def TestFails(t, ctx):
    """fails on purpose"""
    t.assert_.Equal(1, 2, "numbers differ")
    t.assert_.Contains("abc", "z")
    t.assert_.Agent("nothing here", "judge", {"criteria": "mentions submission"})

def TestSkipped(t, ctx):
    t.skip("not today")

def TestFailNow(t, ctx):
    t.fail("marked failed")  # as Yao: fail and go on
    t.error("and an error")
    t.fatal("stop here")
    raise AssertionError("unreachable")

def TestYaoAsserts(t, ctx):
    reply = ctx.agent("bot").stream("say:hi there")
    t.assert_.Equal(reply.content, "hi there")  # attributes, as in Yao
    t.assert_.Len(reply.tool_calls, 0)
    t.assert_.GreaterOrEqual(2, 2)
    t.assert_.LessOrEqual(1, 2)
    t.assert_.NotMatch("abc", "z+")
    t.assert_.Error(ValueError("x"))
    t.assert_.NoError(None)
    t.assert_.Panic(lambda: 1 / 0)
    t.assert_.NoPanic(lambda: 1)
    t.assert_.GreaterOrEqual(1, 2)
    t.assert_.LessOrEqual("a", 1)
    t.assert_.NotMatch("abc", "b")
    t.assert_.Error(None)
    t.assert_.NoError("boom")
    t.assert_.Panic(lambda: 1)
    t.assert_.NoPanic(lambda: {}["k"])

def TestCrashes(t, ctx):
    {}["missing"]
'''


@pytest.fixture
def scripted_app(app, server):
    def responder(req):
        if req["messages"][0].get("content") == "JUDGE":
            from helpers import Answer

            payload = json.loads(req["messages"][-1]["content"])
            return Answer(json.dumps({"passed": "submitted" in payload["output"], "reason": "checked"}))
        return scripted(req)

    server.responder = responder
    app.agent("bot", files={"src/flow_test.py": SCRIPT_TESTS})
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: JUDGE\n"})
    return app


def test_script_tests_pass_fail_skip_and_error(scripted_app):
    out = scripted_app.root / "r.json"
    result = cli("-i", "scripts.flow", "-n", "bot", "-o", str(out), "-v", cwd=scripted_app.root)
    assert result.exit_code == 1, result.output
    data = report(out)
    statuses = {r["id"]: r["status"] for r in data["results"]}
    assert statuses == {"TestPasses": "passed", "TestFails": "failed", "TestSkipped": "skipped", "TestFailNow": "failed",
                        "TestYaoAsserts": "failed", "TestCrashes": "error"}
    passes = data["results"][0]
    assert len(passes["assertions"]) == 15 and all(a["passed"] for a in passes["assertions"])
    assert passes["logs"] == ["got Expense submitted EXP-7"]
    fails = data["results"][1]
    assert [a["passed"] for a in fails["assertions"]] == [False, False, False]

    def at(text: str) -> str:  # a failure says the line of the test file where it failed
        return f"(flow_test.py:{next(i for i, ln in enumerate(SCRIPT_TESTS.splitlines(), 1) if text in ln)})"

    assert fails["assertions"][0]["message"] == "numbers differ: expected 2, got 1 " + at("numbers differ")
    assert fails["assertions"][2]["message"] == "validator: checked " + at('Agent("nothing here"')
    assert [a["message"] for a in data["results"][3]["assertions"]] == ["marked failed " + at("marked failed"), "and an error " + at("and an error"),
                                                                      "stop here " + at("stop here")]
    yao = data["results"][4]
    assert [a["passed"] for a in yao["assertions"]] == [True] * 9 + [False] * 7
    assert yao["assertion_errors"] == [
        "expected 1 >= 2 " + at("GreaterOrEqual(1, 2)"), "expected 'a' <= 1 " + at('LessOrEqual("a", 1)'),
        "'abc' matches /b/ " + at('NotMatch("abc", "b")'), "expected an error, got None " + at("_.Error(None)"),
        "expected no error, got 'boom' " + at('NoError("boom")'), "expected the function to raise, but it returned " + at("_.Panic(lambda: 1)"),
        "expected the function not to raise, but got KeyError: 'k' " + at("NoPanic(lambda: {}")]
    assert data["results"][2]["skip_reason"] == "not today"
    assert "KeyError: 'missing' (flow_test.py:" in data["results"][5]["error"]
    assert "► [TestPasses] passes PASSED" in result.stdout and "log: got Expense submitted EXP-7" in result.stdout


def test_script_tests_filter_and_missing_file(scripted_app):
    out = scripted_app.root / "r.json"
    result = cli("-i", "scripts.flow", "-n", "bot", "--run", "Skipped|Passes", "-o", str(out), cwd=scripted_app.root)
    assert result.exit_code == 0
    assert [r["id"] for r in report(out)["results"]] == ["TestPasses", "TestSkipped"]
    r = cli("-i", "scripts.nothing", "-n", "bot", cwd=scripted_app.root)
    assert r.exit_code == 2 and "nothing_test.py does not exist" in r.stderr


def test_hooks_run_for_dynamic_cases(hooked, server):
    from helpers import Answer

    def responder(req):
        if req["messages"][0].get("content") == "SIM":
            return Answer(json.dumps({"message": "say:done", "goal_achieved": False}))
        return scripted(req)

    server.responder = responder
    hooked.agent("sim", files={"prompts.yml": "- role: system\n  content: SIM\n"})
    case = hooked_case("dyn", "say:hello", simulator={"use": "sim"},
                       checkpoints=[{"id": "a", "assert": {"type": "contains", "value": "hello"}},
                                    {"id": "b", "after": ["a"], "assert": {"type": "contains", "value": "done"}}])
    result, data = run(hooked, [case])
    assert result.exit_code == 0, result.output
    assert data["results"][0]["total_turns"] == 2
    assert [x.split()[0] + " " + x.split()[1] for x in log_lines(hooked)] == ["Before dyn", "After dyn"]


def test_parallel_script_tests_calling_agents_with_tools_do_not_starve_the_thread_pool(app, server):
    from helpers import Answer

    def responder(req):
        if req["messages"][-1]["role"] == "tool":
            return Answer("done")
        return Answer("", tool_calls=[{"name": "slow_tool", "arguments": {}}])

    server.responder = responder
    tests = "\n".join(f"def Test{i}(t, ctx):\n    t.assert_.Equal(ctx.agent('bot').stream('go')['content'], 'done')\n" for i in range(12))
    app.agent("bot", tools=[{"name": "slow_tool", "description": "", "parameters": {"type": "object", "properties": {}}}],
              files={"src/tools.py": "import time\ndef slow_tool(ctx):\n    time.sleep(0.2)\n    return 1\n", "src/many_test.py": tests})
    out = app.root / "r.json"
    result = cli("-i", "scripts.many", "-n", "bot", "--parallel", "12", "--timeout", "20s", "-o", str(out), cwd=app.root)
    assert result.exit_code == 0, result.output
    assert report(out)["summary"]["passed"] == 12
