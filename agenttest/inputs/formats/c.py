"""Seed format C, world scenarios (``world-scenarios.txt``; docs/formats-c.md): a small JSON world — a task, the
initial state, a policy, faults by occurrence and assertions on the final state or the metrics — read strictly and
converted into a case of agent-test's own: ``task`` is the user's message, ``initial`` the world, ``domain`` a tag,
``policy`` the case's policy (``allowed_tools`` enforced), each fault one at its call number, each assertion a
``state`` or ``metric`` assertion with ``op``. A file holds one scenario, or a list of them."""

from __future__ import annotations

import re
from typing import Any

from agenttest.errors import closest
from agenttest.inputs.formats.strict import Checker
from agenttest.inputs.validation import Path
from agenttest.runtime.world import step
from agenttest.util.matching import OPS

REQUIRED = ("id", "task", "initial", "assertions")
OPTIONAL = ("name", "description", "domain", "policy", "faults")
FAULT_KINDS = ("timeout", "commit_timeout", "rate_limit", "malformed", "expired_credentials")
MAX_OCCURRENCE = 100
SAID = {"equals": "eq", "equal": "eq", "==": "eq", "=": "eq", "!=": "ne", "neq": "ne", "<": "lt", "<=": "lte", "le": "lte",
        ">": "gt", ">=": "gte", "ge": "gte"}  # other spellings of the ops, for the hint
# what a malformed response gives the agent: a controlled sentinel it can recognise (and retry), not a crash
MALFORMED_SENTINEL = '{"error": "MALFORMED_RESPONSE", "retryable": true}'
_SEGMENT = re.compile(r"[^.]+")


def recognises(data: Any) -> bool:
    """C's shape: ``task`` and ``initial``, or ``task`` and assertions with ``path`` and ``op`` (or a list of such)."""
    if isinstance(data, list):
        return bool(data) and all(recognises(d) for d in data)
    if not isinstance(data, dict) or "task" not in data:
        return False
    checks = data.get("assertions")
    return "initial" in data or (isinstance(checks, list) and any(isinstance(a, dict) and "path" in a and "op" in a for a in checks))


# ---- reading ---------------------------------------------------------------------------------------


def check(data: Any) -> Checker:
    """Every problem of a scenario file, strictly."""
    c = Checker()
    if isinstance(data, list):
        seen: dict[str, int] = {}
        for i, scenario in enumerate(data):
            _scenario(c, scenario, (i,))
            ident = scenario.get("id") if isinstance(scenario, dict) else None
            if isinstance(ident, str) and ident in seen:
                c.say((i, "id"), f"duplicate scenario id '{ident}' (first in the scenario at [{seen[ident]}])")
            elif isinstance(ident, str):
                seen[ident] = i
    else:
        _scenario(c, data, ())
    return c


def _scenario(c: Checker, data: Any, path: Path) -> None:
    if not c.fields(data, path, "a world scenario", REQUIRED, OPTIONAL):
        return
    if "id" in data:
        c.identifier(data["id"], (*path, "id"))
    for key in ("name", "description", "domain", "task"):
        if key in data:
            c.kind(data[key], (*path, key), str, "a string")
    if isinstance(data.get("task"), str) and not data["task"].strip():
        c.say((*path, "task"), "'task' is empty: it is the user's message")
    if "initial" in data:
        c.kind(data["initial"], (*path, "initial"), dict, "an object (the initial state)")
    if "policy" in data and c.kind(data["policy"], (*path, "policy"), dict, "an object"):
        allowed = data["policy"].get("allowed_tools")
        if "allowed_tools" in data["policy"] and c.kind(allowed, (*path, "policy", "allowed_tools"), list, "a list of tool names"):
            for j, name in enumerate(allowed):
                if not isinstance(name, str) or not name:
                    c.say((*path, "policy", "allowed_tools", j), f"a tool name must be a non-empty string, not {name!r}")
    faults = data.get("faults")
    if "faults" in data and c.kind(faults, (*path, "faults"), list, "a list of faults"):
        for j, fault in enumerate(faults):
            _fault(c, fault, (*path, "faults", j))
    checks = data.get("assertions")
    if "assertions" in data and c.listed(checks, (*path, "assertions"), 1, 200, "assertions"):
        for j, item in enumerate(checks):
            _assertion(c, item, (*path, "assertions", j))


def _fault(c: Checker, fault: Any, path: Path) -> None:
    if not c.fields(fault, path, "a fault", ("tool", "occurrence", "kind")):
        return
    if "tool" in fault and c.kind(fault["tool"], (*path, "tool"), str, "a tool name") and not fault["tool"]:
        c.say((*path, "tool"), "'tool' must name a tool")
    occurrence = fault.get("occurrence")
    if "occurrence" in fault and (not isinstance(occurrence, int) or isinstance(occurrence, bool) or not 1 <= occurrence <= MAX_OCCURRENCE):
        c.say((*path, "occurrence"), f"'occurrence' must be a whole number from 1 to {MAX_OCCURRENCE}, not {occurrence!r}",
              "the invocation of the tool it fails: 1 is the first call")
    kind = fault.get("kind")
    if "kind" in fault and kind not in FAULT_KINDS:
        near = closest(str(kind), FAULT_KINDS)
        c.say((*path, "kind"), f"'kind' cannot be {kind!r}", f"did you mean '{near}'?" if near else f"one of {', '.join(FAULT_KINDS)}")


