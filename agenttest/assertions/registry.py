"""The assertion registry: types, load-time parameter checks, and evaluation of a list of assertions.

A type is a name, the parameters it takes (each with an optional JSON Schema), an
``evaluate(params, observation)`` function (sync or async) returning an AssertionResult, and an
optional ``check(params)`` run at load time that returns problems as ``(field, message, hint)``.
The case file's JSON Schema is derived from these declarations (``caseschema.py``), so a plug-in's
own parameters load like the built-ins'. ``negate`` and ``message`` are applied here for every type."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agenttest.errors import did_you_mean, typo_of
from agenttest.speed.records import hot, replace
from agenttest.plugins import ASSERTIONS
from agenttest.model import AssertionResult, AssertionSpec, Case, Message, ToolCall
from agenttest.runtime import exchanges
from agenttest.util.text import as_text, written

CheckProblem = tuple[str | None, str, str | None]
Schema = dict[str, Any]
COMMON_FIELDS: dict[str, Schema] = {
    "type": {"type": "string", "description": "the assertion type (equals when omitted)"},
    "message": {"type": "string", "description": "replaces the failure text"},
    "negate": {"type": "boolean", "description": "pass when the assertion does not hold"},
    "id": {"type": "string", "description": "the assertion's own name, shown with its result"},
    "severity": {"enum": ["minor", "major"], "description": "minor: a failure is reported but never fails the case (default major)"},
    "weight": {"type": "number", "minimum": 0, "description": "its share of the case's weighted score (default 1)"},
    "description": {"type": "string", "description": "the acceptance criterion it stands for, shown with its result"},
}
SHOWN_APART = ("type", "message", "negate", "options", "id", "severity", "weight", "description")  # not what it checks
MEANT = {"expected": "value", "expect": "value", "expected_value": "value"}  # keys other tools give the expected value


class Judge(Protocol):
    """What agent and script assertions need to call validators and load scripts (caller.Caller)."""

    async def ask(
        self, agent_id: str, messages: list[Message], test_mode: str, metadata: dict[str, Any], connector: str | None
    ) -> str: ...

    def script(self, ref: str) -> Callable[..., Any]: ...


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What an assertion looks at: the output, the tool calls, the input, the tool world, and the judge
    (the caller) for agent and script assertions."""

    output: Any
    tool_calls: Sequence[ToolCall] = ()  # of this reply (a dynamic case: of this turn)
    input: Any = None  # the user's input as written (the case's input, or the turn's message)
    case: Case | None = None
    judge: Judge | None = None
    world: Any = None  # the case's world now (JSON), None when there is none
    initial_world: Any = None  # the world as the agent found it
    all_tool_calls: Sequence[ToolCall] | None = None  # the case's calls so far, across turns
    spending: Any = None  # budgets.Spent, or a function of no arguments that tells it (called only if an assertion asks)
    counters: dict[str, Any] | None = None  # what the case's tools counted (ctx.count), and the counters they declare
    document: Any = None  # the observation (docs/formats-a.md): a dict, or a function of no arguments that makes it
    history: Sequence[Any] = ()  # the turns recorded before this check (a custom evaluator's history)
    current: Any = None  # a turn's check: the turn being checked (its number, id, input and selection)
    suite: Any = None  # a suite check's subject: {"summary", "status", "cases"}

    @property
    def spent(self) -> Any:
        """What the agent under test has spent so far (budgets.Spent; the budget assertion reads it)."""
        return self.spending() if callable(self.spending) else self.spending

    @property
    def observed(self) -> Any:
        """The observation document that ``check`` assertions read (made when first asked for)."""
        return self.document() if callable(self.document) else self.document

    @property
    def text(self) -> str:
        return as_text(self.output)

    @property
    def trajectory(self) -> Sequence[ToolCall]:
        """Every tool call of the case so far (what trajectory assertions check)."""
        return self.tool_calls if self.all_tool_calls is None else self.all_tool_calls


Evaluate = Callable[[dict[str, Any], Observation], AssertionResult | Awaitable[AssertionResult]]
Check = Callable[[dict[str, Any]], list[CheckProblem]]


