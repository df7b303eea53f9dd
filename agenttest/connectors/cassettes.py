"""Cassettes (FORMATS §9): every model call of a run recorded as JSON lines, one file per case (plus one
for the calls outside any case: generation), and answered from them on replay — keyed by role,
normalized request and occurrence, so that repeated runs and any --parallel replay exactly."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agenttest.connectors import ChatRequest, Connector, ConnectorSpec
from agenttest.errors import AgentTestError, CallError, Location, Problem
from agenttest.model import Case, Completion, ToolCall, Usage
from agenttest.model.kinds import UsageSource
from agenttest.model.parameters import CHAT_PARAMETERS
from agenttest.connectors.requestdiff import first_difference, nearest
from agenttest.util.text import loads
from agenttest.util.files import write_atomic
from agenttest.util.secrets import Secrets
from agenttest.util.paths import source_key
from agenttest.runtime import exchanges
from agenttest.runtime.trace import Trace, current_role, current_trace

ROLES = ("agent", "simulator", "validator", "generator")
OUTSIDE = "generation.jsonl"  # calls outside any case: generators (and BeforeAll/AfterAll hooks calling agents)


def _sent(options: dict[str, Any]) -> dict[str, Any]:
    """The options a request body carries: the chat-completions parameters (and ``extra_body``). How to reach
    the model (host, key, proxy, rpm, …) and what describes it (pricing, capabilities) are never part of a
    request: a price update must not miss every cassette, and a proxy's password must not be recorded."""
    return {k: v for k, v in options.items() if k in CHAT_PARAMETERS}


def canonical(value: Any) -> str:
    """The one text of a JSON value that keys and files use: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def normalize(spec: ConnectorSpec, request: ChatRequest) -> str:
    """What a call asks, whatever the endpoint, as canonical JSON: model, messages, tools and parameters
    (no key, no header, no host, no agent folder)."""
    options = {**spec.options, **request.options}
    parameters = _sent(options)
    out: dict[str, Any] = {"model": str(options.get("model") or spec.type), "messages": list(request.messages)}
    if request.tools:
        out["tools"] = list(request.tools)
    if parameters:
        out["parameters"] = parameters
    return canonical(out)


def stable_ids(request: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The request with every tool-call id renamed ``call_1``, ``call_2``, … in the order they first appear,
    and how many there were: endpoints make up new ids on every call, so the same conversation re-recorded
    would churn the cassette (and miss on replay) for ids alone."""
    names: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, str) and value:
            return names.setdefault(value, f"call_{len(names) + 1}")
        return value

    messages = []
    for m in request.get("messages") or ():
        if isinstance(m, dict) and (m.get("tool_calls") or m.get("tool_call_id")):
            m = dict(m)
            if isinstance(m.get("tool_calls"), list):
                m["tool_calls"] = [{**c, "id": rename(c.get("id"))} if isinstance(c, dict) and "id" in c else c for c in m["tool_calls"]]
            if "tool_call_id" in m:
                m["tool_call_id"] = rename(m["tool_call_id"])
        messages.append(m)
    return ({**request, "messages": messages} if names else request), len(names)


def key_of(role: str, request_text: str) -> str:
    """What a replay looks a call up by (with its occurrence): the role and the canonical request."""
    return hashlib.sha256(f"{role}\n{request_text}".encode()).hexdigest()


def response_of(completion: Completion) -> dict[str, Any]:
    out: dict[str, Any] = {"content": completion.content}
    if completion.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in completion.tool_calls]
    if completion.model:
        out["model"] = completion.model
    if completion.finish_reason and completion.finish_reason not in ("stop", "tool_calls"):
        out["finish_reason"] = completion.finish_reason  # "length": a cut reply replays as cut
    out["usage"] = completion.usage.as_dict()
    return out


def completion_of(response: dict[str, Any]) -> Completion:
    """A recorded response as the connector would have returned it; a recorded failure raises again."""
    if "error" in response:
        raise CallError(str(response["error"]))
    calls = tuple(ToolCall(name=str(c.get("name", "")), arguments=c.get("arguments", {}), id=str(c.get("id", ""))) for c in response.get("tool_calls") or ())
    usage = response.get("usage") or {}
    source: UsageSource = "estimated" if usage.get("source") == "estimated" else "unknown" if usage.get("source") == "unknown" else "endpoint"
    return Completion(str(response.get("content") or ""), calls,
                      Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), int(usage.get("total_tokens", 0)),
                            source=source),
                      str(response.get("model", "")), str(response.get("finish_reason") or ("tool_calls" if calls else "stop")))  # as recorded


