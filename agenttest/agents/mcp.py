"""Running MCP servers and the tools they give agents (FORMATS §12). The official ``mcp`` SDK is the client
of stdio, streamable-HTTP and SSE servers; a ``process`` server's tools are Python functions. A server
starts once per run, before the first model call, is shared by every agent and case that names it, and
stops when the run ends (Ctrl-C and SIGTERM included)."""

from __future__ import annotations

import asyncio
import inspect
import os
import tempfile
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

from agenttest.runtime import usercalls
from agenttest.agents import mcpsdk, stdio
from agenttest.agents.agent import AgentSpec, McpUse, Tool
from agenttest.app.folders import App
from agenttest.errors import AgentTestError, CallError, InputError, Location, did_you_mean
from agenttest.app.mcpfiles import ServerSpec, locate, read
from agenttest.util.matching import tool_name
from agenttest.model import Context
from agenttest.util.secrets import Secrets
from agenttest.runtime.trace import current_trace
from agenttest.app.yaofiles import function

START_TIMEOUT = 30.0  # seconds a server gets to start and list its tools (more if its "timeout" is longer)
STOP_TIMEOUT = 10.0  # the SDK's own shutdown is bounded (stdin closed, SIGTERM, SIGKILL); this bounds ours
STDERR_LINES = 10
MAX_RESTARTS = 3  # a stdio server that dies is started again this many times a run (then its calls fail)
SPAWN_POLLS = 400  # × 5 ms: how long a stdio server's process is looked for after its spawn began
_spawning: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ToolInfo:
    """One tool a server lists: its name on the server, description and input schema."""

    name: str
    description: str
    schema: dict[str, Any]


