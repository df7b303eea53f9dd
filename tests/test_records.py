"""``speed.records.replace``: what ``dataclasses.replace`` gives for the results a case run is made of, and the
classes it leaves to ``dataclasses.replace``; and the one-run gate, which takes its figures from that run."""

from __future__ import annotations

import dataclasses
from dataclasses import InitVar, dataclass, field

import pytest

from agenttest.model import AssertionResult, CaseKey, CaseResult, Gate, Spend, Usage
from agenttest.speed.records import builder, fast_init, replace
from agenttest.verdicts.gates import Policy, gate

RESULT = CaseResult(key=CaseKey(id="a"), status="failed", name="name", input=[{"role": "user", "content": "hi"}], output="no", error="why", warnings=("w0",),
                    assertions=(AssertionResult(type="contains", passed=False, message="missing"),), usage=Usage(3, 4, 7), run=2, index=5,
                    spend=(Spend("agent", "c", Usage(3, 4, 7), 1, 0.5), Spend("validator", "j", Usage(1, 1, 2), 1, 0.25)))


@pytest.mark.parametrize("obj, changes", [
    (RESULT, {}),
    (RESULT, {"status": "passed", "duration_ms": 12.5, "error": ""}),
    (RESULT, {"output": None, "warnings": ("w",), "index": 0}),
    (AssertionResult(type="equals", passed=True), {"message": "m", "checked": "x"}),
    (Gate(key=CaseKey(id="a"), runs=3, passed=2), {"saved": 1}),
    (Usage(1, 2, 3), {"total_tokens": 9}),
])
def test_replace_gives_what_dataclasses_replace_gives(obj, changes):
    before = dataclasses.astuple(obj)
    made = replace(obj, **changes)
    assert made == dataclasses.replace(obj, **changes) and type(made) is type(obj)
    assert made is not obj and dataclasses.astuple(obj) == before  # the original is left as it was
    for f in dataclasses.fields(obj):
        assert getattr(made, f.name) is (changes[f.name] if f.name in changes else getattr(obj, f.name))
    first = dataclasses.fields(obj)[0].name
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):  # still frozen (3.11's slotted frozen
        setattr(made, first, "b")  # classes raise TypeError from their __setattr__'s super())


def test_a_name_that_is_not_a_field_is_a_type_error_and_changes_nothing():
    with pytest.raises(TypeError, match="unexpected keyword argument 'statuss'"):
        replace(RESULT, status="passed", statuss="passed")
    assert RESULT.status == "failed"


@dataclass
class Plain:  # no slots
    a: int
    b: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("a < 0")


@dataclass(slots=True)
class WithInitVar:
    a: int
    scale: InitVar[int]

    def __post_init__(self, scale: int) -> None:
        self.a *= scale


@dataclass(frozen=True, slots=True)
class Derived:
    a: int
    b: int = field(init=False, default=0)


def test_classes_it_cannot_copy_so_go_to_dataclasses_replace():
    assert replace(Plain(1, [2]), a=3) == Plain(3, [2])
    with pytest.raises(ValueError, match="a < 0"):  # __post_init__ ran, as dataclasses.replace runs it
        replace(Checked(1), a=-1)
    with pytest.raises(ValueError, match="InitVar 'scale' must be specified"):  # as dataclasses.replace says
        replace(WithInitVar(2, 3), a=4)
    assert replace(WithInitVar(2, 3), a=4, scale=5).a == 20
    with pytest.raises(ValueError, match="init=False"):
        replace(Derived(1), b=2)


@pytest.mark.parametrize("obj", [RESULT, AssertionResult(type="equals", passed=True, checked="x"), Gate(key=CaseKey(id="a"), runs=3, passed=2), Usage(1, 2, 3)])
def test_builder_makes_what_init_makes_from_the_same_values(obj):
    """``builder``: the instance ``cls(*values)`` makes (the worker's results are rebuilt so), still frozen."""
    values = tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))
    made = builder(type(obj))(values)
    init = type(obj)(**{f.name: v for f, v in zip(dataclasses.fields(obj), values)})  # some of these take keywords only
    assert made == init and type(made) is type(obj) and repr(made) == repr(init)
    assert all(getattr(made, f.name) is v for f, v in zip(dataclasses.fields(obj), values))
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
        setattr(made, dataclasses.fields(obj)[0].name, "b")
    with pytest.raises(IndexError):  # a value short: refused, not an object with a slot unset
        builder(type(obj))(values[:-1])


def test_builder_leaves_out_the_classes_replace_leaves_to_dataclasses():
    assert builder(Plain) is None and builder(Checked) is None and builder(WithInitVar) is None and builder(Derived) is None


