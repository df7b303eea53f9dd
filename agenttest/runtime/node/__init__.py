"""Yao's TypeScript hooks and script tests, run as found, through Node.js (FORMATS §17).

``function(path, name, what)`` gives a Python callable that runs ``name`` of a ``.ts``/``.js`` file in
the run's Node process (process.py); it is called exactly like a Python hook, so capture, deadlines
and failures-as-data apply unchanged. ``script_tests`` and ``run_test`` do the same for ``Test*(t, ctx)``."""

from __future__ import annotations

import atexit
import os
import re
import sys
import threading
from typing import Any

from agenttest.errors import AgentTestError, CallError, Location, did_you_mean
from agenttest.model import Context
from agenttest.runtime import usercalls
from agenttest.runtime.node.process import JsError, NodeMissing, NodeProcess, find_node

__all__ = ["JsError", "JsFunction", "NodeMissing", "function", "load", "run_test", "script_tests", "source_beside"]

CTX = "__agenttest_ctx__"
_DECLARED = re.compile(r"^(?:export\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)", re.M)
_runtimes: dict[tuple[str, ...], NodeProcess] = {}
_runtimes_lock = threading.Lock()


def source_beside(py_path: str) -> str | None:
    """The ``.ts`` (else ``.js``) file of the same name as a Python file that does not exist."""
    stem = os.path.splitext(py_path)[0]
    if os.path.isfile(py_path):
        return None
    return next((stem + ext for ext in (".ts", ".js") if os.path.isfile(stem + ext)), None)


def runtime(needed_by: str) -> NodeProcess:
    """The run's Node process (one per Python process); NodeMissing names ``needed_by``."""
    command = tuple(find_node(needed_by))
    with _runtimes_lock:
        if not _runtimes:
            atexit.register(_stop_all)  # a Node busy in a loop would not notice its input closing
        if command not in _runtimes:
            _runtimes[command] = NodeProcess(list(command))
        return _runtimes[command]


def _stop_all() -> None:
    for process in list(_runtimes.values()):
        process.stop()


def load(path: str, what: str) -> tuple[NodeProcess, list[str]]:
    """Load the file in Node at resolution time: a syntax or import error is a usage error at its line."""
    node = runtime(path)
    try:
        return node, node.load(path)
    except JsError as exc:  # at the line of the file that failed, which may be one it imports
        raise AgentTestError(f"{what}: loading {os.path.basename(path)} failed: {exc.cause}", Location(exc.file or path, exc.line)) from None
    except CallError as exc:
        raise AgentTestError(f"{what}: loading {path} failed: {exc}") from None


def function(path: str, name: str, what: str) -> JsFunction:
    """``name`` from a TypeScript/JavaScript file, checked now: the file loads and has the function."""
    node, names = load(path, what)
    if name not in names:
        raise AgentTestError(f"{what}: {path} has no function '{name}'", hint=did_you_mean(name, names))
    return JsFunction(node, path, name)


def declared(path: str) -> list[tuple[int, str]]:
    """(line, name) of each top-level function the file declares, in file order (as Yao finds tests)."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _DECLARED.finditer(text)]


def script_tests(path: str) -> tuple[NodeProcess, list[tuple[int, str]]]:
    """The ``Test*`` functions of a ``*_test.ts`` file, loaded and checked."""
    node, names = load(path, f"script tests {os.path.basename(path)}")
    return node, [(line, n) for line, n in declared(path) if n.startswith("Test") and n in names]


class JsFunction:
    """A JavaScript function called like a Python one: ``fn(ctx, …)`` blocks until Node answers.

    A ``Context`` argument becomes Yao's ``ctx`` object; what the function does to ``ctx.world`` comes
    back. Its console output is printed (so captured for the case that runs). Raises CallError."""

    def __init__(self, node: NodeProcess, path: str, name: str):
        self.node, self.path, self.name = node, path, name
        self.__name__ = name

    def __reduce__(self) -> tuple[Any, ...]:
        """Sent to a worker process, it runs in that worker's own Node process."""
        return _reopen, (self.path, self.name)

    def __call__(self, *args: Any) -> Any:
        ctx = next((a for a in args if isinstance(a, Context)), None)
        payload = {"file": self.path, "fn": self.name, "args": [{CTX: context_data(a)} if isinstance(a, Context) else a for a in args]}
        answer = self.node.request("call", payload, callbacks(ctx), print_console, usercalls.abandoned.get())
        _keep_world(ctx, answer.get("world"))
        return answer.get("value")


def _reopen(path: str, name: str) -> JsFunction:
    return JsFunction(runtime(path), path, name)


def run_test(node: NodeProcess, path: str, name: str, ctx: Context, handlers: dict[str, Any]) -> dict[str, Any]:
    """Run ``name(t, ctx)``: ``{"status", "results", "logs", "skip_reason"}``. Raises CallError."""
    payload = {"file": path, "fn": name, "ctx": context_data(ctx)}
    answer = node.request("test", payload, {**callbacks(ctx), **handlers}, print_console, usercalls.abandoned.get())
    _keep_world(ctx, answer.get("world"))
    return dict(answer)


def context_data(ctx: Context) -> dict[str, Any]:
    """What JavaScript sees as ``ctx``'s fields (Yao's names)."""
    return {"chat_id": ctx.chat_id, "user_id": ctx.user_id, "team_id": ctx.team_id, "locale": ctx.locale,
            "metadata": ctx.metadata, "authorized": ctx.authorized, "client": ctx.client, "options": ctx.options,
            "world": ctx.world, "test_mode": ctx.test_mode}


def _keep_world(ctx: Context | None, world: Any) -> None:
    """The tool world is changed in place (a Before hook may seed it): keep what JavaScript did to it."""
    if ctx is not None and isinstance(world, dict) and world != ctx.world:
        ctx.world.clear()
        ctx.world.update(world)


def print_console(stream: str, text: str) -> None:
    (sys.stderr if stream == "stderr" else sys.stdout).write(text)


def callbacks(ctx: Context | None) -> dict[str, Any]:
    """What JavaScript may ask of Python: ``Process("scripts.…")`` and ``ctx.agent(…)``."""

    def process(args: dict[str, Any]) -> Any:
        if ctx is None or ctx.caller is None:
            raise CallError(f'Process("scripts.{args.get("name")}") can be called only while a case runs')
        try:
            fn = ctx.caller.script(str(args.get("name")))
        except AgentTestError as exc:
            raise CallError(f'Process("scripts.{args.get("name")}"): {exc}') from None
        return fn(*(args.get("args") or []))

    def agent(args: dict[str, Any]) -> Any:
        if ctx is None:
            raise CallError("ctx.agent can be called only while a case runs")
        return ctx.agent(str(args.get("id"))).stream(args.get("messages"), args.get("options"))

    return {"process": process, "agent": agent}
