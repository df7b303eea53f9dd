"""Hostile inputs: bad values are exit 2 with a message, never a traceback or a hang; attachments stay
inside the app; a case's work is kept when it errors (issue 12, items 4, 7 and 9)."""

from __future__ import annotations

import json
import os
import re

import pytest

from helpers import cli, report
from scripted import scripted


@pytest.fixture
def bot(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: 'echo: {{ user }}'\n"})
    return offline_app


def run(bot, *args):
    result = cli(*args, "-n", "bot", "--app", str(bot.root))
    assert "Traceback" not in result.output, result.output
    return result


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "-inf", "soon"])
def test_bad_timeout_flag_is_exit_2(bot, value):
    path = bot.cases("cases.jsonl", [{"id": "a", "input": "hi"}])
    result = run(bot, "-i", str(path), "--timeout", value)
    assert result.exit_code == 2 and "--timeout" in result.stderr and "duration" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", -1, 0])
def test_bad_case_timeout_is_exit_2_with_its_place(bot, value):
    path = bot.cases("cases.jsonl", [{"id": "a", "input": "hi", "timeout": value}])
    result = run(bot, "-i", str(path))
    assert result.exit_code == 2 and f"{path}:1:" in result.stderr and "bad 'timeout'" in result.stderr


def test_json_nested_past_recursion_is_exit_2(bot):
    path = bot.root / "deep.jsonl"
    path.write_text('{"id": "a", "input": "hi", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    result = run(bot, "-i", str(path))
    column = len('{"id": "a", "input": "hi", "metadata": ') + 64  # the 64th '[' opens the 65th level
    assert result.exit_code == 2 and f"{path}:1:{column}: nested too deeply" in result.stderr, result.stderr


def test_a_case_nested_deeper_than_the_limit_is_exit_2(bot):
    deep: object = "x"
    for _ in range(100):
        deep = {"k": deep}
    path = bot.cases("cases.jsonl", [{"id": "a", "input": "hi", "metadata": deep}])
    result = run(bot, "-i", str(path))
    assert result.exit_code == 2 and "nested more than 64 levels deep" in result.stderr


BOMB = """
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
cases:
  - id: a
    input: hi
    metadata: {g: *g}
"""


@pytest.mark.parametrize("dry", [False, True])
def test_yaml_aliases_that_expand_past_the_limit_are_exit_2(bot, dry):
    path = bot.file("bomb.yaml", BOMB)
    result = run(bot, "-i", str(path), *(["--dry-run"] if dry else []))
    assert result.exit_code == 2 and "YAML aliases expand to more than 1,000,000 values" in result.stderr  # refused, not expanded


def test_a_self_referencing_yaml_input_is_exit_2(bot):
    path = bot.file("loop.yaml", "- id: a\n  input: &x\n    - role: user\n      content: *x\n")
    result = run(bot, "-i", str(path))
    assert result.exit_code == 2 and "a YAML alias refers to a structure that contains it" in result.stderr
    assert f"{path}:" in result.stderr


def test_a_device_as_input_is_exit_2(bot):
    result = run(bot, "-i", "/dev/zero")
    assert result.exit_code == 2 and "not a regular file" in result.stderr


def test_a_fifo_as_input_is_exit_2(bot, tmp_path):
    fifo = tmp_path / "cases.jsonl"
    os.mkfifo(fifo)
    result = run(bot, "-i", str(fifo))
    assert result.exit_code == 2 and "not a regular file" in result.stderr


# ---- attachments stay inside the app ------------------------------------------------------------


def image(source: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": source}]}]


def test_attachments_outside_the_app_or_too_large_are_that_cases_error(bot, tmp_path):
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"\x89PNG secret")
    inside = bot.file("assistants/bot/tests/ok.png", "png")
    (bot.root / "assistants/bot/tests/link.png").symlink_to(outside)
    big = bot.root / "assistants/bot/tests/big.png"
    big.write_bytes(b"x" * 3000)
    os.mkfifo(bot.root / "assistants/bot/tests/pipe.png")
    cases = [
        {"id": "ok", "input": image("file://./ok.png")},
        {"id": "dotdot", "input": image("file://../../../../secret.png")},
        {"id": "absolute", "input": image(f"file://{outside}")},
        {"id": "symlink", "input": image("file://./link.png")},
        {"id": "big", "input": image("file://./big.png")},
        {"id": "fifo", "input": image("file://./pipe.png")},
    ]
    path = bot.cases("assistants/bot/tests/cases.jsonl", cases)
    out = tmp_path / "r.json"
    result = run(bot, "-i", str(path), "-o", str(out), "--max-attachment", "2KB", "--timeout", "5s")
    assert result.exit_code == 1, result.output
    got = {r["id"]: r for r in report(out)["results"]}
    assert got["ok"]["status"] == "passed" and inside.exists()
    for cid in ("dotdot", "absolute", "symlink"):
        assert got[cid]["status"] == "error" and "is outside the app" in got[cid]["error"], got[cid]
    assert got["big"]["status"] == "error" and "3,000 bytes, over the limit of 2,048" in got["big"]["error"]
    assert got["fifo"]["status"] == "error" and "not a regular file" in got["fifo"]["error"]


def test_an_attachment_in_a_case_files_own_folder_outside_the_app_is_allowed(bot, tmp_path):
    (tmp_path / "pic.png").write_bytes(b"png")
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "input": image("file://./pic.png")}) + "\n")
    out = tmp_path / "r.json"
    assert run(bot, "-i", str(path), "-o", str(out)).exit_code == 0