@dataclass(frozen=True)
class Need:
    """Something an assertion calls or names, checked before the first model call: an ``agent`` (with the
    connector it runs on), a ``script``, or a ``tool`` of the agent under test; ``field`` is the parameter
    that names it (a path when it is inside one: ``("value", 2)``)."""

    kind: str  # "agent" | "script" | "tool"
    ref: str
    field: str | tuple[Any, ...]
    connector: str | None = None


Needs = Callable[[dict[str, Any]], list[Need]]


@dataclass(frozen=True, kw_only=True)
class AssertionType:
    name: str
    evaluate: Evaluate
    params: dict[str, Schema]  # every field it accepts (type/message/negate included) → JSON Schema
    check: Check | None = None
    is_async: bool = False
    description: str = ""
    needs: Needs | None = None
    nested: str | None = None  # the field holding assertions of its own (all, any): each checked as an assertion

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(self.params)


_REGISTRY = ASSERTIONS.mapping  # name → AssertionType (the plug-in registry of assertion types, read-only)


def register(
    name: str, *, fields: Sequence[str] | Mapping[str, Schema] = (), check: Check | None = None, description: str = "",
    needs: Needs | None = None, nested: str | None = None,
) -> Callable[[Evaluate], Evaluate]:
    """Register an assertion type. ``fields`` are the parameters it takes beyond type/message/negate:
    names, or names → JSON Schema (``{"threshold": {"type": "number"}}``), checked at load time. ``needs``
    says which agents or scripts an assertion will call, so that they are resolved before the run."""
    declared = dict(fields) if isinstance(fields, Mapping) else {f: {} for f in fields}

    def decorate(fn: Evaluate) -> Evaluate:
        doc = description or (fn.__doc__ or "").strip().split("\n")[0]
        ASSERTIONS.add(name, AssertionType(name=name, evaluate=fn, params={**COMMON_FIELDS, **declared}, check=check,
                                           is_async=inspect.iscoroutinefunction(fn), description=doc, needs=needs, nested=nested))
        return fn

    return decorate


def needs(params: dict[str, Any]) -> list[Need]:
    """What an assertion (already checked) will call at run time — its nested assertions' needs too, each
    ``field`` a path into it."""
    kind = _REGISTRY.get(params.get("type") or "equals")
    if kind is None:
        return []
    out = kind.needs(params) if kind.needs is not None else []
    for i, child in enumerate(nested(params)):
        out += [replace(n, field=(kind.nested, i, *((n.field,) if isinstance(n.field, str) else n.field))) for n in needs(child)]
    return out


