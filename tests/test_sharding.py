"""``--shard K/N`` and ``agent-test merge`` (FORMATS §10): shards partition the cases exactly, the same on
every machine; merged shard reports equal the unsharded report's verdicts, totals and stability."""

from __future__ import annotations


import pytest

from agenttest.errors import Location
from agenttest.model import Case
from agenttest.selection.shards import parse, shards, source_key
from helpers import Answer, cli, last_user, report

CASES = [{"id": f"c{i:02d}", "input": f"message {i}", "assert": {"type": "contains", "value": "yes"}} for i in range(1, 16)]


def verdict(req):
    """Every third case fails, so that verdicts differ."""
    number = last_user(req).split()[-1]
    return Answer("no" if number.isdigit() and int(number) % 3 == 0 else "yes")


@pytest.fixture
def suite(app, server):
    app.agent("bot")
    app.cases("tests/cases.jsonl", CASES)
    app.cases("tests/more.jsonl", [{"id": "c01", "input": "the same id in another file 1", "assert": {"type": "contains", "value": "yes"}},
                                   {"id": "m02", "input": "message 3", "assert": {"type": "contains", "value": "yes"}}])
    server.responder = verdict
    return app


def run(app, name, *args):
    """The suite: both files of tests/ (the folder given as -i)."""
    out = app.root / name
    return cli("-i", str(app.root / "tests"), "-n", "bot", "-o", str(out), *args, cwd=app.root), out


def keys(data):
    return [(r.get("file", ""), r["id"], r["run"]) for r in data["results"]]


def totals(data):
    s = data["summary"]
    return {k: s[k] for k in ("total", "passed", "failed", "skipped", "errors", "timeouts", "pass_rate")}


def test_source_key_and_shards_are_the_same_on_every_machine(tmp_path):
    root = tmp_path / "app"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "cases.jsonl").write_text("{}\n")
    cases = [Case(id=f"T{i:03d}", messages=(), raw={}, location=Location("x"), base_dir=str(root), file=str(root / "tests" / "cases.jsonl")) for i in range(1, 8)]
    assert source_key(cases[0].file, str(root)) == "tests/cases.jsonl"
    # dealt in the order of SHA-256("tests/cases.jsonl\nT001") …: fixed, whatever the machine, path or Python version
    assert shards(cases, 3, str(root)) == [2, 1, 3, 1, 1, 3, 2]
    assert shards(cases, 1, str(root)) == [1] * 7
    assert source_key("agents:gen?count=2", str(root)) == "agents:gen?count=2"


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "1/0", "2", "1/3/4"])
def test_bad_shard_is_exit_2(text, suite):
    result = cli("-i", str(suite.root / "tests"), "-n", "bot", "--shard", text, cwd=suite.root)
    assert result.exit_code == 2 and "--shard" in result.output and "Traceback" not in result.output
    assert parse(" 2 / 3 ") == (2, 3)


def test_shards_partition_the_cases_and_merge_equals_the_unsharded_run(suite, tmp_path):
    whole, all_path = run(suite, "all.json", "--runs", "2")
    assert whole.exit_code == 1
    everything = report(all_path)
    parts = []
    for k in (1, 2, 3):
        result, path = run(suite, f"s{k}.json", "--runs", "2", "--shard", f"{k}/3")
        assert result.exit_code in (0, 1), result.output
        assert f"shard {k}/3 of 17" in result.output
        parts.append(path)
    shard_keys = [keys(report(p)) for p in parts]
    assert sorted(len(k) for k in shard_keys) == [10, 12, 12]  # 17 cases × 2 runs, dealt evenly
    flat = [k for part in shard_keys for k in part]
    assert len(flat) == len(set(flat)) and sorted(flat) == sorted(keys(everything))  # disjoint, and together all
    merged = tmp_path / "merged.json"
    result = cli("merge", *map(str, parts), "-o", str(merged), "-o", str(tmp_path / "merged.xml"), "-o", str(tmp_path / "merged.html"),
                 "-o", str(tmp_path / "merged.md"))
    assert result.exit_code == 1, result.output  # like the run: a case did not pass
    data = report(merged)
    assert totals(data) == totals(everything)
    assert keys(data) == keys(everything)  # the unsharded order: file by file, line by line, run by run
    assert [(r["id"], r["status"], r["output"]) for r in data["results"]] == [(r["id"], r["status"], r["output"]) for r in everything["results"]]
    figures = lambda d: [(s["id"], s["runs"], s["passed"], s["pass_rate"], s["classification"]) for s in d["summary"]["stability"]]  # noqa: E731
    assert figures(data) == figures(everything)
    assert {k: data["summary"][k] for k in ("runs", "stable_cases", "overall_pass_rate")} == \
        {k: everything["summary"][k] for k in ("runs", "stable_cases", "overall_pass_rate")}
    gate = lambda d: [(g["id"], g.get("file"), g["verdict"], g["runs"], g["passed"], g["min_pass_rate"]) for g in d["summary"]["gates"]]  # noqa: E731
    assert gate(data) == gate(everything) and data["summary"]["gates_failed"] == everything["summary"]["gates_failed"] > 0
    assert data["metadata"]["options"]["merged"] == list(map(str, parts)) and "shard" not in data["metadata"]["options"]
    assert "<testsuite" in (tmp_path / "merged.xml").read_text() and "c03" in (tmp_path / "merged.html").read_text()
    assert f"Total:     {everything['summary']['total']}" in result.output


