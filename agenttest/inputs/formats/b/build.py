"""A B file → one agent-test Case (docs/formats-b.md): ``meta`` names it, ``task`` is its input and budgets, the
world is seeded from ``base_snapshot``, ``from_file`` and the entities written inline, ``tools`` enables packs,
``faults`` become the case's faults (B's kinds, drawn from the scenario's own seed), ``turns`` are pulled through
``eval.next_turn``, and ``assertions`` become ``cel`` and ``collateral`` assertions with their severity and weight."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import AgentTestError, CallError, Location, Problem
from agenttest.inputs.formats.b import packs, reader, worlds
from agenttest.inputs.formats.b.reader import Document, Path
from agenttest.model import AssertionSpec, Case, Fault
from agenttest.model.scenario import PulledTurn, Scenario, WorldEvent
from agenttest.runtime import cel, packs as pack_ops
from agenttest.runtime.scenario import NEXT_TURN, NEXT_TURN_TOOL
from agenttest.util.durations import parse_duration

TOP = ("meta", "task", "world", "tools", "faults", "turns", "assertions")
REQUIRED = ("meta", "task", "world", "tools", "assertions")
META = ("name", "schema_version", "revision", "seed", "start_time")
TASK = ("prompt", "messages", "budgets")
BUDGETS = ("max_steps", "max_duration")
MESSAGE = ("role", "content")
ROLES = ("system", "user", "assistant")
FAULT = ("tool", "error", "after_calls", "probability")
ERRORS = ("timeout", "rate_limit", "server_error", "permission_denied", "malformed")
TURN = ("user", "when", "world_events")
ASSERTION = ("id", "expr", "collateral", "severity", "weight")
COLLATERAL = ("allow_changes",)
SEVERITIES = ("minor", "major")
DEFAULT_START = "1970-01-01T00:00:00Z"


@dataclass
class Built:
    case: Case | None = None
    problems: list[Problem] = field(default_factory=list)
    document: Document | None = None
    packs: dict[str, packs.Pack] = field(default_factory=dict)


def build(path: str) -> Built:
    """Read and check a B file; the Case, or every problem found (each B's envelope)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return Built(problems=[Problem(f"cannot read {path}: {exc.strerror or exc}", Location(path), None, reader.FILE_NOT_FOUND)])
    doc = reader.read(path, raw.decode("utf-8", "replace"))
    if doc.problems:
        return Built(problems=doc.problems, document=doc)
    return _Builder(doc, raw).build()


class _Builder:
    def __init__(self, doc: Document, raw: bytes):
        self.doc = doc
        self.data: dict[str, Any] = doc.data
        self.folder = os.path.dirname(os.path.abspath(doc.path))
        self.identity = hashlib.sha256(raw)
        self.packs: dict[str, packs.Pack] = {}
        self.tops: dict[int, int] = {}  # id of a collection's list → its largest whole-number id so far

    def add(self, code: str, message: str, path: Path = (), hint: str | None = None, key: bool = False) -> None:
        self.doc.add(code, message, path, hint, key)

    def build(self) -> Built:
        from agenttest.util.positions import yaml_repeated

        doc = self.doc
        for key, line, col in yaml_repeated(doc.node):
            doc.problems.append(Problem(f"'{key}' is written twice in one mapping (YAML keeps only the last)", Location(doc.path, line, col),
                                        "write it once", reader.DUPLICATE_ID))
        doc.fields(self.data, (), TOP, REQUIRED)
        meta = self.meta()
        messages, budgets = self.task()
        self.tools()
        shape = cel.Shape({n: tuple(p.collections) for n, p in self.packs.items()},
                          tuple(t.name for p in self.packs.values() for t in p.tools) + (NEXT_TURN,))
        world = self.world()
        faults = self.faults(meta.get("seed", 0))
        turns = self.turns(shape)
        assertions = self.assertions(shape)
        if doc.problems:
            return Built(problems=doc.problems, document=doc, packs=self.packs)
        tools = (*(t for p in self.packs.values() for t in p.tools), NEXT_TURN_TOOL)
        scenario = Scenario(name=meta["name"], tools=tools, events=tuple(e for p in self.packs.values() for e in p.events), turns=turns,
                            start=meta["start"], max_steps=budgets.get("max_steps"), max_duration=budgets.get("max_duration"),
                            seed=meta.get("seed", 0), identity=self.identity.hexdigest(), revision=meta.get("revision"))
        task = self.data["task"]
        written_input = task.get("prompt") if "prompt" in task else task.get("messages")
        case = Case(id=meta["name"], messages=messages, raw={"id": meta["name"], "input": written_input}, location=doc.at(("meta",)),
                    base_dir=self.folder, file=doc.path, name=meta["name"], assertions=assertions, world=world, faults=faults,
                    scenario=scenario, locator=_Locator(doc), metadata={"scenario": {"identity": scenario.identity,
                                                                                    "schema_version": meta["schema_version"],
                                                                                    "revision": meta.get("revision"), "seed": scenario.seed}})
        return Built(case=case, document=doc, packs=self.packs)

    # -- meta and task

    def meta(self) -> dict[str, Any]:
        doc = self.doc
        meta = doc.mapping(self.data.get("meta", {}), ("meta",), "meta")
        doc.fields(meta, ("meta",), META, ("name", "schema_version"), "meta")
        out: dict[str, Any] = {"name": "scenario", "schema_version": "1.0", "start": reader.timestamp(DEFAULT_START)}
        if "name" in meta and doc.typed(meta["name"], ("meta", "name"), (str,), "meta.name"):
            if not meta["name"].strip():
                self.add(reader.INVALID_VALUE, "meta.name is empty", ("meta", "name"))
            out["name"] = meta["name"]
        if "schema_version" in meta:
            version = str(meta["schema_version"])
            if version.split(".")[0] != "1":
                self.add(reader.UNSUPPORTED_VERSION, f"schema_version {version} is not supported", ("meta", "schema_version"),
                         "agent-test reads schema_version 1.x")
            out["schema_version"] = version
        if "revision" in meta and doc.typed(meta["revision"], ("meta", "revision"), (int, str), "meta.revision"):
            out["revision"] = meta["revision"]
        if "seed" in meta and doc.typed(meta["seed"], ("meta", "seed"), (int,), "meta.seed"):
            out["seed"] = meta["seed"]
        if "start_time" in meta:
            try:
                out["start"] = reader.timestamp(meta["start_time"])
            except ValueError:
                self.add(reader.INVALID_VALUE, f"meta.start_time {meta['start_time']!r} is not an ISO 8601 time", ("meta", "start_time"),
                         'e.g. "2025-03-14T13:00:00Z"')
        return out

    def task(self) -> tuple[tuple[dict[str, Any], ...], dict[str, Any]]:
        doc = self.doc
        task = doc.mapping(self.data.get("task", {}), ("task",), "task")
        doc.fields(task, ("task",), TASK, (), "task")
        if ("prompt" in task) == ("messages" in task) and "task" in self.data:
            self.add(reader.ONE_OF, "task needs exactly one of prompt or messages", ("task",),
                     "prompt: a string, or messages: a list of {role, content}")
        messages: tuple[dict[str, Any], ...] = ()
        if "prompt" in task and doc.typed(task["prompt"], ("task", "prompt"), (str,), "task.prompt"):
            messages = ({"role": "user", "content": task["prompt"]},)
        elif "messages" in task and doc.typed(task["messages"], ("task", "messages"), (list,), "task.messages"):
            messages = tuple(self.message(m, ("task", "messages", i)) for i, m in enumerate(task["messages"]))
            if not task["messages"]:
                self.add(reader.INVALID_VALUE, "task.messages is empty", ("task", "messages"))
        budgets: dict[str, Any] = {}
        if "budgets" in task:
            given = doc.mapping(task["budgets"], ("task", "budgets"), "task.budgets")
            doc.fields(given, ("task", "budgets"), BUDGETS, (), "task.budgets")
            steps: Any = given.get("max_steps")
            if "max_steps" in given and doc.typed(steps, ("task", "budgets", "max_steps"), (int,), "max_steps"):
                if steps < 1:
                    self.add(reader.INVALID_VALUE, f"max_steps must be 1 or more, not {steps}", ("task", "budgets", "max_steps"))
                budgets["max_steps"] = steps
            if "max_duration" in given:
                try:
                    budgets["max_duration"] = parse_duration(given["max_duration"])
                except ValueError as exc:
                    self.add(reader.INVALID_VALUE, f"max_duration: {exc}", ("task", "budgets", "max_duration"))
        return messages, budgets

    def message(self, value: Any, path: Path) -> dict[str, Any]:
        message = self.doc.mapping(value, path, "a message")
        self.doc.fields(message, path, MESSAGE, MESSAGE, "a message")
        if message.get("role") is not None and message.get("role") not in ROLES:
            self.add(reader.INVALID_VALUE, f"unknown role '{message['role']}'", (*path, "role"), reader.suggestion(str(message["role"]), ROLES, "roles"))
        if "content" in message:
            self.doc.typed(message["content"], (*path, "content"), (str,), "content")
        return {"role": message.get("role", "user"), "content": message.get("content", "")}

    # -- tools and world

    def tools(self) -> None:
        doc = self.doc
        listed = self.data.get("tools", [])
        if not doc.typed(listed, ("tools",), (list,), "tools"):
            return
        for i, item in enumerate(listed):
            if not doc.typed(item, ("tools", i), (str,), f"tools[{i}]"):
                continue
            if item.endswith((".yaml", ".yml")) or "/" in item or os.sep in item:
                file = item if os.path.isabs(item) else os.path.join(self.folder, item)
                if not os.path.isfile(file):
                    self.add(reader.FILE_NOT_FOUND, f"pack file {item} does not exist", ("tools", i), f"looked for {os.path.normpath(file)}")
                    continue
                loaded = packs.load(file)
            elif item in packs.builtins():
                loaded = packs.builtin(item)
            else:
                self.add(reader.UNKNOWN_PACK, f"unknown pack '{item}'", ("tools", i), reader.suggestion(item, packs.builtins(), "built-in packs")
                         + " (or a path to a pack.yaml)")
                continue
            doc.problems += loaded.problems
            if loaded.pack is None:
                continue
            if loaded.pack.name in self.packs:
                self.add(reader.DUPLICATE_ID, f"pack '{loaded.pack.name}' is enabled twice", ("tools", i))
                continue
            self.packs[loaded.pack.name] = loaded.pack
            self.identity.update(f"\0pack:{loaded.pack.name}:{loaded.pack.digest}".encode())

    def world(self) -> dict[str, Any]:
        """The seeded world: every collection of every pack (empty), then base_snapshot, from_file and the inline
        entities in that order; an entity without its key gets the next whole number."""
        doc = self.doc
        given = doc.mapping(self.data.get("world", {}), ("world",), "world")
        world: dict[str, dict[str, list[Any]]] = {name: {c: [] for c in p.collections} for name, p in self.packs.items()}
        if "base_snapshot" in given:
            self.snapshot(given["base_snapshot"], world)
        for name, value in given.items():
            if name == "base_snapshot":
                continue
            pack = self.packs.get(str(name))
            if pack is None:
                self.add(reader.UNKNOWN_PACK, f"world names pack '{name}', which tools does not enable", ("world", name),
                         reader.suggestion(str(name), [*self.packs, "base_snapshot"], "packs enabled"), key=True)
                continue
            holder = doc.mapping(value, ("world", name), f"world.{name}")
            if "from_file" in holder:
                self.from_file(pack, holder["from_file"], ("world", name, "from_file"), world)
            for collection, items in holder.items():
                if collection == "from_file":
                    continue
                path = ("world", name, collection)
                if collection not in pack.collections:
                    self.add(reader.UNKNOWN_COLLECTION, f"pack '{name}' has no collection '{collection}'", path,
                             reader.suggestion(str(collection), [*pack.collections, "from_file"], "collections"), key=True)
                    continue
                if not doc.typed(items, path, (list,), f"world.{name}.{collection}"):
                    continue
                for i, entity in enumerate(items):
                    if doc.typed(entity, (*path, i), (dict,), f"an entity of {name}.{collection}"):
                        self.seed(world[name][collection], _plain(entity), pack.collections[collection], (*path, i))
        return world

    def seed(self, items: list[Any], entity: dict[str, Any], key: str, path: Path | None) -> None:
        """Append an entity; one without its key gets the next whole number (kept per collection: a file of
        100,000 rows without ids is not 100,000 scans)."""
        top = self.tops.get(id(items))
        if top is None:
            top = self.tops[id(items)] = pack_ops.next_id(items, key) - 1
        if entity.get(key) is None:
            entity[key] = top + 1
        value = entity[key]
        if isinstance(value, int) and not isinstance(value, bool) and value > top:
            self.tops[id(items)] = value
        items.append(entity)

    def from_file(self, pack: packs.Pack, value: Any, path: Path, world: dict[str, Any]) -> None:
        if not self.doc.typed(value, path, (str,), "from_file"):
            return
        file = value if os.path.isabs(value) else os.path.join(self.folder, value)
        if not os.path.isfile(file):
            self.add(reader.FILE_NOT_FOUND, f"from_file {value} does not exist", path, f"paths are relative to the scenario file: {os.path.normpath(file)}")
            return
        self.identity.update(f"\0from_file:{value}:{worlds.digest_file(file)}".encode())
        for collection, data in worlds.fixture_rows(file, self.doc.problems):
            if collection not in pack.collections:
                self.doc.problems.append(Problem(f"pack '{pack.name}' has no collection '{collection}'", Location(file),
                                                 reader.suggestion(collection, list(pack.collections), "collections"), reader.UNKNOWN_COLLECTION))
                continue
            self.seed(world[pack.name][collection], data, pack.collections[collection], None)

    def snapshot(self, value: Any, world: dict[str, Any]) -> None:
        path = ("world", "base_snapshot")
        if not self.doc.typed(value, path, (str,), "base_snapshot"):
            return
        file = value if os.path.isabs(value) else os.path.join(self.folder, value)
        if not os.path.isfile(file):
            self.add(reader.FILE_NOT_FOUND, f"base_snapshot {value} does not exist", path,
                     f"write it with: agent-test snapshot SCENARIO.yaml -o {value} (paths are relative to the scenario file)")
            return
        try:
            restored = worlds.read_snapshot(file)
        except AgentTestError as exc:
            self.add(reader.BAD_SNAPSHOT, exc.problems[0].message, path, exc.problems[0].hint)
            return
        self.identity.update(f"\0base_snapshot:{worlds.digest_file(file)}".encode())
        for name, holder in restored.items():
            if name not in self.packs:
                self.add(reader.UNKNOWN_PACK, f"base_snapshot holds pack '{name}', which tools does not enable", path,
                         f"add {name} to tools")
                continue
            for collection, items in holder.items():
                if collection not in self.packs[name].collections:
                    self.add(reader.UNKNOWN_COLLECTION, f"base_snapshot holds {name}.{collection}, a collection pack '{name}' does not have", path)
                    continue
                world[name][collection].extend(items)

    # -- faults, turns, assertions

    def faults(self, seed: int) -> tuple[Fault, ...]:
        doc = self.doc
        listed = self.data.get("faults", [])
        if listed is None or not doc.typed(listed, ("faults",), (list,), "faults"):
            return ()
        known = [t.name for p in self.packs.values() for t in p.tools]
        out = []
        for i, item in enumerate(listed):
            path = ("faults", i)
            fault = doc.mapping(item, path, "a fault")
            doc.fields(fault, path, FAULT, ("tool", "error"), "a fault")
            tool, kind = fault.get("tool"), fault.get("error")
            if isinstance(tool, str) and tool not in known:
                self.add(reader.UNKNOWN_TOOL, f"no tool '{tool}' in the enabled packs", (*path, "tool"), reader.suggestion(tool, known, "tools"))
            if "error" in fault and kind not in ERRORS:
                self.add(reader.INVALID_VALUE, f"unknown error kind {kind!r}", (*path, "error"), reader.suggestion(str(kind), ERRORS, "kinds"))
            if ("after_calls" in fault) == ("probability" in fault):
                self.add(reader.ONE_OF, "a fault needs exactly one trigger: after_calls or probability", path,
                         "after_calls: N (the Nth call fails, once) or probability: p (0 < p ≤ 1)")
                continue
            at: tuple[int, ...] = ()
            rate = None
            if "after_calls" in fault and doc.typed(fault["after_calls"], (*path, "after_calls"), (int,), "after_calls"):
                if fault["after_calls"] < 1:
                    self.add(reader.INVALID_VALUE, f"after_calls must be 1 or more, not {fault['after_calls']}", (*path, "after_calls"))
                at = (fault["after_calls"],)
            if "probability" in fault and doc.typed(fault["probability"], (*path, "probability"), (int, float), "probability"):
                if not 0 < fault["probability"] <= 1:
                    self.add(reader.INVALID_VALUE, f"probability must be above 0 and at most 1, not {fault['probability']}", (*path, "probability"))
                rate = float(fault["probability"])
            if isinstance(tool, str) and kind in ERRORS:
                out.append(Fault(tool=tool, kind=kind, at=at, rate=rate, seed=seed))
        return tuple(out)

    def turns(self, shape: cel.Shape) -> tuple[PulledTurn, ...]:
        doc = self.doc
        listed = self.data.get("turns", [])
        if listed is None or not doc.typed(listed, ("turns",), (list,), "turns"):
            return ()
        out = []
        for i, item in enumerate(listed):
            path = ("turns", i)
            turn = doc.mapping(item, path, "a turn")
            doc.fields(turn, path, TURN, ("user",), "a turn")
            user = turn.get("user", "")
            doc.typed(user, (*path, "user"), (str,), "user")
            when = turn.get("when")
            if when is not None and doc.typed(when, (*path, "when"), (str,), "when"):
                doc.expression(when, (*path, "when"), shape)
            events = self.events(turn.get("world_events", []), (*path, "world_events"))
            out.append(PulledTurn(user=str(user), when=when if isinstance(when, str) else None, events=events, location=doc.at((*path, "when"))))
        return tuple(out)

    def events(self, listed: Any, path: Path) -> tuple[WorldEvent, ...]:
        doc = self.doc
        if listed is None or not doc.typed(listed, path, (list,), "world_events"):
            return ()
        ops = {e.name: e for p in self.packs.values() for e in (*p.tools, *p.events) if e.op in packs.WRITES}
        out = []
        for i, item in enumerate(listed):
            here = (*path, i)
            event = doc.mapping(item, here, "a world event")
            named = [k for k in event if k != "at_vt"]
            if "at_vt" not in event:
                self.add(reader.MISSING_FIELD, "a world event needs 'at_vt'", here, '"+8s" after the turn, or an ISO time')
            if len(named) != 1:
                self.add(reader.ONE_OF, f"a world event names exactly one operation beside at_vt (it names {len(named)})", here,
                         f"e.g. email.deliver: {{from: …, subject: …}}; the operations: {', '.join(ops) or 'none'}")
                continue
            op, data = named[0], event[named[0]]
            if op not in ops:
                self.add(reader.UNKNOWN_TOOL, f"unknown world operation '{op}'", (*here, op), reader.suggestion(str(op), list(ops), "operations"), key=True)
                continue
            if not doc.typed(data, (*here, op), (dict,), op):
                continue
            try:
                pack_ops.validate(ops[op], _plain(data))
            except CallError as exc:
                self.add(reader.INVALID_VALUE, str(exc), (*here, op))
            at = self.at_vt(event.get("at_vt"), (*here, "at_vt"))
            if at is not None:
                out.append(WorldEvent(op=op, data=_plain(data), at=at[0], relative=at[1], written=str(event.get("at_vt"))))
        return tuple(out)

    def at_vt(self, value: Any, path: Path) -> tuple[float, bool] | None:
        if value is None:
            return None
        if isinstance(value, str) and value.strip().startswith("+"):
            try:
                return parse_duration(value.strip()[1:]), True
            except ValueError as exc:
                self.add(reader.INVALID_VALUE, f"at_vt: {exc}", path, '"+8s" (after the turn), or an absolute ISO time')
                return None
        try:
            return reader.timestamp(value), False
        except ValueError:
            self.add(reader.INVALID_VALUE, f"at_vt {value!r} is neither \"+DURATION\" nor an ISO time", path, 'e.g. "+8s" or "2025-03-14T13:00:08Z"')
            return None

    def assertions(self, shape: cel.Shape) -> tuple[AssertionSpec, ...]:
        doc = self.doc
        listed = self.data.get("assertions", [])
        if not doc.typed(listed, ("assertions",), (list,), "assertions"):
            return ()
        if not listed:
            self.add(reader.INVALID_VALUE, "assertions is empty: nothing would say what passing means", ("assertions",))
        seen: dict[str, int] = {}
        out = []
        for i, item in enumerate(listed):
            path = ("assertions", i)
            given = doc.mapping(item, path, "an assertion")
            doc.fields(given, path, ASSERTION, (), "an assertion")
            label = given.get("id", f"assertion-{i + 1}")
            if doc.typed(label, (*path, "id") if "id" in given else path, (str,), "id"):
                if label in seen:
                    self.add(reader.DUPLICATE_ID, f"assertion id '{label}' is used twice", (*path, "id"), f"the first is assertions[{seen[label]}]")
                seen[label] = i
            params: dict[str, Any] = {"id": label}
            if ("expr" in given) == ("collateral" in given):
                self.add(reader.ONE_OF, "an assertion has exactly one of expr or collateral", path,
                         "expr: a CEL expression, or collateral: {allow_changes: [...]}")
                continue
            if "expr" in given:
                if doc.typed(given["expr"], (*path, "expr"), (str,), "expr"):
                    doc.expression(given["expr"], (*path, "expr"), shape)
                params.update(type="cel", expr=given["expr"])
            else:
                params.update(type="collateral", allow_changes=self.collateral(given["collateral"], (*path, "collateral")))
            if "severity" in given:
                if given["severity"] not in SEVERITIES:
                    self.add(reader.INVALID_VALUE, f"unknown severity {given['severity']!r}", (*path, "severity"),
                             reader.suggestion(str(given["severity"]), SEVERITIES, "severities"))
                params["severity"] = given["severity"]
            if "weight" in given and doc.typed(given["weight"], (*path, "weight"), (int, float), "weight"):
                if given["weight"] < 0:
                    self.add(reader.INVALID_VALUE, f"weight must be 0 or more, not {given['weight']}", (*path, "weight"))
                params["weight"] = given["weight"]
            out.append(AssertionSpec(params["type"], params, doc.at(path), path))
        return tuple(out)

    def collateral(self, value: Any, path: Path) -> list[str]:
        doc = self.doc
        given = doc.mapping(value, path, "collateral")
        doc.fields(given, path, COLLATERAL, COLLATERAL, "collateral")
        listed = given.get("allow_changes", [])
        if not doc.typed(listed, (*path, "allow_changes"), (list,), "allow_changes"):
            return []
        known = [n for name, p in self.packs.items() for n in (name, *(f"{name}.{c}" for c in p.collections))]
        for i, item in enumerate(listed):
            if doc.typed(item, (*path, "allow_changes", i), (str,), "a collection") and item not in known:
                self.add(reader.UNKNOWN_COLLECTION, f"allow_changes names '{item}', no pack or collection of this world",
                         (*path, "allow_changes", i), reader.suggestion(item, known, "collections"))
        return [str(x) for x in listed]


def _plain(value: Any) -> Any:
    """YAML's values as JSON holds them (a date or a time becomes its ISO text)."""
    import datetime as dt

    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat().replace("+00:00", "Z")
    return value


@dataclass(frozen=True)
class _Locator:
    """Places inside the B file, for problems found after loading (resolution)."""

    doc: Document

    def __call__(self, path: Any = (), key: bool = False, line: int | None = None) -> Location:
        return self.doc.at(tuple(path), key)

