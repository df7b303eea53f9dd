"""The app folder on disk (FORMATS §1): its root, agent IDs ↔ folders, connector files, script files.

Paths and names only; loading what they hold is ``catalog.py``'s job."""

from __future__ import annotations

import os

from agenttest.errors import AgentTestError, did_you_mean
from agenttest.util.paths import inside


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


class App:
    """An app root and the names of what it holds."""

    def __init__(self, root: str):
        self.root = root

    # -- agents ------------------------------------------------------------------------------

    def agent_folder(self, agent_id: str, what: str = "agent") -> str | None:
        """The folder of an agent ID, if it has a package.yao; an ID leading outside the app root is an error."""
        candidates = [agent_id]
        if agent_id.startswith("assistants.") and len(agent_id) > len("assistants."):
            candidates.append(agent_id[len("assistants."):])
        for ident in candidates:
            folder = inside(self.root, ident, "assistants", what=what)
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

    def agents_under_test(self) -> list[str]:
        """The app's agents besides the worker agents (``assistants/workers/``)."""
        return [a for a in self.agent_ids() if not a.startswith("workers.")]

    def only_agent(self) -> str | None:
        """The app's one agent under test, when it has exactly one: then ``-n`` may be left out wherever the
        cases are."""
        agents = self.agents_under_test()
        return agents[0] if len(agents) == 1 else None

    def agent_above(self, path: str) -> str | None:
        """The ID of the agent whose folder holds ``path`` (the nearest ``package.yao`` above it)."""
        folder = os.path.dirname(os.path.abspath(path))
        base = os.path.abspath(os.path.join(self.root, "assistants"))
        while folder.startswith(base + os.sep):
            if os.path.isfile(os.path.join(folder, "package.yao")):
                return self.agent_id_for(folder)
            folder = os.path.dirname(folder)
        return None

    def unknown_agent(self, agent_id: str) -> AgentTestError:
        known = self.agent_ids()
        hint = did_you_mean(agent_id, known + [f"assistants.{k}" for k in known])
        listing = f"known agents: {', '.join(known)}" if known else f"no agents under {self.root}/assistants"
        return AgentTestError(f"unknown agent '{agent_id}'", hint=f"{hint} {listing}" if hint else listing)

    # -- connectors --------------------------------------------------------------------------

    def connector_path(self, connector_id: str) -> str:
        return inside(self.root, connector_id, "connectors", suffix=".conn.yao", what="connector")

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

    # -- scripts -----------------------------------------------------------------------------

    def script_path(self, module: str) -> str:
        """``mod`` (or ``pkg.mod``) → ``<root>/scripts/mod.py``."""
        return inside(self.root, module, "scripts", suffix=".py", what="script module")