def nested(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The assertions an all/any assertion holds (each a dict: a type name written alone is made one)."""
    kind = _REGISTRY.get(params.get("type") or "equals")
    children = params.get(kind.nested) if kind is not None and kind.nested else None
    if not isinstance(children, list):
        return []
    return [{"type": c} if isinstance(c, str) else c for c in children if isinstance(c, (dict, str))]


def types() -> list[AssertionType]:
    """Every registered type, by name."""
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def version() -> int:
    """Changes whenever a type is registered."""
    return ASSERTIONS.version


def get(name: str) -> AssertionType | None:
    return _REGISTRY.get(name)


def names() -> list[str]:
    return sorted(_REGISTRY)


def check(params: dict[str, Any]) -> list[CheckProblem]:
    """Load-time problems with one assertion's parameters (unknown type, missing or bad fields)."""
    kind = params.get("type") or "equals"
    spec = _REGISTRY.get(kind)
    if spec is None:
        hint = did_you_mean(kind, _REGISTRY) or f"known types: {', '.join(names())}"
        return [("type", f"unknown assertion type '{kind}'", hint)]
    problems: list[CheckProblem] = []
    for key, value in params.items():
        if key not in spec.params:
            problems.append((key, f"'{key}' is not a field of {'an' if kind[:1] in 'aeiou' else 'a'} '{kind}' assertion", _unknown_hint(spec, key, params)))
        elif spec.params[key] and (key not in COMMON_FIELDS or key in ("id", "severity", "weight", "description")):
            choices = spec.params[key].get("enum")
            if isinstance(choices, list) and value not in choices:  # said as a case's own fields are, with the near one
                hint = did_you_mean(str(value), [str(c) for c in choices]) or f"one of {', '.join(map(str, choices))}"
                problems.append((key, f"'{key}' cannot be {written(value)}", hint))
                continue
            message = _schema_problem(spec.params[key], value)
            if message:
                problems.append((key, f"'{key}' {message}", None))
    if spec.check is not None:
        try:
            problems += spec.check(params)
        except (TypeError, AttributeError, KeyError, ValueError):
            pass  # a shape already reported above
    return problems


def meant(spec: AssertionType, key: str) -> str | None:
    """The parameter an unknown ``key`` of an assertion of type ``spec`` stands for: ``expected`` for ``value``
    (Yao's case field, promptfoo's word), or a small misspelling."""
    other = MEANT.get(key)
    return other if other in spec.params else typo_of(key, spec.fields)


def _unknown_hint(spec: AssertionType, key: str, params: dict[str, Any]) -> str:
    """What an unknown key of an assertion was most likely meant as."""
    if spec.name == "tool_called" and key in ("arguments", "args"):
        name = json.dumps(params.get("name", params.get("value", "NAME")), ensure_ascii=False)
        args = json.dumps(params[key], ensure_ascii=False)
        return (f'\'tool_called\' checks arguments inside its value: "value": {{"name": {name}, "arguments": {args}}}; '
                f'or use {{"type": "tool_args", "tool": {name}, "arguments": {args}}}')
    other = meant(spec, key)
    if other is not None:
        return f"did you mean '{other}'?"
    own = sorted(set(spec.params) - set(COMMON_FIELDS))
    return f"'{spec.name}' takes {', '.join(own) or 'no parameters'} (and {', '.join(COMMON_FIELDS)})"


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}


def _schema_problem(schema: Schema, value: Any) -> str | None:
    """Why ``value`` does not fit a declared parameter schema, or None."""
    wanted = schema.get("type")
    if isinstance(wanted, str):
        ok = isinstance(value, _JSON_TYPES.get(wanted, object)) and not (wanted in ("number", "integer") and isinstance(value, bool))
        if not ok:
            return f"must be {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}, not {type(value).__name__}"
    if set(schema) - {"type", "description"}:
        from jsonschema import Draft202012Validator

        error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
        if error is not None:
            return error.message
    return None


async def evaluate(spec: AssertionSpec, obs: Observation) -> AssertionResult:
    """Evaluate one assertion; an exception inside a type becomes a failed result, never a crash."""
    kind = _REGISTRY[spec.type]
    try:
        result = kind.evaluate(spec.params, obs)
        if kind.is_async:
            result = await result  # type: ignore[misc]
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in a plug-in or a user's data must not crash the run
        result = _crashed(spec, exc)
    return _finish(spec, result)  # type: ignore[arg-type]


def _crashed(spec: AssertionSpec, exc: Exception) -> AssertionResult:
    """An assertion type that raised: an error result with the traceback (the case becomes ``error``)."""
    import traceback

    message = f"internal error in '{spec.type}' assertion: {type(exc).__name__}: {exc}"
    return AssertionResult(type=spec.type, passed=False, message=message, error=True, traceback="".join(traceback.format_exception(exc)))


_FINISHED: dict[int, tuple[AssertionSpec, AssertionResult, AssertionResult]] = {}  # id(spec) → spec, a verdict, it finished
MEMO = 4096  # specs whose last plain verdict is kept (a suite's assertions are shared by the cases that write them alike)


def _finish(spec: AssertionSpec, result: AssertionResult) -> AssertionResult:
    """``result`` with what the spec adds (what it checked, ``negate``, ``message``). The loader makes one spec of
    the assertions written alike and a check gives the same plain verdict each time it holds: that verdict
    finished once is the same object for every case (``checked`` and the copy were a tenth of a mock case)."""
    if result.score is not None or result.details is not None or result.error or result.checked or result.judged is not None:
        return _finished(spec, result)
    kept = _FINISHED.get(id(spec))
    if kept is not None and kept[0] is spec and _alike(kept[1], result):
        return kept[2]
    done = _finished(spec, result)
    if len(_FINISHED) < MEMO or kept is not None:
        _FINISHED[id(spec)] = (spec, result, done)
    return done


