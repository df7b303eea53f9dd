"""MCP server files as Yao writes them (FORMATS §12): ``<root>/mcps/<a>/<b>.mcp.yao`` (ID ``a.b``) and an
agent's own ``mcps/<name>.mcp.yao``, read into ``ServerSpec``s with ``$ENV`` values substituted (the credentials
among them are secrets); and the name a server's tool has for the model, ``server__tool``."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from agenttest.app.folders import App
from agenttest.util.paths import inside
from agenttest.util.durations import parse_duration
from agenttest.errors import AgentTestError, Location, did_you_mean, typo_of
from agenttest.util.secrets import Secrets
from agenttest.app.credentials import credentials
from agenttest.app.yaofiles import jsonc_location, read_jsonc, substitute_env

SUFFIXES = (".mcp.yao", ".mcp.json", ".mcp.jsonc")
TRANSPORTS = ("stdio", "http", "sse", "process")
KEYS = {"transport", "command", "arguments", "env", "url", "authorization_token", "timeout", "tools"}
# Yao's descriptive keys change nothing about how a server runs: ignored without a word
QUIET_KEYS = {"id", "name", "version", "label", "description", "tags", "readonly", "builtin", "built_in", "sort",
              "icon", "capabilities", "enable_sampling", "enable_roots", "roots_list_changed", "enable_elicitation"}
PYTHONS = ("python", "python3")  # the Python running agent-test, so the server sees the same packages


@dataclass(frozen=True, kw_only=True)
class ServerSpec:
    """One server file: how to reach or start the server. ``id`` is the ID that named it."""

    id: str
    path: str
    transport: str
    command: str = ""
    arguments: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    authorization_token: str = ""
    timeout: float | None = None
    functions: dict[str, tuple[str, str]] = field(default_factory=dict)  # process: tool → (file.py, function)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # process: tool → input schema


def _ids_under(folder: str) -> dict[str, str]:
    """Server IDs → files under an ``mcps/`` folder (its ``mapping/`` holds schemas, not servers)."""
    found: dict[str, str] = {}
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not (current == folder and d == "mapping") and not d.startswith("."))
        for name in sorted(files):
            suffix = next((s for s in SUFFIXES if name.endswith(s)), None)
            if suffix:
                rel = os.path.relpath(os.path.join(current, name[: -len(suffix)]), folder)
                found.setdefault(rel.replace(os.sep, "."), os.path.join(current, name))
    return found


def locate(app: App, agent_id: str, agent_folder: str, server_id: str) -> tuple[str, str | None]:
    """The file of a server an agent names, and the agent folder it belongs to (None for ``<root>/mcps``):
    the agent's own ``mcps/<id>`` (also under Yao's full ID ``agents.<agent>.<id>``, which names any
    agent's), else ``<root>/mcps/<id>``; an unknown ID is a usage error with a did-you-mean hint."""
    own = _ids_under(os.path.join(agent_folder, "mcps"))
    if server_id in own:
        return own[server_id], agent_folder
    parts = server_id.split(".")
    for cut in range(2, len(parts)) if parts[0] == "agents" else ():
        folder = app.agent_folder(".".join(parts[1:cut]))
        theirs = _ids_under(os.path.join(folder, "mcps")) if folder else {}
        if ".".join(parts[cut:]) in theirs:
            return theirs[".".join(parts[cut:])], folder
    shared = _ids_under(os.path.join(app.root, "mcps"))
    if server_id in shared:
        return shared[server_id], None
    known = sorted(own) + sorted(shared)
    hint = did_you_mean(server_id, known)
    listing = f"known servers: {', '.join(known)}" if known else f"no *.mcp.yao under {agent_folder}/mcps or {app.root}/mcps"
    raise AgentTestError(f"agent {agent_id}: unknown mcp server '{server_id}'",
                         Location(os.path.join(agent_folder, "package.yao")), f"{hint} {listing}" if hint else listing)


def read(path: str, server_id: str, app: App, agent_folder: str | None, secrets: Secrets, warnings: list[str]) -> ServerSpec:
    """Read and check one server file (``agent_folder`` for an agent's own); raises AgentTestError."""
    real, top = os.path.realpath(path), os.path.realpath(app.root)
    if os.path.commonpath([real, top]) != top:
        raise AgentTestError(f"MCP server '{server_id}' leads outside the app root: {path} is a link to {real}",
                             hint=f"keep what the app uses inside {app.root}")
    data = read_jsonc(path)
    where = Location(path)
    if not isinstance(data, dict):
        raise AgentTestError("an mcp server file must be a JSON object", where, 'e.g. {"transport": "stdio", "command": "python", "arguments": ["server.py"]}')
    _check_keys(data, path, warnings)
    transport = data.get("transport")
    if transport not in TRANSPORTS:
        hint = did_you_mean(str(transport), TRANSPORTS) if isinstance(transport, str) else None
        raise AgentTestError(f"'transport' must be one of {', '.join(TRANSPORTS)}, not {transport!r}", where, hint)
    found: dict[str, str] = {}
    values = {k: substitute_env(data[k], f"{path}: '{k}'", found) for k in ("command", "arguments", "env", "url", "authorization_token") if k in data}
    for value, name in credentials(data, values, found):  # the token, env values named for one, a URL's password
        secrets.add(value, name)
    spec = ServerSpec(id=server_id, path=path, transport=transport, cwd=app.root, timeout=_timeout(data.get("timeout"), where))
    if transport == "stdio":
        return _stdio(spec, values, where)
    if transport in ("http", "sse"):
        url, token = values.get("url"), values.get("authorization_token", "")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise AgentTestError(f"an {transport} server needs a 'url' (http:// or https://)", where)
        if not isinstance(token, str):
            raise AgentTestError("'authorization_token' must be a string", where)
        return replace(spec, url=url, authorization_token=token)
    return _process(spec, data.get("tools"), app, agent_folder, where)


