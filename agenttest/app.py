"""The app folder: its root, agent IDs → folders, connector files, user Python modules (FORMATS §1)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import threading
from typing import Any

from .errors import AgentTestError, Location, did_you_mean

_ENV = re.compile(r"\$ENV\.([A-Za-z_][A-Za-z0-9_]*)")


def find_root(explicit: str | None, input_path: str | None, cwd: str | None = None) -> str | None:
    """``--app``, else ``$AGENTTEST_APP``, else the nearest folder above the input file, then above the
    current folder, holding ``assistants/`` or ``app.yao``."""
    chosen = explicit or os.environ.get("AGENTTEST_APP")
    if chosen:
        if not os.path.isdir(chosen):
            source = "--app" if explicit else "$AGENTTEST_APP"
            raise AgentTestError(f"{source}: '{chosen}' is not a folder")
        return os.path.abspath(chosen)
    starts = []
    if input_path and os.path.exists(input_path):
        starts.append(os.path.dirname(os.path.abspath(input_path)))
    starts.append(os.path.abspath(cwd or os.getcwd()))
    for start in starts:
        folder = start
        while True:
            if os.path.isdir(os.path.join(folder, "assistants")) or os.path.isfile(os.path.join(folder, "app.yao")):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return None


def strip_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas → JSON (strings left alone)."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(ch)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def read_jsonc(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise AgentTestError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return json.loads(strip_comments(text))
    except json.JSONDecodeError as exc:
        raise AgentTestError(f"invalid JSON: {exc.msg}", Location(path, exc.lineno, exc.colno)) from None


def substitute_env(value: Any, where: str, secrets: set[str] | None = None) -> Any:
    """Replace ``$ENV.NAME`` in every string; an unset variable is an error naming it."""
    if isinstance(value, str):
        def repl(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in os.environ:
                raise AgentTestError(f"{where}: environment variable {name} is not set", hint=f"export {name}=…")
            return os.environ[name]

        result = _ENV.sub(repl, value)
        if secrets is not None and result != value:
            secrets.add(result)
        return result
    if isinstance(value, dict):
        return {k: substitute_env(v, where, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, where, secrets) for v in value]
    return value


_module_lock = threading.Lock()


def load_module(path: str) -> Any:
    """Import a user's Python file once; its folder goes at the end of sys.path so that sibling modules
    import, without shadowing the standard library or installed packages (a user's ``json.py``)."""
    key = "agenttest_user." + re.sub(r"\W", "_", os.path.abspath(path))
    with _module_lock:
        if key in sys.modules:
            return sys.modules[key]
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.append(folder)
        spec = importlib.util.spec_from_file_location(key, path)
        if spec is None or spec.loader is None:
            raise AgentTestError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[key]
            raise AgentTestError(f"{path}: importing failed: {type(exc).__name__}: {exc}") from None
        return module


def function(path: str, name: str, what: str) -> Any:
    """``name`` from the Python file at ``path``, or a load-time error with a did-you-mean hint."""
    if not os.path.isfile(path):
        raise AgentTestError(f"{what}: {path} does not exist")
    module = load_module(path)
    fn = getattr(module, name, None)
    if not callable(fn):
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise AgentTestError(f"{what}: {path} has no function '{name}'", hint=did_you_mean(name, names))
    return fn


class App:
    """An app root: finds agents, connectors and scripts, and caches what it loaded."""

    def __init__(self, root: str):
        self.root = root
        self.warnings: list[str] = []
        self.secrets: set[str] = set()
        self._agents: dict[str, Any] = {}
        self._connectors: dict[str, Any] = {}

    # -- agents ------------------------------------------------------------------------------

    def agent_folder(self, agent_id: str) -> str | None:
        parts = agent_id.split(".")
        candidates = [parts]
        if parts[0] == "assistants" and len(parts) > 1:
            candidates.append(parts[1:])
        for segs in candidates:
            folder = os.path.join(self.root, "assistants", *segs)
            if os.path.isfile(os.path.join(folder, "package.yao")):
                return folder
        return None

    def agent_ids(self) -> list[str]:
        base = os.path.join(self.root, "assistants")
        ids = []
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            if "package.yao" in files:
                ids.append(os.path.relpath(folder, base).replace(os.sep, "."))
        return ids

    def agent_id_for(self, folder: str) -> str:
        rel = os.path.relpath(os.path.abspath(folder), os.path.join(self.root, "assistants"))
        return rel.replace(os.sep, ".")

    def agent(self, agent_id: str) -> Any:
        """The Agent for an ID; an unknown ID is a usage error listing the known ones."""
        from .agents import Agent, load_spec

        if agent_id in self._agents:
            return self._agents[agent_id]
        folder = self.agent_folder(agent_id)
        if folder is None:
            known = self.agent_ids()
            hint = did_you_mean(agent_id, known + [f"assistants.{k}" for k in known])
            listing = f"known agents: {', '.join(known)}" if known else f"no agents under {self.root}/assistants"
            raise AgentTestError(f"unknown agent '{agent_id}'", hint=f"{hint} {listing}" if hint else listing)
        agent = Agent(load_spec(self.agent_id_for(folder), folder, self.warnings), self)
        self._agents[agent_id] = agent
        return agent

    # -- connectors --------------------------------------------------------------------------

    def connector_ids(self) -> list[str]:
        base = os.path.join(self.root, "connectors")
        ids = []
        for folder, dirs, files in os.walk(base):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".conn.yao"):
                    rel = os.path.relpath(os.path.join(folder, f[: -len(".conn.yao")]), base)
                    ids.append(rel.replace(os.sep, "."))
        return ids

    def connector(self, connector_id: str) -> Any:
        """The Connector for an ID (a file under connectors/, or the implicit ``openai.<model>``)."""
        from .connectors import ConnectorSpec, create

        if connector_id in self._connectors:
            return self._connectors[connector_id]
        path = os.path.join(self.root, "connectors", *connector_id.split(".")) + ".conn.yao"
        if os.path.isfile(path):
            data = read_jsonc(path)
            if not isinstance(data, dict) or "type" not in data:
                raise AgentTestError("a connector file needs a 'type'", Location(path), "e.g. {\"type\": \"openai\", \"options\": {...}}")
            options = substitute_env(data.get("options") or {}, f"connector {connector_id}", self.secrets)
            spec = ConnectorSpec(connector_id, data["type"], options, path)
        elif connector_id.startswith("openai.") and len(connector_id) > len("openai."):
            if "OPENAI_API_KEY" not in os.environ:
                raise AgentTestError(f"connector {connector_id}: environment variable OPENAI_API_KEY is not set", hint="export OPENAI_API_KEY=…")
            options = {"model": connector_id[len("openai."):], "key": os.environ["OPENAI_API_KEY"]}
            self.secrets.add(options["key"])
            if os.environ.get("OPENAI_BASE_URL"):
                options["base_url"] = os.environ["OPENAI_BASE_URL"]
            spec = ConnectorSpec(connector_id, "openai", options, None)
        else:
            hint = did_you_mean(connector_id, self.connector_ids())
            listing = ", ".join(self.connector_ids()) or "none"
            raise AgentTestError(
                f"unknown connector '{connector_id}'",
                hint=(hint + " " if hint else "") + f"known connectors: {listing}; or openai.<model>",
            )
        connector = create(spec)
        self._connectors[connector_id] = connector
        return connector

    async def aclose(self) -> None:
        """Close connectors' network clients (call inside the loop that used them)."""
        for connector in list(self._connectors.values()):
            close = getattr(connector, "aclose", None)
            if close is not None:
                await close()

    # -- scripts -----------------------------------------------------------------------------

    def script(self, ref: str) -> Any:
        """``mod.func`` (or ``pkg.mod.func``) → the function in ``<root>/scripts/mod.py``."""
        module, _, name = ref.rpartition(".")
        path = os.path.join(self.root, "scripts", *module.split(".")) + ".py"
        if "-" in name and os.path.isfile(path) and not hasattr(load_module(path), name):
            name = name.replace("-", "_")  # Yao-style "validate-expense" names validate_expense
        return function(path, name, f"script '{ref}'")
