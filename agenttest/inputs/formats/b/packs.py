"""Tool packs as data (docs/formats-b.md#packs): a ``pack.yaml`` names a pack, its collections and its tools —
each a JSON Schema of arguments and an ``op`` (create, read, update, list, delete, search) on one collection —
and the events the world itself may cause (``email.deliver``). A tool without an ``op`` is a function of the
pack's ``tools.py``. The built-in packs (``email``, ``shop``, ``calendar``, ``crm``) are such files."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import Location, Problem
from agenttest.inputs.formats.b import reader
from agenttest.model.scenario import OPS, WorldTool

BUILTIN_FOLDER = os.path.join(os.path.dirname(__file__), "packs")
PACK_FIELDS = ("pack", "description", "collections", "tools", "events", "python")
TOOL_FIELDS = ("description", "op", "collection", "parameters", "defaults", "fields")
WRITES = ("create", "update", "delete")  # the ops a world event may use


@dataclass(frozen=True, kw_only=True)
class Pack:
    name: str
    collections: dict[str, str]  # collection → its key field
    tools: tuple[WorldTool, ...] = ()
    events: tuple[WorldTool, ...] = ()
    digest: str = ""  # sha256 of its files (the reproduction identity)
    path: str = ""

    def writes(self) -> set[str]:
        """The collections its tools may change."""
        return {t.collection for t in self.tools if t.op in WRITES or t.function is not None}


@dataclass
class Loaded:
    pack: Pack | None = None
    problems: list[Problem] = field(default_factory=list)


def builtins() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(BUILTIN_FOLDER) if f.endswith(".yaml"))


def load(path: str) -> Loaded:
    """A pack file, with its problems (code BAD_PACK, or as B reads any file) at their places in it."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return Loaded(problems=[Problem(f"pack file {path} cannot be read: {exc.strerror or exc}", Location(path), None,
                                        reader.FILE_NOT_FOUND)])
    doc = reader.read(path, raw.decode("utf-8", "replace"))
    if doc.problems:
        return Loaded(problems=doc.problems)
    data = doc.data
    doc.fields(data, (), PACK_FIELDS, ("pack", "collections", "tools"), "a pack")
    name = data.get("pack")
    if not isinstance(name, str) or not name.isidentifier():
        doc.add(reader.BAD_PACK, f"a pack's name must be a word (letters, digits, _), not {name!r}", ("pack",))
        return Loaded(problems=doc.problems)
    collections = _collections(doc, data.get("collections"))
    digest = hashlib.sha256(raw)
    module = _python(doc, data.get("python"), path, digest)
    tools = _tools(doc, name, data.get("tools"), "tools", collections, module)
    events = _tools(doc, name, data.get("events"), "events", collections, None)
    for event in events:
        if event.op not in WRITES:
            doc.add(reader.BAD_PACK, f"event '{event.name}' must create, update or delete (not {event.op!r})", ("events", event.name.split(".", 1)[1]))
    if doc.problems:
        return Loaded(problems=doc.problems)
    return Loaded(Pack(name=name, collections=collections, tools=tools, events=events, digest=digest.hexdigest(), path=path))


def _collections(doc: reader.Document, value: Any) -> dict[str, str]:
    """``[inbox, sent]`` or ``{inbox: {key: id}}``: each collection and the field that identifies its entities."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return dict.fromkeys(value, "id")
    if isinstance(value, dict):
        out = {}
        for name, spec in value.items():
            spec = spec or {}
            if not isinstance(spec, dict) or set(spec) - {"key"} or not isinstance(spec.get("key", "id"), str):
                doc.add(reader.BAD_PACK, f"collection '{name}' takes only 'key' (the field naming its entities)", ("collections", name))
                continue
            out[str(name)] = spec.get("key", "id")
        return out
    doc.add(reader.BAD_PACK, "'collections' must list the pack's collections", ("collections",), "e.g. collections: [inbox, sent]")
    return {}


def _python(doc: reader.Document, value: Any, path: str, digest: Any) -> Any:
    """The pack's ``tools.py`` (or the file ``python`` names), imported, when there is one."""
    file = os.path.join(os.path.dirname(path), value if isinstance(value, str) else "tools.py")
    if value is not None and not isinstance(value, str):
        doc.add(reader.WRONG_TYPE, "'python' must name a Python file beside the pack", ("python",))
        return None
    if not os.path.isfile(file):
        if value is not None:
            doc.add(reader.FILE_NOT_FOUND, f"no Python file {file}", ("python",))
        return None
    from agenttest.app.yaofiles import load_module

    with open(file, "rb") as fh:
        digest.update(fh.read())
    try:
        return load_module(file)
    except Exception as exc:  # the user's module failed to import: a located problem, not a crash
        doc.add(reader.BAD_PACK, f"{file} failed to import: {type(exc).__name__}: {exc}", ("python",) if value else ())
        return None


def _tools(doc: reader.Document, pack: str, value: Any, key: str, collections: dict[str, str], module: Any) -> tuple[WorldTool, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        doc.add(reader.BAD_PACK, f"'{key}' must map each name to its definition", (key,))
        return ()
    out = []
    for name, spec in value.items():
        path = (key, name)
        if not isinstance(spec, dict):
            doc.add(reader.BAD_PACK, f"{key[:-1]} '{name}' must be a mapping", path)
            continue
        doc.fields(spec, path, TOOL_FIELDS, (), f"{key[:-1]} '{name}'")
        op = spec.get("op", "")
        function = getattr(module, str(name), None) if module is not None and not op else None
        if op and op not in OPS:
            doc.add(reader.BAD_PACK, f"unknown op '{op}'", (*path, "op"), reader.suggestion(str(op), OPS, "ops"))
            continue
        if not op and not callable(function):
            doc.add(reader.BAD_PACK, f"{key[:-1]} '{name}' has no op and no function in the pack's tools.py", path,
                    f"give op: one of {', '.join(OPS)}")
            continue
        collection = spec.get("collection", "")
        if op and collection not in collections:
            doc.add(reader.BAD_PACK, f"{key[:-1]} '{name}' acts on no collection of the pack ({collection!r})", (*path, "collection"),
                    reader.suggestion(str(collection), list(collections), "collections"))
            continue
        parameters = spec.get("parameters")
        if parameters is not None and not _schema_ok(doc, parameters, (*path, "parameters")):
            continue
        out.append(WorldTool(name=f"{pack}.{name}", description=str(spec.get("description", "")), parameters=parameters, op=op,
                             collection=collection, key=collections.get(collection, "id"), fields=tuple(spec.get("fields") or ()),
                             defaults=spec.get("defaults"), function=function if callable(function) else None))
    return tuple(out)


def _schema_ok(doc: reader.Document, schema: Any, path: reader.Path) -> bool:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        doc.add(reader.BAD_PACK, "'parameters' must be a JSON Schema (a mapping)", path)
        return False
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        doc.add(reader.BAD_PACK, f"'parameters' is not a valid JSON Schema: {exc.message}", path)
        return False
    return True


_BUILTIN: dict[str, Loaded] = {}


def builtin(name: str) -> Loaded:
    """A built-in pack by name (loaded once)."""
    if name not in _BUILTIN:
        _BUILTIN[name] = load(os.path.join(BUILTIN_FOLDER, f"{name}.yaml"))
    return _BUILTIN[name]
