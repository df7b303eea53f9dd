"""Tool packs at run time: a pack's tool acts on one collection of the world (``world[pack][collection]``, a
list of entities) by its ``op`` — create, read, update, list, delete or search — or runs a Python function.
A failed call (bad arguments, no such entity) raises ``CallError`` with a code the model can act on."""

from __future__ import annotations

import copy
from typing import Any

from agenttest.errors import CallError
from agenttest.model.scenario import WorldTool

PAGING = ("limit", "offset")


def default_parameters(tool: WorldTool) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments when its pack gives none: what its op needs."""
    key = {tool.key: {"description": f"the {tool.key} of the entity"}}
    if tool.op in ("read", "delete"):
        return {"type": "object", "properties": key, "required": [tool.key]}
    if tool.op == "update":
        return {"type": "object", "properties": key, "required": [tool.key], "additionalProperties": True}
    if tool.op == "search":
        return {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["query"], "additionalProperties": True}
    if tool.op == "list":
        return {"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1}}, "additionalProperties": True}
    return {"type": "object", "additionalProperties": True}


def schema(tool: WorldTool, name: str) -> dict[str, Any]:
    """The function schema the model is offered, under the name it sees."""
    return {"name": name, "description": tool.description or f"{tool.op} {tool.pack}.{tool.collection}".strip(),
            "parameters": tool.parameters or default_parameters(tool)}


def validate(tool: WorldTool, arguments: dict[str, Any]) -> None:
    """The arguments against the tool's JSON Schema: ``INVALID_ARGUMENT`` naming the first problem."""
    from jsonschema import Draft202012Validator

    error = next(iter(Draft202012Validator(tool.parameters or default_parameters(tool)).iter_errors(arguments)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise CallError(f"INVALID_ARGUMENT: {tool.name}: {where + ': ' if where else ''}{error.message}")


def collection(world: dict[str, Any], pack: str, name: str) -> list[Any]:
    """``world[pack][name]``, made when missing (a collection a pack declares starts empty)."""
    holder = world.setdefault(pack, {})
    if not isinstance(holder, dict):
        raise CallError(f"INTERNAL: world.{pack} is not an object of collections")
    items = holder.setdefault(name, [])
    if not isinstance(items, list):
        raise CallError(f"INTERNAL: world.{pack}.{name} is not a list of entities")
    return items


def next_id(items: list[Any], key: str = "id") -> int:
    """The next whole-number id of a collection: one more than the largest, 1 for an empty one."""
    ids = [e.get(key) for e in items if isinstance(e, dict)]
    return max([i for i in ids if isinstance(i, int) and not isinstance(i, bool)], default=0) + 1


def run(tool: WorldTool, world: dict[str, Any], arguments: dict[str, Any]) -> Any:
    """Apply a data tool to the world in place and return what the model sees."""
    validate(tool, arguments)
    items = collection(world, tool.pack, tool.collection)
    op = tool.op
    if op == "create":
        return create(tool, items, arguments)
    if op == "list":
        return _page([e for e in items if _fits(e, _filters(arguments))], arguments)
    if op == "search":
        return _page([e for e in items if _fits(e, _filters(arguments, "query")) and _found(e, arguments.get("query"), tool.fields)],
                     arguments)
    index = _find(tool, items, arguments)
    if op == "read":
        return copy.deepcopy(items[index])
    if op == "update":
        items[index].update({k: copy.deepcopy(v) for k, v in arguments.items() if k != tool.key})
        return copy.deepcopy(items[index])
    if op == "delete":
        items.pop(index)
        return {"deleted": arguments[tool.key]}
    raise CallError(f"INTERNAL: {tool.name} has no op")


def create(tool: WorldTool, items: list[Any], arguments: dict[str, Any]) -> Any:
    entity = {**copy.deepcopy(tool.defaults or {}), **copy.deepcopy(arguments)}
    if entity.get(tool.key) is None:
        entity[tool.key] = next_id(items, tool.key)
    elif any(isinstance(e, dict) and e.get(tool.key) == entity[tool.key] for e in items):
        raise CallError(f"ALREADY_EXISTS: {tool.pack}.{tool.collection} has an entity with {tool.key} {entity[tool.key]!r}")
    items.append(entity)
    return copy.deepcopy(entity)


def _find(tool: WorldTool, items: list[Any], arguments: dict[str, Any]) -> int:
    wanted = arguments.get(tool.key)
    for i, entity in enumerate(items):
        if isinstance(entity, dict) and (entity.get(tool.key) == wanted or str(entity.get(tool.key)) == str(wanted)):
            return i
    raise CallError(f"NOT_FOUND: {tool.pack}.{tool.collection} has no entity with {tool.key} {wanted!r}")


def _filters(arguments: dict[str, Any], *besides: str) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if k not in PAGING and k not in besides}


def _fits(entity: Any, filters: dict[str, Any]) -> bool:
    return isinstance(entity, dict) and all(entity.get(k) == v or str(entity.get(k)) == str(v) for k, v in filters.items())


def _found(entity: dict[str, Any], query: Any, fields: tuple[str, ...]) -> bool:
    words = str(query or "").lower().split()
    texts = [str(entity.get(f, "")) for f in fields] if fields else [str(v) for v in entity.values() if isinstance(v, (str, int, float))]
    text = " ".join(texts).lower()
    return all(w in text for w in words)


def _page(found: list[Any], arguments: dict[str, Any]) -> list[Any]:
    offset = arguments.get("offset") or 0
    limit = arguments.get("limit")
    chosen = found[offset:] if isinstance(offset, int) else found
    return copy.deepcopy(chosen[:limit] if isinstance(limit, int) and limit >= 0 else chosen)