def _assertion(c: Checker, item: Any, path: Path) -> None:
    if not c.fields(item, path, "an assertion", ("path", "op", "value"), ("name",)):
        return
    if "name" in item:
        c.kind(item["name"], (*path, "name"), str, "a string")
    op = item.get("op")
    if "op" in item and op not in OPS:
        near = SAID.get(str(op).lower()) or closest(str(op), OPS)
        c.say((*path, "op"), f"'op' cannot be {op!r}", f"did you mean '{near}'?" if near else "eq, lte or gte (and ne, lt, gt)")
    where = item.get("path")
    if "path" in item and c.kind(where, (*path, "path"), str, "a dotted path"):
        segments = where.split(".")
        if not where or not all(segments):
            c.say((*path, "path"), f"'path' must be a dotted path such as metrics.refund_count or orders.order-1042.status, not {where!r}")
        elif segments[0] == "metrics" and len(segments) != 2:
            c.say((*path, "path"), f"'{where}' names no metric: metrics.<name>, e.g. metrics.violations")


# ---- converting --------------------------------------------------------------------------------------


def convert(data: Any) -> dict[str, Any]:
    """A checked file as agent-test's own: ``{"cases": [...]}``."""
    return {"cases": [case(s) for s in (data if isinstance(data, list) else [data])]}


def case(scenario: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": scenario["id"]}
    for key in ("name", "description"):
        if key in scenario:
            out[key] = scenario[key]
    if "domain" in scenario:
        out["tags"] = [scenario["domain"]]
    out["input"] = scenario["task"]
    out["world"] = scenario["initial"]
    if "policy" in scenario:
        out["policy"] = scenario["policy"]
    if scenario.get("faults"):
        out["faults"] = [fault(f) for f in scenario["faults"]]
    out["assertions"] = [assertion(a, scenario["initial"]) for a in scenario["assertions"]]
    return out


def fault(item: dict[str, Any]) -> dict[str, Any]:
    """A fault at its invocation number; ``malformed`` answers the controlled sentinel."""
    out: dict[str, Any] = {"tool": item["tool"], "kind": item["kind"], "at": [item["occurrence"]]}
    if item["kind"] == "malformed":
        out["message"] = MALFORMED_SENTINEL
    return out


def assertion(item: dict[str, Any], initial: Any = None) -> dict[str, Any]:
    """``metrics.x`` → a ``metric`` assertion; any other path → ``state`` at that place of the final world."""
    head, _, rest = item["path"].partition(".")
    out: dict[str, Any]
    if head == "metrics":
        out = {"type": "metric", "metric": rest, "op": item["op"], "value": item["value"]}
    else:
        out = {"type": "state", "path": json_path(item["path"], initial), "op": item["op"], "value": item["value"]}
    if "name" in item:
        out["description"] = item["name"]
    return out


def json_path(dotted: str, initial: Any = None) -> str:
    """``orders.order-1042.amount_cents`` → ``$.orders["order-1042"].amount_cents``. A number is a list index, unless
    the initial world has an object at that place (``orders.1042`` is the key "1042" of ``orders``)."""
    out, node = "$", initial
    for segment in dotted.split("."):
        index = segment.isdigit() and not isinstance(node, dict)
        out = f"{out}[{segment}]" if index else step(out, segment)
        node = (node[int(segment)] if int(segment) < len(node) else None) if index and isinstance(node, list) else \
            node.get(segment) if isinstance(node, dict) else None
    return out


# ---- where a converted place was written ----------------------------------------------------------


def original(index: int, path: Path, listed: bool = False) -> Path:
    """The place in the C file that a place in scenario ``index``'s converted case came from."""
    base: Path = (index,) if listed else ()
    if not path:
        return base
    head, rest = path[0], path[1:]
    named = {"input": "task", "world": "initial", "tags": "domain", "policy": "policy", "id": "id", "name": "name",
             "description": "description"}
    if head in named:
        return (*base, named[head], *(rest if head in ("world", "policy") else ()))
    if head in ("faults", "assertions") and rest:
        field = {"at": "occurrence", "message": "kind", "metric": "path", "description": "name"}.get(rest[1], rest[1]) if len(rest) > 1 else None
        return (*base, head, rest[0], *((field,) if isinstance(field, str) else ()))
    return base


def original_listed(index: int, path: Path) -> Path:
    return original(index, path, listed=True)
