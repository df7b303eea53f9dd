"""A large .jsonl case file read in two parts at once (inputs/reading.py ``_in_two``): its end by a forked copy of
the command, its cases pickled back. The cases are those reading the whole file gives, in order; whatever the parts
could say otherwise than the whole — a problem, a warning, an id in both parts, variants — has the file read whole,
as does a copy that is lost."""

from __future__ import annotations

import json

import pytest

from agenttest import speed
from agenttest.inputs import reading
from agenttest.inputs.documents import KeyPolicy
from agenttest.util import forked

pytestmark = pytest.mark.skipif(not forked.available(), reason="fork is POSIX only")

N = reading.IN_TWO + 500


def case(i: int) -> dict:
    return {"id": f"case-{i:05d}", "input": [{"role": "user", "content": f"Submit expense #{i} ☕"}],
            "assertions": [{"type": "contains", "value": "submitted"}], "tags": ["a"] if i % 3 else []}


def lines(n: int = N) -> list[str]:
    out = [json.dumps(case(i), ensure_ascii=i % 2 == 0) for i in range(n)]
    out[10:10] = ["", "// a comment"]
    out[-7] += "\r"  # a lone CR ends no line: the line's own
    return out


def read(tmp_path, text_lines: list[str], monkeypatch, parts: bool):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(text_lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(speed, "_installed", parts)  # the command's own process: only there may loading fork
    return reading.load_file(str(path)), str(path)


def said(loaded) -> tuple:
    return [str(p) for p in loaded.problems], loaded.warnings, len(loaded.unbuilt)


def test_a_large_file_read_in_two_parts_gives_the_cases_read_whole(tmp_path, monkeypatch):
    whole, _ = read(tmp_path, lines(), monkeypatch, parts=False)
    parted, path = read(tmp_path, lines(), monkeypatch, parts=True)
    assert len(whole.cases) == N and not whole.problems and not whole.warnings
    assert parted.cases == whole.cases  # every field, in the file's order: lines and columns too
    assert [c.location.line for c in parted.cases[-3:]] == [N, N + 1, N + 2]
    text = open(path, encoding="utf-8").read()
    assert reading._in_two(text, path, None, str(tmp_path), KeyPolicy()) is not None  # read in two parts indeed


def test_a_small_file_or_another_process_reads_it_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(speed, "_installed", True)
    text = "\n".join(lines(100)) + "\n"
    assert reading._in_two(text, "x.jsonl", None, str(tmp_path), KeyPolicy()) is None
    monkeypatch.setattr(speed, "_installed", False)  # a library caller's process, pytest's: never forked
    assert reading._in_two("\n".join(lines()) + "\n", "x.jsonl", None, str(tmp_path), KeyPolicy()) is None


def _twice(ls: list[str]) -> None:
    ls[-1] = ls[0]  # an id in both parts


def _composed(ls: list[str]) -> None:
    ls[1] = json.dumps({**case(1), "id": "caf\u00e9"})
    ls[-1] = json.dumps({**case(N - 1), "id": "cafe\u0301"})  # alike once composed: a warning of the whole file


def _noted(ls: list[str]) -> None:
    for at in (3, -3):  # a note Yao files carry, in each part: one warning for the file
        ls[at] = json.dumps({**case(at % N), "category": "travel"})


def _variants(ls: list[str]) -> None:
    ls[-2] = json.dumps({"id": "v", "turns": [{"input": "a", "variants": [{"id": "x", "input": "x"}, {"id": "y", "input": "y"}]}]})


def _broken(ls: list[str]) -> None:
    ls[-4] = ls[-4][:-3]  # in the copy's part: invalid JSON


@pytest.mark.parametrize("change", [_twice, _composed, _noted, _variants, _broken])
def test_what_the_parts_would_say_otherwise_has_the_file_read_whole(tmp_path, monkeypatch, change):
    changed = lines()
    change(changed)
    whole, _ = read(tmp_path, changed, monkeypatch, parts=False)
    assert whole.problems or whole.warnings or any(c.variants for c in whole.cases)  # the change is said, or makes cases
    parted, path = read(tmp_path, changed, monkeypatch, parts=True)
    assert said(parted) == said(whole) and parted.cases == whole.cases
    text = open(path, encoding="utf-8").read()
    assert reading._in_two(text, path, None, str(tmp_path), KeyPolicy()) is None


def test_a_lost_copy_has_the_file_read_whole(tmp_path, monkeypatch):
    def lost(self, timeout):
        self._kill()
        raise forked.Lost("it ended with signal SIGKILL")

    whole, _ = read(tmp_path, lines(), monkeypatch, parts=False)
    monkeypatch.setattr(forked.Child, "answer", lost)
    parted, _ = read(tmp_path, lines(), monkeypatch, parts=True)
    assert parted.cases == whole.cases and said(parted) == said(whole)
