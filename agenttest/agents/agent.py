"""An agent: its folder (package.yao, prompts.yml, src/tools.py, src/index.py) and its run — the
create hook, the model call, the tool loop, the next hook — giving a Reply."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agenttest.speed.records import replace
from agenttest.app import prompts
from agenttest.runtime import usercalls
from agenttest.connectors import ChatRequest, Connector
from agenttest.errors import AgentTestError, CallError, CallLimit, Location, did_you_mean, typo_of
from agenttest.model import Completion, Context, Limits, Message, OutputFrom, Reply, ToolCall, Usage
from agenttest.model.kinds import OUTPUT_FROM
from agenttest.model.parameters import CHAT_PARAMETERS, TRANSPORT, not_sent, request_options
from agenttest.util.text import cleaned, safe_text
from agenttest.util.values import fresh, sendable
from agenttest.runtime.trace import record_call, record_tool_call, tool_world
from agenttest.runtime.node.yaohooks import index_hooks
from agenttest.app.yaofiles import jsonc_location, load_module, read_jsonc, typescript_port

KNOWN_KEYS = {"name", "description", "connector", "options", "tools", "mcp", "max_tool_rounds", "output_from"}
YAO_KEYS = {"label", "type", "public", "placeholder", "prompts", "automated", "mentionable", "readonly",
            "built_in", "sort", "tags", "avatar", "locales", "uses", "kb", "db", "search", "workflow",
            "modes", "default_mode", "source", "prompt_presets", "disable_global_prompts", "created_at", "updated_at",
            "sandbox", "hooks", "capabilities", "share", "icon"}
YAO_META_PREFIX = "__yao_"  # what Yao's store writes on save: __yao_created_by, __yao_team_id, …
DEFAULT_TOOL_ROUNDS = 10
PUBLISHED = ("interaction", "facts", "status")  # what a Next hook may publish for the observation beside its data


@dataclass(frozen=True)
class McpUse:
    """One entry of package.yao's ``mcp.servers``: a server ID and the tools chosen from it (all when empty)."""

    server: str
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    id: str
    path: str
    name: str = ""
    description: str = ""
    connector: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    tools: tuple[dict[str, Any], ...] = ()
    prompts: tuple[Message, ...] = ()
    max_tool_rounds: int = DEFAULT_TOOL_ROUNDS
    global_prompts: tuple[Message, ...] = ()  # the app's agent/prompts.yml, before the agent's own
    connector_at: Location | None = None  # where package.yao names its connector
    mcp: tuple[McpUse, ...] = ()
    output_from: OutputFrom = "text"  # "tool_result": the agent's answer is its tool call (FORMATS §4)

    def info(self) -> dict[str, Any]:
        """What generators are told about the agent: ``{"id", "description", "tools"}``."""
        return {"id": self.id, "description": self.description, "tools": [dict(t) for t in self.tools]}


def load_spec(agent_id: str, folder: str, warnings: list[str], strict: bool = False,
              global_prompts: tuple[Message, ...] = ()) -> AgentSpec:
    """Read an agent folder; problems are usage errors with the file's location. Yao's keys that agent-test
    does not use are ignored with one warning; a misspelt key is an error; other unknown keys are ignored
    with a warning, or errors when ``strict``."""
    pkg_path = os.path.join(folder, "package.yao")
    pkg = read_jsonc(pkg_path)
    if not isinstance(pkg, dict):
        raise AgentTestError("package.yao must be a JSON object", Location(pkg_path))
    for key in pkg:
        if key in KNOWN_KEYS or key in YAO_KEYS or key.startswith(YAO_META_PREFIX):
            continue
        typo = typo_of(key, KNOWN_KEYS)
        if typo or strict:
            hint = f"did you mean '{typo}'?" if typo else "unknown keys are errors with --strict"
            raise AgentTestError(f"'{key}' is not a field of package.yao", jsonc_location(pkg_path, (key,)), hint)
        warnings.append(f"{pkg_path}: '{key}' is not a field of package.yao; ignored")
    ignored = [k for k in pkg if k in YAO_KEYS or k.startswith(YAO_META_PREFIX)]
    if ignored:
        warnings.append(f"{pkg_path}: ignored (not used by agent-test): {', '.join(ignored)}")
    options = dict(pkg.get("options") or {})
    unsent = [k for k in options if k not in CHAT_PARAMETERS and k not in TRANSPORT]
    if unsent:
        warnings.append(not_sent(unsent, f"{pkg_path}: options"))
    tools = tuple(_tool_schema(t, pkg_path) for t in pkg.get("tools") or ())
    return AgentSpec(
        id=agent_id,
        path=folder,
        name=str(pkg.get("name", agent_id)),
        description=str(pkg.get("description", "")),
        connector=str(pkg.get("connector", "")),
        options=options,
        tools=tools,
        prompts=prompts.load(os.path.join(folder, "prompts.yml")),
        global_prompts=() if pkg.get("disable_global_prompts") else global_prompts,
        connector_at=_key_location(pkg_path, "connector"),
        max_tool_rounds=int(pkg.get("max_tool_rounds", DEFAULT_TOOL_ROUNDS)),
        mcp=_mcp_uses(pkg.get("mcp"), pkg_path),
        output_from=_output_from(pkg.get("output_from", "text"), pkg_path),
    )