def test_generated_cases_may_not_attach_files_from_outside_the_app(bot, tmp_path, monkeypatch):
    (tmp_path / "stolen.txt").write_text("private")
    bot.file("scripts/gen.py", f"def make(agent, params):\n    return [{{'id': 'g', 'input': [{{'role': 'user', 'content': [{{'type': 'file', 'source': 'file://{tmp_path}/stolen.txt'}}]}}]}}]\n")
    out = tmp_path / "r.json"
    result = run(bot, "-i", "scripts:gen.make", "-o", str(out))
    assert result.exit_code == 1
    (r,) = report(out)["results"]
    assert r["status"] == "error" and "is outside the app" in r["error"]


# ---- errored cases keep their work ----------------------------------------------------------------


def test_a_500_after_a_tool_ran_keeps_the_tool_call_and_the_tokens(app, server, tmp_path):
    def respond(req):
        from openai_server import Answer

        if req["messages"][-1]["role"] == "tool":
            return Answer(status=500, error="boom after the tool", headers={"retry-after-ms": "1"})
        return scripted(req)

    server.responder = respond
    tools = [{"name": "whoami", "description": "who", "parameters": {"type": "object", "properties": {}}}]
    app.agent("bot", tools=tools, files={"src/tools.py": "def whoami(ctx):\n    return {'user': ctx.user_id}\n"})
    path = app.cases("cases.jsonl", [{"id": "a", "input": "tool:whoami:{}"}])
    out = tmp_path / "r.json"
    assert cli("-i", str(path), "-n", "bot", "-o", str(out)).exit_code == 1
    (r,) = report(out)["results"]
    assert r["status"] == "error" and "500" in r["error"]
    assert [c["name"] for c in r["tool_calls"]] == ["whoami"] and r["tool_calls"][0]["result"] == {"user": "test-user"}
    assert r["usage"]["total_tokens"] == 15  # the first answer's tokens, spent before the error


# ---- CPU work cannot freeze the loop ---------------------------------------------------------------


