"""Assertion types: one registry, load-time parameter checks, and evaluation of a list of assertions.

A type is a name, an ``evaluate(params, observation)`` function (sync or async) returning an
AssertionResult, and an optional ``check(params)`` run at load time that returns problems as
``(field, message, hint)``. ``negate`` and ``message`` are applied here for every type."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..jsontext import as_text
from ..model import AssertionResult, AssertionSpec, Case, Message, ToolCall

CheckProblem = tuple[str | None, str, str | None]
COMMON_FIELDS = frozenset({"type", "message", "negate"})


class Judge(Protocol):
    """What agent and script assertions need from the runtime (see runtime.Workers)."""

    async def ask(
        self, agent_id: str, messages: list[Message], test_mode: str, metadata: dict[str, Any], connector: str | None
    ) -> str: ...

    def script(self, ref: str) -> Callable[..., Any]: ...


@dataclass(frozen=True)
class Observation:
    """What an assertion looks at: the output, the tool calls, the input, and the runtime for judges."""

    output: Any
    tool_calls: Sequence[ToolCall] = ()
    input: Any = None  # the user's input as written (the case's input, or the turn's message)
    case: Case | None = None
    judge: Judge | None = None

    @property
    def text(self) -> str:
        return as_text(self.output)


Evaluate = Callable[[dict[str, Any], Observation], AssertionResult | Awaitable[AssertionResult]]
Check = Callable[[dict[str, Any]], list[CheckProblem]]


@dataclass(frozen=True)
class AssertionType:
    name: str
    evaluate: Evaluate
    fields: frozenset[str]
    check: Check | None = None
    is_async: bool = False


_REGISTRY: dict[str, AssertionType] = {}


def register(name: str, *, fields: Sequence[str] = (), check: Check | None = None) -> Callable[[Evaluate], Evaluate]:
    """Register an assertion type; ``fields`` are the parameters it accepts beyond type/message/negate."""

    def decorate(fn: Evaluate) -> Evaluate:
        _REGISTRY[name] = AssertionType(
            name, fn, COMMON_FIELDS | frozenset(fields), check, inspect.iscoroutinefunction(fn)
        )
        return fn

    return decorate


def get(name: str) -> AssertionType | None:
    return _REGISTRY.get(name)


def names() -> list[str]:
    return sorted(_REGISTRY)


def check(params: dict[str, Any]) -> list[CheckProblem]:
    """Load-time problems with one assertion's parameters (unknown type, missing or bad fields)."""
    from ..errors import did_you_mean

    kind = params.get("type") or "equals"
    spec = _REGISTRY.get(kind)
    if spec is None:
        hint = did_you_mean(kind, _REGISTRY) or f"known types: {', '.join(names())}"
        return [("type", f"unknown assertion type '{kind}'", hint)]
    problems: list[CheckProblem] = []
    for key in params:
        if key not in spec.fields:
            hint = did_you_mean(key, spec.fields) or f"'{kind}' takes: {', '.join(sorted(spec.fields))}"
            problems.append((key, f"'{key}' is not a field of a '{kind}' assertion", hint))
    if spec.check is not None:
        problems += spec.check(params)
    return problems


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
        result = AssertionResult(spec.type, False, f"{spec.type}: {type(exc).__name__}: {exc}", error=True)
    return _finish(spec, result)  # type: ignore[arg-type]


def _finish(spec: AssertionSpec, result: AssertionResult) -> AssertionResult:
    if spec.params.get("negate") and not result.error:
        passed = not result.passed
        message = "" if passed else f"not: {result.message or describe(spec)} (negated assertion held)"
        result = replace(result, passed=passed, message=message)
    if not result.passed and spec.params.get("message"):
        result = replace(result, message=spec.params["message"])
    return result


async def evaluate_all(specs: Sequence[AssertionSpec], obs: Observation) -> tuple[AssertionResult, ...]:
    """Every assertion is evaluated (no short-circuit); async ones (judges) run concurrently."""
    if not any(_REGISTRY[s.type].is_async for s in specs):
        return tuple([_evaluate_sync(s, obs) for s in specs])
    return tuple(await asyncio.gather(*(evaluate(s, obs) for s in specs)))


def _evaluate_sync(spec: AssertionSpec, obs: Observation) -> AssertionResult:
    try:
        result = _REGISTRY[spec.type].evaluate(spec.params, obs)
    except Exception as exc:
        result = AssertionResult(spec.type, False, f"{spec.type}: {type(exc).__name__}: {exc}", error=True)
    return _finish(spec, result)  # type: ignore[arg-type]


def describe(spec: AssertionSpec) -> str:
    """A one-line description of an assertion, for messages."""
    shown = {k: v for k, v in spec.params.items() if k not in ("type", "message", "negate")}
    return f"{spec.type} {as_text(shown)}" if shown else spec.type


_plugins_loaded = False


def load_plugins() -> None:
    """Import third-party plug-ins from the ``agenttest.plugins`` entry-point group (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="agenttest.plugins"):
        ep.load()


from . import judge, script, static  # noqa: E402,F401  built-ins register like plug-ins
