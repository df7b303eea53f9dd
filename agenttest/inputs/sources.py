"""``-i`` sources: a case file, a literal message, a generator (``agents:ID?count=N``, ``scripts:mod.func``)
or script tests (``scripts.<name>``). Each is an object with one small protocol; ``classify`` picks it."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import parse_qsl

from agenttest.plugins import SOURCES
from agenttest.runtime import usercalls
from agenttest.agents.agent import Agent
from agenttest.app.folders import App
from agenttest.agents.caller import Caller
from agenttest.errors import AgentTestError, CallError, Location, Problem, typo_of
from agenttest.inputs.casefiles import SUFFIXES, KeyPolicy, Loaded, case_list, load_file, make_case, parse
from agenttest.model import Case
from agenttest.util.text import find_json
from agenttest.agents.protocols import ProtocolError, ask_json


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


def _count(count: int) -> str:
    return f"{count} test case" if count == 1 else f"{count} test cases"


@dataclass(frozen=True)
class CaseFile:
    path: str
    needs_agent = False

    @property
    def text(self) -> str:
        return self.path

    def describe(self, count: int) -> str:
        return f"{self.path} ({_count(count)})"

    def report_folder(self) -> str | None:
        return os.path.dirname(self.path) or "."

    def agent_hint(self, app: App) -> str | None:
        return app.agent_above(self.path)

    async def load(self, env: LoadEnv) -> Loaded:
        return await asyncio.to_thread(load_file, self.path, env.default_simulator, env.policy)


class _NotAFile:
    """What sources that are not a case file share: no path, no default report, no agent implied."""

    path = None
    needs_agent = True
    text: str

    def describe(self, count: int) -> str:
        return f"{self.text} ({_count(count)})"

    def report_folder(self) -> str | None:
        return None

    def agent_hint(self, app: App) -> str | None:
        return None


@dataclass(frozen=True)
class Message(_NotAFile):
    text: str
    explicit: bool = False  # -m / message:TEXT, never a path
    needs_agent = False

    def describe(self, count: int) -> str:
        return f"message ({_count(count)})"

    def agent_hint(self, app: App) -> str | None:
        """As Yao: run from inside an agent's folder, a message goes to that agent."""
        return app.agent_above(os.path.join(os.getcwd(), "-"))

    async def load(self, env: LoadEnv) -> Loaded:
        return Loaded([make_case({"id": "message", "input": self.text}, Location("<message>"), os.getcwd())])


@dataclass(frozen=True)
class ScriptTests(_NotAFile):
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


@dataclass(frozen=True)
class _Generator(_NotAFile):
    ref: str
    params: dict[str, str] = field(default_factory=dict)
    prefix = ""

    @property
    def text(self) -> str:  # type: ignore[override]
        return f"{self.prefix}:{self.ref}"

    def settings(self) -> tuple[int, str, dict[str, Any]]:
        """``count`` (default 5), ``focus`` and the other query parameters."""
        params = dict(self.params)
        count_text = params.pop("count", "5")
        try:
            count = int(count_text)
            if count < 1:
                raise ValueError
        except ValueError:
            raise AgentTestError(f"-i {self.text}: count must be a whole number ≥ 1, got {count_text!r}") from None
        return count, params.pop("focus", ""), params

    def validate(self, items: list[Any], env: LoadEnv) -> Loaded:
        """Validate generated cases like a file (no more than ``count`` of them); problems point into a
        saved copy of the generated JSON."""
        count = self.settings()[0]
        if not items:  # never a silent green
            return Loaded(problems=[Problem(f"{self.text} generated no test cases", None, "check the generator's prompt or code")])
        dropped = len(items) - count
        items = items[:count]
        text = json.dumps(items, ensure_ascii=False, indent=2)
        policy = replace(env.policy, lenient=not env.policy.strict)  # model output: keep what is known
        loaded = parse(text, self.text, env.default_simulator, os.getcwd(), kind=".json", policy=policy)
        if dropped > 0:
            loaded.warnings.append(f"{self.text} returned {count + dropped} cases for count={count}; the last {dropped} were dropped")
        if loaded.problems:
            fd, path = tempfile.mkstemp(prefix="agent-test-generated-", suffix=".json")
            hide = env.caller.catalog.secrets.redact if env.caller is not None else str
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(hide(text) + "\n")  # kept for the user to read: never with a key in it
            loaded.problems = [Problem(p.message, p.location and Location(path, p.location.line, p.location.column), p.hint)
                               for p in loaded.problems]
            loaded.problems.append(Problem(f"the cases {self.text} generated are saved in {path}"))
        return loaded