def user_left(turn: int) -> Completion:
    """A frozen simulator past the end of its recording: the recorded user has nothing more to say, so the
    conversation ends there, and the case's verdict is what the agent reached by then."""
    reasoning = f"the recorded user has no turn {turn}: the conversation ends here (--replay-roles simulator)"
    return Completion(json.dumps({"message": "", "goal_achieved": True, "reasoning": reasoning}))


MAX_NAME = 80  # characters of one file-name part: far below any file system's limit (255 bytes), with room for a hash


def _safe(part: str, hide: Callable[[str], str] = str) -> str:
    """A path part that is a plain, short file name on every system, secrets hidden; an altered or shortened one
    keeps a short hash of the original (as it is), so that two ids never share a cassette."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", hide(part)).strip("._") or "_"
    if clean == part and len(part) <= MAX_NAME:
        return clean
    digest = hashlib.sha256(part.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{clean[:MAX_NAME].rstrip('._-') or '_'}-{digest}"


def _digested(text: str, hide: Callable[[str], str]) -> str:
    """``text`` (an id) as a cassette keeps it: a secret in it hidden, and then a short hash of it as it is."""
    shown = hide(text)
    return text if shown == text else f"{shown}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def cassette_name(case: Case, root: str, secrets: Secrets | None = None, cwd: str = "") -> str:
    """``tests/inputs/T001.jsonl``: the case file's path without its suffix, then the case id. A secret in either
    (a generator that echoed the key into its cases) is hidden first: cassette file names get committed."""
    hide = secrets.redact if secrets else str
    file = os.path.join(cwd, case.file) if case.file else case.file
    file = file if os.path.isfile(file) else case.file  # a path, or a source such as agents:… as written
    source = source_key(file, root)
    stem = os.path.splitext(source)[0] if os.path.isfile(file) else source
    parts = [_safe(p, hide) for p in stem.split("/") if p] or ["_"]
    return "/".join([*parts, _safe(case.id, hide) + ".jsonl"])


@dataclass(kw_only=True)
class Entry:
    """One recorded call: a line of a cassette."""

    role: str
    turn: int
    request: dict[str, Any]
    response: dict[str, Any]
    run: int = 1
    connector: str = ""  # the agent's connector, recorded when -c named it: two endpoints may serve one model name
    line: int = 0  # in the file it was read from
    key: str = ""
    ids: int = 0  # tool-call ids in the request (the response's continue from there)

    def __post_init__(self) -> None:
        self.key = self.key or key_of(self.role, canonical(self.request))

    def text(self) -> str:
        """The line: who and when first (a reader scans those), then what was asked and answered, keys sorted."""
        head = {"role": self.role, "turn": self.turn, **({"run": self.run} if self.run != 1 else {}),
                **({"connector": self.connector} if self.connector else {})}
        request = json.dumps(self.request, sort_keys=True, ensure_ascii=False, default=str)
        # the response keeps its order: tool-call arguments go back into the next request as the model wrote them
        response = json.dumps(self.response, ensure_ascii=False, default=str)
        return json.dumps(head, ensure_ascii=False)[:-1] + f', "request": {request}, "response": {response}}}'


def parse_line(text: str, where: Location) -> Entry:
    """One cassette line; a malformed one is a usage error at its place."""
    try:
        data = loads(text)
    except ValueError as exc:
        raise AgentTestError(f"not a JSON line: {exc}", where, "re-record it with --record") from None
    if not isinstance(data, dict) or not isinstance(data.get("request"), dict) or not isinstance(data.get("response"), dict) \
            or data.get("role") not in ROLES or not isinstance(data.get("turn", 1), int) or not isinstance(data.get("run", 1), int) \
            or not isinstance(data.get("connector", ""), str):
        raise AgentTestError("a cassette line is {\"role\", \"turn\", \"request\", \"response\"} with a role of "
                             + ", ".join(ROLES), where, "re-record it with --record")
    request = stable_ids(data["request"])[0]  # cassettes recorded before ids were made stable replay too
    if isinstance(request.get("parameters"), dict) and (kept := _sent(request["parameters"])) != request["parameters"]:
        request = {k: v for k, v in request.items() if k != "parameters"} | ({"parameters": kept} if kept else {})  # and those that kept pricing
    return Entry(role=data["role"], turn=data.get("turn", 1), request=request, response=data["response"], run=data.get("run", 1), connector=data.get("connector", ""), line=where.line or 0)


class Tape:
    """One cassette: what was recorded (read on first use) and what this run records into it."""

    def __init__(self, name: str, path: str | None):
        self.name = name
        self.path = path  # the file replayed from, if any
        self.entries: list[Entry] = self._read() if path else []
        self.runs: dict[int, list[int]] = {}
        for i, e in enumerate(self.entries):
            self.runs.setdefault(e.run, []).append(i)
        self.used: dict[int, set[int]] = {}  # by run: entries already replayed
        self.recorded: list[tuple[int, int, Entry]] = []  # (run, call number, entry)
        self.calls: dict[int, int] = {}

    def _read(self) -> list[Entry]:
        assert self.path is not None
        if not os.path.isfile(self.path):
            return []
        with open(self.path, encoding="utf-8") as fh:
            return [parse_line(line, Location(self.path, n)) for n, line in enumerate(fh, 1) if line.strip()]

    def next_call(self, run: int) -> int:
        self.calls[run] = self.calls.get(run, 0) + 1
        return self.calls[run]

    def group(self, run: int, role: str) -> list[int]:
        """The recording of this run. A run the recording does not have is none for the agent — its answers in
        run 1 are no measure of run 2, and a gate of copies would be a pass^k nothing measured — and the first
        run for a frozen role (--replay-roles simulator: the same user talks to every live run)."""
        found = self.runs.get(run)
        if found is not None or role == "agent":
            return found or []
        return self.runs.get(1) or []

    def lacks(self, run: int) -> str:
        """Why run ``run`` has no recording here, when the cassette holds other runs ('' when it has it)."""
        if run in self.runs or not self.runs:
            return ""
        held = sorted(self.runs)
        runs = f"run {held[0]}" if len(held) == 1 else f"runs {', '.join(map(str, held))}"
        return f"{self.path or self.name} holds {runs} of this case, not run {run} (a copy of another run would measure nothing)"

    def take(self, run: int, role: str, key: str, turn: int, request: dict[str, Any], by_turn: bool, connector: str = "") -> Entry | None:
        """The next unused recording of this exact call (by ``connector``, when the recording names one); with
        ``by_turn`` (a frozen role), else the nearest unused recording of the role at this turn."""
        used = self.used.setdefault(run, set())
        group = [i for i in self.group(run, role) if i not in used and self.entries[i].role == role
                 and self.entries[i].connector in ("", connector)]
        found = next((i for i in group if self.entries[i].key == key), None)
        if found is None and by_turn:
            at_turn = [self.entries[i] for i in group if self.entries[i].turn == turn]
            if at_turn:
                found = self.entries.index(nearest(at_turn, request))
        if found is None:
            return None
        used.add(found)
        return self.entries[found]

    def last_turn(self, run: int, role: str) -> int:
        """The last turn this role was recorded at in this run (0: never)."""
        return max((self.entries[i].turn for i in self.group(run, role) if self.entries[i].role == role), default=0)

    def explain(self, run: int, role: str, key: str, request: dict[str, Any], connector: str = "") -> str:
        """Why nothing was replayed: the first difference from the nearest recorded request."""
        where = self.path or self.name
        if not self.entries:
            return f"no recording ({where} does not exist)" if self.path and not os.path.isfile(self.path) else f"{where} holds no call"
        if role == "agent" and (lacks := self.lacks(run)):
            return lacks
        recorded = [self.entries[i] for i in self.group(run, role) if self.entries[i].role == role]
        if not recorded:
            return f"{where} has no {role} call"
        same = [e for e in recorded if e.key == key]
        others = sorted({e.connector for e in same if e.connector not in ("", connector)})
        if others and all(e.connector in others for e in same):
            names = ", ".join(f"'{c}'" for c in others)
            return (f"the same request was recorded for connector {names}, not '{connector}' "
                    f"({where}:{same[0].line}): one endpoint's answers are not another's")
        same = [e for e in same if e.connector in ("", connector)]
        if same:
            return f"the same request was recorded {len(same)} time{'s' if len(same) != 1 else ''} and all were replayed already ({where}:{same[-1].line})"
        best = nearest(recorded, request)
        return f"{first_difference(best.request, request)} (nearest: {where}:{best.line})"

    def text(self) -> str:
        return "".join(e.text() + "\n" for _, _, e in sorted(self.recorded, key=lambda t: (t[0], t[1])))


class Cassettes:
    """--record / --replay / --replay-roles for one run: wraps every connector the catalog makes."""

    def __init__(self, root: str, record: str | None = None, replay: str | None = None, roles: tuple[str, ...] | None = None,
                 secrets: Secrets | None = None, cwd: str | None = None, named: bool = False):
        self.root = root
        self.cwd = cwd or os.getcwd()  # case files named relative to it: the same cassette after a tool's os.chdir
        self.record = record
        self.replay = replay
        self.roles = roles  # None: every role is replayed
        self.named = named  # -c named the agent's connector(s): the agent's calls are recorded under its name
        self.secrets = secrets if secrets is not None else Secrets()
        self.tapes: dict[str, Tape] = {}

    @classmethod
    def for_run(cls, root: str, config: Any, secrets: Secrets, cwd: str | None = None) -> Cassettes | None:
        """The cassettes ``--record``/``--replay`` ask for (their folders checked before anything runs)."""
        if config.replay_roles is not None and not config.replay:
            raise AgentTestError("--replay-roles needs --replay DIR", hint="e.g. --replay cassettes/ --replay-roles simulator,validator")
        if config.replay and os.path.isfile(config.replay):
            raise AgentTestError(f"--replay {config.replay}: a file, not a folder", hint="give the folder that was given to --record: "
                                 "each case's cassette is found in it by its case file and id")
        if config.replay and not os.path.isdir(config.replay):
            raise AgentTestError(f"--replay {config.replay}: no such folder", hint="record cassettes first with --record DIR")
        if config.record and os.path.exists(config.record) and not os.path.isdir(config.record):
            raise AgentTestError(f"--record {config.record}: not a folder")
        if not (config.record or config.replay):
            return None
        cwd = cwd or os.getcwd()  # the folders as meant when the run started (a tool's os.chdir moves none)
        return cls(root, config.record and os.path.join(cwd, config.record), config.replay and os.path.join(cwd, config.replay),
                   config.replay_roles, secrets, cwd, bool(config.connector or config.matrix))

    async def save(self) -> None:
        """Write the recorded cassettes (each atomically)."""
        for path, text in self.files().items():
            try:
                await asyncio.to_thread(os.makedirs, os.path.dirname(path), exist_ok=True)
                await asyncio.to_thread(write_atomic, path, text)
            except OSError as exc:
                raise AgentTestError(f"--record: cannot write {path}: {exc}") from None

    @property
    def offline(self) -> bool:
        """Every call is answered from the cassettes: connectors need no key and no endpoint."""
        return bool(self.replay) and not self.record and self.roles is None

    def wrap(self, connector: Connector) -> Connector:
        return Taped(connector, self)

    def tape(self, name: str) -> Tape:
        if name not in self.tapes:
            self.tapes[name] = Tape(name, os.path.join(self.replay, *name.split("/")) if self.replay else None)
        return self.tapes[name]

    def name(self, trace: Trace | None) -> str:
        return cassette_name(trace.case, self.root, self.secrets, self.cwd) if trace is not None and trace.case is not None else OUTSIDE

    def preload(self, cases: list[Case]) -> list[Problem]:
        """Read the cassettes of the cases about to run, so that a malformed one stops the run before it starts."""
        problems = []
        for case in cases:
            try:
                self.tape(cassette_name(case, self.root, self.secrets, self.cwd))
            except AgentTestError as exc:
                problems += exc.problems
        return problems

    def replaying(self, role: str) -> bool:
        return bool(self.replay) and (self.roles is None or role in self.roles)

    async def complete(self, inner: Connector, request: ChatRequest) -> Completion:
        trace, role = current_trace.get(), current_role.get()
        tape = self.tape(self.name(trace))
        run, turn = (trace.run, trace.turn) if trace is not None else (1, 1)
        text = normalize(inner.spec, request)
        text = self.secrets.redact(text) if self.secrets else text
        for value, placeholder in sorted((trace.volatile if trace is not None else {}).items(), key=lambda kv: -len(kv[0])):
            text = text.replace(value, placeholder)  # $SYS.DATETIME as written: the same request at any time
        normal, known_ids = stable_ids(json.loads(text))
        connector = _digested(inner.spec.id, self.secrets.redact) if role == "agent" else ""  # the simulator and the judges keep their own
        entry = Entry(role=role, turn=turn, request=normal, response={}, run=run, connector=connector if self.named else "")
        entry.ids = known_ids
        call = tape.next_call(run)
        if self.replaying(role):
            # a frozen role (--replay-roles) whose request changed with the live agent's replies is answered by
            # its recording at the same turn; the agent itself is never answered by position
            found = tape.take(run, role, entry.key, turn, normal, self.roles is not None and role != "agent", connector)
            if found is not None and not (self.record and "error" in found.response):  # re-recording retries failures
                self._keep(tape, call, entry, found.response)
                exchanges.replayed()
                return completion_of(found.response)
            if found is None and self.roles is not None and role == "simulator" and tape.last_turn(run, role) < turn:
                if trace is not None:
                    trace.notes.append(f"the recorded user has no turn {turn}: the conversation ended there (--replay-roles)")
                exchanges.replayed()
                return user_left(turn)
            if not self.record:
                why = await asyncio.to_thread(tape.explain, run, role, entry.key, normal, connector)  # off the loop: other cases go on
                miss = (f"replay miss: {role} at turn {turn}: {why}; to record it, "
                        f"run with --replay {self.replay} --record {self.replay} (misses are called live and added)")
                if trace is not None and not trace.miss:
                    trace.miss = miss
                raise CallError(miss)
        try:
            completion = await inner.complete(request)
        except CallError as exc:
            self._keep(tape, call, entry, {"error": str(exc)})
            raise
        if completion.tool_calls:  # the ids the cassette keeps, so that a replay gives the same report
            completion = replace(completion, tool_calls=tuple(replace(c, id=f"call_{entry.ids + i}") for i, c in enumerate(completion.tool_calls, 1)))
        self._keep(tape, call, entry, response_of(completion))
        return completion

    def _keep(self, tape: Tape, call: int, entry: Entry, response: dict[str, Any]) -> None:
        if self.record:
            entry.response = json.loads(self.secrets.redact(json.dumps(response, ensure_ascii=False, default=str)))
            tape.recorded.append((entry.run, call, entry))

    def files(self) -> dict[str, str]:
        """What --record writes: each cassette this run recorded into, its calls in run and call order."""
        if not self.record:
            return {}
        return {os.path.join(self.record, *name.split("/")): tape.text() for name, tape in sorted(self.tapes.items()) if tape.recorded}


class Taped:
    """A connector behind cassettes: the same spec, calls recorded or replayed."""

    def __init__(self, inner: Connector, cassettes: Cassettes):
        self.inner = inner
        self.spec = inner.spec
        self.cassettes = cassettes

    async def complete(self, request: ChatRequest) -> Completion:
        return await self.cassettes.complete(self.inner, request)

    def prepare(self, agent_dir: str) -> list[str]:
        prepare = getattr(self.inner, "prepare", None)
        return (prepare(agent_dir) or []) if prepare is not None else []

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def parse_roles(text: str) -> tuple[str, ...]:
    """``simulator,validator`` → the roles; an unknown one is a usage error with a did-you-mean."""
    from agenttest.errors import did_you_mean

    roles = tuple(dict.fromkeys(r.strip() for r in text.split(",") if r.strip()))
    for role in roles:
        if role not in ROLES:
            raise AgentTestError(f"unknown role '{role}'", hint=did_you_mean(role, ROLES) or f"roles: {', '.join(ROLES)}")
    if not roles:
        raise AgentTestError("give at least one role", hint=f"roles: {', '.join(ROLES)}")
    return roles
