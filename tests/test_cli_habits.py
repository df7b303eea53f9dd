"""The command line as users of pytest and promptfoo expect it (issue 14): never a silent green, several
inputs and reports, -x/-k/-q/--list/-V/--lf, captured output, messages that say how to fix, init."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, cli, report

RULES = """
rules:
  - tool: "*"
    reply: "done: {{ tool_result }}"
  - user: "^noisy"
    tool_calls: [{name: noisy}]
  - user: "^crash"
    tool_calls: [{name: crash}]
default: "echo: {{ user }}"
"""
TOOLS = [{"name": n, "description": n, "parameters": {"type": "object", "properties": {}}} for n in ("noisy", "crash")]
TOOLS_PY = "import sys\ndef noisy(ctx):\n    print('tool says hi')\n    print('tool warns', file=sys.stderr)\n    return 'ok'\ndef crash(ctx):\n    raise ValueError('bad tool')\n"


@pytest.fixture
def bot(offline_app):
    offline_app.agent("bot", connector="mock", tools=TOOLS, files={"mock.yml": RULES, "src/tools.py": TOOLS_PY,
                                                                    "src/env_test.py": "def Before(ctx, case):\n    {}['boom']\n"})
    return offline_app


def run(bot, *args, cwd=None):
    result = cli(*args, "--app", str(bot.root), cwd=cwd)
    assert "Traceback" not in result.output or "-v" in args, result.output
    return result


# ---- never a silent green ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, text, why", [
    ("empty.jsonl", "", "the file is empty"),
    ("comments.jsonl", "// nothing yet\n\n// still nothing\n", "it has only blank lines and // comments"),
    ("list.json", "[]", "its list of cases is empty"),
    ("cases.json", '{"cases": []}', "its list of cases is empty"),
    ("empty.yaml", "# todo\n", "it has only comments"),
])
def test_a_file_with_no_cases_is_exit_2_saying_why(bot, name, text, why):
    path = bot.file(f"assistants/bot/tests/{name}", text)
    result = run(bot, "-i", str(path))
    assert result.exit_code == 2 and f"{path}: holds no test cases: {why}" in result.stderr and result.stderr.count(str(path)) == 1


def test_a_generator_with_no_cases_and_an_empty_selection_are_exit_2(bot):
    bot.file("scripts/none.py", "def make(agent, params):\n    return []\n")
    result = run(bot, "-i", "scripts:none.make", "-n", "bot")
    assert result.exit_code == 2 and "scripts:none.make generated no test cases" in result.stderr
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "a", "input": "hi", "tags": ["smoke"]}])
    result = run(bot, "-i", str(path), "-k", "slow")
    assert result.exit_code == 2 and "-k 'slow' matches no case" in result.stderr
    result = run(bot, "-i", str(bot.root / "assistants/bot/nowhere"))
    assert result.exit_code == 2 and "does not exist" in result.stderr


# ---- several inputs ----------------------------------------------------------------------------------


def test_several_inputs_folders_and_globs(bot, tmp_path):
    one = bot.cases("assistants/bot/tests/one.jsonl", [{"id": "a", "input": "hi one"}])
    two = bot.cases("assistants/bot/tests/deep/two.jsonl", [{"id": "a", "input": "hi two"}])  # same id, other file
    bot.cases("assistants/bot/tests/output-20260101000000.json", [{"id": "report", "input": "never"}])  # a report: skipped
    out = tmp_path / "r.json"
    result = run(bot, "-i", str(bot.root / "assistants/bot/tests"), "-o", str(out))
    assert result.exit_code == 0, result.output
    data = report(out)
    assert [(r["id"], r["file"]) for r in data["results"]] == [("a", str(one)), ("a", str(two))]
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("► [a] hi one"))
    second = next(i for i, line in enumerate(lines) if line.startswith("► [a] hi two"))
    assert lines.index(str(one)) == first - 1 and lines.index(str(two)) == second - 1  # each file named before its cases
    result = run(bot, "-i", str(one), "-i", str(bot.root / "assistants/bot/tests/**/two.jsonl"), "-o", str(out))
    assert result.exit_code == 0 and [r["file"] for r in report(out)["results"]] == [str(one), str(two)]
    assert "ℹ Input: 2 inputs: " in result.stdout
    result = run(bot, "-i", str(bot.root / "assistants/bot/tests/*.yaml"))
    assert result.exit_code == 2 and "matches no case files" in result.stderr


def test_a_message_is_a_message_unless_it_looks_like_a_path(bot):
    result = run(bot, "-i", "Please export my bookings to bookings.json", "-n", "bot")
    assert result.exit_code == 0 and "output: echo: Please export my bookings to bookings.json" in result.stdout
    result = run(bot, "-i", "tests/missing.jsonl", "-n", "bot")
    assert result.exit_code == 2 and "input file 'tests/missing.jsonl' does not exist" in result.stderr


# ---- reports ---------------------------------------------------------------------------------------------


def test_several_reports_missing_folders_and_unwritable_targets(bot, tmp_path):
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "a", "input": "hi"}])
    xml, html = tmp_path / "new" / "deep" / "r.xml", tmp_path / "r.html"
    result = run(bot, "-i", str(path), "-o", str(xml), "-o", str(html))
    assert result.exit_code == 0 and xml.read_text().startswith("<?xml") and html.read_text().startswith("<!DOCTYPE html>")
    assert f"Output: {xml}, {html}" in result.stdout
    (tmp_path / "plain").write_text("a file")
    result = run(bot, "-i", str(path), "-o", str(tmp_path / "plain" / "r.json"))
    assert result.exit_code == 2 and f"{tmp_path / 'plain'} is a file, so no folder can be made there" in result.stderr
    assert "Running Tests" not in result.stdout
    dry = tmp_path / "cases" / "out" / "c.jsonl"
    assert run(bot, "-i", str(path), "--dry-run", "-o", str(dry)).exit_code == 0 and dry.exists()


def test_default_reports_never_overwrite_each_other(bot):
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "a", "input": "hi"}])
    for _ in range(3):
        assert run(bot, "-i", str(path)).exit_code == 0
    assert len(list((bot.root / "reports").glob("output-*.json"))) == 3


# ---- pytest habits -------------------------------------------------------------------------------------------


def test_x_k_q_qq_list_and_version(bot):
    cases = [{"id": "ok", "input": "hi", "tags": ["smoke"], "name": "greets"},
             {"id": "bad", "input": "hi", "tags": ["smoke", "slow"], "assert": {"type": "contains", "value": "nope"}},
             {"id": "later", "input": "hi", "tags": ["slow"]}]
    path = bot.cases("assistants/bot/tests/c.jsonl", cases)
    result = run(bot, "-i", str(path), "-x")
    assert result.exit_code == 1 and "► [later]" not in result.stdout
    assert "Total:     3" in result.stdout and "Not run:   1 (stopped early)" in result.stdout  # totals count the selection
    result = run(bot, "-i", str(path), "-k", "smoke and not slow")
    assert result.exit_code == 0 and "[ok]" in result.stdout and "[bad]" not in result.stdout and "[later]" not in result.stdout
    result = run(bot, "-i", str(path), "-k", "GREETS or later")
    assert result.exit_code == 0 and "[ok]" in result.stdout and "[later]" in result.stdout
    assert run(bot, "-i", str(path), "-k", "smoke and (").exit_code == 2
    listed = run(bot, "-i", str(path), "--list", "-k", "slow")
    assert listed.exit_code == 0 and listed.stdout.splitlines() == [
        f"bad  standard [smoke, slow]  {path}:2:1", f"later  standard [slow]  {path}:3:1", "2 cases selected"]
    quiet = run(bot, "-i", str(path), "-qq")
    assert quiet.exit_code == 1 and "Running Tests" not in quiet.stdout and "[ok]" not in quiet.stdout and "Summary" in quiet.stdout
    assert run(bot, "-V").stdout.startswith("agent-test, version ")


# what runs the cases, watches them, decides their verdicts and writes the reports
RUN_MACHINERY = ("agenttest.reporting", "agenttest.reporting.codec", "agenttest.reporting.console", "agenttest.runner.case",
                 "agenttest.runner.controller", "agenttest.runner.execution", "agenttest.runner.scheduling", "agenttest.verdicts.outcome")


def fresh(bot, *args):
    """agent-test in a process of its own: its exit code, stdout, stderr and which of RUN_MACHINERY it had imported
    when it ended."""
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: print('imported:', *[m for m in {RUN_MACHINERY!r} if m in sys.modules], file=sys.stderr))\n"
            f"sys.argv = ['agent-test', *{list(args)!r}, '--app', {str(bot.root)!r}]\n"
            "from agenttest.cli import entry\n"
            "entry()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=bot.root)
    imported = next(line for line in r.stderr.splitlines() if line.startswith("imported:")).split()[1:]
    return r.returncode, r.stdout, r.stderr, imported


def test_a_preview_imports_nothing_that_runs_cases(bot, tmp_path):
    """--list and --dry-run check what a run checks and run nothing: they never import the runner, the console, the
    verdicts or the report writers (issue 57: --list under 0.2 s) — whether the cases are good or not; a run does."""
    good = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "ok", "input": "hi"}, {"id": "two", "input": "hi", "tags": ["x"]}])
    bad = bot.cases("assistants/bot/tests/bad.jsonl", [{"id": "ok", "input": "hi", "assert": {"type": "contans", "value": "x"}}])
    code, out, err, imported = fresh(bot, "-i", str(good), "--list")
    assert (code, out.splitlines(), imported) == (0, [f"ok  standard  {good}:1:1", f"two  standard [x]  {good}:2:1", "2 cases selected"], [])
    code, out, err, imported = fresh(bot, "-i", str(good), "--dry-run")
    assert code == 0 and [json.loads(line)["id"] for line in out.splitlines()] == ["ok", "two"] and imported == []
    for preview in ("--list", "--dry-run"):
        code, out, err, imported = fresh(bot, "-i", str(bad), preview)
        assert code == 2 and f"{bad}:1:" in err and "unknown assertion type 'contans'" in err and imported == [], err
    code, out, err, imported = fresh(bot, "-i", str(good), "-o", str(tmp_path / "r.json"))
    assert code == 0 and imported == list(RUN_MACHINERY), err  # the same check sees what a run imports


def test_last_failed_runs_what_did_not_pass_last_time(bot, tmp_path):
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "ok", "input": "hi"},
                                                      {"id": "bad", "input": "hi", "assert": {"type": "contains", "value": "nope"}}])
    assert run(bot, "-i", str(path)).exit_code == 1
    out = tmp_path / "r.json"
    result = run(bot, "-i", str(path), "--lf", "-o", str(out))
    assert [r["id"] for r in report(out)["results"]] == ["bad"] and "--lf: running the 1 of 2 cases" in result.stdout
    path.write_text(path.read_text().replace('"nope"', '"echo"'))
    assert run(bot, "-i", str(path), "--lf").exit_code == 0  # fixed: it passes now
    result = run(bot, "-i", str(path), "--lf", "-o", str(out))
    assert len(report(out)["results"]) == 2 and "no case failed last time; running them all" in result.stdout


def test_a_filtered_run_keeps_the_failures_of_cases_it_did_not_run(bot, tmp_path):
    """As pytest: -k, --run and --lf update only what they ran; a case fixed in such a run is forgotten."""
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "hello", "input": "hi"},
                                                      {"id": "bad", "input": "hi", "assert": {"type": "contains", "value": "nope"}},
                                                      {"id": "worse", "input": "hi", "assert": {"type": "contains", "value": "never"}}])
    assert run(bot, "-i", str(path)).exit_code == 1
    assert run(bot, "-i", str(path), "-k", "hello").exit_code == 0
    listed = run(bot, "-i", str(path), "--lf", "--list")
    assert "bad " in listed.stdout and "worse " in listed.stdout and "hello " not in listed.stdout, listed.stdout
    path.write_text(path.read_text().replace('"nope"', '"echo"'))
    assert run(bot, "-i", str(path), "--run", "^bad$").exit_code == 0  # fixed, in a run of it alone
    listed = run(bot, "-i", str(path), "--lf", "--list")
    assert "worse " in listed.stdout and "bad " not in listed.stdout, listed.stdout


@pytest.mark.parametrize("flags, said", [
    (["--budget", "tokns=1"], "did you mean 'tokens'?"), (["--runs", "0"], "'--runs'"), (["--shard", "9/8"], "'--shard'"),
    (["--foo"], "No such option"), (["-r", "reporter"], "write the report with -o report.html"),
    (["--diff", "base.json"], "use --baseline REPORT.json; to compare two reports, agent-test diff BASE.json NEW.json")])
def test_usage_errors_reach_json_readers_as_an_error_event(bot, flags, said):
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "a", "input": "hi"}])
    result = run(bot, "-i", str(path), "--json", *flags)
    assert result.exit_code == 2
    (event,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert event["event"] == "error" and event["exit_code"] == 2 and said in event["message"]
    assert said in result.stderr


def test_help_groups_the_flags():
    r = subprocess.run([sys.executable, "-m", "agenttest", "--help"], capture_output=True, text=True, cwd=REPO)
    text = r.stdout
    assert r.returncode == 0 and text.startswith("Usage: agent-test [OPTIONS]")
    sections = [text.index(s) for s in ("Input and selection:", "Running:", "Output:", "Commands")]
    assert sections == sorted(sections)
    for flag in ("-k EXPR", "--lf, --last-failed", "--list", "-x, --fail-fast", "-q, --quiet", "-V, --version", "init"):
        assert flag in text, flag


# ---- capture ----------------------------------------------------------------------------------------------------


def test_print_and_tracebacks_of_user_code(bot, tmp_path):
    path = bot.cases("assistants/bot/tests/c.jsonl", [{"id": "noisy", "input": "noisy"}, {"id": "hooked", "input": "hi", "before": "env_test.Before"}])
    out = tmp_path / "r.json"
    quiet = run(bot, "-i", str(path), "-o", str(out))
    assert "tool says hi" not in quiet.stdout  # captured, not interleaved
    data = report(out)["results"]
    assert data[0]["stdout"] == "tool says hi\n" and data[0]["stderr"] == "tool warns\n"
    assert "before hook env_test.Before failed: KeyError: 'boom' (env_test.py:2)" in quiet.stdout
    short = [line for line in quiet.stdout.splitlines() if line.startswith("     ")]
    assert short and short[-1].strip() == "KeyError: 'boom'" and len(short) == 3
    loud = run(bot, "-i", str(path), "-v")
    assert "│  stdout: tool says hi" in loud.stdout and "│  stderr: tool warns" in loud.stdout
    assert "Traceback (most recent call last):" in loud.stdout  # -v: the whole traceback
    lines = loud.stdout.splitlines()
    assert lines.index("  │  output: done: ok") < next(i for i, line in enumerate(lines) if "KeyError: 'boom'" in line)


# ---- messages that say how to fix -------------------------------------------------------------------------------


def test_a_missing_connector_points_at_the_package_yao_that_asked_for_it(bot):
    folder = bot.agent("lost", connector="openai.nowhere-model", files={"mock.yml": RULES})
    (folder / "package.yao").write_text('{\n  "name": "lost",\n  "connector": "nowhere.model"\n}\n')
    path = bot.cases("assistants/lost/tests/c.jsonl", [{"id": "a", "input": "hi"}])
    result = run(bot, "-i", str(path))
    assert result.exit_code == 2
    assert f"{folder / 'package.yao'}:3:3: unknown connector 'nowhere.model'" in result.stderr
    assert "or create" in result.stderr and "nowhere/model.conn.yao" in result.stderr and '"type": "openai"' in result.stderr


# ---- init ---------------------------------------------------------------------------------------------------------


def test_init_makes_an_app_whose_suite_passes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("AGENTTEST_APP", None)
    made = subprocess.run([sys.executable, "-m", "agenttest", "init", "demo"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert made.returncode == 0 and "cd demo && agent-test -i tests" in made.stdout
    demo = tmp_path / "demo"
    ran = subprocess.run([sys.executable, "-m", "agenttest", "-i", "tests"], cwd=demo, capture_output=True, text=True, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "ALL TESTS PASSED" in ran.stdout and "Total:     7" in ran.stdout
    scripts = subprocess.run([sys.executable, "-m", "agenttest", "-i", "scripts.support.support"], cwd=demo, capture_output=True, text=True, env=env)
    assert scripts.returncode == 0, scripts.stdout
    again = subprocess.run([sys.executable, "-m", "agenttest", "init", "demo"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert again.returncode == 2 and "already exists and is not empty" in again.stderr


def test_the_console_says_mixed_modes_replay_what_was_not_run_and_missed_optional_checkpoints(tmp_path):
    """A mixed suite's header, --replay said in the header, -x's banner counting what ran, an optional
    checkpoint that was not reached named under its case, and -v's tree ending with the reasons."""
    suite = ("-i", "assistants/expense/tests/dynamic.jsonl", "-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense")
    missed = cli(*suite, "-x", "--replay", str(tmp_path / "empty"), cwd=REPO)
    assert missed.exit_code == 2 and "--replay" in missed.stderr  # no such folder
    (tmp_path / "empty").mkdir()
    replayed = cli(*suite, "-x", "--replay", str(tmp_path / "empty"), "-o", str(tmp_path / "r.json"), cwd=REPO)
    out = replayed.stdout
    assert replayed.exit_code == 1 and "Agent Test (Standard + Dynamic)" in out and f"Replay: {tmp_path / 'empty'} (every role)" in out
    assert "1 error — 1 of 1 test that ran did not pass (12 not run)" in out
    live = cli("-i", "assistants/expense/tests/dynamic.jsonl", "-n", "expense", "-o", str(tmp_path / "d.json"), cwd=REPO)
    assert "Agent Test (Dynamic Mode)" in live.stdout and "optional checkpoint not reached: thanks" in live.stdout
    verbose = cli("-i", "assistants/expense/tests/inputs.jsonl", "-n", "expense", "-v", "--run", "fail-wrong-word", "-o", str(tmp_path / "v.json"), cwd=REPO)
    tree = verbose.stdout[verbose.stdout.index("[fail-wrong-word]"):].splitlines()
    last = next(i for i, line in enumerate(tree) if line.startswith("  └─"))
    assert any("✗ contains" in line for line in tree[:last]) and not any(line.startswith("  │") for line in tree[last:])