def test_a_backtracking_regex_is_cut_and_other_cases_keep_their_verdicts(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": """
rules:
  - user: "^slowpoke"
    delay: 0.5
    reply: "fine"
  - user: ".*"
    reply: "{{ user }}"
"""})
    cases = [
        {"id": "evil", "input": "a" * 40 + "b", "assert": {"type": "regex", "value": "^(a|a)*$"}},
        {"id": "other", "input": "slowpoke", "assert": {"type": "contains", "value": "fine"}},
    ]
    path = offline_app.cases("cases.jsonl", cases)
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "--parallel", "2", "-o", str(out), "--json")
    evil, other = report(out)["results"]  # unguarded, this search runs for hours: the engine's deadline cut it
    assert evil["status"] == "error" and "took longer than 2s" in evil["error"] and "catastrophic backtracking" in evil["error"]
    assert other["status"] == "passed"
    # the search did not hold the event loop (nor the GIL) while it ran: the case beside it, 0.5 s of waiting, ended first
    finished = [json.loads(line)["id"] for line in result.stdout.splitlines() if json.loads(line)["event"] == "result"]
    assert finished == ["other", "evil"], finished
    assert result.exit_code == 1


def test_finding_json_in_adversarial_text_is_linear(monkeypatch):
    """The characters handed to the JSON parser are a small multiple of the text's (the old scan parsed from every
    bracket to the end: quadratic, minutes here); counted, not timed."""
    from agenttest.util import text as module
    from agenttest.util.text import find_json

    parsed: list[int] = []
    loads = module._loads
    monkeypatch.setattr(module, "_loads", lambda text: parsed.append(len(text)) or loads(text))
    for text in ["{" * 300_000, "[1, " * 100_000, '{"a": "' + "x" * 300_000, "{ " * 150_000 + '{"ok": 1}', "{[" * 50_000 + "x" + "]}" * 50_000]:
        parsed.clear()
        find_json(text)
        assert sum(parsed) <= 5 * len(text), (text[:20], len(text), sum(parsed), len(parsed))
    assert find_json("{ " * 1000 + '{"ok": 1}') == (True, {"ok": 1})


# ---- output is data, not terminal commands ---------------------------------------------------------


def test_escape_sequences_in_replies_ids_and_reasons_are_shown_escaped(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": 'default: "\\e[2K\\r\\e[32m✨ ALL TESTS PASSED ✨\\e[0m ```\\n![x](http://tracker.example/p.png) <img src=x>"\n'})
    path = offline_app.cases("cases.jsonl", [{"id": "evil\u001b[2K", "input": "hi", "assert": {"type": "contains", "value": "nope"}}])
    md = tmp_path / "r.md"
    result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "-v", "-o", str(md))
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout and "\r" not in result.stdout  # not a terminal: no colour, and nothing obeyed
    assert "[evil\\x1b[2K]" in result.stdout and "\\x1b[2K \\x1b[32m✨ ALL TESTS PASSED" in result.stdout
    assert "FAILED" in result.stdout and "❌ 1 failed — 1 of 1 test did not pass" in result.stdout
    text = md.read_text()
    outside = re.sub(r"(?ms)^(`{3,})$.*?^\1$", "", text)  # the report without its fenced blocks
    assert "![x](http" not in outside and not re.search(r"(?<!\\)<img", outside)  # the image and the tag are inert text
    assert "\\[x\\](http://tracker.example/p.png)" in outside and "\\<img src=x\\>" in outside
    assert "````\n" in text, "the output's ``` must not close the fence around it"


# ---- keys never leak ------------------------------------------------------------------------------


def test_keys_are_hidden_before_anything_cuts_the_text(app, server, tmp_path, monkeypatch):
    """The key comes back in the model's reply at the place where the console cuts it, and from a
    connector a create hook picks during the run; a very short value is not taken for a secret."""
    from openai_server import Answer

    monkeypatch.setenv("OTHER_KEY", "sk-other-0123456789abcdef")
    monkeypatch.setenv("SHORT", "test")
    server.responder = lambda req: Answer("x" * 290 + req["model"] + " key: sk-test-SECRET-0123456789 and sk-other-0123456789abcdef")
    app.connector("other", {"type": "openai", "options": {"model": "other-test", "host": server.host, "key": "$ENV.OTHER_KEY",
                                                          "headers": {"X-Team": "$ENV.SHORT"}}})
    app.agent("bot", files={"src/index.py": "def create(ctx, messages):\n    return {'connector': 'other'} if 'other' in str(messages) else None\n"})
    path = app.cases("cases.jsonl", [{"id": "a", "input": "first", "assert": {"type": "contains", "value": "nope"}},
                                     {"id": "b", "input": "other one", "assert": {"type": "contains", "value": "nope"}}])
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    for target in (out, md):
        result = cli("-i", str(path), "-n", "bot", "-v", "-o", str(target))
        assert result.exit_code == 1
        for _secret, prefix in (("sk-test-SECRET-0123456789", "sk-test-SEC"), ("sk-other-0123456789abcdef", "sk-other-01")):
            assert prefix not in result.output and prefix not in target.read_text()
    assert out.read_text().count("***") >= 4  # both keys, in both cases
    assert "$ENV.SHORT is shorter than 8 characters, so it is not hidden" in result.stdout
    assert result.stdout.count("$ENV.SHORT is shorter") == 1  # said once


def test_a_generator_that_returns_more_than_count_is_cut_to_count(bot, tmp_path):
    bot.file("scripts/many.py", "def make(agent, params):\n    return [{'id': f'c{i}', 'input': 'hi'} for i in range(7)]\n")
    out = tmp_path / "r.json"
    result = run(bot, "-i", "scripts:many.make?count=3", "-o", str(out))
    assert result.exit_code == 0
    assert [r["id"] for r in report(out)["results"]] == ["c0", "c1", "c2"]
    assert "scripts:many.make returned 7 cases for count=3; the last 4 were dropped" in result.stdout


def test_long_failure_reasons_are_cut_on_the_console_and_whole_in_the_report(offline_app, tmp_path):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: '" + "word " * 400 + "'\n"})
    needles = [f"missing-{i:03d}" for i in range(80)]
    path = offline_app.cases("cases.jsonl", [{"id": "a", "input": "hi", "assert": {"type": "contains", "value": needles}}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-n", "bot", "--app", str(offline_app.root), "-o", str(out))
    line = next(x for x in result.stdout.splitlines() if x.startswith("  └─ output does not contain"))
    assert line.endswith("… (the whole text is in the report)") and len(line) < 600
    assert "missing-079" in report(out)["results"][0]["assertions"][0]["message"] and "missing-079" not in line


def test_the_depth_check_agrees_with_a_walk_of_every_value():
    """documents.too_deep visits containers level by level (cheap for 100,000 cases); it says what a walk of
    every value with its depth says, for every limit, on random nestings."""
    import random

    from agenttest.inputs.documents import too_deep

    def walk(value, limit):
        stack = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
            stack.extend((v, depth + 1) for v in children)
        return False

    rng = random.Random(7)

    def nesting(depth):
        roll = rng.random()
        if depth > 7 or roll < 0.3:
            return rng.choice([1, "x", None, [], {}])
        if roll < 0.65:
            return [nesting(depth + 1) for _ in range(rng.randint(0, 3))]
        return {str(i): nesting(depth + 1) for i in range(rng.randint(0, 3))}

    for _ in range(2000):
        value = nesting(0)
        for limit in range(10):
            assert too_deep(value, limit) == walk(value, limit)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert too_deep(deep, 200) and not too_deep([[1]], 3)


DUPLICATED = {
    "cases.jsonl": ('{"id": "dk", "input": "hi", "assert": {"type": "contains", "value": "nope"}, '
                    '"assert": {"type": "contains", "value": "echo"}}\n{"id": "ok", "input": "a: b"}\n', "cases.jsonl:1:78:"),
    "cases.json": ('[\n  {"id": "dk", "input": "hi",\n   "assert": {"type": "contains", "value": "nope"}, '
                   '"assert": {"type": "contains", "value": "echo"}}\n]\n', "cases.json:3:53:"),
    "cases.yaml": ("cases:\n  - id: dk\n    input: hi\n    assert: {type: contains, value: nope}\n"
                   "    assert: {type: contains, value: echo}\n", "cases.yaml:5:5:"),
}


@pytest.mark.parametrize("name", sorted(DUPLICATED))
@pytest.mark.parametrize("mode", ["run", "--dry-run", "--list"])
def test_a_key_written_twice_in_a_case_is_exit_2_at_its_second_place(bot, name, mode):
    """JSON and YAML keep the last of two equal keys: the failing assertion written first would be dropped
    and the case pass (a false green). It is a problem, said before anything runs, by a preview too."""
    text, place = DUPLICATED[name]
    path = bot.root / name
    path.write_text(text)
    result = run(bot, "-i", str(path), *([] if mode == "run" else [mode]))
    assert result.exit_code == 2, result.output
    assert f"{bot.root}/{place} 'assert' is written twice" in result.stderr and "keeps only the last" in result.stderr


def test_a_colon_inside_a_string_is_not_a_key_written_twice(bot):
    path = bot.cases("cases.jsonl", [{"id": "u", "input": "see https://x.y/z at 10:30", "metadata": {"a": "b: c", "n": [{"k": ":"}]},
                                      "assert": [{"type": "contains", "value": "echo:"}, {"type": "contains", "value": "10:30"}]}])
    result = run(bot, "-i", str(path))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("mode", ["--list", "--dry-run"])
def test_a_preview_says_the_warnings_a_run_says(bot, mode):
    """--list and --dry-run check what a run checks: an unknown key ignored is said on stderr (stdout keeps
    the lines a program reads), as the run's header says it."""
    path = bot.cases("cases.jsonl", [{"id": "w1", "input": "x", "note": 1}, {"id": "w2", "input": "東京", "comment": {}}])
    ran, previewed = run(bot, "-i", str(path)), run(bot, "-i", str(path), mode)
    assert ran.exit_code == 0 and previewed.exit_code == 0
    for text in (f"{path}:1:28: 'note' is not a field of a case; ignored", f"{path}:2:39: 'comment' is not a field of a case; ignored"):
        assert text in ran.stdout and f"warning: {text}" in previewed.stderr, (ran.stdout, previewed.stderr)
        assert text not in previewed.stdout
    if mode == "--dry-run":
        assert [json.loads(line)["id"] for line in previewed.stdout.splitlines()] == ["w1", "w2"]


