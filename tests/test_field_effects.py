"""No field the loader accepts is silently ignored (issue 20): for every case field of the schema and every
mode, a probe shows the field changes what happens, or the loader refuses it in that mode saying why;
for every registered assertion type, each of its parameters changes the verdict or its message. A new
field or parameter fails this test until it is given a probe here."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from collections.abc import Callable

import pytest

from agenttest import assertions
from agenttest.inputs import caseschema
from agenttest.assertions import Observation
from agenttest.accounting.budgets import Spent
from agenttest.model import AssertionSpec, ToolCall
from helpers import cli, report

MODES = ("standard", "dynamic")
RULES = """
rules:
  - tool: "*"
    reply: "seen: {{ tool_result }}"
  - user: "^peek"
    tool_calls: [{name: peek}]
  - user: "^slow"
    delay: 0.4
    reply: "late"
default: "echo: {{ user }}"
"""
PEEK = """
def peek(ctx):
    return {"user": ctx.user_id, "team": ctx.team_id, "meta": ctx.metadata, "options": getattr(ctx, "options", {}), "world": getattr(ctx, "world", None)}
"""
HOOKS = "import os\ndef Mark(ctx, case, *rest):\n    open(os.environ['MARK'], 'a').write(case['id'] + '\\n')\n"
SIM_RULES = 'default:\n  json: {message: "peek please", goal_achieved: false}\n'


@pytest.fixture
def probe_app(offline_app, tmp_path, monkeypatch):
    tools = [{"name": "peek", "description": "peek", "parameters": {"type": "object", "properties": {}}}]
    offline_app.agent("bot", connector="mock", tools=tools, files={"mock.yml": RULES, "src/tools.py": PEEK, "src/env_test.py": HOOKS})
    offline_app.agent("sim", connector="mock", files={"mock.yml": SIM_RULES})
    offline_app.agent("sim2", connector="mock", files={"mock.yml": 'default:\n  json: {message: "hello there", goal_achieved: false}\n'})
    offline_app.connector("other", {"type": "mock", "options": {"model": "other-model"}})
    monkeypatch.setenv("MARK", str(tmp_path / "marks"))
    return offline_app


def base(mode: str) -> dict[str, Any]:
    if mode == "standard":
        return {"id": "c", "input": "peek"}
    return {"id": "c", "simulator": {"use": "sim"}, "max_turns": 2,
            "checkpoints": [{"id": "looked", "assert": {"type": "tool_called", "name": "peek"}}]}


def run(app, case: dict[str, Any], *args: str) -> tuple[int, dict[str, Any] | None, str]:
    path = app.cases("assistants/bot/tests/c.jsonl", [case])
    out = app.root / "r.json"
    if out.exists():
        out.unlink()
    result = cli("-i", str(path), "-o", str(out), "--app", str(app.root), *args)
    whole = report(out) if out.exists() else None
    data = {**whole["results"][0], "_gates": whole["summary"].get("gates"), "_exit": result.exit_code} if whole else None
    return result.exit_code, data, result.stderr


# field → mode → (value, observe(result with, result without) → True when the field changed things) or a refusal
Probe = tuple[Any, Callable[[dict, dict], bool]]
tool_result = lambda r: (r.get("tool_calls") or [{}])[0].get("result") or {}  # noqa: E731
EFFECTS: dict[str, dict[str, Probe | str]] = {
    "id": {m: ("other-id", lambda a, b: a["id"] == "other-id" != b["id"]) for m in MODES},
    "name": {m: ("A name", lambda a, b: a.get("name") == "A name" and "name" not in b) for m in MODES},
    "description": {m: ("Why it exists", lambda a, b: a.get("description") == "Why it exists" and "description" not in b) for m in MODES},
    "input": {"standard": ("echo this", lambda a, b: a["output"] == "echo: echo this" != b["output"]),
              "dynamic": ("I open", lambda a, b: a["turns"][0]["input"] == "I open" != b["turns"][0]["input"])},
    "assert": {m: ({"type": "contains", "value": "nope"}, lambda a, b: a["status"] == "failed" and b["status"] == "passed") for m in MODES},
    "assertions": {m: ([{"type": "contains", "value": "nope"}], lambda a, b: a["status"] == "failed" and b["status"] == "passed") for m in MODES},
    "expected": {m: ("never this", lambda a, b: a["status"] == "failed" and b["status"] == "passed") for m in MODES},
    "options": {m: ({"connector": "other", "metadata": {"k": 1}, "mode": "fast"},
                     lambda a, b: tool_result(a).get("meta") == {"k": 1} and tool_result(b).get("meta") == {}
                     and tool_result(a)["options"] == {"mode": "fast"} and tool_result(b)["options"] == {}
                     and {c["connector"] for c in a["model_calls"] if c["role"] == "agent"} == {"other"}) for m in MODES},
    "user": {m: ("alice", lambda a, b: tool_result(a)["user"] == "alice" != tool_result(b)["user"]) for m in MODES},
    "team": {m: ("blue", lambda a, b: tool_result(a)["team"] == "blue" != tool_result(b)["team"]) for m in MODES},
    "metadata": {m: ({"tier": "gold"}, lambda a, b: tool_result(a)["meta"] == {"tier": "gold"} and tool_result(b)["meta"] == {}) for m in MODES},
    "skip": {m: (True, lambda a, b: a["status"] == "skipped" and b["status"] == "passed") for m in MODES},
    "skip_reason": dict.fromkeys(MODES, "'skip_reason' has no effect without \"skip\": true"),
    "timeout": {m: ("0.1s", lambda a, b: a["status"] == "timeout" and b["status"] != "timeout") for m in MODES},  # on a 0.4 s reply
    "before": {m: ("env_test.Mark", lambda a, b: a["status"] == b["status"] == "passed") for m in MODES},
    "after": {m: ("env_test.Mark", lambda a, b: a["status"] == b["status"] == "passed") for m in MODES},
    "simulator": {"standard": "a dynamic case needs 'checkpoints' as well as 'simulator'",
                  "dynamic": ({"use": "sim2"}, lambda a, b: a["turns"][0]["input"] == "hello there" != b["turns"][0]["input"])},
    "checkpoints": {"standard": ([{"id": "x", "assert": {"type": "contains", "value": "echo"}}], lambda a, b: "checkpoints" in a and "checkpoints" not in b),
                    "dynamic": ([{"id": "never", "assert": {"type": "contains", "value": "nope"}}], lambda a, b: a["status"] == "failed" and b["status"] == "passed")},
    "max_turns": {"standard": "'max_turns' applies only to dynamic cases",
                  "dynamic": (1, lambda a, b: a["total_turns"] == 1 and b["total_turns"] == 2)},  # the base allows 2
    "end": {"standard": "'end' applies only to dynamic cases",
            "dynamic": ("simulator", lambda a, b: a["total_turns"] == 2 and b["total_turns"] == 1)},  # on until max_turns, not the checkpoint
    "end_tools": {"standard": "'end_tools' applies only to dynamic cases",
                  "dynamic": (["peek"], lambda a, b: a["turns"][0]["output"] == "" and b["turns"][0]["output"].startswith("seen:"))},
    "turns": {"standard": ([{"input": "hello"}], lambda a, b: a["turns"][0]["output"] == "echo: hello" and "turns" not in b),
              "dynamic": "a case has 'turns' (a scripted conversation) or 'checkpoints' (a simulated one), not both"},
    "tags": {m: (["smoke"], lambda a, b: a.get("tags") == ["smoke"] and "tags" not in b) for m in MODES},
    "world": {m: ({"orders": 1}, lambda a, b: tool_result(a)["world"] == {"orders": 1} and tool_result(b)["world"] == {}) for m in MODES},
    "mocks": {m: ([{"tool": "peek", "returns": "mocked!"}], lambda a, b: a["tool_calls"][0].get("mocked") and not b["tool_calls"][0].get("mocked")) for m in MODES},
    "runs": {m: (3, lambda a, b: a["_gates"][0]["runs"] == 3 and b["_gates"] is None) for m in MODES},
    "min_pass_rate": {m: (0.0, lambda a, b: a["_gates"][0]["verdict"] == "passed" and a["_exit"] == 0
                          and b["status"] == "failed" and b["_exit"] == 1) for m in MODES},  # on a failing case
    "budget": {m: ({"tool_calls": 0}, lambda a, b: a["status"] == "failed" and "budget exceeded: tool_calls 1 > 0" in a["error"]
                   and b["status"] == "passed") for m in MODES},
    "output_from": {"standard": ("tool_result", lambda a, b: a.get("output_from") == "tool_result" and isinstance(a["output"], dict)
                                 and "output_from" not in b and b["output"].startswith("seen:")),
                    "dynamic": ("tool_result", lambda a, b: isinstance(a["turns"][0]["output"], dict) and b["turns"][0]["output"].startswith("seen:"))},
    "faults": {m: ([{"tool": "peek", "kind": "empty"}], lambda a, b: a["tool_calls"][0].get("fault") == "empty" and not b["tool_calls"][0].get("fault")) for m in MODES},
    "output": {"standard": ("given", lambda a, b: a["output"] == "given" and not a["tool_calls"] and b["output"].startswith("seen:")),  # no agent call
               "dynamic": "a judge-only case (with 'output') cannot have 'checkpoints'"},
    "tool_calls": dict.fromkeys(MODES, "'tool_calls' belongs to a judge-only case: give its 'output' too"),
    "history": dict.fromkeys(MODES, "'history' belongs to a judge-only case: give its 'output' too"),
    "judge": dict.fromkeys(MODES, "'judge' gates the judges of this case's labelled assertions, and it has none"),
    "policy": {m: ({"allowed_tools": [], "mine": 1}, lambda a, b: a["tool_calls"][0].get("violation") and not b["tool_calls"][0].get("violation")
                   and "policy violation" in a["tool_calls"][0]["error"]) for m in MODES},
}
MARKED = {"before", "after"}  # their effect is the hook having run, seen in the marks file
REFUSED_VALUES = {"skip_reason": "not today", "max_turns": 2, "simulator": {"use": "sim"}, "end": "simulator", "end_tools": ["peek"],
                  "turns": [{"input": "x"}], "output": "given", "tool_calls": [{"name": "peek"}], "history": [{"role": "user", "content": "x"}],
                  "judge": {"min_kappa": 0.5}}


def test_every_case_field_has_a_probe():
    missing = sorted(set(caseschema.CASE_FIELDS) - set(EFFECTS))
    assert not missing, f"give these case fields a probe (an effect in each mode, or a refusal): {missing}"
    assert all(set(modes) == set(MODES) for modes in EFFECTS.values())


@pytest.mark.parametrize("field, mode", [(f, m) for f in sorted(EFFECTS) for m in MODES])
def test_a_case_field_has_an_effect_or_is_refused(probe_app, tmp_path, field, mode):
    probe = EFFECTS[field][mode]
    case = base(mode)
    if isinstance(probe, str):  # refused in this mode, saying why
        code, _, err = run(probe_app, {**case, field: REFUSED_VALUES[field]})
        assert code == 2 and probe in err, err
        return
    value, changed = probe
    if field == "timeout":
        case = {**case, "input": "slow"}
    if field == "min_pass_rate":  # a case that fails: a gate of 0 lets it through
        case = {**case, "assert": {"type": "contains", "value": "nope"}}
    if field == "max_turns":  # a checkpoint never reached: the conversation runs to its limit
        case = {**case, "checkpoints": [{"id": "never", "assert": {"type": "contains", "value": "nope"}}]}
    if field == "checkpoints" and mode == "standard":  # checkpoints (with a simulator) make a standard case dynamic
        case, with_case = {"id": "c", "input": "peek"}, {"id": "c", "input": "peek", "simulator": {"use": "sim"}, "checkpoints": value}
    else:
        with_case = {**case, field: value}
    _, without, _ = run(probe_app, case)
    marks = tmp_path / "marks"
    if marks.exists():
        marks.unlink()
    _, with_, err = run(probe_app, with_case)
    assert with_ is not None and without is not None, err
    assert changed(with_, without), (with_, without)
    if field in MARKED:
        assert marks.read_text().split() == [with_case["id"]]  # the hook ran, for this case


# ---- assertion parameters ---------------------------------------------------------------------------------------


class Judge:
    """The Judge protocol (what the caller gives assertions), answering from what it is asked."""

    async def ask(self, agent_id, messages, test_mode, metadata, connector):
        payload = json.loads(messages[0]["content"])
        passed = agent_id == "strict" or (connector == "lenient") or "yes" in str(payload.get("criteria"))
        if payload.get("pairwise"):  # prefers the side saying hello when it would pass, the other when not
            return json.dumps({"choice": "a" if passed == ("hello" in str(payload["a"])) else "b", "reason": f"{agent_id}/{connector}"})
        return json.dumps({"passed": passed, "reason": f"{agent_id}/{connector}/{payload.get('criteria')}/{payload.get('tone')}"})

    def script(self, ref):
        return {"checks.has": lambda output, input, value: value in output,
                "checks.other": lambda output, input, value: False,
                "history.said": lambda subject: {"pass": subject["params"].get("ok", False), "message": str(subject["params"])},
                "history.other": lambda subject: True}[ref]


CALLS = (ToolCall(name="lookup", arguments={"id": 1, "q": "a"}, result={"ok": True}), ToolCall(name="lookup", arguments={"id": 2}), ToolCall(name="save", arguments={"id": 2}))
OBS = Observation(output='{"a": 1, "b": [1, 2]} hello', tool_calls=CALLS, input="hi", case=None, judge=Judge(), world={"n": 2, "m": 1}, initial_world={"n": 1, "m": 1},
                  spending=Spent(tokens=100, cost=0.5, tool_calls=3, turns=2, duration=5.0), counters={"refunds": 2},
                  document={"response": {"status": "completed", "interaction": {"kind": "choice"}}, "checkpoint": {"facts": [{"type": "x", "n": 1}]}})
CHECK = {"type": "check", "path": ["response", "status"], "operator": "equals", "value": "completed"}

# (type, parameter) → two parameter sets that differ only in that parameter, and must give different results
PARAMS: dict[tuple[str, str], tuple[dict, dict]] = {
    ("equals", "value"): ({"value": "x"}, {"value": '{"a": 1, "b": [1, 2]} hello'}),
    ("contains", "value"): ({"value": "hello"}, {"value": "nope"}),
    ("not_contains", "value"): ({"value": "hello"}, {"value": "nope"}),
    ("regex", "value"): ({"value": "hel+o"}, {"value": "^nope"}),
    ("regex", "pattern"): ({"pattern": "hel+o"}, {"pattern": "^nope"}),
    ("json_path", "path"): ({"path": "$.a", "value": 1}, {"path": "$.b[1]", "value": 1}),
    ("json_path", "value"): ({"path": "$.a", "value": 1}, {"path": "$.a", "value": 2}),
    ("type", "value"): ({"value": "object", "path": "$.b"}, {"value": "array", "path": "$.b"}),
    ("type", "path"): ({"value": "integer", "path": "$.a"}, {"value": "integer", "path": "$.b"}),
    ("tool_called", "name"): ({"name": "lookup"}, {"name": "delete"}),
    ("tool_called", "value"): ({"value": "save"}, {"value": "delete"}),
    ("tool_result", "value"): ({"value": {"tool": "lookup", "result": {"ok": True}}}, {"value": {"tool": "lookup", "result": {"ok": False}}}),
    ("tool_sequence", "value"): ({"value": ["lookup", "save"]}, {"value": ["save", "lookup"]}),
    ("tool_sequence", "mode"): ({"value": ["lookup", "save"], "mode": "ordered"}, {"value": ["lookup", "save"], "mode": "strict"}),
    ("tool_args", "tool"): ({"tool": "lookup", "arguments": {"id": 2}}, {"tool": "save", "arguments": {"id": 1}}),
    ("tool_args", "arguments"): ({"tool": "lookup", "arguments": {"id": 1}}, {"tool": "lookup", "arguments": {"id": 9}}),
    ("tool_args", "match"): ({"tool": "lookup", "arguments": {"id": 1}, "match": "subset"}, {"tool": "lookup", "arguments": {"id": 1}, "match": "exact"}),
    ("tool_args", "call"): ({"tool": "lookup", "arguments": {"id": 1}, "call": "first"}, {"tool": "lookup", "arguments": {"id": 1}, "call": "last"}),
    ("tool_count", "tool"): ({"tool": "lookup", "max": 2}, {"tool": "save", "min": 2}),
    ("tool_count", "min"): ({"tool": "lookup", "min": 1}, {"tool": "lookup", "min": 3}),
    ("tool_count", "max"): ({"tool": "lookup", "max": 2}, {"tool": "lookup", "max": 1}),
    ("state", "path"): ({"path": "$.n", "value": 2}, {"path": "$.m", "value": 2}),
    ("state", "value"): ({"path": "$.n", "value": 2}, {"path": "$.n", "value": 3}),
    ("state", "unchanged"): ({"unchanged": ["$.m"]}, {"unchanged": ["$.n"]}),
    ("budget", "tokens"): ({"tokens": 200}, {"tokens": 50}),
    ("budget", "cost"): ({"cost": 1}, {"cost": 0.25}),
    ("budget", "tool_calls"): ({"tool_calls": 3}, {"tool_calls": 2}),
    ("budget", "turns"): ({"turns": 2}, {"turns": 1}),
    ("budget", "duration"): ({"duration": "10s"}, {"duration": 2}),
    ("agent", "use"): ({"use": "agents:strict", "value": "no"}, {"use": "agents:other", "value": "no"}),
    ("agent", "value"): ({"use": "agents:v", "value": "yes please"}, {"use": "agents:v", "value": "no"}),
    ("agent", "options"): ({"use": "agents:v", "value": "no", "options": {"connector": "lenient"}}, {"use": "agents:v", "value": "no"}),
    ("agent", "label"): ({"use": "agents:v", "value": "no", "label": True}, {"use": "agents:v", "value": "no", "label": False}),  # the judged record
    ("agent", "judge_runs"): ({"use": "agents:v", "value": "no", "judge_runs": 3}, {"use": "agents:v", "value": "no"}),  # three votes kept
    ("pairwise", "use"): ({"use": "agents:strict", "value": "no", "reference": "bye"}, {"use": "agents:other", "value": "no", "reference": "bye"}),
    ("pairwise", "value"): ({"use": "agents:v", "value": "yes please", "reference": "bye"}, {"use": "agents:v", "value": "no", "reference": "bye"}),
    ("pairwise", "reference"): ({"use": "agents:v", "value": "yes", "reference": "bye"}, {"use": "agents:v", "value": "yes", "reference": "hello too"}),
    ("pairwise", "options"): ({"use": "agents:v", "value": "no", "reference": "bye", "options": {"connector": "lenient"}},
                              {"use": "agents:v", "value": "no", "reference": "bye"}),
    ("pairwise", "label"): ({"use": "agents:v", "value": "no", "reference": "bye", "label": True}, {"use": "agents:v", "value": "no", "reference": "bye", "label": False}),
    ("script", "script"): ({"script": "scripts.checks.has", "value": "hello"}, {"script": "scripts.checks.other", "value": "hello"}),
    ("script", "use"): ({"use": "scripts:checks.has", "value": "hello"}, {"use": "scripts:checks.other", "value": "hello"}),
    ("script", "value"): ({"script": "scripts.checks.has", "value": "hello"}, {"script": "scripts.checks.has", "value": "nope"}),
    ("script", "options"): ({"script": "scripts.checks.has", "options": {"metadata": "hello"}}, {"script": "scripts.checks.has", "options": {"metadata": "zzz"}}),
    ("cel", "expr"): ({"expr": "journal.count(\"lookup\") == 2"}, {"expr": "diff.n.changed && journal.count(\"save\") == 2"}),
    ("collateral", "allow_changes"): ({"allow_changes": ["n"]}, {"allow_changes": ["m"]}),
    ("state", "op"): ({"path": "$.n", "op": "gte", "value": 2}, {"path": "$.n", "op": "gt", "value": 2}),
    ("metric", "metric"): ({"metric": "calls", "value": 3}, {"metric": "refunds", "value": 3}),
    ("metric", "op"): ({"metric": "refunds", "op": "lte", "value": 2}, {"metric": "refunds", "op": "lt", "value": 2}),
    ("metric", "value"): ({"metric": "refunds", "value": 2}, {"metric": "refunds", "value": 1}),
    ("check", "path"): ({"path": ["response", "status"], "operator": "exists"}, {"path": ["response", "nothing"], "operator": "exists"}),
    ("check", "operator"): ({"path": ["response", "interaction"], "operator": "exists"}, {"path": ["response", "interaction"], "operator": "absent"}),
    ("check", "value"): ({"path": ["checkpoint", "facts"], "operator": "contains", "value": {"type": "x"}},
                         {"path": ["checkpoint", "facts"], "operator": "contains", "value": {"type": "y"}}),
    ("all", "assertions"): ({"assertions": [CHECK]}, {"assertions": [CHECK, {**CHECK, "value": "failed"}]}),
    ("any", "assertions"): ({"assertions": [{**CHECK, "value": "failed"}, CHECK]}, {"assertions": [{**CHECK, "value": "failed"}]}),
    ("evaluator", "use"): ({"use": "scripts.history.other"}, {"use": "scripts.history.said"}),
    ("evaluator", "params"): ({"use": "scripts.history.said", "params": {"ok": True}}, {"use": "scripts.history.said", "params": {"ok": False}}),
}
COMMON = {  # type/message/negate/id/description/severity/weight apply to every type: probed once, on contains
    "message": ({"value": "nope", "message": "custom text"}, {"value": "nope"}),
    "negate": ({"value": "nope", "negate": True}, {"value": "nope"}),
    "id": ({"value": "nope", "id": "greets"}, {"value": "nope"}),  # named in every report
    "severity": ({"value": "nope", "severity": "minor"}, {"value": "nope"}),  # a minor failure never fails its case
    "weight": ({"value": "nope", "weight": 2}, {"value": "nope"}),  # the case's weighted score
    "description": ({"value": "nope", "description": "It greets"}, {"value": "nope"}),  # named by it in every report
}
COMMON_NAMES = ("type", *COMMON)


def evaluate(kind: str, params: dict) -> Any:
    spec = AssertionSpec(kind, {"type": kind, **params})
    return asyncio.run(assertions.evaluate(spec, OBS))


def test_every_parameter_of_every_type_has_a_probe():
    declared = {(t.name, p) for t in assertions.types() for p in t.params if p not in COMMON_NAMES and p != "description"}  # a note
    missing = sorted(declared - set(PARAMS))
    assert not missing, f"give these assertion parameters a probe: {missing}"


@pytest.mark.parametrize("kind, param", sorted(PARAMS))
def test_an_assertion_parameter_changes_the_result(kind, param):
    first, second = PARAMS[(kind, param)]
    a, b = evaluate(kind, first), evaluate(kind, second)
    assert (a.passed, a.message, a.judged) != (b.passed, b.message, b.judged), (a, b)  # judged: a label, the votes


@pytest.mark.parametrize("param", sorted(COMMON))
def test_the_common_parameters_change_the_result(param):
    first, second = COMMON[param]
    a, b = evaluate("contains", first), evaluate("contains", second)
    assert (a.passed, a.message, a.label, a.description, a.severity, a.weight) != (b.passed, b.message, b.label, b.description, b.severity, b.weight), (a, b)
