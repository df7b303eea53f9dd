"""Issue 50 item 6: bounded by construction — a scripted case's variants are counted before they are
expanded, a case's own ``runs`` is capped like ``--runs``, what user code prints is capped per case, and
pass^k is made once per gate in linear time."""

from __future__ import annotations

import json
import math

import pytest

from helpers import cli, report, tool_app


def _variants(turns: int, each: int, case_id: str = "big") -> dict:
    return {"id": case_id, "turns": [{"variants": [{"id": f"t{t}v{v}", "input": f"say {t}.{v}"} for v in range(each)]}
                                     for t in range(turns)]}


@pytest.fixture
def bot(offline_app):
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default: ok\n"})
    return offline_app


def test_variants_past_the_limit_are_exit_2_at_the_cases_line_with_the_count(bot):
    path = bot.cases("assistants/bot/tests/t.jsonl", [{"id": "plain", "input": "hi"}, _variants(5, 7)])
    result = cli("-i", str(path), "--list")
    assert result.exit_code == 2, result.output
    assert (f"Error: {path}:2:1: the variants of 'big' make 16,807 cases (7 × 7 × 7 × 7 × 7); at most 10,000 cases may be "
            "made from variants; give fewer variants, or raise the limit with --max-cases N") in result.stderr
    listed = cli("-i", str(path), "--list", "--max-cases", "20000")
    assert listed.exit_code == 0 and listed.stdout.splitlines()[-1] == "16808 cases selected"


def test_twelve_turns_of_ten_variants_are_refused_before_anything_is_made(bot):
    """10^12 cases from a 4 KB file: counted, never expanded (this ran out of memory)."""
    path = bot.cases("assistants/bot/tests/t.jsonl", [_variants(12, 10)])
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert f"{path}:1:1: the variants of 'big' make 1,000,000,000,000 cases (10 × 10 × … over 12 turns)" in result.stderr


def test_the_limit_counts_every_case_of_the_file_made_from_variants(bot):
    path = bot.cases("assistants/bot/tests/t.jsonl", [_variants(2, 60, "a"), _variants(2, 60, "b"), _variants(2, 60, "c")])
    result = cli("-i", str(path), "--list")
    assert result.exit_code == 2
    assert (f"{path}:3:1: the variants of 'c' make 3,600 cases (60 × 60), 10,800 with the file's other variants; "
            "at most 10,000 cases may be made from variants") in result.stderr
    assert cli("-i", str(path), "--list", "--max-cases", "10800").exit_code == 0


def test_max_cases_must_be_a_count(bot):
    path = bot.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "hi"}])
    result = cli("-i", str(path), "--max-cases", "0")
    assert result.exit_code == 2 and "Invalid value for '--max-cases': 0 is not in the range x>=1" in result.stderr


def test_a_cases_own_runs_is_capped_like_the_runs_flag(bot):
    path = bot.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "hi", "runs": 1001}])
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert f"{path}:1:36: 'runs' must be at most 1000; as --runs; for more, run again and join the reports with agent-test merge" in result.stderr
    path = bot.cases("assistants/bot/tests/t.jsonl", [{"id": "a", "input": "hi", "runs": 1000, "skip": True}])
    assert cli("-i", str(path), "--list").exit_code == 0


PRINTER = """\
import sys

def shout(ctx):
    sys.stdout.write("x" * (3 * 1024 * 1024))
    sys.stderr.write("é" * 10)
    return {"ok": True}
"""


def test_what_a_case_prints_is_kept_to_a_megabyte_and_the_rest_counted(tmp_path, monkeypatch):
    tool_app(tmp_path, ("shout",), PRINTER)
    path = tmp_path / "assistants" / "bot" / "tests" / "t.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"id": "a", "input": "call shout"}) + "\n")
    out = tmp_path / "r.json"
    for workers in ("0", "1"):
        result = cli("-i", str(path), "--app", str(tmp_path), "--workers", workers, "-o", str(out))
        assert result.exit_code == 0, result.output
        (row,) = report(out)["results"]
        assert row["stdout"] == "x" * (1024 * 1024) + f"\n… {2 * 1024 * 1024:,} bytes more"
        assert row["stderr"] == "é" * 10


def test_pass_hat_k_of_5000_runs_is_made_once_and_equals_the_formula():
    from agenttest.model import CaseKey, Gate
    from agenttest.verdicts.gates import pass_k

    g = Gate(key=CaseKey(id="a"), planned=5000, runs=5000, passed=4990)
    assert g.pass_hat is g.pass_hat and g.pass_at is g.pass_at  # made once, not at every access
    for k in (1, 2, 10, 100, 4990, 4991, 5000):
        assert g.pass_hat[k - 1] == pytest.approx(math.comb(4990, k) / math.comb(5000, k), rel=1e-9, abs=1e-300)
        assert g.pass_at[k - 1] == pytest.approx(1 - math.comb(10, k) / math.comb(5000, k), rel=1e-9)
    assert g.pass_hat[4990] == 0.0 and g.pass_at[0] == 0.998 and g.pass_at[10] == 1.0
    table = pass_k([g, Gate(key=CaseKey(id="b"), planned=5000, runs=5000, passed=5000)])
    assert table is not None and len(table.k) == 5000 and table.pass_hat[-1] == 0.5