def _output_from(value: Any, where: str) -> OutputFrom:
    """package.yao's ``output_from``: what the agent's output is (its final reply, or its first tool result)."""
    if value not in OUTPUT_FROM:
        raise AgentTestError(f"'output_from' must be \"text\" or \"tool_result\", not {value!r:.80}", _key_location(where, "output_from") or Location(where),
                             "\"tool_result\" when the agent's answer is its tool call: its first tool result is then the output")
    return value  # type: ignore[no-any-return]


def _mcp_uses(raw: Any, where: str) -> tuple[McpUse, ...]:
    """``"mcp": {"servers": ["id", {"server_id": "id", "tools": ["name", …]}]}`` (Yao's shape)."""
    if raw is None:
        return ()
    example = 'e.g. "mcp": {"servers": ["rates", {"server_id": "search", "tools": ["find"]}]}'
    servers = raw.get("servers") if isinstance(raw, dict) else None
    if not isinstance(servers, list):
        raise AgentTestError("'mcp' must be an object with a 'servers' list", Location(where), example)
    uses = []
    for item in servers:
        if isinstance(item, str) and item:
            uses.append(McpUse(item))
            continue
        server = item.get("server_id") if isinstance(item, dict) else None
        tools = item.get("tools") or [] if isinstance(item, dict) else None
        if not isinstance(server, str) or not server or not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise AgentTestError(f"'mcp.servers' entries are server IDs or {{\"server_id\", \"tools\"}} objects, not {item!r:.80}", Location(where), example)
        uses.append(McpUse(server, tuple(tools)))
    return tuple(uses)


