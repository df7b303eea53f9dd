"""Script tests: ``-i scripts.expense -n expense`` runs every ``Test*`` function of the agent's
``src/expense_test.py`` (else Yao's ``expense_test.ts``, run in Node) as a case, called as ``TestX(t, ctx)``."""

from __future__ import annotations

import sys

import inspect
import operator
import os
from typing import Any

from agenttest.speed.records import replace
from agenttest.plugins import MODES
from agenttest.util import patterns
from agenttest.runtime import usercalls
from agenttest.errors import AgentTestError, CallError, Location
from agenttest.model import AssertionResult, Case, CaseResult, Context, Status
from agenttest.util.text import shorten
from agenttest.runtime.trace import Trace
from agenttest.app.yaofiles import load_module
from agenttest.runtime import node
from agenttest.runtime.processes import Process
from agenttest.modes.base import CaseEnv


class _Stop(Exception):
    pass


class _Skip(Exception):
    pass


class Assertions:
    """``t.assert_`` (``assert`` is a Python keyword; ``getattr(t, "assert")`` works too).

    Each check records a result and returns whether it held; a failed check does not stop the test."""

    def __init__(self, t: T):
        self._t = t

    def _record(self, kind: str, passed: bool, message: str, expected: Any = None, actual: Any = None) -> bool:
        said = "" if passed else self._t.at(message)
        self._t.results.append(AssertionResult(type=kind, passed=passed, message=said, expected=expected, actual=actual))
        return passed

    def _msg(self, default: str, msg: str | None) -> str:
        return f"{msg}: {default}" if msg else default

    def True_(self, value: Any, msg: str | None = None) -> bool:
        return self._record("True", bool(value), self._msg(f"expected true, got {value!r}", msg), True, value)

    def False_(self, value: Any, msg: str | None = None) -> bool:
        return self._record("False", not value, self._msg(f"expected false, got {value!r}", msg), False, value)

    def Equal(self, actual: Any, expected: Any, msg: str | None = None) -> bool:
        from agenttest.util.matching import equal

        return self._record("Equal", equal(actual, expected), self._msg(f"expected {expected!r}, got {actual!r}", msg), expected, actual)

    def NotEqual(self, actual: Any, expected: Any, msg: str | None = None) -> bool:
        from agenttest.util.matching import equal

        return self._record("NotEqual", not equal(actual, expected), self._msg(f"expected something other than {expected!r}", msg), expected, actual)

    def Contains(self, container: Any, item: Any, msg: str | None = None) -> bool:
        ok = item in container if container is not None else False
        return self._record("Contains", ok, self._msg(f"{shorten(repr(container), 80)} does not contain {item!r}", msg), item, container)

    def NotContains(self, container: Any, item: Any, msg: str | None = None) -> bool:
        ok = container is None or item not in container
        return self._record("NotContains", ok, self._msg(f"{shorten(repr(container), 80)} contains {item!r}", msg), item, container)

    def Match(self, text: Any, pattern: str, msg: str | None = None) -> bool:
        ok = patterns.search(pattern, str(text)) is not None
        return self._record("Match", ok, self._msg(f"{shorten(repr(text), 80)} does not match /{pattern}/", msg), pattern, text)

    def Len(self, value: Any, length: int, msg: str | None = None) -> bool:
        try:
            actual = len(value)
        except TypeError:
            actual = None
        return self._record("Len", actual == length, self._msg(f"expected length {length}, got {actual}", msg), length, actual)

    def GreaterOrEqual(self, a: Any, b: Any, msg: str | None = None) -> bool:
        return self._record("GreaterOrEqual", _compare(a, b, ">="), self._msg(f"expected {a!r} >= {b!r}", msg), b, a)

    def LessOrEqual(self, a: Any, b: Any, msg: str | None = None) -> bool:
        return self._record("LessOrEqual", _compare(a, b, "<="), self._msg(f"expected {a!r} <= {b!r}", msg), b, a)

    def NotMatch(self, text: Any, pattern: str, msg: str | None = None) -> bool:
        ok = patterns.search(pattern, str(text)) is None
        return self._record("NotMatch", ok, self._msg(f"{shorten(repr(text), 80)} matches /{pattern}/", msg), pattern, text)

    def Error(self, err: Any, msg: str | None = None) -> bool:
        """``err`` is an error (anything but None), as Yao's ``assert.Error``."""
        return self._record("Error", err is not None, self._msg("expected an error, got None", msg), None, err)

    def NoError(self, err: Any, msg: str | None = None) -> bool:
        return self._record("NoError", err is None, self._msg(f"expected no error, got {err!r}", msg), None, err)

    def Panic(self, fn: Any, msg: str | None = None) -> bool:
        """Calling ``fn()`` raises (Yao's ``assert.Panic``)."""
        try:
            fn()
        except Exception:
            return self._record("Panic", True, "")
        return self._record("Panic", False, self._msg("expected the function to raise, but it returned", msg))

    def NoPanic(self, fn: Any, msg: str | None = None) -> bool:
        try:
            fn()
        except Exception as exc:
            return self._record("NoPanic", False, self._msg(f"expected the function not to raise, but got {type(exc).__name__}: {exc}", msg),
                                None, f"{type(exc).__name__}: {exc}")
        return self._record("NoPanic", True, "")

    def Greater(self, a: Any, b: Any, msg: str | None = None) -> bool:
        return self._record("Greater", _compare(a, b, ">"), self._msg(f"expected {a!r} > {b!r}", msg), b, a)

    def Less(self, a: Any, b: Any, msg: str | None = None) -> bool:
        return self._record("Less", _compare(a, b, "<"), self._msg(f"expected {a!r} < {b!r}", msg), b, a)

    def Nil(self, value: Any, msg: str | None = None) -> bool:
        return self._record("Nil", value is None, self._msg(f"expected None, got {value!r}", msg), None, value)

    def NotNil(self, value: Any, msg: str | None = None) -> bool:
        return self._record("NotNil", value is not None, self._msg("expected a value, got None", msg), None, value)

    def Type(self, value: Any, type_name: str, msg: str | None = None) -> bool:
        from agenttest.assertions.static import json_type

        actual = json_type(value)
        ok = actual == type_name or (type_name == "number" and actual == "integer")
        return self._record("Type", ok, self._msg(f"expected {type_name}, got {actual}", msg), type_name, actual)

    def JSONPath(self, data: Any, path: str, expected: Any, msg: str | None = None) -> bool:
        from agenttest.assertions import Observation
        from agenttest.assertions.static import json_path

        r = json_path({"type": "json_path", "path": path, "value": expected}, Observation(output=data))
        assert isinstance(r, AssertionResult)
        return self._record("JSONPath", r.passed, self._msg(r.message, msg), expected, r.actual)

    def Agent(self, response: Any, validator_id: str, options: dict[str, Any] | None = None) -> bool:
        """Judge ``response`` with a validator agent: options ``{"criteria", "metadata", "connector"}``."""
        from agenttest.assertions.judge import agent_id, ask_validator

        options = dict(options or {})
        metadata = dict(options.get("metadata") or {})
        criteria = options.get("criteria", metadata.pop("criteria", None))
        caller = self._t.ctx.caller
        coro = ask_validator(caller, agent_id(validator_id), response, self._t.input, criteria, metadata, options.get("connector"))
        result = caller.submit(coro)
        self._t.results.append(result if result.passed else replace(result, message=self._t.at(result.message)))
        return result.passed

    # Yao's names: True/False are keywords in Python source, so t.assert_.True_ / IsTrue are the
    # spellings to type; getattr(t.assert_, "True") works as well.
    IsTrue, IsFalse = True_, False_
    locals()["True"] = True_
    locals()["False"] = False_