def _listed(value: Any) -> list[Any]:
    return case_list(value)[1]


class GeneratorAgent(_Generator):
    """``agents:ID?count=N&focus=…``: a generator agent writes the cases."""

    prefix = "agents"

    async def load(self, env: LoadEnv) -> Loaded:
        assert env.caller is not None
        count, focus, extra = self.settings()
        info = env.agent.spec.info() if env.agent else {"id": "", "description": "", "tools": []}
        payload = {"target_agent": info, "count": count, "focus": focus, "extra": extra}
        try:
            async with asyncio.timeout(env.timeout):
                items = await ask_json(env.caller, self.ref, payload, "generator", _listed,
                                       metadata={"target_agent": info, "count": count, "focus": focus})
        except TimeoutError:
            raise AgentTestError(f"generator {self.text} did not answer within {env.timeout:g}s (--timeout)",
                                 hint="raise --timeout, or check the generator's endpoint") from None
        except ProtocolError as exc:
            raise AgentTestError(f"generator {self.text}: {exc}") from None
        except CallError as exc:
            raise AgentTestError(f"generator {self.text} failed: {exc}") from None
        return self.validate(items, env)


class GeneratorScript(_Generator):
    """``scripts:mod.func?count=N``: a Python function returns the cases."""

    prefix = "scripts"

    async def load(self, env: LoadEnv) -> Loaded:
        assert env.caller is not None
        count, focus, extra = self.settings()
        fn = env.caller.script(self.ref)
        info = env.agent.spec.info() if env.agent else {"id": "", "description": "", "tools": []}
        try:
            returned = await usercalls.call(fn, info, {"count": count, "focus": focus, **extra}, what=f"generator {self.text}",
                                            timeout=env.timeout)
        except CallError as exc:
            raise AgentTestError(str(exc)) from None
        if isinstance(returned, str):
            found, returned = find_json(returned)
            if not found:
                raise AgentTestError(f"generator {self.text} returned text with no JSON")
        try:
            items = _listed(returned)
        except ValueError as exc:
            raise AgentTestError(f"generator {self.text}: {exc}") from None
        return self.validate(items, env)


MESSAGE_PREFIX = "message:"


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


@SOURCES.register("agents:")
def _generator_agent(rest: str) -> Source:
    ref, _, query = rest.partition("?")
    if not ref:
        raise AgentTestError("-i agents: needs a generator agent ID", hint="e.g. -i \"agents:workers.test.generator?count=10\"")
    return GeneratorAgent(ref, dict(parse_qsl(query, keep_blank_values=True)))


@SOURCES.register("scripts:")
def _generator_script(rest: str) -> Source:
    ref, _, query = rest.partition("?")
    if "." not in ref:
        raise AgentTestError(f"-i scripts:{rest}: a script generator is scripts:<module>.<function>")
    return GeneratorScript(ref, dict(parse_qsl(query, keep_blank_values=True)))


@SOURCES.register(MESSAGE_PREFIX)
def _message(rest: str) -> Source:
    """-m TEXT: a message whatever it looks like."""
    if not rest.strip():
        raise AgentTestError("-m is empty", hint="give the message to send, e.g. -m \"Where is my order?\"")
    return Message(rest, explicit=True)


def looks_like_a_path(text: str) -> bool:
    """FORMATS §6: a value of ``-i`` is a path when it exists or looks like one — no whitespace, and a path
    separator or a case-file suffix; anything else is a message ("Export my bookings to bookings.json")."""
    if os.path.exists(text):
        return True
    return not any(ch.isspace() for ch in text) and ("/" in text or os.sep in text or text.lower().endswith(SUFFIXES))