def test_a_one_run_gate_has_the_figures_the_general_path_gives():
    """One run that ran takes a path of its own (no lists, no statistics); beside a skipped run the same
    result goes through the general path: every figure but ``skipped`` must agree."""
    key = ("cases.jsonl", "a", "c")
    policy = Policy(3, 0.5)
    for status in ("passed", "failed", "error", "timeout"):
        one = replace(RESULT, status=status, duration_ms=12.345)
        skipped = replace(RESULT, status="skipped", duration_ms=99.0)
        fast, general = gate(key, [one], policy, 2), gate(key, [one, skipped], policy, 2)
        assert general.skipped == 1 and fast == dataclasses.replace(general, skipped=0), status
        assert (fast.passed, fast.mean_ms, fast.cost, fast.total_cost, fast.tokens) == (int(status == "passed"), 12.3, 0.5, 0.75, 7)
    unpriced = replace(RESULT, spend=(Spend("agent", "c", Usage(1, 1, 2), 1, None),))
    assert gate(key, [unpriced], policy).cost is None and gate(key, [unpriced], policy).total_cost is None


def _twins(**kw):
    """The same frozen class twice: one left to dataclasses, one given ``fast_init``."""
    made = []
    for _ in range(2):
        @dataclass(frozen=True, **kw)
        class Point:
            x: int
            y: int = 2
            tags: list[str] = field(default_factory=list)
            label: str = field(default="p", kw_only=True)
        made.append(Point)
    return made


@pytest.mark.parametrize("slots", [True, False])
def test_fast_init_makes_what_the_dataclass_init_makes(slots):
    """Every way of calling it gives the same object as ``dataclasses``' own __init__ (defaults, a fresh
    default factory each time, keyword-only fields); wrong calls are refused alike; the class stays frozen."""
    plain, fast = _twins(slots=slots)
    assert fast_init(fast) and fast.__init__.__code__.co_filename == "<__init__ of Point>"
    for args, kwargs in [((1,), {}), ((1, 5), {}), ((1,), {"y": 7, "label": "q"}), ((), {"x": 0, "tags": ["a"]})]:
        a, b = plain(*args, **kwargs), fast(*args, **kwargs)
        assert dataclasses.astuple(a) == dataclasses.astuple(b) and repr(a).replace("Point", "") == repr(b).replace("Point", "")
    assert fast(1).tags is not fast(1).tags  # the factory is called for each
    for args, kwargs in [((), {}), ((1, 2, [], "l"), {}), ((1,), {"z": 3})]:
        with pytest.raises(TypeError):
            plain(*args, **kwargs)
        with pytest.raises(TypeError):
            fast(*args, **kwargs)
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
        fast(1).x = 2  # type: ignore[misc]
    assert fast(3) == fast(3) and hash(fast(3, tags=None)) == hash(fast(3, tags=None))  # type: ignore[arg-type]


def test_fast_init_leaves_alone_what_it_cannot_make_the_same():
    @dataclass
    class Mutable:
        a: int

    assert not fast_init(Checked) and not fast_init(WithInitVar) and not fast_init(Derived) and not fast_init(Mutable) and not fast_init(Plain)
    with pytest.raises(ValueError, match="a < 0"):
        Checked(-1)  # its __post_init__ still runs


def test_the_models_init_is_the_fast_one_once_the_speed_machinery_is_installed():
    """``records.hot``: the classes made by the million keep dataclasses' ``__init__`` in a library caller's
    process and get ``fast_init`` in the command's (``agenttest.speed.install``), whichever comes first."""
    import json
    import subprocess
    import sys

    probe = """
import json
from agenttest.model import AssertionResult, Case, CaseResult, Gate, Spend, Usage
from agenttest import speed
names = lambda: [c.__init__.__code__.co_filename for c in (Case, CaseResult, Usage, AssertionResult, Gate, Spend)]
before = names()
speed.install()
from agenttest.connectors.base import ChatRequest  # named after the install: fast at once
print(json.dumps([before, names(), ChatRequest.__init__.__code__.co_filename]))
"""
    before, after, request = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    assert set(before) == {"<string>"}
    assert after == [f"<__init__ of {c}>" for c in ("Case", "CaseResult", "Usage", "AssertionResult", "Gate", "Spend")]
    assert request == "<__init__ of ChatRequest>"


def test_builder_shares_the_text_of_the_fields_it_is_told_to():
    """``builder(cls, shared)``: a named field's text is ``sys.intern``'s one copy (two results unpickled from
    equal labels hold one object); other fields, and values that are not exactly ``str``, are kept as given."""
    import sys

    class Label(str):
        pass

    build = builder(AssertionResult, ("type", "checked", "expected"))
    first, second = (build(("".join(["con", "tains"]), True, "".join(["m", "sg"]), "".join(["sub", "mitted"]), None, None, None, False, "",
                                         f"value={n}", "", None, "", "", None, False))
                     for n in ("x", "x"))
    assert first == second and first.type is second.type is sys.intern("contains")
    assert first.expected is second.expected and first.checked is second.checked
    assert first.message == second.message and first.message is not second.message  # not a shared field
    odd = Label("contains")
    kept = build((odd, True, "", ["a", "list"], None, None, None, False, "", "", "", None, "", "", None, False))
    assert kept.type is odd and kept.expected == ["a", "list"]
    with pytest.raises(TypeError, match="no field 'nope'"):
        builder(AssertionResult, ("nope",))
