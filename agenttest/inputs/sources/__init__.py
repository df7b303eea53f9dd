"""``-i`` sources, one module each: a case file (``files``), a folder or glob of them (``folders``), a message
(``messages``), a generator (``generators``: ``agents:``, ``scripts:``) and script tests (``scripttests``); each
follows ``base.Source``. A source named by a prefix (``agents:``, ``message:``, a plug-in's) is found in
``plugins.SOURCES``; ``classify`` picks what an ``-i`` value names, ``expand`` every ``-i`` of a run, ``Inputs``
loads them together."""

from __future__ import annotations

import os
from dataclasses import dataclass

from agenttest.app.folders import App
from agenttest.errors import AgentTestError, Problem
from agenttest.inputs.documents import Loaded
from agenttest.inputs.sources.base import LoadEnv, Source, counted
from agenttest.inputs.sources.files import CaseFile, looks_like_a_path
from agenttest.inputs.sources.folders import case_files_of, meant_path
from agenttest.inputs.sources.messages import Message
from agenttest.inputs.sources.scripttests import ScriptTests
from agenttest.inputs.sources.shapes import by_shape
from agenttest.plugins import SOURCES

__all__ = ["CaseFile", "Inputs", "LoadEnv", "Message", "ScriptTests", "Source", "classify", "expand", "looks_like_a_path", "meant_path"]


def classify(text: str) -> Source:
    """What an ``-i`` value names: a registered source whose prefix it starts with (``agents:``,
    ``scripts:``, ``message:`` and plug-ins), else script tests, a case file or folder, or a message."""
    for prefix in sorted(SOURCES, key=len, reverse=True):
        if text.startswith(prefix):
            return SOURCES.get(prefix)(text[len(prefix):])  # type: ignore[no-any-return, misc]
    if text.startswith("scripts.") and not os.path.exists(text) and " " not in text:
        return ScriptTests(text[len("scripts."):])
    if not text.strip():
        raise AgentTestError("-i is empty", hint="give a case file or folder, a message, or agents:/scripts: generator")
    if looks_like_a_path(text):
        return CaseFile(text)
    return Message(text)


def expand(texts: list[str]) -> tuple[list[Source], list[Problem]]:
    """Every ``-i``: folders become their case files (recursively; reports ``output-*`` skipped), globs the
    case files they match; a folder or glob with no case file is a problem."""
    sources: list[Source] = []
    problems: list[Problem] = []
    for text in texts:
        source = classify(text)
        near = meant_path(text) if isinstance(source, Message) and not source.explicit else None
        if near is not None:  # a mistyped path sent as a message would run something else and could pass
            problems.append(Problem(f"-i '{text}': no such file or folder; did you mean {near}?",
                                    hint=f"to send it to the agent as a message, use -m '{text}' (or -i 'message:{text}')"))
        elif not isinstance(source, CaseFile):
            sources.append(source)
        elif (found := case_files_of(text)) is not None:
            sources += [by_shape(f.path) for f in found[0]]
            problems += found[1]
        else:
            sources.append(by_shape(text))
    unique = {(type(s).__name__, s.text): s for s in reversed(sources)}  # the same file named twice runs once
    return [s for s in sources if unique.get((type(s).__name__, s.text)) is s], problems


@dataclass(frozen=True)
class Inputs:
    """Every ``-i`` of a run, expanded (folders and globs into their case files), loaded together."""

    sources: tuple[Source, ...]

    @property
    def path(self) -> str | None:
        """The first file: the app root is found above it."""
        return next((s.path for s in self.sources if s.path), None)

    @property
    def needs_agent(self) -> bool:
        return any(s.needs_agent for s in self.sources)

    @property
    def message(self) -> Message | None:
        """The literal message, when that is the whole input (its reply is shown on the console)."""
        only = self.sources[0] if len(self.sources) == 1 else None
        return only if isinstance(only, Message) else None

    @property
    def files(self) -> list[str]:
        return [s.path for s in self.sources if s.path]

    def describe(self, count: int) -> str:
        if len(self.sources) == 1:
            return self.sources[0].describe(count)
        shown = ", ".join(s.text for s in self.sources[:3]) + (", …" if len(self.sources) > 3 else "")
        return f"{len(self.sources)} inputs: {shown} ({counted(count)})"

    def report_folder(self) -> str | None:
        """Beside the case file; with several, in the folder they share; none for messages and generators."""
        if len(self.sources) == 1:
            return self.sources[0].report_folder()
        folders = [os.path.dirname(os.path.abspath(f)) for f in self.files]
        return os.path.commonpath(folders) if folders else None

    def agent_hint(self, app: App) -> str | None:
        """The agent the inputs imply; inputs that imply different agents need ``-n``."""
        hints = {h: s.text for s in self.sources if (h := s.agent_hint(app))}
        if len(hints) > 1:
            listed = ", ".join(f"{text} → {agent}" for agent, text in hints.items())
            raise AgentTestError(f"the inputs belong to different agents ({listed})", hint="pass -n AGENT, or run them separately")
        return next(iter(hints), None)

    async def load(self, env: LoadEnv) -> Loaded:
        loaded = Loaded()
        for source in self.sources:
            loaded.extend(await source.load(env))
        return loaded
