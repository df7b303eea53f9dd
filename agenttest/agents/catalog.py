"""What a run has loaded from the app folder: agents, connectors and MCP servers by ID, each loaded once
and shared.

Loading problems are usage errors (``AgentTestError``) with locations; the resolver asks for everything
a run names before the first model call, so these surface together at load time. ``start`` then starts
the MCP servers of the loaded agents, and ``aclose`` stops them."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agenttest.accounting import costs
from agenttest.app import prompts
from agenttest.agents.agent import Agent, load_spec
from agenttest.app.folders import App
from agenttest.connectors.cassettes import Cassettes
from agenttest.connectors import Connector, create
from agenttest.connectors.files import hide_every_credential, spec_for
from agenttest.connectors.recorded import Recorded
from agenttest.connectors.throttle import Traffic
from agenttest.errors import AgentTestError, InputError
from agenttest.agents.mcp import Servers
from agenttest.speed import collector
from agenttest.util.secrets import Secrets
from agenttest.app.yaofiles import function, load_module


_INHERITED: list[dict[str, Any]] = []  # a forked worker's copies of the controller's connectors: the network clients
# in them are the controller's (its loop, its sockets), so they are neither closed nor let go — a collected aiohttp
# session says "Unclosed client session" on stderr; the worker ends with os._exit


class Catalog:
    def __init__(self, app: App, secrets: Secrets | None = None, strict: bool = False, cassettes: Cassettes | None = None,
                 traffic: Traffic | None = None, recorded: bool = False):
        self.app = app
        self.recorded = recorded  # --calls all|failed: every connector's calls are recorded (connectors/recorded.py)
        self.cassettes = cassettes  # --record/--replay: every connector is wrapped
        self.secrets = secrets if secrets is not None else Secrets()
        hide_every_credential(app, self.secrets)  # not only the connectors this run uses (docs/safety.md)
        self.strict = strict  # unknown keys in package.yao are errors
        self.traffic = traffic if traffic is not None else Traffic()  # throttles and retries network connectors
        self.warnings: list[str] = []
        self._agents: dict[str, Agent] = {}
        self._connectors: dict[str, Connector] = {}
        self.prices: dict[str, costs.Pricing | None] = {}  # connector ID → its pricing (costs.py)
        self.servers = Servers(app, self.secrets, self.warnings)
        self._with_servers: set[str] = set()  # agents whose MCP tools were added
        self.global_prompts = prompts.load(os.path.join(app.root, "agent", "prompts.yml"))

    def agent(self, agent_id: str) -> Agent:
        """The Agent for an ID; an unknown ID is a usage error listing the known ones."""
        if agent_id not in self._agents:
            folder = self.app.agent_folder(agent_id)
            if folder is None:
                raise self.app.unknown_agent(agent_id)
            spec = load_spec(self.app.agent_id_for(folder), folder, self.warnings, self.strict, self.global_prompts)
            self.servers.check(spec)
            agent = self._agents[agent_id] = Agent(spec, self.connector)
            self.warnings += agent.warnings
        return self._agents[agent_id]

    async def ready(self, agent_id: str) -> Agent:
        """The agent with the tools of its MCP servers, which are started if they do not run yet."""
        agent = self.agent(agent_id)
        if agent.spec.mcp and agent_id not in self._with_servers:
            agent.add_tools(await self.servers.tools(agent.spec))
            self._with_servers.add(agent_id)
        return agent

    async def start(self) -> None:
        """Start the MCP servers of every agent loaded so far, before the first model call; the servers
        that fail are reported together (exit 2)."""
        started = await asyncio.gather(*(self.ready(a) for a in list(self._agents)), return_exceptions=True)
        problems = [p for r in started if isinstance(r, AgentTestError) for p in r.problems]
        if problems:
            raise InputError(problems)
        for r in started:
            if isinstance(r, BaseException):
                raise r

    def warm(self) -> None:
        """Before the first case of a run (not for --dry-run or --list): each connector makes what every call
        needs (the SDK client and its import), so that it never counts against a case's deadline."""
        for connector in list(self._connectors.values()):
            start = getattr(connector, "start", None)
            if start is not None:
                start()

    def connector(self, connector_id: str) -> Connector:
        """The Connector for an ID (a file under connectors/, or the implicit ``openai.<model>``), its
        calls throttled and retried (FORMATS §13)."""
        if connector_id not in self._connectors:
            tapes = self.cassettes
            spec = spec_for(self.app, connector_id, self.secrets, offline=tapes is not None and tapes.offline)
            self.prices[connector_id] = costs.pricing_of(spec.options, connector_id, spec.path)  # bad pricing: a load error
            made = connector = create(spec)
            self.warnings += getattr(connector, "warnings", None) or []
            connector = self.traffic.wrap(connector)
            # cassettes outside the throttle: a replayed call never reaches it or the endpoint-down logic
            connector = tapes.wrap(connector) if tapes is not None else connector
            self._connectors[connector_id] = Recorded(connector, made) if self.recorded else connector
        return self._connectors[connector_id]

    def import_sdks(self) -> None:
        """Import now the heavy SDKs the run's connectors and MCP servers will need (``openai``, ``mcp``):
        done once before the workers fork, each worker starts with them loaded."""
        import importlib

        wanted = {"openai": ["openai", "openai.types.chat"]}
        openai = [c for c in self._connectors.values() if c.spec.type == "openai"]
        if openai and all(getattr(c, "early_possible", lambda: False)() for c in openai):
            wanted = {"openai": ["aiohttp"]}  # their first requests leave on aiohttp while the SDK imports (connectors/early.py)
        modules = [m for c in self._connectors.values() for m in wanted.get(c.spec.type, [])]
        mcp = ["mcp", "mcp.client.stdio", "mcp.client.sse", "mcp.client.streamable_http"] if any(a.spec.mcp for a in self._agents.values()) else []
        if openai:
            from agenttest.connectors.openai import prepare

            prepare()  # the TLS context and platform facts, on another thread while the SDK imports
        with collector.importing():  # ~55,000 objects, no garbage (speed/collector.py)
            for name in dict.fromkeys(modules):
                importlib.import_module(name)
            for name in mcp:
                try:
                    importlib.import_module(name)
                except ImportError:  # an SDK too old (or none): the server's start says so, exit 2 (agents/mcpsdk.py)
                    break
            if "openai" in modules:  # the SDK's aiohttp transport imports aiohttp (~65 ms) when its first client is made
                for name in ("openai._vendor.httpx_aiohttp.transport", "httpcore2"):
                    try:
                        importlib.import_module(name)
                    except ImportError:  # another SDK version, or no aiohttp: each worker imports what it needs
                        pass
            if openai:
                from agenttest.connectors.openai import prepared_context

                prepared_context()  # the preparing thread ends before a fork
            if any(c.spec.type == "openai" and c.spec.options.get("stream") for c in self._connectors.values()):
                from agenttest.connectors import tokens

                tokens.encoder()  # streams often carry no usage: a worker must not spend seconds loading the tokenizer
                # (its import holds the GIL; a worker silent that long is taken as lost)

    def forked(self) -> None:
        """In a forked worker: make the connectors again, since their network clients belong to the controller's
        event loop and sockets (they were checked before the fork)."""
        made = list(self._connectors)
        _INHERITED.append(dict(self._connectors))  # the controller's clients: kept, never closed nor collected here
        self._connectors.clear()
        for connector_id in made:
            self.connector(connector_id)

    def check(self, agent_id: str, connector_id: str | None) -> None:
        """Load an agent and the connector it would use, and let the connector check what it needs for
        that agent (the mock: its rules file). Raises AgentTestError."""
        agent = self.agent(agent_id)
        connector = self.connector(agent.connector_id(connector_id))
        prepare = getattr(connector, "prepare", None)
        if prepare is not None:
            found = prepare(agent.spec.path) or []
            if found and self.strict:  # an unknown key in the connector's own files (mock.yml), as in package.yao
                raise AgentTestError("; ".join(w.removesuffix("; ignored") for w in found), hint="unknown keys are errors with --strict")
            self.warnings += found

    def script(self, ref: str) -> Any:
        """``mod.func`` (or ``pkg.mod.func``) → the function in ``<root>/scripts/mod.py``."""
        module, _, name = ref.rpartition(".")
        path = self.app.script_path(module)
        if "-" in name and os.path.isfile(path) and not hasattr(load_module(path), name):
            name = name.replace("-", "_")  # Yao-style "validate-expense" names validate_expense
        return function(path, name, f"script '{ref}'")

    async def aclose(self) -> None:
        """Stop the MCP servers and close connectors' network clients (inside the loop that used them)."""
        try:
            await self.servers.aclose()
        finally:
            for connector in list(self._connectors.values()):
                close = getattr(connector, "aclose", None)
                if close is not None:
                    await close()