def test_the_command_list_in_help_is_not_cut_off():
    """A new user's trial read 'Compare two JSON reports case by case: regressed, fixed, still failing, new,...'."""
    r = subprocess.run([sys.executable, "-m", "agenttest", "--help"], capture_output=True, text=True, cwd=REPO)
    listed = r.stdout.split("Commands", 1)[1].split("Examples", 1)[0]
    assert r.returncode == 0 and "..." not in listed
    for name in ("diff", "merge", "history", "view", "init"):
        assert f"\n  {name} " in listed, listed


def test_a_missing_case_file_suggests_only_a_close_name(app):
    app.agent("bot")
    app.cases("tests/perfect.jsonl", [{"id": "a", "input": "hi"}])
    far = cli("-i", str(app.root / "tests" / "nope.jsonl"), "-n", "bot")
    assert far.exit_code == 2 and "does not exist" in far.output and "did you mean" not in far.output, far.output
    near = cli("-i", str(app.root / "tests" / "perfct.jsonl"), "-n", "bot")
    assert near.exit_code == 2 and f"did you mean '{app.root / 'tests' / 'perfect.jsonl'}'?" in near.output, near.output


def test_a_count_that_is_no_number_says_a_whole_number_is_wanted(app):
    result = cli("-i", "hi", "--runs", "three")
    assert result.exit_code == 2 and "'three' is not a valid whole number" in result.output and "integer range" not in result.output


def test_an_assertion_type_starting_with_a_vowel_takes_an(app):
    app.agent("bot")
    path = app.cases("c.jsonl", [{"id": "a", "input": "hi", "assert": [{"type": "equals", "value": "x", "colour": "red"}]}])
    result = cli("-i", str(path), "-n", "bot", "--dry-run")
    assert result.exit_code == 2 and "'colour' is not a field of an 'equals' assertion" in result.output, result.output