def _alike(a: AssertionResult, b: AssertionResult) -> bool:
    """The same plain verdict: its texts equal, its expected and actual the very objects or equal texts (1, 1.0 and
    True are equal but written apart)."""
    return (a.passed is b.passed and a.type == b.type and a.message == b.message and _same(a.expected, b.expected)
            and _same(a.actual, b.actual))


def _same(x: Any, y: Any) -> bool:
    return x is y or (type(x) is str and type(y) is str and x == y)


def _finished(spec: AssertionSpec, result: AssertionResult) -> AssertionResult:
    params = spec.params
    if "severity" in params or "weight" in params or "id" in params or "description" in params:
        result = replace(result, severity=params.get("severity") if params.get("severity") == "minor" else "",
                         weight=weight(params), label=params.get("id") or "", description=params.get("description") or "")
    if not result.checked:
        what = checked(spec)
        if what:
            result = replace(result, checked=what)
    if spec.params.get("negate") and not result.error:
        passed = not result.passed
        held = result.message or describe(spec, what=result.checked.removeprefix("not: "))
        message = "" if passed else f"expected not: {held} (it held)"
        result = replace(result, passed=passed, message=message, negated=True)
    if not result.passed and spec.params.get("message"):
        result = replace(result, message=spec.params["message"])
    return result


def weight(params: dict[str, Any]) -> float | None:
    """An assertion's weight in its case's score: as written, else 1 when the case weighs any (None here)."""
    value = params.get("weight")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def score(results: Sequence[AssertionResult]) -> float | None:
    """The weighted score of a case's assertions (0–1): the weights of those that held over all weights (an
    assertion without one weighs 1); None when no assertion carries a weight."""
    if not any(r.weight is not None for r in results):
        return None
    weights = [1.0 if r.weight is None else r.weight for r in results]
    total = sum(weights)
    return round(sum(w for w, r in zip(weights, results) if r.passed) / total, 6) if total else None


async def evaluate_all(specs: Sequence[AssertionSpec], obs: Observation) -> tuple[AssertionResult, ...]:
    """Every assertion is evaluated (no short-circuit); async ones (judges) run concurrently."""
    if not any(_REGISTRY[s.type].is_async for s in specs):
        return tuple([_evaluate_sync(s, obs) for s in specs])
    # each one's model calls (a judge's) are filed under it: "assertion 2" (in a scripted turn, "turn 3 assertion 2")
    return tuple(await asyncio.gather(*(exchanges.served(f"assertion {i}", evaluate(s, obs)) for i, s in enumerate(specs, 1))))


def _evaluate_sync(spec: AssertionSpec, obs: Observation) -> AssertionResult:
    try:
        result = _REGISTRY[spec.type].evaluate(spec.params, obs)
    except Exception as exc:
        result = _crashed(spec, exc)
    return _finish(spec, result)  # type: ignore[arg-type]


def checked(spec: AssertionSpec) -> str:
    """What an assertion checks, its parameters as ``key=value`` (``path=$.a value="x"``), for ``-v`` and reports."""
    kind = _REGISTRY.get(spec.type)
    if kind is not None and kind.nested and isinstance(spec.params.get(kind.nested), list):  # all/any: their own say the rest
        return f"{len(spec.params[kind.nested])} assertions"
    shown = {k: v for k, v in spec.params.items() if k not in SHOWN_APART}
    text = " ".join(f"{k}={v if isinstance(v, str) and k in ('path', 'tool', 'mode', 'call', 'match') else as_text(v)}"
                    for k, v in shown.items())
    return f"not: {text}" if spec.params.get("negate") is True else text  # a negated check reads as one


def describe(spec: AssertionSpec, what: str = "") -> str:
    """A one-line description of an assertion, for messages: its type and ``what`` it checked (else its parameters)."""
    if what:
        return f"{spec.type} {what}"
    shown = {k: v for k, v in spec.params.items() if k not in SHOWN_APART}
    return f"{spec.type} {as_text(shown)}" if shown else spec.type


hot(Observation)  # one per case