class Server(Protocol):
    spec: ServerSpec

    async def start(self) -> list[ToolInfo]: ...

    async def call(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Any: ...

    async def stop(self) -> None: ...


def _reason(exc: BaseException) -> str:
    """What went wrong, from the innermost exception of an (anyio) exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().split("\n")[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """A server reached through the ``mcp`` SDK. Its client lives in a task of its own, because the SDK's
    anyio scopes must close in the task that opened them while cases (other tasks) call its tools."""

    def __init__(self, spec: ServerSpec, secrets: Secrets):
        self.spec = spec
        self.secrets = secrets
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._stderr: Any = None  # a stdio server's stderr, kept for error messages
        self._refused = ""  # the last HTTP error status an http/sse server answered (the SDK does not say)
        self._group: set[int] = set()  # a stdio server's process group (its pid), once spawned
        self._started = False  # it listed its tools once: a server that dies later may be started again
        self._restarts = 0
        self._restarting: asyncio.Lock | None = None

    def _transport(self) -> Any:
        spec = self.spec
        if spec.transport == "stdio":
            self._stderr = tempfile.TemporaryFile()
            stdio.quiet_stdout_noise()
            # env: the SDK's default environment (PATH, HOME, …) plus the file's own "env" — never the run's
            # whole environment, which holds connector keys a server could hand to the model
            return mcpsdk.stdio(spec.command, list(spec.arguments), dict(spec.env), spec.cwd or None, self._stderr)
        headers = {"Authorization": spec.authorization_token} if spec.authorization_token else None  # as is, as Yao sends it
        if spec.transport == "sse":
            return mcpsdk.sse(spec.url, headers, self._http_client)
        return mcpsdk.streamable_http(spec.url, headers, self._http_client)

    def _http_client(self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        """An HTTP client for the SDK's transports (httpx2 for 2.x, httpx for 1.x) that notes refusals (401, 404, …)
        for start errors."""
        http = mcpsdk.http_module()

        async def seen(response: Any) -> None:
            if response.status_code >= 400:
                self._refused = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()

        follow = {"follow_redirects": True} if mcpsdk.major() == 1 else {}  # as 1.x's own client factory does
        return http.AsyncClient(headers=headers, timeout=timeout or http.Timeout(30.0, read=300.0), auth=auth,
                                event_hooks={"response": [seen]}, **follow)

    def _detail(self, reason: str) -> str:
        refused = self._refused and self._refused.split()[1] not in reason  # not said twice
        return (f" (the server answered {self._refused})" if refused else "") + self.stderr_tail()

    async def _serve(self, ready: asyncio.Future[list[ToolInfo]]) -> None:
        try:
            async with mcpsdk.session(self._transport(), self.spec.timeout) as client:
                listing = await _listing(client)
                self._client = client
                ready.set_result(listing)
                await self._stopping.wait()
        except BaseException as exc:  # noqa: BLE001 — whatever the SDK raises is this server's failure
            if not isinstance(exc, Exception):
                if not ready.done():
                    ready.cancel()
                raise
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self._client = None

    async def start(self) -> list[ToolInfo]:
        """Start (or connect to) the server and list its tools; a failure is a usage error naming it."""
        _need_sdk(self.spec)
        ready: asyncio.Future[list[ToolInfo]] = asyncio.get_running_loop().create_future()
        if self.spec.transport == "stdio":
            await self._spawn(ready)
        else:
            self._task = asyncio.create_task(self._serve(ready), name=f"mcp server {self.spec.id}")
        limit = max(self.spec.timeout or 0, START_TIMEOUT)
        try:
            done, _ = await asyncio.wait({ready}, timeout=limit)
            if not done:
                raise self._failed(f"no answer within {limit:g}s")
            if ready.cancelled() or ready.exception() is not None:
                raise self._failed(_reason(ready.exception() or asyncio.CancelledError()))
            self._started = True
            return ready.result()
        except BaseException:
            await self.stop(now=True)
            raise

    def _dead(self) -> bool:
        """A stdio server that started, was not stopped, and has ended since (a tool of it called ``os._exit``,
        it crashed, it was killed): its client task is over."""
        task = self._task
        return (self.spec.transport == "stdio" and self._started and not self._stopping.is_set()
                and (task is None or task.done() or self._client is None or bool(self._group) and not any(stdio.alive(pid) for pid in self._group)))

    async def _revive(self) -> None:
        """Start a dead stdio server again (at most MAX_RESTARTS times a run), so that one case that kills it
        does not spoil every case after it; the case that gets the new server is told (a warning)."""
        self._restarting = self._restarting or asyncio.Lock()
        async with self._restarting:
            if not self._dead():  # another case restarted it meanwhile
                return
            tail = self.stderr_tail()
            if self._restarts >= MAX_RESTARTS:
                reason = f"mcp server '{self.spec.id}' exited and was started again {MAX_RESTARTS} times already; it is not restarted any more"
                raise CallError(reason + tail, cause=reason)
            self._restarts += 1
            self._stopping.set()  # the old client's task ends (its server is gone)
            old = self._task
            if old is not None and not old.done():
                old.cancel()
                await asyncio.wait({old}, timeout=STOP_TIMEOUT)
            stdio.kill(self._group)
            if self._stderr is not None:
                self._stderr.close()
            self._stopping = asyncio.Event()
            self._started = False
            try:
                await self.start()
            except AgentTestError as exc:
                reason = f"mcp server '{self.spec.id}' exited and could not be started again: {exc.problems[0].message}"
                raise CallError(reason, cause=reason) from None
            trace = current_trace.get()
            if trace is not None:
                trace.notes.append(f"mcp server '{self.spec.id}' had exited (an earlier call ended it{'' if not tail else ': ' + tail.strip()}); "
                                   f"it was started again for this case ({self._restarts} of at most {MAX_RESTARTS} restarts)")

    async def _spawn(self, ready: asyncio.Future[list[ToolInfo]]) -> None:
        """Start a stdio server and note its process group (the SDK makes the server a session leader but does
        not expose its pid): the new child that leads a group, watched for while no other server spawns."""
        loop = asyncio.get_running_loop()
        lock = _spawning.setdefault(loop, asyncio.Lock())
        async with lock:
            before = stdio.children()
            self._task = asyncio.create_task(self._serve(ready), name=f"mcp server {self.spec.id}")
            for _ in range(SPAWN_POLLS):
                await asyncio.sleep(0.005)
                self._group = {pid for pid in stdio.children() - before if stdio.leads_group(pid)}
                if self._group or self._task.done() or ready.done():
                    break

    def _failed(self, reason: str) -> AgentTestError:
        spec = self.spec
        where = " ".join((spec.command, *spec.arguments)) if spec.transport == "stdio" else spec.url
        text = f"mcp server '{spec.id}' ({spec.transport}: {where}) failed to start: {reason}{self._detail(reason)}"
        return AgentTestError(self.secrets.redact(text), Location(self.spec.path))

    def stderr_tail(self) -> str:
        """The last lines a stdio server wrote to stderr, indented under a message (or "")."""
        try:
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, min(size, 16384), max(0, size - 16384))  # pread: the server's offset stays
        except (AttributeError, ValueError, OSError):
            return ""
        lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()][-STDERR_LINES:]
        return "".join(f"\n  stderr: {self.secrets.redact(line)}" for line in lines)

    async def call(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Any:
        """Call a tool; its error result or a failed call raises CallError (the model is told). A stdio server
        that died since the last call is started again first."""
        if self._dead():
            await self._revive()
        client = self._client
        if client is None:
            raise CallError(f"mcp server '{self.spec.id}' is not running{self.stderr_tail()}", cause=f"mcp server '{self.spec.id}' is not running")
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as exc:  # timeouts, a closed connection, protocol errors: the call failed
            reason = f"mcp server '{self.spec.id}': {_reason(exc)}"
            raise CallError(reason + self.stderr_tail(), cause=reason) from None
        return _value(result)

    async def stop(self, now: bool = False) -> None:
        """Stop the server, waiting a bounded time: the SDK closes a stdio server's stdin (and ends it if it
        lingers); then whatever its process group still holds — grandchildren it started — is killed.
        ``now`` (a failed start, Ctrl-C): the group is killed first, so nothing waits for a grace period."""
        self._stopping.set()
        groups = self._group
        now = now or self._client is None  # still starting (the run was stopped meanwhile): no grace to wait for
        if now:
            stdio.kill(groups)
        task = self._task
        if task is not None and not task.done():
            if now:
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        stdio.kill(groups)
        if self._stderr is not None and not now:
            self._stderr.close()



def _need_sdk(spec: ServerSpec) -> None:
    """agent-test's MCP client works with the mcp SDK 2.x or 1.x from 1.10 on (agents/mcpsdk.py); an older or
    missing one is exit 2 saying so, not a traceback."""
    try:
        mcpsdk.major()
    except mcpsdk.Unusable as exc:
        oldest = ".".join(map(str, mcpsdk.OLDEST))
        raise AgentTestError(f"mcp server '{spec.id}': agent-test's MCP client needs the mcp SDK {oldest} or later (1.x or 2.x), "
                             f"but this environment has {exc}", Location(spec.path), f"pip install 'mcp>={oldest}'") from None


async def _listing(client: mcpsdk.Session) -> list[ToolInfo]:
    tools, cursor = [], None
    for _ in range(100):  # a server whose pages never end cannot hang the start
        page = await client.list_tools(cursor)
        tools += [ToolInfo(name, description, schema) for name, description, schema in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _value(result: mcpsdk.Called) -> Any:
    """A tool result as the trace keeps it: its text (text blocks joined), else its content blocks."""
    blocks = result.content
    if blocks and all(getattr(b, "type", None) == "text" for b in blocks):
        value: Any = "\n".join(b.text for b in blocks)
    elif blocks:
        value = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in blocks]
    else:
        value = result.structured
    if result.is_error:
        message = value if isinstance(value, str) and value else "the tool reported an error"
        raise CallError(message)
    return value


class ProcessServer:
    """A ``process`` server: each tool is a Python function, called in a daemon thread like the tools of
    ``src/tools.py``, with the arguments Yao's ``x-process-args`` maps (default: the arguments object)."""

    def __init__(self, spec: ServerSpec):
        self.spec = spec
        self.functions = {tool: function(path, name, f"mcp server '{spec.id}' tool '{tool}'") for tool, (path, name) in spec.functions.items()}
        for tool, schema in spec.schemas.items():
            mapping = schema.get("x-process-args")
            if mapping is not None and not (isinstance(mapping, list) and all(isinstance(a, str) for a in mapping)):
                raise AgentTestError(f"tool '{tool}': 'x-process-args' must be a list of strings", Location(spec.path))

    async def start(self) -> list[ToolInfo]:
        return [ToolInfo(tool, str(schema.get("description", "")), {k: v for k, v in schema.items() if k != "x-process-args"})
                for tool, schema in self.spec.schemas.items()]

    async def call(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Any:
        fn = self.functions[tool]
        args = [_process_arg(a, arguments) for a in self.spec.schemas[tool].get("x-process-args") or [":arguments"]]
        if _accepts(fn, len(args) + 1):
            args.append(ctx)  # Yao passes the agent's context after the mapped arguments
        return await usercalls.call(fn, *args, what=f"mcp tool {self.spec.id}.{tool}")

    async def stop(self) -> None:
        pass


def _process_arg(spec: str, arguments: dict[str, Any]) -> Any:
    """``:arguments`` (all), ``$args.a.b`` or ``$a.b`` (a field, None when missing), else a constant."""
    if spec == ":arguments":
        return arguments
    if not spec.startswith("$"):
        return spec
    value: Any = arguments
    for part in spec[1:].removeprefix("args.").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _accepts(fn: Any, count: int) -> bool:
    try:
        inspect.signature(fn).bind(*range(count))
    except (TypeError, ValueError):
        return False
    return True


class Servers:
    """The MCP servers of a run, by file: read when an agent naming them loads, started on first need
    (each once), stopped by ``aclose``."""

    def __init__(self, app: App, secrets: Secrets, warnings: list[str]):
        self.app = app
        self.secrets = secrets
        self.warnings = warnings
        self._servers: dict[str, Server] = {}  # by file
        self._uses: dict[str, list[tuple[McpUse, str]]] = {}  # by agent ID: each use and its server's file
        self._starts: dict[str, asyncio.Task[list[ToolInfo]]] = {}

    def check(self, spec: AgentSpec) -> None:
        """Find and read the server files an agent names (load time); raises AgentTestError."""
        uses = []
        for use in spec.mcp:
            path, owner = locate(self.app, spec.id, spec.path, use.server)
            if path not in self._servers:
                server = read(path, use.server, self.app, owner, self.secrets, self.warnings)
                self._servers[path] = ProcessServer(server) if server.transport == "process" else Connection(server, self.secrets)
            uses.append((use, path))
        self._uses[spec.id] = uses

    async def _start(self, path: str) -> list[ToolInfo]:
        if path not in self._starts:
            self._starts[path] = asyncio.create_task(self._servers[path].start())
        return await asyncio.shield(self._starts[path])  # a cancelled case does not cancel a shared start

    async def tools(self, spec: AgentSpec) -> list[Tool]:
        """The agent's MCP tools, starting its servers if needed; start failures raise AgentTestError."""
        if spec.id not in self._uses:
            self.check(spec)
        uses = self._uses[spec.id]
        listings = await asyncio.gather(*(self._start(path) for _, path in uses), return_exceptions=True)
        tools: list[Tool] = []
        problems = []
        for (use, path), listing in zip(uses, listings):
            try:
                if isinstance(listing, BaseException):
                    raise listing
                tools += self._offered(spec, use, self._servers[path], listing)
            except AgentTestError as exc:
                problems += exc.problems
        if problems:
            raise InputError(problems)
        return tools

    def _offered(self, spec: AgentSpec, use: McpUse, server: Server, listing: list[ToolInfo]) -> list[Tool]:
        by_name = {t.name: t for t in listing}
        for wanted in use.tools:
            if wanted not in by_name:
                hint = did_you_mean(wanted, by_name) or f"its tools: {', '.join(by_name) or 'none'}"
                raise AgentTestError(f"agent {spec.id}: mcp server '{use.server}' has no tool '{wanted}'",
                                     Location(os.path.join(spec.path, "package.yao")), hint)
        chosen = [by_name[n] for n in use.tools] if use.tools else listing
        return [_tool(use.server, server, info) for info in chosen]

    async def aclose(self) -> None:
        """Stop every server (concurrently) and wait for their starts to settle."""
        await asyncio.gather(*(s.stop() for s in self._servers.values()), return_exceptions=True)
        await asyncio.gather(*self._starts.values(), return_exceptions=True)


def _tool(server_id: str, server: Server, info: ToolInfo) -> Tool:
    name = tool_name(server_id, info.name)

    async def call(ctx: Context, arguments: dict[str, Any]) -> Any:
        return await server.call(info.name, arguments, ctx)

    return Tool(name, {"name": name, "description": info.description, "parameters": info.schema}, call, server_id)