@pytest.mark.parametrize("mode", ["run", "--dry-run"])
def test_a_case_file_that_is_not_utf8_is_exit_2_at_its_line_and_column(bot, mode):
    path = bot.root / "latin1.jsonl"
    path.write_bytes(b'{"id": "a", "input": "x"}\n{"id": "b", "input": "caf\xe9 ok"}\n')
    result = run(bot, "-i", str(path), *([] if mode == "run" else [mode]))
    assert result.exit_code == 2
    assert f"{path}:2:26: the file is not UTF-8: byte 0xe9" in result.stderr and "save the file as UTF-8" in result.stderr


@pytest.mark.parametrize("name", ["cases.jsonl", "cases.json"])
def test_a_tab_or_an_unclosed_string_is_said_in_a_whole_sentence_with_a_remedy(bot, name):
    lines = ['{"id": "a", "input": "col1\tcol2"}', '{"id": "b", "input": "open}']
    path = bot.root / name
    for line in lines:
        path.write_text(line + "\n" if name.endswith(".jsonl") else "[" + line + "]")  # no newline: it would be in the string
        result = run(bot, "-i", str(path))
        assert result.exit_code == 2 and " at;" not in result.stderr and not result.stderr.rstrip().endswith(" at")
        if "\t" in line:
            assert "a control character (a tab, a line break) inside a string; write a tab as \\t" in result.stderr
        else:
            assert "a string is never closed; close the string with a double quote" in result.stderr


