"""Script tests given with ``-i scripts.<name>``: the ``Test*`` functions of an agent's ``src/<name>_test.py``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from agenttest.app.folders import App
from agenttest.inputs.documents import Loaded
from agenttest.inputs.sources.base import LoadEnv, NotAFile


@dataclass(frozen=True)
class ScriptTests(NotAFile):
    """``scripts.<name>``: the ``Test*`` functions of the agent's ``src/<name>_test.py`` (with ``-n``), or,
    Yao's form, ``scripts.<agent path>.<module>``: ``assistants/<agent path>/src/<module>_test.py`` with
    that agent under test."""

    name: str

    @property
    def text(self) -> str:  # type: ignore[override]
        return f"scripts.{self.name}"

    def agent_hint(self, app: App) -> str | None:
        return self._split(app)[0]

    def _split(self, app: App) -> tuple[str | None, str]:
        """(agent, module) for Yao's form — the longest agent path whose src/ holds the module's tests."""
        parts = self.name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            agent, module = ".".join(parts[:cut]), ".".join(parts[cut:])
            folder = app.agent_folder(agent)
            if folder and any(os.path.isfile(os.path.join(folder, "src", f"{module.removesuffix('_test')}_test{ext}"))
                              for ext in (".py", ".ts", ".js")):
                return agent, module
        return None, self.name

    async def load(self, env: LoadEnv) -> Loaded:
        from agenttest.modes.scripttest import collect

        module = self.name
        if env.agent is not None and env.caller is not None:
            agent, rest = self._split(env.caller.catalog.app)
            if agent is not None and env.caller.catalog.agent(agent) is env.agent:
                module = rest
        return Loaded(collect(env.agent, module))
