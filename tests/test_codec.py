"""The report codec (reporting/codec.py): a report written and read back is the same report, every field of
every result type included; any value can be written; a report file with wrong-typed values is exit 2 at
the place of the bad value, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from agenttest.model import CaseKey
from agenttest.reporting import codec
from agenttest.model import (Answer, AssertionResult, CallLog, CaseResult, CheckpointResult, EndpointLoad, Exchange, Gate, ModelCall, Retry, RunReport, Spend,
                             ToolCall, Turn, Usage, WorldChange, WorldRecord)
from agenttest.errors import AgentTestError
from helpers import REPO, cli


def _value(rng: random.Random, depth: int = 0):
    """Any JSON value, a few levels deep."""
    kinds = ["s", "i", "f", "b", "n"] + (["l", "d"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "s":
        return rng.choice(["", "x", "héllo", "😀 ok", "<b>&</b>", "line\nbreak"])
    if kind == "i":
        return rng.randint(-5, 10**6)
    if kind == "f":
        return rng.randint(0, 999) / 4
    if kind == "b":
        return rng.random() < 0.5
    if kind == "n":
        return None
    if kind == "l":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randint(0, 3))}


def _call(rng: random.Random, i: int) -> ToolCall:
    return ToolCall(name=f"tool{i}", arguments=_value(rng), id=f"call_{i}", result=_value(rng), error=rng.choice([None, "boom"]), duration_ms=rng.randint(0, 99) / 10,
                    server=rng.choice([None, "tools.calc"]), mocked=rng.random() < 0.5, fault=rng.choice([None, "timeout", "error"]))


def _usage(rng: random.Random) -> Usage:
    p, c = rng.randint(0, 500), rng.randint(0, 500)
    return Usage(p, c, p + c, rng.choice([0, 7]))


def _result(rng: random.Random, index: int) -> CaseResult:
    status = rng.choice(["passed", "failed", "error", "timeout", "skipped"])
    dynamic = rng.random() < 0.5
    verdict = AssertionResult(type="contains", passed=False, message="nope", expected="a", actual="b", score=0.5, details={"why": "x"}, error=True)
    return CaseResult(
        key=CaseKey(file="tests/cases.jsonl", id=f"case-{index}", connector=rng.choice(["", "mock"])), status=status, name=rng.choice(["", "named"]), input=_value(rng), output=_value(rng),
        duration_ms=rng.randint(0, 9999) / 10, error="" if status in ("passed", "skipped") else "the reason",
        assertions=(AssertionResult(type="equals", passed=status == "passed", message="" if status == "passed" else "differs", expected=_value(rng), actual=_value(rng)), verdict),
        tool_calls=tuple(_call(rng, i) for i in range(rng.randint(0, 2))), usage=_usage(rng),
        turns=(Turn(turn=1, input="hi", output="hello", tool_calls=(_call(rng, 9),), checkpoints=("greet",), duration_ms=12.5,
                    simulator_reasoning="the user is polite", attachments=("a.png",)),) if dynamic else (),
        checkpoints=(CheckpointResult(id="greet", reached=True, required=True, reached_at_turn=1, description="greets", message="", tool="lookup", verdict=verdict),
                     CheckpointResult(id="bye", reached=False, required=False, reached_at_turn=None, description="", message="not reached")) if dynamic else (),
        dynamic=dynamic, run=rng.randint(1, 3), warnings=rng.choice([(), ("a warning",)]), logs=rng.choice([(), ("log line",)]),
        index=index, line=index + 1, traceback=rng.choice(["", "Traceback …"]),
        stdout=rng.choice(["", "printed"]), stderr=rng.choice(["", "warned"]),
        skip_reason="later" if status == "skipped" else "", description=rng.choice(["", "what it checks"]),
        tags=rng.choice([(), ("smoke", "slow")]),
        world=WorldRecord({"n": 1}, {"n": 2}, (WorldChange("$.n", "changed", 1, 2), WorldChange("$.m", "added", after=[1]),
                                                WorldChange("$.o", "removed", before="x"))) if rng.random() < 0.5 else None,
        spend=(Spend("agent", "mock", _usage(rng), 2, rng.choice([None, 0.000125])),) if rng.random() < 0.5 else (),
        model_calls=(ModelCall("agent", "mock", rng.choice(["", "gpt-x"]), 3.5),) if rng.random() < 0.5 else (),
        calls=_calls(rng) if rng.random() < 0.5 else None,
    )


def _calls(rng: random.Random) -> CallLog:
    """A case's model calls: one answered after a retry, one that failed (every key of their shapes, some left out)."""
    answered = Exchange(role="agent", connector="gpt", url=rng.choice(["", "http://127.0.0.1:9/v1/chat/completions"]), turn=rng.randint(0, 3),
                        messages=(0, 1), tools=rng.choice([-1, 0]), parameters={"model": "gpt-x", "temperature": _value(rng)},
                        response=Answer(content=rng.choice(["", "hi"]), tool_calls=({"id": "c1", "name": "t", "arguments": _value(rng)},),
                                        finish_reason=rng.choice(["", "stop", "length"]), model=rng.choice(["", "gpt-x-1"]), usage=_usage(rng)),
                        queued_ms=rng.randint(0, 99) / 10, first_byte_ms=rng.choice([None, 12.5]), duration_ms=40.5,
                        retries=rng.choice([(), (Retry(kind="rate_limit", error="429", status=429, waited_ms=500.0), Retry(kind="cut"))]))
    failed = Exchange(role="validator", connector="mock", served="assertion 2", messages=(2,), error="boom", replayed=rng.random() < 0.5)
    return CallLog(messages=({"role": "system", "content": "s"}, {"role": "user", "content": _value(rng)}, {"role": "user", "content": "judge"}),
                   tools=([{"type": "function", "function": {"name": "t"}}],), exchanges=(answered, failed))