def test_an_empty_shard_runs_nothing_and_passes(app, server):
    app.agent("bot")
    server.responder = lambda req: Answer("yes")
    path = app.cases("tests/one.jsonl", [CASES[0]])
    outs = [cli("-i", str(path), "-n", "bot", "--shard", f"{k}/4", "-o", str(app.root / f"s{k}.json"), cwd=app.root) for k in (1, 2, 3, 4)]
    assert [o.exit_code for o in outs] == [0, 0, 0, 0], [o.output for o in outs]
    sizes = [report(app.root / f"s{k}.json")["summary"]["total"] for k in (1, 2, 3, 4)]
    assert sorted(sizes) == [0, 0, 0, 1] and len(server.requests) == 1
    empty = next(o for k, o in zip((1, 2, 3, 4), outs) if report(app.root / f"s{k}.json")["summary"]["total"] == 0)
    assert "⚠ NO TEST RAN — shard" in empty.output and "holds none of the selected cases" in empty.output
    assert "ALL TESTS PASSED" not in empty.output


def test_merging_overlapping_or_broken_reports_is_exit_2(suite, tmp_path):
    _, one = run(suite, "one.json", "--shard", "1/2")
    overlap = cli("merge", str(one), str(one))
    assert overlap.exit_code == 2 and f"is in both {one} and {one}" in overlap.output
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2")
    bad = cli("merge", str(one), str(broken))
    assert bad.exit_code == 2 and f"{broken}:1:" in bad.output
    ext = cli("merge", str(one), "-o", str(tmp_path / "m.txt"))
    assert ext.exit_code == 2 and "unknown report format '.txt'" in ext.output
    none = cli("merge")
    assert none.exit_code == 2


def test_a_merge_missing_a_shard_or_mixing_runs_is_exit_2_and_partial_is_never_green(suite, tmp_path):
    """A shard whose report never arrived (a lost runner) made a green merged report: the cases it held were
    in no figure, and the merge said ALL TESTS PASSED."""
    suite.cases("tests/cases.jsonl", CASES[:2] + [CASES[2]])  # c03 fails: wherever it falls, it is in one shard
    paths = []
    for k in (1, 2, 3):
        _, path = run(suite, f"s{k}.json", "--shard", f"{k}/3")
        paths.append(path)
    failing = next(p for p in paths if any(r["status"] != "passed" for r in report(p)["results"]))
    rest = [p for p in paths if p != failing]
    lost = cli("merge", *map(str, rest), "-o", str(tmp_path / "m.json"))
    k = report(failing)["metadata"]["options"]["shard"]
    assert lost.exit_code == 2 and f"shard {k} is missing: these reports hold 2 of 3 shards" in lost.output, lost.output
    assert "--partial" in lost.output and not (tmp_path / "m.json").exists() and "Traceback" not in lost.output
    partial = cli("merge", *map(str, rest), "--partial", "-o", str(tmp_path / "p.json"), "-o", str(tmp_path / "p.md"))
    data = report(tmp_path / "p.json")
    assert partial.exit_code == 1 and all(r["status"] == "passed" for r in data["results"])  # every result green, the merge is not
    assert f"⚠ PARTIAL MERGE — shard {k} missing" in partial.output and "ALL TESTS PASSED" not in partial.output
    assert data["metadata"]["options"]["missing_shards"] == [k]
    assert any(w.startswith(f"partial merge: shard {k} is missing") for w in data["metadata"]["warnings"])
    assert f"**Partial merge:** shard {k} missing" in (tmp_path / "p.md").read_text()
    assert cli("merge", *map(str, paths), "-o", str(tmp_path / "all.json")).exit_code == 1  # complete: exits like the run
    # a report that is no shard, shards of another N, shards of another --runs: not one run
    whole = run(suite, "whole.json")[1]
    four = run(suite, "four.json", "--shard", "1/4")[1]
    twice = run(suite, "twice.json", "--shard", "1/3", "--runs", "2")[1]
    mixed = cli("merge", str(paths[0]), str(whole))
    assert mixed.exit_code == 2 and f"{whole} is not a shard report (it was run without --shard) but the others are" in mixed.output
    sizes = cli("merge", str(paths[0]), str(four))
    assert sizes.exit_code == 2 and "the shards are of different runs:" in sizes.output and f"{four} is 1/4" in sizes.output
    runs = cli("merge", str(twice), *map(str, paths[1:]))
    assert runs.exit_code == 2 and "are shards of different runs: --runs was 1 in one, 2 in the other" in runs.output, runs.output
    # reports that are none of them shards are joined as they are
    first, second = run(suite, "c01.json", "--run", "^c01$")[1], run(suite, "c02.json", "--run", "^c02$")[1]
    joined = cli("merge", str(first), str(second), "-o", str(tmp_path / "j.json"))
    assert joined.exit_code == 0 and report(tmp_path / "j.json")["summary"]["total"] == 3, joined.output