class T:
    """What a script test receives as ``t``."""

    def __init__(self, name: str, ctx: Context, file: str = ""):
        self.name = name
        self.ctx = ctx
        self.file = os.path.abspath(file) if file else ""
        self.results: list[AssertionResult] = []
        self.logs: list[str] = []
        self.input: Any = None
        self.assert_ = Assertions(self)
        self.expect = self.assert_
        setattr(self, "assert", self.assert_)

    def at(self, message: str) -> str:
        """A failure's message with the line of the test file that failed: ``expected 2, got 1 (flow_test.py:3)``."""
        frame = sys._getframe(1)
        while frame is not None and self.file:
            if frame.f_code.co_filename == self.file:
                return f"{message} ({os.path.basename(self.file)}:{frame.f_lineno})"
            frame = frame.f_back  # type: ignore[assignment]
        return message

    def log(self, *parts: Any) -> None:
        self.logs.append(" ".join(str(p) for p in parts))

    def error(self, *parts: Any) -> None:
        """Fail the test and go on (Yao's ``t.error``)."""
        self.results.append(AssertionResult(type="error", passed=False, message=self.at(" ".join(str(p) for p in parts) or "error")))

    def fail(self, message: str = "test failed") -> None:
        """Fail the test and go on, as Yao's ``t.fail``; ``t.fatal`` fails and stops."""
        self.results.append(AssertionResult(type="fail", passed=False, message=self.at(message)))

    def fatal(self, message: str = "fatal error") -> None:
        """Fail the test and stop it now."""
        self.results.append(AssertionResult(type="fatal", passed=False, message=self.at(message)))
        raise _Stop

    def skip(self, reason: str = "") -> None:
        """Skip the test now."""
        raise _Skip(reason)

    @property
    def failed(self) -> bool:
        return any(not r.passed for r in self.results)

    # Yao spellings
    Log, Error, Fail, Fatal, Skip = log, error, fail, fatal, skip


_OPERATORS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


def _compare(a: Any, b: Any, op: str) -> bool:
    """A comparison that fails (instead of raising) on values that cannot be compared."""
    try:
        return bool(_OPERATORS[op](a, b))
    except TypeError:
        return False