def test_a_key_written_twice_in_package_yao_is_exit_2_at_its_second_place(offline_app):
    """JSON keeps the last of two keys: a second "connector" or "tools" would replace the first without a word."""
    folder = offline_app.root / "assistants" / "twice"
    folder.mkdir(parents=True)
    (folder / "package.yao").write_text('{\n  // the agent\n  "name": "twice",\n  "connector": "mock",\n  "connector": "other"\n}\n')
    (folder / "mock.yml").write_text("default: hi\n")
    path = offline_app.cases("cases.jsonl", [{"id": "a", "input": "hi"}])
    for extra in ([], ["--list"]):
        result = cli("-i", str(path), "-n", "twice", "--app", str(offline_app.root), *extra)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"{folder}/package.yao:5:3: 'connector' is written twice in one object (JSON keeps only the last)" in result.stderr


def test_list_with_an_output_file_is_a_usage_error_not_silence(bot, tmp_path):
    path = bot.cases("cases.jsonl", [{"id": "a", "input": "hi"}])
    result = run(bot, "-i", str(path), "--list", "-o", str(tmp_path / "r.xml"))
    assert result.exit_code == 2 and "--list prints the cases and writes no file" in result.stderr and "--dry-run -o FILE" in result.stderr
    assert not (tmp_path / "r.xml").exists()
    assert run(bot, "-i", str(path), "--dry-run", "-o", str(tmp_path / "cases.jsonl")).exit_code == 0 and (tmp_path / "cases.jsonl").exists()
