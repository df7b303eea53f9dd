"""A message given with ``-i TEXT`` (text that is not a path), ``-m TEXT`` or ``-i message:TEXT``: one case."""

from __future__ import annotations

import os
from dataclasses import dataclass

from agenttest.app.folders import App
from agenttest.errors import AgentTestError, Location
from agenttest.inputs.building import make_case
from agenttest.inputs.documents import Loaded
from agenttest.inputs.sources.base import LoadEnv, NotAFile, Source, counted
from agenttest.plugins import SOURCES

MESSAGE_PREFIX = "message:"


@dataclass(frozen=True)
class Message(NotAFile):
    text: str
    explicit: bool = False  # -m / message:TEXT, never a path
    needs_agent = False

    def describe(self, count: int) -> str:
        return f"message ({counted(count)})"

    def agent_hint(self, app: App) -> str | None:
        """As Yao: run from inside an agent's folder, a message goes to that agent."""
        return app.agent_above(os.path.join(os.getcwd(), "-"))

    async def load(self, env: LoadEnv) -> Loaded:
        return Loaded([make_case({"id": "message", "input": self.text}, Location("<message>"), os.getcwd())])


@SOURCES.register(MESSAGE_PREFIX)
def _message(rest: str) -> Source:
    """-m TEXT: a message whatever it looks like."""
    if not rest.strip():
        raise AgentTestError("-m is empty", hint="give the message to send, e.g. -m \"Where is my order?\"")
    return Message(rest, explicit=True)