def _report(seed: int) -> RunReport:
    rng = random.Random(seed)
    results = tuple(_result(rng, i) for i in range(8))
    gate = Gate(key=CaseKey(file="tests/cases.jsonl", id="case-0", connector="mock"), planned=3, runs=3, passed=2, min_pass_rate=0.5, skipped=1,
                saved=1, mean_ms=10.0, median_ms=11.0, min_ms=9.0, max_ms=12.5, std_ms=1.25, tokens=300, cost=0.01, total_cost=0.02)
    return RunReport(
        results=results, started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:01Z", duration_ms=1000.5,
        agent_id="bot", agent_path="/app/assistants/bot", connector="mock", simulator="sim", input_source="tests/cases.jsonl",
        output_file="r.json", environment={"user_id": "u", "locale": "en-us"}, options={"runs": 3, "connectors": ["a", "b"]},
        interrupted=seed % 2 == 0, terminated=seed % 4 == 0,
        stopped_early=seed % 3 == 0, not_run=seed % 4, warnings=("w1", "w2"), gates=(gate,), matrix=("a", "b"),
        generation=(Spend("generator", "mock", Usage(1, 2, 3), 1, None),), generation_calls=_calls(rng) if seed % 2 else None,
        load=(EndpointLoad(connector="mock", requests=10, rate_limited=2, absorbed=2, retries=1, overloaded=0, limit=4, lowest_limit=2, peak_in_flight=4, unreachable=False),),
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_report_written_and_read_back_is_the_same_report(seed):
    report = _report(seed)
    again = codec.report_of(json.loads(json.dumps(codec.report_dict(report))))
    for f in dataclasses.fields(RunReport):
        assert getattr(again, f.name) == getattr(report, f.name), f.name
    assert again.stability == report.stability and [g.percent for g in again.stability] == [66.7]  # Yao's figures: the gates'


def test_every_field_of_every_result_type_is_written_or_derived():
    """A field added to a result type without a key in its shape would be lost on the way to the file."""
    for cls, shape in codec.SHAPES.items():
        keys = {k.field for k in shape if not k.derived}
        keys |= {"key"} if set(codec.IDENTITY) <= keys else set()  # a result's or a gate's key: its file, id and connector
        derived = {"dynamic", "scripted", "index", "error"} if cls is CaseResult else set()  # read back from what is written
        ms = {"median_ms", "mean_ms", "min_ms", "max_ms", "std_ms"} if cls is Gate else set()  # under "duration"
        missing = {f.name for f in dataclasses.fields(cls)} - keys - derived - ms
        assert not missing, (cls.__name__, missing)


def test_any_value_can_be_written():
    loop: dict = {"a": 1}
    loop["self"] = loop
    nested: list = []
    cursor = nested
    for _ in range(5000):
        cursor.append([])
        cursor = cursor[0]
    r = CaseResult(key=CaseKey(id="a\ud83d"), status="passed", output="ok \ud83d cut", input={"k\udc00": {1, 2}, 3: b"\xff\xfe", "o": object(), "loop": loop},
                   tool_calls=(ToolCall(name="t", arguments=loop, result=nested),))
    text = json.dumps(codec.result_dict(r), ensure_ascii=False)
    text.encode("utf-8")  # never a UnicodeEncodeError
    data = json.loads(text)
    assert data["id"] == "a\ufffd" and data["output"] == "ok \ufffd cut"
    assert data["input"]["3"] == "\\xff\\xfe" and data["input"]["o"] == "<object object>" and data["input"]["k\ufffd"] == [1, 2]
    assert data["input"]["loop"]["self"] == "<circular reference>"
    assert "<nested too deep>" in text


BAD = {
    "run: [1]": ({"id": "a", "status": "passed", "run": [1]}, "'run' must be an integer, not a list"),
    "usage: x": ({"id": "a", "status": "passed", "usage": "x"}, "'usage' must be an object, not a string"),
    "tags: 5": ({"id": "a", "status": "passed", "tags": 5}, "'tags' must be a list, not a number"),
    "tags[0]: 5": ({"id": "a", "status": "passed", "tags": [5]}, "'tags'[0] must be a string, not a number"),
    "tool_calls[0].name": ({"id": "a", "status": "passed", "tool_calls": [{"name": 3, "arguments": {}}]}, "'name' must be a string"),
    "world.changes": ({"id": "a", "status": "passed", "world": {"initial": {}, "final": {}, "changes": [{"path": "$", "op": "zap"}]}},
                      "'op' must be one of added, removed, changed"),
    "no id": ({"status": "passed"}, "result 1 has no 'id'"),
    "status": ({"id": "a", "status": "ok"}, "'status' must be one of"),
    "duration": ({"id": "a", "status": "passed", "duration_ms": "fast"}, "'duration_ms' must be a number"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_wrong_typed_report_is_exit_2_at_its_place(tmp_path, name):
    result, message = BAD[name]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"summary": {}, "results": [result]}, indent=2))
    with pytest.raises(AgentTestError) as caught:
        codec.read(str(path))
    text = caught.value.format_message()
    assert message in text and f"{path}:" in text, text
    for command in (("diff", str(path), str(path)), ("merge", str(path), "-o", str(tmp_path / "m.json"))):
        out = cli(*command)
        assert out.exit_code == 2 and message in out.output and "Traceback" not in out.output, out.output


