"""What CEL expressions read (docs/formats-b.md): the journal of a case's tool calls, the world as the agent
left it, and ``diff`` — for each collection of the world (a list of entities), the entities the agent added,
removed and changed."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from agenttest.model import ToolCall
from agenttest.util.matching import equal

TURN_NOT_READY = "TURN_NOT_READY"


def entry(step: int, call: ToolCall, name: str) -> dict[str, Any]:
    """One journal entry: a tool call as CEL sees it."""
    return {"step": step, "tool": name, "args": call.arguments if isinstance(call.arguments, dict) else {},
            "result": call.result, "error": call.error, "ok": call.error is None and call.fault is None,
            "fault_injected": call.fault is not None, "fault": call.fault, "mocked": call.mocked, "vt": call.vt,
            "status": status_of(call)}


def status_of(call: ToolCall) -> str:
    """``TURN_NOT_READY`` for eval.next_turn's refusals, ``error`` for a failed call, else ``ok``."""
    if isinstance(call.result, dict) and call.result.get("status") == TURN_NOT_READY:
        return TURN_NOT_READY
    return "error" if call.error is not None else "ok"


def in_order(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls in the order they were made: a scenario's by their virtual time (each call has its own), since
    calls a model asks for together finish in any order; other calls as recorded."""
    if not calls or not all(c.vt for c in calls):
        return list(calls)
    from datetime import datetime

    return sorted(calls, key=lambda c: datetime.fromisoformat(c.vt.replace("Z", "+00:00")))


def journal(calls: Sequence[ToolCall], final_response: Any = "", name: Callable[[str], str] = str) -> dict[str, Any]:
    """``journal.*``: ``entries`` (every tool call, in order), ``tools`` (their names) and ``final_response``."""
    entries = [entry(i, c, name(c.name)) for i, c in enumerate(in_order(calls), 1)]
    text = final_response if isinstance(final_response, str) else json.dumps(final_response, ensure_ascii=False, default=str)
    return {"entries": entries, "tools": [e["tool"] for e in entries], "final_response": text}


def context(world: Any, before: Any, calls: Sequence[ToolCall], final_response: Any = "",
            name: Callable[[str], str] = str) -> dict[str, Any]:
    """The whole CEL context of a case: ``world``, ``diff`` (from ``before``) and ``journal``."""
    world = world if world is not None else {}
    return {"world": world, "diff": changes(before if before is not None else {}, world), "journal": journal(calls, final_response, name)}


def changes(before: Any, after: Any) -> Any:
    """``diff``: the world's shape, each list of entities replaced by ``{added, removed, changed}`` and each object
    by the diff of its keys (those of either side)."""
    if isinstance(before, list) or isinstance(after, list):
        return collection_diff(before if isinstance(before, list) else [], after if isinstance(after, list) else [])
    if isinstance(before, dict) or isinstance(after, dict):
        b = before if isinstance(before, dict) else {}
        a = after if isinstance(after, dict) else {}
        return {k: changes(b.get(k), a.get(k)) for k in {**b, **a}}
    return {"before": before, "after": after, "changed": not equal(before, after)}


def collection_diff(before: list[Any], after: list[Any], key: str = "id") -> dict[str, list[Any]]:
    """The entities of one collection added, removed and changed (``{id, before, after, fields}``), matched by
    ``key`` when every entity has one, else by equality."""
    keyed = all(isinstance(e, dict) and _hashable(e.get(key)) and e.get(key) is not None for e in [*before, *after])
    if not keyed:
        left = [json.dumps(e, sort_keys=True, default=str) for e in before]
        right = [json.dumps(e, sort_keys=True, default=str) for e in after]
        removed, added = _multiset_minus(before, left, right), _multiset_minus(after, right, left)
        return {"added": added, "removed": removed, "changed": []}
    old = {e[key]: e for e in before}
    new = {e[key]: e for e in after}
    changed = [{"id": k, "before": old[k], "after": new[k], "fields": sorted(f for f in {*old[k], *new[k]}
                                                                           if not equal(old[k].get(f), new[k].get(f)))}
               for k in new if k in old and not equal(old[k], new[k])]
    return {"added": [e for k, e in new.items() if k not in old], "removed": [e for k, e in old.items() if k not in new],
            "changed": changed}


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _multiset_minus(items: list[Any], mine: list[str], theirs: list[str]) -> list[Any]:
    left = list(theirs)
    out = []
    for item, text in zip(items, mine):
        if text in left:
            left.remove(text)
        else:
            out.append(item)
    return out


def changed_collections(before: Any, after: Any, prefix: str = "") -> list[str]:
    """The dotted names of the collections (lists) and values that differ between two worlds, new ones included:
    ``shop.orders``, ``calendar.events`` — what ``collateral.allow_changes`` is checked against."""
    if isinstance(before, dict) and after is _ABSENT or before is _ABSENT and isinstance(after, dict):
        before, after = before if isinstance(before, dict) else {}, after if isinstance(after, dict) else {}
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [prefix or "$"] if not equal(before, after) else []
    out: list[str] = []
    for k in {**before, **after}:
        out += changed_collections(before.get(k, _ABSENT), after.get(k, _ABSENT), f"{prefix}.{k}" if prefix else str(k))
    return out


class _Absent:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Absent)

    def __hash__(self) -> int:
        return 0


_ABSENT: Any = _Absent()
