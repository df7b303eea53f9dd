"""Sizes and time (issue 25, item 6): long case ids make bounded, unique cassette names; a replay miss near
a large cassette is quick; generators obey --timeout; huge numbers and a corrupt --lf memory are no crash."""

from __future__ import annotations

import json

import pytest

from helpers import Answer, cli, report


@pytest.fixture
def bot(app):
    app.agent("bot")
    return app


def test_case_ids_of_300_characters_record_and_replay(bot, server, tmp_path):
    long = "x" * 300
    cases = [{"id": long + "a", "input": "one"}, {"id": long + "b", "input": "two"}, {"id": "é" * 200, "input": "three"}]
    path = bot.cases("assistants/bot/tests/inputs.jsonl", cases)
    tapes = tmp_path / "tapes"
    recorded = cli("-i", str(path), "-o", str(tmp_path / "r.json"), "--record", str(tapes))
    assert recorded.exit_code == 0, recorded.output
    names = sorted(p.name for p in tapes.rglob("*.jsonl"))
    assert len(names) == 3 and all(len(n.encode()) <= 100 for n in names)  # bounded, one per case
    server.reset()
    replayed = cli("-i", str(path), "-o", str(tmp_path / "again.json"), "--replay", str(tapes))
    assert replayed.exit_code == 0, replayed.output
    assert [r["output"] for r in report(tmp_path / "again.json")["results"]] == ["echo: one", "echo: two", "echo: three"]
    assert server.requests == []


def test_a_replay_miss_near_a_large_cassette_is_quick(bot, tmp_path, monkeypatch):
    from agenttest.connectors import requestdiff

    path = bot.cases("assistants/bot/tests/inputs.jsonl", [{"id": "big", "input": "hello"}])
    tapes = tmp_path / "tapes"
    assert cli("-i", str(path), "-o", str(tmp_path / "r.json"), "--record", str(tapes)).exit_code == 0
    (tape,) = tapes.rglob("*.jsonl")
    line = json.loads(tape.read_text())
    rows = []
    for n in range(3000):  # 3,000 recorded calls, each with a long message alike to the new one
        line["request"]["messages"][-1]["content"] = f"hello {n} " + "abcdefghij" * 200
        rows.append(json.dumps(line))
    tape.write_text("\n".join(rows) + "\n")
    bot.cases("assistants/bot/tests/inputs.jsonl", [{"id": "big", "input": "hello 7 " + "abcdefghij" * 199 + "changed"}])
    compared = []  # the recordings diffed for likeness (quadratic each): it took minutes when every one was
    alike = requestdiff._alike
    monkeypatch.setattr(requestdiff, "_alike", lambda *args: compared.append(args) or alike(*args))
    result = cli("-i", str(path), "-o", str(tmp_path / "miss.json"), "--replay", str(tapes), "--workers", "0")
    (r,) = report(tmp_path / "miss.json")["results"]
    assert r["status"] == "error" and r["error"].startswith("replay miss: agent at turn 1: message")
    assert result.exit_code == 1
    assert 0 < len(compared) <= requestdiff.CLOSEST < 3000, len(compared)  # counted, not timed


def test_a_generator_script_that_never_returns_obeys_the_timeout(bot):
    marks = bot.root / "marks"
    bot.file("scripts/gen.py", f"import time\ndef make(info, params):\n    open({str(marks)!r}, 'a').write('began ')\n"
                               f"    time.sleep(60)\n    open({str(marks)!r}, 'a').write('returned')\n")
    result = cli("-i", "scripts:gen.make?count=2", "-n", "bot", "--timeout", "1s", cwd=bot.root)
    assert result.exit_code == 2 and "generator scripts:gen.make did not return within 1s" in result.stderr, result.stderr
    assert marks.read_text() == "began "  # the run ended while the script still ran: it was not waited for


def test_a_generator_endpoint_that_never_answers_obeys_the_timeout(bot, server):
    bot.agent("gen", files={"prompts.yml": "- role: system\n  content: You generate.\n"})
    server.responder = lambda req: Answer("[]", delay=60)
    result = cli("-i", "agents:gen?count=2", "-n", "bot", "--timeout", "1s", cwd=bot.root)
    assert result.exit_code == 2 and "generator agents:gen did not answer within 1s (--timeout)" in result.stderr, result.stderr
    assert server.left() == 1  # the connection closed before the 60 s answer: not waited out


@pytest.mark.parametrize("name, text, where", [
    ("cases.jsonl", '{"id": "a", "input": "hi", "expected": %s}\n', ":1:40:"),
    ("cases.json", '[\n  {"id": "a", "input": "hi", "metadata": {"n": %s}}\n]\n', ":2:48:"),
    ("cases.yaml", "- id: a\n  input: hi\n  expected: %s\n", ":3:13:"),
])
def test_a_number_of_5000_digits_is_exit_2_at_its_place(bot, name, text, where):
    path = bot.file(name, text % ("7" * 5000))
    result = cli("-i", str(path), "-n", "bot", "--app", str(bot.root))
    assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"{path}{where} a number of 5,000 digits: numbers in case files are limited to 4,300 digits" in result.stderr


@pytest.mark.parametrize("memory", ["[" * 100_000 + "]" * 100_000, '{"k": 5}', "not json", '{"k": [["a"]]}'])
def test_a_corrupt_last_failed_memory_is_ignored_with_a_warning(bot, memory):
    path = bot.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi"}])
    (bot.root / ".agent-test").mkdir()
    (bot.root / ".agent-test" / "lastfailed.json").write_text(memory)
    result = cli("-i", str(path), "--lf", "-o", str(bot.root / "r.json"))
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert "lastfailed.json" in result.output and "ignored" in result.output
    assert report(bot.root / "r.json")["summary"]["passed"] == 1
    assert isinstance(json.loads((bot.root / ".agent-test" / "lastfailed.json").read_text()), dict)  # rewritten whole