@pytest.mark.parametrize("document", [
    {"summary": {"gates": "x"}, "results": []}, {"summary": [], "results": []}, {"results": {}}, [], "x",
    {"summary": {"load": {"connectors": {"a": {"requests": "many"}}}}, "results": []},
])
def test_wrong_sections_are_exit_2_too(tmp_path, document):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    out = cli("diff", str(path), str(path))
    assert out.exit_code == 2 and "not an agent-test report" in out.output and "Traceback" not in out.output


def test_nesting_without_end_is_exit_2(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"results": [{"id": "a", "status": "passed", "output": ' + "[" * 100_000 + "]" * 100_000 + "}]}")
    out = cli("diff", str(path), str(path))
    assert out.exit_code == 2 and "nested too deep" in out.output and "Traceback" not in out.output


def test_a_lone_surrogate_in_a_report_file_is_read_and_written_again(tmp_path):
    path = tmp_path / "r.json"
    env = {"user_id": "test-user", "team_id": "test-team", "locale": "en-us"}
    written = codec.report_dict(RunReport(results=(CaseResult(key=CaseKey(id="a"), status="passed", output="ok"),), started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:01Z",
                                          duration_ms=1.0, environment=env))
    path.write_text(json.dumps(written).replace('"output": "ok"', '"output": "ok \\ud83d cut"'))
    merged = tmp_path / "m.json"
    out = cli("merge", str(path), "-o", str(merged))
    assert out.exit_code == 0, out.output
    assert json.loads(merged.read_text())["results"][0]["output"] == "ok \ufffd cut"


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_indented_writer_is_the_standard_librarys_text(seed):
    """reporting/jsonfile writes indented JSON itself (twice as fast as json.dumps(indent=2)); its text is the
    standard library's to the byte, for every kind of value — odd ones (keys that are not text, NaN, objects)
    going to the standard library."""
    from agenttest.reporting.jsonfile import _indented, dumps

    rng = random.Random(seed)
    odd = [float("nan"), float("inf"), -float("inf"), -0.0, 1e300, 10**40, "\u2028\u202e\x00\"\\", "\ud83d", {1: "x"}, {None: 1},
           (1, "t"), object(), True, [], {}]
    for _ in range(300):
        value = _value(rng)
        if rng.random() < 0.3:
            value = {"v": value, "odd": [rng.choice(odd) for _ in range(rng.randint(1, 3))]}
        for level in (0, 2, 4):
            assert _indented(value, level) == dumps(value, indent=2).replace("\n", "\n" + " " * level)


@pytest.mark.parametrize("seed", range(8))
def test_a_result_is_written_straight_from_its_objects_as_its_dict_would_be(seed):
    """The JSON report writes a result from its objects (``_result_text``: no dict made first); the text is
    the one the dict encoder and the indented writer give, to the byte — for every result type and for any
    value a model or tool returns: keys that are not text or collide once made text, sets, bytes, objects,
    circular and endless nesting, lone surrogates, text subclasses, NaN."""
    import enum

    from agenttest.reporting.jsonfile import _indented, _result_text

    class Tag(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 3

    loop: list = [1]
    loop.append(loop)
    deep: list = []
    for _ in range(250):
        deep = [deep]
    odd = [float("nan"), float("inf"), -0.0, 10**40, "\u2028\x00\"\\", "\ud83d cut", "héllo", {1: "x", "1": "y"}, {None: 1},
           {"\ud83d": 1, "\ufffd": 2}, {"é": "ü"}, (1, "t"), {3, 1, 2}, frozenset({"b"}), b"\xff bytes", bytearray(b"ok"), object(),  # noqa: F601 — a lone surrogate and its replacement: two keys
           Tag("sub"), Level.HIGH, True, [], {}, (), loop, deep, {"self": loop}, [[["x"]]], {"a": {"b": ()}}]
    rng = random.Random(seed)
    for i in range(60):
        r = _result(rng, i)
        picks = [rng.choice(odd) for _ in range(4)]
        r = dataclasses.replace(r, output={"v": picks[0], "more": picks[1:]} if i % 3 else picks[0], input=rng.choice(odd),
                                tool_calls=(ToolCall(name="t", arguments={"a": picks[1]}, id="c1", result=picks[2]),) if i % 2 else r.tool_calls,
                                world=WorldRecord(picks[3], None, (WorldChange("$.x", "added", after=picks[0]),)) if i % 4 == 0 else r.world)
        assert _result_text(r) == _indented(codec.result_dict(r), 4)


def test_results_spooled_during_the_run_make_the_same_json_report():
    """The JSON writer may take results it wrote while the run went on (reporting/jsonfile.Spool): the file is
    the same to the byte, and a result the report holds as another object (a secret hidden in it after it was
    spooled) is written from the report, not from the spool."""
    from dataclasses import replace

    from agenttest.reporting.jsonfile import Spool, json_chunks, to_json

    report = _report(3)
    spool = Spool()
    for r in report.results:
        spool.add(r)
    assert "".join(json_chunks(report, spool)) == "".join(to_json(report))
    changed = replace(report.results[0], output="*** (hidden after the run)")
    later = dataclasses.replace(report, results=(changed, *report.results[1:]))
    text = "".join(json_chunks(later, spool))
    assert text == "".join(to_json(later)) and "hidden after the run" in text
    # results added after the spool was read from (the file's position moved) land after the others, not over them
    more = _report(5)
    for r in more.results[3:]:
        spool.add(r)
    assert "".join(json_chunks(more, spool)) == "".join(to_json(more))
    spool.close()


@pytest.mark.parametrize("score", [float("nan"), float("inf"), "high", True])
def test_a_score_that_is_not_a_number_is_left_out_and_the_report_reads_back(score):
    """The report's score is a number: a judge's NaN or a plug-in's text is left out, never written where the
    schema (and ``diff``, ``merge``, ``--baseline``) would refuse the file."""
    check = AssertionResult(type="judge", passed=True, score=score)
    report = RunReport(results=(CaseResult(key=CaseKey(id="a"), status="passed", assertions=(check,)),), started_at="2026-12-01T10:00:00Z", completed_at="2026-12-01T10:00:01Z", duration_ms=1.0)
    data = json.loads(json.dumps(codec.report_dict(report)))
    assert "score" not in data["results"][0]["assertions"][0]
    assert codec.report_of(data).results[0].assertions[0].score is None


@pytest.mark.parametrize("change, said", [
    (lambda r: r.update(run=0), "0 is less than the minimum of 1"),
    (lambda r: r.update(colour="red"), "Additional properties are not allowed ('colour' was unexpected)"),
    (lambda r: r.update(duration_ms=-5), "-5 is less than the minimum of 0"),
])
def test_what_only_the_schema_refuses_is_still_refused_at_its_place(tmp_path, change, said):
    """The typed decode lets these through; the compiled schema says no and jsonschema says where."""
    data = json.loads((REPO / "tests" / "golden" / "report.json").read_text())
    change(data["results"][2])
    path = tmp_path / "bad.json"
    text = json.dumps(data, indent=2)
    path.write_text(text)
    with pytest.raises(AgentTestError) as caught:
        codec.read(str(path))
    line = caught.value.format_message().split(":")[1]
    assert said in caught.value.format_message() and f"{path}:" in caught.value.format_message()
    assert 1 < int(line) and text.splitlines()[int(line) - 1].strip().startswith(('"run"', '"colour"', '"duration_ms"', "{"))
