"""A B world's bulk sources: ``from_file`` (JSONL lines ``{"collection", "data"}``, relative to the scenario file)
and ``base_snapshot`` (a SQLite file ``agent-test snapshot`` writes: one JSON array per collection, restored with
one parse per collection instead of one per entity). Both count in the reproduction identity."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

from agenttest.errors import AgentTestError, Location, Problem
from agenttest.inputs.formats.b import reader

SNAPSHOT_FORMAT = "agent-test-world-snapshot/1"


def digest_file(path: str) -> str:
    """sha256 of a file's bytes."""
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def fixture_rows(path: str, problems: list[Problem], qualified: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The ``(collection, data)`` of each line of a JSONL fixture; a bad line is a problem at its line and column
    (code BAD_FIXTURE). ``qualified``: collections are named ``pack.collection`` (a snapshot's input)."""
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        problems.append(Problem(f"from_file {path} cannot be read: {exc.strerror or exc}", Location(path), None, reader.FILE_NOT_FOUND))
        return rows
    with fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = Location(path, number, len(line) - len(line.lstrip()) + 1)
            try:
                item = json.loads(line)
            except ValueError as exc:
                col = getattr(exc, "colno", 1)
                problems.append(Problem(f"not a JSON line: {getattr(exc, 'msg', exc)}", Location(path, number, col),
                                        'each line is {"collection": "...", "data": {...}}', reader.BAD_FIXTURE))
                continue
            if not isinstance(item, dict) or set(item) != {"collection", "data"} or not isinstance(item.get("collection"), str) \
                    or not isinstance(item.get("data"), dict):
                extra = sorted(set(item) - {"collection", "data"}) if isinstance(item, dict) else []
                said = f"unknown field '{extra[0]}'" if extra else 'a line must be {"collection": "...", "data": {...}}'
                problems.append(Problem(said, where, 'each line is {"collection": "...", "data": {...}}', reader.BAD_FIXTURE))
                continue
            if qualified and "." not in item["collection"]:
                problems.append(Problem(f"collection '{item['collection']}' must be named pack.collection here", where,
                                        'e.g. {"collection": "shop.orders", "data": {...}}', reader.BAD_FIXTURE))
                continue
            rows.append((item["collection"], item["data"]))
    return rows


def write_snapshot(path: str, world: dict[str, Any]) -> str:
    """Write a world (pack → collection → entities) as a snapshot file; its content digest."""
    content = hashlib.sha256(json.dumps(world, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
    import sqlite3  # here: only snapshots use it, and every start-up imports this module

    temporary = path + ".part"
    if os.path.exists(temporary):
        os.remove(temporary)
    db = sqlite3.connect(temporary)
    try:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE collections (pack TEXT NOT NULL, name TEXT NOT NULL, entities TEXT NOT NULL, PRIMARY KEY (pack, name))")
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", SNAPSHOT_FORMAT), ("content_sha256", content)])
        db.executemany("INSERT INTO collections VALUES (?, ?, ?)",
                       [(pack, name, json.dumps(items, ensure_ascii=False, default=str)) for pack, holder in sorted(world.items())
                        for name, items in sorted(holder.items())])
        db.commit()
    finally:
        db.close()
    os.replace(temporary, path)
    return content


def read_snapshot(path: str) -> dict[str, dict[str, list[Any]]]:
    """A snapshot file's world. AgentTestError (BAD_SNAPSHOT) when it is not one."""
    if not os.path.isfile(path):
        raise AgentTestError(f"base_snapshot {path} does not exist", Location(path), "write one with agent-test snapshot")
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("format") != SNAPSHOT_FORMAT:
                raise AgentTestError(f"{path} is not a world snapshot of this format ({meta.get('format')!r})", Location(path))
            world: dict[str, dict[str, list[Any]]] = {}
            for pack, name, entities in db.execute("SELECT pack, name, entities FROM collections ORDER BY pack, name"):
                world.setdefault(pack, {})[name] = json.loads(entities)
            return world
        finally:
            db.close()
    except (sqlite3.Error, ValueError) as exc:
        raise AgentTestError(f"{path} is not a world snapshot: {exc}", Location(path), "write one with agent-test snapshot") from None


def qualified_world(rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, list[Any]]]:
    """``pack.collection`` rows → a world."""
    world: dict[str, dict[str, list[Any]]] = {}
    for name, data in rows:
        pack, _, collection = name.partition(".")
        world.setdefault(pack, {}).setdefault(collection, []).append(data)
    return world