def _key_location(path: str, key: str) -> Location | None:
    """``file:line:column`` of a top-level key in a JSON-with-comments file (for messages that point at it)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    m = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    return Location(path, line, m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1)


def _tool_schema(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict):
        raw = raw["function"]
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise AgentTestError(f"{where}: each tool needs a 'name'", hint="tools are OpenAI function schemas: {\"name\", \"description\", \"parameters\"}")
    schema = {"name": raw["name"], "description": raw.get("description", "")}
    schema["parameters"] = raw.get("parameters") or {"type": "object", "properties": {}}
    return schema


Connect = Callable[[str], Connector]
ToolFunction = Callable[[Context, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """A tool offered to the model: its schema (``{"name", "description", "parameters"}``) and how to call
    it (``await call(ctx, arguments)``, raising CallError). ``server`` names the MCP server it comes from."""

    name: str
    schema: dict[str, Any]
    call: ToolFunction
    server: str | None = None


def python_tool(schema: dict[str, Any], fn: Callable[..., Any]) -> Tool:
    """A tool implemented by a Python function ``fn(ctx, **arguments)`` (the agent's ``src/tools.py``)."""
    name = schema["name"]

    async def call(ctx: Context, arguments: dict[str, Any]) -> Any:
        return await usercalls.call(fn, ctx, what=f"tool {name}", kwargs=arguments)  # arguments may be named what or timeout

    return Tool(name, schema, call)


def unimplemented_tool(schema: dict[str, Any], agent_id: str) -> Tool:
    """A tool the agent declares but has no function for: offered to the model; a call that no mock of
    the case answers is an error result naming it."""
    name = schema["name"]

    async def call(ctx: Context, arguments: dict[str, Any]) -> Any:
        raise CallError(f"agent {agent_id} has no implementation of tool '{name}' (give the case a mock for it)")

    return Tool(name, schema, call)


class Agent:
    """A loaded agent and how to run it; ``connect`` turns a connector ID into a Connector. ``tools`` are
    the agent's Python tools, plus any given (e.g. from MCP servers)."""

    def __init__(self, spec: AgentSpec, connect: Connect, tools: tuple[Tool, ...] = ()):
        self.spec = spec
        self.connect = connect
        self.warnings: list[str] = []
        src = os.path.join(spec.path, "src")
        self.counters: tuple[str, ...] = ()  # the counters its tools module declares (METRICS): 0 until counted
        self.tools = {t.name: t for t in (*self._python_tools(os.path.join(src, "tools.py")), *tools)}
        self.schemas = tuple(t.schema for t in self.tools.values())
        index = os.path.join(src, "index.py")
        module = load_module(index) if os.path.isfile(index) else None
        self.create_hook = getattr(module, "create", None) or getattr(module, "Create", None)
        self.next_hook = getattr(module, "next", None) or getattr(module, "Next", None)
        if module is None:  # Yao's src/index.ts, run in Node
            self.create_hook, self.next_hook = index_hooks(src)

    @property
    def id(self) -> str:
        return self.spec.id

    def add_tools(self, tools: tuple[Tool, ...] | list[Tool]) -> None:
        """Offer more tools (an MCP server's, once it runs); a name the agent already has keeps its tool."""
        for tool in tools:
            self.tools.setdefault(tool.name, tool)
        self.schemas = tuple(t.schema for t in self.tools.values())

    def _python_tools(self, path: str) -> list[Tool]:
        """The declared tools with their functions; a near-miss function name is a load error (a typo), a
        tool with no function at all is a warning: calls to it need a mock (FORMATS §11)."""
        if not self.spec.tools:
            return []
        if not os.path.isfile(path):
            port = typescript_port(path, f"agent {self.spec.id}'s tools")
            if port is not None:  # a Yao agent's tools.ts: say which file to port rather than mock everything
                raise port
        module = load_module(path) if os.path.isfile(path) else None
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")] if module else []
        self.counters = _declared(getattr(module, "METRICS", ()), path)
        found, missing = [], []
        for schema in self.spec.tools:
            fn = _function(module, schema["name"])
            if callable(fn):
                found.append(python_tool(schema, fn))
                continue
            hint = did_you_mean(schema["name"], names)
            if hint:
                raise AgentTestError(f"agent {self.spec.id}: tool '{schema['name']}' has no function in {path}", hint=hint)
            found.append(unimplemented_tool(schema, self.spec.id))
            missing.append(schema["name"])
        if missing:
            listed = ("tool " if len(missing) == 1 else "tools ") + ", ".join(repr(m) for m in missing)
            why = f"{listed} {'has' if len(missing) == 1 else 'have'} no function in {path}" if module else f"{path} does not exist: {listed} cannot run"
            self.warnings.append(f"agent {self.spec.id}: {why}; a call is an error result unless the case mocks the tool")
        return found

    def connector_id(self, override: str | None = None) -> str:
        chosen = override or self.spec.connector
        if not chosen:
            raise AgentTestError(f"agent {self.spec.id} has no connector", hint="set \"connector\" in package.yao or pass -c")
        return chosen

    async def run(self, ctx: Context, messages: list[Message], connector: str | None = None, options: dict[str, Any] | None = None,
                  limits: Limits = Limits()) -> Reply:
        """Answer a conversation: hooks, model calls and the tool loop. Failures raise CallError; a model call
        past ``limits.model_calls`` raises CallLimit; a call of one of ``limits.end_tools`` ends the loop
        after its result, without asking the model again."""
        conversation = self._prompts(ctx) + list(messages)
        world = tool_world()
        if world is not None and self.counters:  # declared counters read 0 until a tool counts them
            for name in self.counters:
                world.counters.setdefault(name, 0)
        if self.create_hook is not None:  # its own copy: what it changes in place is sent, and no other case sees it
            conversation = fresh(conversation)
            created = await usercalls.call(self.create_hook, ctx, conversation, what="create hook")
            conversation, connector = _created(created, conversation, connector)
        try:
            connector_id = self.connector_id(connector)
            model = self.connect(connector_id)
        except AgentTestError as exc:
            raise CallError(str(exc)) from None
        opts = request_options({**self.spec.options, **(options or {})})
        world = tool_world()
        schemas = self.schemas + world.tools() if world is not None else self.schemas  # a scenario's packs offer tools too
        max_rounds = max(self.spec.max_tool_rounds, limits.tool_rounds or 0)
        new: list[Message] = []
        calls: list[ToolCall] = []
        usage, rounds = Usage(), 0
        while True:
            if limits.model_calls is not None and rounds >= limits.model_calls:
                raise CallLimit("the budget allows no more model calls")
            if world is not None:
                world.model_turn()  # a scenario's virtual clock (and its budget of virtual time)
            rounds += 1
            started = time.perf_counter()
            try:
                completion = _entered(await model.complete(ChatRequest(conversation + new, schemas, opts, self.spec.path)))
            except AgentTestError as exc:
                raise CallError(str(exc)) from None
            usage += completion.usage
            record_call(connector_id, completion, (time.perf_counter() - started) * 1000)
            if not completion.tool_calls:
                new.append({"role": "assistant", "content": completion.content})
                break
            if rounds > max_rounds:
                raise CallError(f"tool loop exceeded {max_rounds} rounds (last tools: {', '.join(c.name for c in completion.tool_calls)})")
            new.append(_assistant_message(completion.content, completion.tool_calls))
            ran = await asyncio.gather(*(self._run_tool(ctx, c) for c in completion.tool_calls))
            calls += ran
            new += [{"role": "tool", "tool_call_id": c.id, "content": _tool_content(c)} for c in ran]
            if any(c.name in limits.end_tools for c in ran):
                break
        reply = Reply(text=completion.content, messages=tuple(new), tool_calls=tuple(calls), usage=usage, model_calls=rounds, output_from=self.spec.output_from,
                      truncated=completion.finish_reason == "length")
        if self.next_hook is not None:
            reply = await self._next(ctx, conversation, reply)
        return reply

    def _prompts(self, ctx: Context) -> list[Message]:
        """Global prompts (unless the case's options disable them), then the agent's, variables substituted."""
        options = getattr(ctx, "options", None) or {}
        chosen = (() if options.get("disable_global_prompts") else self.spec.global_prompts) + self.spec.prompts
        return prompts.render(chosen, prompts.context_variables(ctx, self.spec.id, self.spec.name)) if chosen else []

    async def _run_tool(self, ctx: Context, call: ToolCall) -> ToolCall:
        """Run one tool call the model asked for; a failure is the call's error, fed back to the model.

        Every call, whatever the tool's source, passes here: the case's tool world may answer it instead
        of the tool — an injected fault, else a matching mock."""
        start = time.perf_counter()
        result, error, outcome, raised = None, None, None, None
        world = tool_world()
        vt = world.enter(call.name) if world is not None else ""  # a scenario's clock and step budget (BudgetExceeded)
        tool = self.tools.get(call.name) or (world.tool(call.name) if world is not None else None)
        if tool is None:
            error = f"agent {self.spec.id} has no tool '{call.name}'"
        elif not isinstance(call.arguments, dict):
            error = f"invalid arguments for {call.name}: expected a JSON object, got {call.arguments!r}"
        elif world is not None and (outcome := world.intercept(call.name, call.arguments)) is not None and not outcome.commit:
            if outcome.delay:
                await asyncio.sleep(outcome.delay)
            result, error = outcome.result, outcome.error
        else:
            try:
                result = sendable(await tool.call(ctx, call.arguments), f"tool {call.name}")
            except CallError as exc:
                error, raised = exc.cause, exc
            if outcome is not None:  # commit_timeout: it ran and took effect; its answer is lost on the way back
                result, error, raised = None, outcome.error, None
        server = tool.server if tool is not None else None
        violation = outcome.violation if outcome is not None else raised.denied if raised is not None else ""
        done = ToolCall(name=call.name, arguments=call.arguments, id=call.id, result=result, error=error, duration_ms=(time.perf_counter() - start) * 1000, server=server,
                        mocked=outcome is not None and outcome.mocked, fault=outcome.fault if outcome is not None else None,
                        location=raised.location if raised else "", traceback=(raised.traceback or "") if raised else "", vt=vt,
                        violation=violation)
        record_tool_call(done)
        return done

    async def _next(self, ctx: Context, conversation: list[Message], reply: Reply) -> Reply:
        calls = [c.as_dict() for c in reply.tool_calls]
        payload = {
            "messages": fresh(conversation + list(reply.messages)),
            "completion": {"content": reply.text, "tool_calls": calls},
            "tools": calls,
            "error": None,
        }
        result = await usercalls.call(self.next_hook, ctx, payload, what="next hook")  # type: ignore[arg-type]
        if not isinstance(result, dict):
            return reply
        published = {k: sendable(result[k], "next hook", f"its '{k}'") for k in PUBLISHED if k in result}
        if published:  # what the turn's observation shows (docs/formats-a.md): the interaction, facts, status
            reply = replace(reply, published=published)
        if "data" in result:  # the case's output: JSON as a tool's result is (sets as lists, …)
            return replace(reply, data=sendable(result["data"], "next hook", "the case's output"), has_data=True)
        return reply


def _function(module: Any, name: str) -> Any:
    """The function of tool ``name`` in the tools module: its own name, or — for a dotted name such as
    ``refund.create``, which Python cannot spell — the name with dots as underscores (``refund_create``)."""
    fn = getattr(module, name, None)
    if fn is None and "." in name:
        fn = getattr(module, name.replace(".", "_"), None)
    return fn if callable(fn) else None


def _declared(raw: Any, where: str) -> tuple[str, ...]:
    """A tools module's ``METRICS``: the names of the counters its tools keep (a list, or a dict name → meaning)."""
    names = list(raw) if isinstance(raw, (list, tuple, dict)) else None
    if names is None or not all(isinstance(n, str) and n for n in names):
        raise AgentTestError(f"{where}: METRICS must be a list of counter names (or a dict of name → meaning)",
                             hint='e.g. METRICS = ["refund_count", "refunded_cents"]')
    return tuple(names)


def _created(created: Any, conversation: list[Message], connector: str | None) -> tuple[list[Message], str | None]:
    """Apply a create hook's return value: ``{"messages": [...]}`` and/or ``{"connector": ID}``."""
    if created is None:
        return conversation, connector
    if not isinstance(created, dict):
        raise CallError(f"create hook returned {type(created).__name__}; return None or a dict with 'messages' and/or 'connector'")
    messages = created.get("messages")
    if messages is not None:
        if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
            raise CallError(f"create hook returned 'messages' that is not a list of {{role, content}} messages: {messages!r:.200}")
        if not messages:  # an endpoint answers an empty conversation with a 400 (or not at all)
            raise CallError("create hook returned an empty 'messages' list: the model would be sent no messages; "
                            "return None (or leave 'messages' out) to keep the conversation")
        conversation = messages
    chosen = created.get("connector")
    if chosen is not None and not isinstance(chosen, str):
        raise CallError(f"create hook returned 'connector' that is not a connector ID: {chosen!r:.200}")
    return conversation, chosen or connector


def _assistant_message(content: str, calls: tuple[ToolCall, ...]) -> Message:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False) if not isinstance(c.arguments, str) else c.arguments}}
            for c in calls
        ],
    }


def _entered(completion: Completion) -> Completion:
    """A model's answer with its text made safe to write anywhere (a lone surrogate from a proxy that cut an
    emoji becomes U+FFFD): whatever the connector, text enters the run here."""
    content = safe_text(completion.content or "")
    if not completion.tool_calls:
        return completion if content is completion.content else replace(completion, content=content)
    calls = tuple(replace(c, name=safe_text(c.name), id=safe_text(c.id), arguments=cleaned(c.arguments)) for c in completion.tool_calls)
    return replace(completion, content=content, tool_calls=calls)


def _tool_content(call: ToolCall) -> str:
    if call.error is not None:
        return json.dumps({"error": call.error}, ensure_ascii=False)
    if isinstance(call.result, str):
        return call.result
    return json.dumps(call.result, ensure_ascii=False)