def meant_path(text: str, folder: str = ".") -> str | None:
    """The folder or case file in ``folder`` a one-word message likely meant, by a typo or a missing suffix
    (``test`` → "the folder 'tests/'", ``cases`` → "the file 'cases.jsonl'"), for a warning; or None."""
    if len(text) < 3 or any(ch.isspace() for ch in text):
        return None
    try:
        entries = [e for e in os.scandir(folder) if not e.name.startswith((".", "__"))]
    except OSError:
        return None
    described: dict[str, str] = {}
    for entry in entries:
        if entry.is_dir():
            described[entry.name] = f"the folder '{entry.name}/'"
        elif _is_case_file(entry.path):
            described[entry.name] = described[os.path.splitext(entry.name)[0]] = f"the file '{entry.name}'"
    name = next((k for k in described if k.lower() == text.lower()), None) or typo_of(text, described)
    return described[name] if name else None


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
        elif os.path.isdir(text):
            found = _case_files(text)
            sources += [CaseFile(p) for p in found]
            if not found:
                problems.append(Problem(f"folder '{text}' holds no case files ({', '.join(SUFFIXES)})"))
        elif any(ch in text for ch in "*?[") and not os.path.exists(text):
            found = sorted(p for p in glob.glob(text, recursive=True) if _is_case_file(p))
            sources += [CaseFile(p) for p in found]
            if not found:
                problems.append(Problem(f"'{text}' matches no case files ({', '.join(SUFFIXES)})"))
        else:
            sources.append(source)
    unique = {(type(s).__name__, s.text): s for s in reversed(sources)}  # the same file named twice runs once
    return [s for s in sources if unique.get((type(s).__name__, s.text)) is s], problems


NOT_CASE_FILES = frozenset({"mock.yml", "prompts.yml", "agent.yml", "package.json", "tsconfig.json", "app.yao"})
NOT_CASE_FOLDERS = frozenset({"src", "prompts", "locales", "mcps", "connectors", "assets", "node_modules", "cassettes"})


def _is_case_file(path: str) -> bool:
    """A case file a folder or glob may hold: not a report (``output-*``), not an agent's mock.yml or prompts."""
    name = os.path.basename(path)
    return (os.path.isfile(path) and name.lower().endswith(SUFFIXES) and not name.startswith(("output-", "."))
            and name not in NOT_CASE_FILES)


def _case_files(folder: str) -> list[str]:
    found = []
    for parent, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d not in NOT_CASE_FOLDERS)
        found += [os.path.join(parent, f) for f in sorted(files) if _is_case_file(os.path.join(parent, f))]
    return found


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
        return f"{len(self.sources)} inputs: {shown} ({_count(count)})"

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


def normalized(case: Case) -> dict[str, Any]:
    """A case as one JSON object that ``-i`` loads back: input as messages, assertions spelled out."""
    out: dict[str, Any] = {}
    for key, value in case.raw.items():
        if key in ("assert", "assertions", "input", "checkpoints"):
            continue
        out[key] = value
    if case.messages:
        out["input"] = list(case.messages)
    if case.assertions:
        out["assertions"] = [dict(a.params, type=a.type) for a in case.assertions]
    if case.checkpoints:
        out["checkpoints"] = [
            {k: v for k, v in {"id": c.id, "description": c.description or None, "assertion": dict(c.assertion.params, type=c.assertion.type),
             "after": list(c.after) or None, "required": None if c.required else False}.items() if v is not None}
            for c in case.checkpoints
        ]
    if case.turns:  # a case of a variants product: its own id, each turn with the input it was built with
        out["id"] = case.id
        out["turns"] = [{k: v for k, v in {"id": t.id or None, "input": list(t.messages),
                                           "assertions": [dict(a.params, type=a.type) for a in t.assertions] or None}.items() if v is not None}
                        for t in case.turns]
    return out