def _check_keys(data: dict[str, Any], path: str, warnings: list[str]) -> None:
    unknown = [k for k in data if k not in KEYS and k not in QUIET_KEYS]
    for key in unknown:
        typo = typo_of(key, KEYS)
        if typo:
            raise AgentTestError(f"'{key}' is not a field of an mcp server file", jsonc_location(path, (key,)), f"did you mean '{typo}'?")
    if unknown:
        warnings.append(f"{path}: ignored (not used by agent-test): {', '.join(unknown)}")


def _timeout(value: Any, where: Location) -> float | None:
    if value in (None, ""):
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise AgentTestError(f"'timeout': {exc}", where) from None


def _stdio(spec: ServerSpec, values: dict[str, Any], where: Location) -> ServerSpec:
    command, arguments, env = values.get("command"), values.get("arguments", []), values.get("env", {})
    if not isinstance(command, str) or not command.strip():
        raise AgentTestError("a stdio server needs a 'command'", where, 'e.g. "command": "python", "arguments": ["server.py"]')
    if not isinstance(arguments, list) or not all(isinstance(a, (str, int, float)) for a in arguments):
        raise AgentTestError("'arguments' must be a list of strings", where)
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, float)) for v in env.values()):
        raise AgentTestError("'env' must be an object of strings", where)
    command = sys.executable if command in PYTHONS else command
    return replace(spec, command=command, arguments=tuple(str(a) for a in arguments), env={str(k): str(v) for k, v in env.items()})


def _process(spec: ServerSpec, tools: Any, app: App, agent_folder: str | None, where: Location) -> ServerSpec:
    """A ``process`` server: Python functions, with input schemas from ``mcps/mapping/<id>/schemes/``."""
    if not isinstance(tools, dict) or not tools or not all(isinstance(v, str) for v in tools.values()):
        raise AgentTestError("a process server needs 'tools': {\"name\": \"module.Function\", …}", where)
    base = agent_folder or app.root
    mcps = os.path.join(base, "mcps")
    rel = os.path.relpath(spec.path, mcps)
    key = next(rel[: -len(s)] for s in SUFFIXES if rel.endswith(s))  # the file's ID path: nested/tool
    functions, schemas = {}, {}
    for tool, ref in tools.items():
        functions[tool] = _function(ref, app, agent_folder, where)
        scheme = os.path.join(mcps, "mapping", key, "schemes", f"{tool}.in.yao")
        if not os.path.isfile(scheme):
            raise AgentTestError(f"tool '{tool}' has no input schema", where, f"write its JSON Schema to {scheme}")
        schema = read_jsonc(scheme)
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            raise AgentTestError("an input schema must be a JSON Schema object ({\"type\": \"object\", \"properties\": {…}})", Location(scheme))
        schemas[tool] = schema
    return replace(spec, functions=functions, schemas=schemas)


def _function(ref: str, app: App, agent_folder: str | None, where: Location) -> tuple[str, str]:
    """``module.Function`` → the agent's ``src/module.py``; ``scripts.module.Function`` → ``<root>/scripts/
    module.py``; ``agents.<agent>.module.Function`` → that agent's ``src/module.py``."""
    parts = ref.split(".")
    if len(parts) < 2 or not all(parts):
        raise AgentTestError(f"'{ref}' is not module.Function", where)
    module, name = parts[:-1], parts[-1]
    if module[0] == "scripts" and len(module) > 1:
        return app.script_path(".".join(module[1:])), name
    if module[0] == "agents":
        for cut in range(len(module) - 1, 1, -1):
            folder = app.agent_folder(".".join(module[1:cut]))
            if folder:
                return inside(folder, ".".join(module[cut:]), "src", suffix=".py", what=f"MCP tool function '{ref}'"), name
        raise AgentTestError(f"'{ref}': no agent {'.'.join(module[1:-1])}", where)
    if agent_folder is None:
        raise AgentTestError(f"'{ref}': a process server under {os.path.join(app.root, 'mcps')} names scripts.<module>.<Function> "
                             "or agents.<agent>.<module>.<Function>", where)
    return inside(agent_folder, ".".join(module), "src", suffix=".py", what=f"MCP tool function '{ref}'"), name