def collect(agent: Any, name: str) -> list[Case]:
    """Every ``Test*`` function of ``<agent>/src/<name>_test.py``, in file order."""
    if agent is None:
        raise AgentTestError("script tests need -n AGENT")
    base = name if name.endswith("_test") else name + "_test"
    path = os.path.join(agent.spec.path, "src", base + ".py")
    script = node.source_beside(path)
    if script is not None:
        return _typescript_cases(script)
    if not os.path.isfile(path):
        raise AgentTestError(f"-i scripts.{name}: {path} does not exist", hint="script tests live in the agent's src/<name>_test.py (or .ts)")
    module = load_module(path)
    vars(module).setdefault("Process", Process)  # Yao's global, as a TypeScript test has it
    found = [(fn.__code__.co_firstlineno, n, fn) for n, fn in vars(module).items()
             if n.startswith("Test") and inspect.isfunction(fn) and fn.__module__ == module.__name__]
    if not found:
        raise AgentTestError(f"{path} has no Test* functions", hint="define e.g. def TestExpense(t, ctx): ...")
    return [
        Case(id=n, messages=(), raw={"id": n}, location=Location(path, line), base_dir=os.path.dirname(path), file=path,
             name=(fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "", script=fn)
        for line, n, fn in sorted(found)
    ]


def _typescript_cases(path: str) -> list[Case]:
    """The ``Test*`` functions of a Yao ``*_test.ts``, in file order; each runs in Node."""
    runtime, found = node.script_tests(path)
    if not found:
        raise AgentTestError(f"{path} has no Test* functions", hint="define e.g. function TestExpense(t: testing.T, ctx: agent.Context) { … }")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    return [Case(id=n, messages=(), raw={"id": n}, location=Location(path, line), base_dir=os.path.dirname(path), file=path,
                 name=_jsdoc(lines, line) or n, script=_in_node(runtime, path, n)) for line, n in found]


def _jsdoc(lines: list[str], line: int) -> str:
    """The first line of the ``/** … */`` right above line ``line`` (a TypeScript test's docstring), or ""."""
    end = line - 2
    while end >= 0 and not lines[end].strip():
        end -= 1
    if end < 0 or not lines[end].strip().endswith("*/"):
        return ""
    start = end
    while start >= 0 and "/**" not in lines[start]:
        start -= 1
    words = [ln.strip().removeprefix("/**").removesuffix("*/").strip().lstrip("*").strip() for ln in lines[max(start, 0):end + 1]]
    return next((w for w in words if w), "") if start >= 0 else ""


def _in_node(runtime: Any, path: str, name: str) -> Any:
    """A script test body that runs ``name(t, ctx)`` in Node and records what its ``t`` recorded."""

    def judge(t: T, args: dict[str, Any]) -> dict[str, Any]:
        t.assert_.Agent(args.get("response"), str(args.get("agent")), args.get("options"))
        r = t.results.pop()
        return {"kind": r.type, "passed": r.passed, "message": r.message, "expected": r.expected, "actual": r.actual}

    def script(t: T, ctx: Context) -> None:
        answer = node.run_test(runtime, path, name, ctx, {"assert.Agent": lambda args: judge(t, args)})
        t.results.extend(AssertionResult(type=str(r.get("kind")), passed=bool(r.get("passed")), message=_placed(r), expected=r.get("expected"),
                                         actual=r.get("actual")) for r in answer.get("results") or ())
        t.logs.extend(str(line) for line in answer.get("logs") or ())
        if answer.get("status") == "skipped":
            raise _Skip(str(answer.get("skip_reason") or ""))

    return script


def _placed(result: dict[str, Any]) -> str:
    """A check's message from Node, with the line of the test file where it failed (``flow_test.ts:3``)."""
    message, where = str(result.get("message") or ""), result.get("where")
    return f"{message} ({where})" if where and not result.get("passed") else message


def _body(case: Case, t: T, ctx: Context) -> tuple[Status, str]:
    """Run the test function; ``t.fail``/``t.skip`` end it early. Other exceptions are the caller's."""
    try:
        case.script(t, ctx)
    except _Stop:
        pass
    except _Skip as exc:
        return "skipped", str(exc)
    return ("failed" if any(not r.passed for r in t.results) else "passed"), ""


async def run(case: Case, env: CaseEnv, trace: Trace) -> CaseResult:
    t = trace.state = T(case.id, env.ctx, case.file)
    try:
        status, error = await usercalls.call(_body, case, t, env.ctx, what=f"script test {case.id}")
    except CallError as exc:
        return replace(partial(case, trace, "error", str(exc).removeprefix(f"script test {case.id} failed: ")), traceback=exc.traceback or "")
    skipped = status == "skipped"
    return CaseResult(status=status, name=case.name, input=None, output=None, error="" if skipped else error, skip_reason=error if skipped else "",
                      assertions=tuple(t.results), logs=tuple(t.logs), tool_calls=tuple(trace.tool_calls), usage=trace.agent_usage)


def partial(case: Case, trace: Trace, status: Status, error: str) -> CaseResult:
    t = trace.state if isinstance(trace.state, T) else T(case.id, Context())
    return CaseResult(status=status, name=case.name, input=None, output=None, error=error, assertions=tuple(t.results), logs=tuple(t.logs),
                      tool_calls=tuple(trace.tool_calls), usage=trace.agent_usage)


MODES.add("script", sys.modules[__name__])  # the built-in mode registers as a plug-in would
