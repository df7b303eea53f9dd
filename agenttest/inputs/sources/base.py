"""What every ``-i`` source is: the ``Source`` protocol, what loading may use (``LoadEnv``), and what the sources
that are not a case file share."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar, Protocol

from agenttest.agents.agent import Agent
from agenttest.agents.caller import Caller
from agenttest.app.folders import App
from agenttest.inputs.documents import KeyPolicy, Loaded


@dataclass(frozen=True)
class LoadEnv:
    """What loading may use: the default simulator, the agent under test, and a caller for generators."""

    default_simulator: str | None = None
    agent: Agent | None = None
    caller: Caller | None = None
    policy: KeyPolicy = KeyPolicy()  # unknown keys (--strict)
    timeout: float | None = None  # --timeout: a generator (agent or script) gets as long as one case


class Source(Protocol):
    @property
    def text(self) -> str:
        """``-i`` as written."""

    @property
    def path(self) -> str | None:
        """A file on disk (the app root is found above it), or None."""

    @property
    def needs_agent(self) -> bool:
        """Loading needs the agent under test (generators describe it; script tests live in it)."""

    def describe(self, count: int) -> str: ...

    def report_folder(self) -> str | None:
        """Where the default report (``output-<timestamp>.json``) goes, or None for no default report."""

    def agent_hint(self, app: App) -> str | None: ...

    async def load(self, env: LoadEnv) -> Loaded: ...


def counted(count: int) -> str:
    return f"{count} test case" if count == 1 else f"{count:,} test cases"


@dataclass(frozen=True)
class OneFile:
    """What sources that are one file share (a case file, a seed-format file): the file is what ``-i`` said, the
    default report goes beside it and the agent is the one whose folder holds it."""

    path: str
    needs_agent: ClassVar[bool] = False

    @property
    def text(self) -> str:
        return self.path

    def report_folder(self) -> str | None:
        return os.path.dirname(self.path) or "."

    def agent_hint(self, app: App) -> str | None:
        return app.agent_above(self.path)


class NotAFile:
    """What sources that are not a case file share: no path, no default report, no agent implied."""

    path = None
    needs_agent = True
    text: str

    def describe(self, count: int) -> str:
        return f"{self.text} ({counted(count)})"

    def report_folder(self) -> str | None:
        return None

    def agent_hint(self, app: App) -> str | None:
        return None
