"""What a run has loaded from the app folder: agents and connectors by ID, each loaded once and shared.

Loading problems are usage errors (``AgentTestError``) with locations; the resolver asks for everything
a run names before the first model call, so these surface together at load time."""

from __future__ import annotations

import os
from typing import Any

from .agents import Agent, load_spec
from .app import App
from .connectors import Connector, create
from .connectors.files import spec_for
from .connectors.throttle import Traffic
from .secrets import Secrets
from .userfiles import function, load_module


class Catalog:
    def __init__(self, app: App, secrets: Secrets | None = None, traffic: Traffic | None = None):
        self.app = app
        self.secrets = secrets if secrets is not None else Secrets()
        self.traffic = traffic if traffic is not None else Traffic()  # throttles and retries network connectors
        self.warnings: list[str] = []
        self._agents: dict[str, Agent] = {}
        self._connectors: dict[str, Connector] = {}

    def agent(self, agent_id: str) -> Agent:
        """The Agent for an ID; an unknown ID is a usage error listing the known ones."""
        if agent_id not in self._agents:
            folder = self.app.agent_folder(agent_id)
            if folder is None:
                raise self.app.unknown_agent(agent_id)
            spec = load_spec(self.app.agent_id_for(folder), folder, self.warnings)
            self._agents[agent_id] = Agent(spec, self.connector)
        return self._agents[agent_id]

    def connector(self, connector_id: str) -> Connector:
        """The Connector for an ID (a file under connectors/, or the implicit ``openai.<model>``), its
        calls throttled and retried (FORMATS §13)."""
        if connector_id not in self._connectors:
            short = set(self.secrets.short_names())
            connector = create(spec_for(self.app, connector_id, self.secrets))
            self.warnings += [f"connector {connector_id}: $ENV.{name} is shorter than 8 characters, so it is not hidden in output"
                              for name in self.secrets.short_names() if name not in short]
            self.warnings += getattr(connector, "warnings", None) or []
            self._connectors[connector_id] = self.traffic.wrap(connector)
        return self._connectors[connector_id]

    def check(self, agent_id: str, connector_id: str | None) -> None:
        """Load an agent and the connector it would use, and let the connector check what it needs for
        that agent (the mock: its rules file). Raises AgentTestError."""
        agent = self.agent(agent_id)
        connector = self.connector(agent.connector_id(connector_id))
        prepare = getattr(connector, "prepare", None)
        if prepare is not None:
            prepare(agent.spec.path)

    def script(self, ref: str) -> Any:
        """``mod.func`` (or ``pkg.mod.func``) → the function in ``<root>/scripts/mod.py``."""
        module, _, name = ref.rpartition(".")
        path = self.app.script_path(module)
        if "-" in name and os.path.isfile(path) and not hasattr(load_module(path), name):
            name = name.replace("-", "_")  # Yao-style "validate-expense" names validate_expense
        return function(path, name, f"script '{ref}'")

    async def aclose(self) -> None:
        """Close connectors' network clients (inside the loop that used them)."""
        for connector in list(self._connectors.values()):
            close = getattr(connector, "aclose", None)
            if close is not None:
                await close()
