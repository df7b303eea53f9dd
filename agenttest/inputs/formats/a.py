"""Seed format A, scenario suites (``scenario-suites.txt``; docs/formats-a.md): a suite object with
``schemaVersion: 1`` and ``scenarios``, read strictly as its document says and converted into agent-test's own
file — ``{"suite": {...}, "cases": [...]}`` — in which every field keeps its meaning: a scenario is a scripted
case, a step a turn (its ``selection`` and ``variants`` too), an assertion a ``check``/``all``/``any``/
``evaluator`` assertion, ``writePolicy`` the case's ``policy.write_policy``, ``skipReason`` a skip."""

from __future__ import annotations

from typing import Any

from agenttest.errors import closest
from agenttest.inputs.formats.strict import Checker
from agenttest.inputs.validation import Path

SUITE_REQUIRED = ("schemaVersion", "id", "name", "scenarios")
SUITE_OPTIONAL = ("metadata", "assertions")
SCENARIO_REQUIRED = ("id", "name", "writePolicy", "steps")
SCENARIO_OPTIONAL = ("description", "tags", "skipReason", "metadata", "assertions")
WRITE_POLICIES = ("read_only", "external")
KINDS = {"check": (("path", "operator"), ("value",)), "all": (("assertions",), ()), "any": (("assertions",), ()),
         "evaluator": (("name",), ("params",))}
OPERATORS = ("equals", "exists", "absent", "contains")
SELECTORS = ("optionIndex", "optionLabel", "optionId")
UNSAFE = frozenset({"__proto__", "constructor", "prototype"})
MAX_SCENARIOS, MAX_STEPS, MAX_VARIANTS, MAX_ASSERTIONS, MAX_CHILDREN, MAX_TEXT, MAX_PATH = 10_000, 500, 100, 200, 100, 10_000, 32


def recognises(data: Any) -> bool:
    """A's shape: an object with ``schemaVersion`` and ``scenarios``."""
    return isinstance(data, dict) and "schemaVersion" in data and "scenarios" in data


# ---- reading ---------------------------------------------------------------------------------------


def check(data: Any) -> Checker:
    """Every problem of a suite, as its document's validation rules say."""
    c = Checker()
    if not c.fields(data, (), "a scenario suite", SUITE_REQUIRED, SUITE_OPTIONAL):
        return c
    if "schemaVersion" in data and (data["schemaVersion"] != 1 or isinstance(data["schemaVersion"], bool)):
        c.say(("schemaVersion",), f"'schemaVersion' must be 1, not {data['schemaVersion']!r}", "this reader knows schema version 1")
    if "id" in data:
        c.identifier(data["id"], ("id",))
    if "name" in data:
        c.kind(data["name"], ("name",), str, "a string")
    if "metadata" in data:
        c.kind(data["metadata"], ("metadata",), dict, "an object")
    _assertions(c, data, ())
    scenarios = data.get("scenarios")
    if "scenarios" in data and c.listed(scenarios, ("scenarios",), 1, MAX_SCENARIOS, "scenarios"):
        c.unique(scenarios, ("scenarios",), "scenario")
        for i, scenario in enumerate(scenarios):
            _scenario(c, scenario, ("scenarios", i))
    return c


def _scenario(c: Checker, scenario: Any, path: Path) -> None:
    if not c.fields(scenario, path, "a scenario", SCENARIO_REQUIRED, SCENARIO_OPTIONAL):
        return
    if "id" in scenario:
        c.identifier(scenario["id"], (*path, "id"))
    for key in ("name", "description", "skipReason"):
        if key in scenario:
            c.kind(scenario[key], (*path, key), str, "a string")
    if "writePolicy" in scenario and scenario["writePolicy"] not in WRITE_POLICIES:
        c.say((*path, "writePolicy"), f"'writePolicy' cannot be {scenario['writePolicy']!r}", "read_only or external")
    if "tags" in scenario and c.kind(scenario["tags"], (*path, "tags"), list, "a list of strings"):
        for j, tag in enumerate(scenario["tags"]):
            c.kind(tag, (*path, "tags", j), str, "a string")
    if "metadata" in scenario:
        c.kind(scenario["metadata"], (*path, "metadata"), dict, "an object")
    _assertions(c, scenario, path)
    steps = scenario.get("steps")
    if "steps" in scenario and c.listed(steps, (*path, "steps"), 1, MAX_STEPS, "steps"):
        c.unique(steps, (*path, "steps"), "step")
        for j, step in enumerate(steps):
            _step(c, step, (*path, "steps", j))


def _step(c: Checker, step: Any, path: Path) -> None:
    if not c.fields(step, path, "a step", ("id", "input"), ("variants", "assertions")):
        return
    if "id" in step:
        c.identifier(step["id"], (*path, "id"))
    if "input" in step:
        _input(c, step["input"], (*path, "input"))
    variants = step.get("variants")
    if "variants" in step and c.listed(variants, (*path, "variants"), 1, MAX_VARIANTS, "variants"):
        c.unique(variants, (*path, "variants"), "variant")
        for k, variant in enumerate(variants):
            where = (*path, "variants", k)
            if c.fields(variant, where, "a variant", ("id", "input")):
                if "id" in variant:
                    c.identifier(variant["id"], (*where, "id"))
                if "input" in variant:
                    _input(c, variant["input"], (*where, "input"))
    _assertions(c, step, path)


def _input(c: Checker, value: Any, path: Path) -> None:
    """The direct adapter's input: exactly ``text`` (at most 10,000 characters; may be empty) and an optional
    ``selection`` with one selector."""
    if not c.fields(value, path, "an input", ("text",), ("selection",)):
        return
    text = value.get("text")
    if "text" in value and c.kind(text, (*path, "text"), str, "a string") and len(text) > MAX_TEXT:
        c.say((*path, "text"), f"'text' holds {len(text):,} characters; at most {MAX_TEXT:,}")
    selection = value.get("selection")
    if "selection" not in value or not c.fields(selection, (*path, "selection"), "a selection", (), SELECTORS):
        return
    given = [k for k in SELECTORS if k in selection]
    if len(given) != 1:
        c.say((*path, "selection"), "a selection gives exactly one of optionIndex, optionLabel, optionId"
              + (f", not {' and '.join(given)}" if given else ""), "do not combine selectors")
    if "optionIndex" in selection:
        index = selection["optionIndex"]
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            c.say((*path, "selection", "optionIndex"), f"'optionIndex' must be a whole number from 0, not {index!r}")
    for key in ("optionLabel", "optionId"):
        if key in selection:
            c.kind(selection[key], (*path, "selection", key), str, "a string")


def _assertions(c: Checker, holder: dict[str, Any], path: Path, least: int = 0, most: int = MAX_ASSERTIONS) -> None:
    items: Any = holder.get("assertions")
    if "assertions" not in holder or not c.listed(items, (*path, "assertions"), least, most, "assertions"):
        return
    c.unique(items, (*path, "assertions"), "assertion")
    for i, item in enumerate(items):
        _assertion(c, item, (*path, "assertions", i))


def _assertion(c: Checker, item: Any, path: Path) -> None:
    kind = item.get("kind") if isinstance(item, dict) else None
    if isinstance(kind, str) and kind not in KINDS:  # its other fields depend on the kind meant: say that alone
        near = closest(kind, KINDS)
        c.say((*path, "kind"), f"'kind' cannot be {kind!r}", f"did you mean '{near}'?" if near else f"one of {', '.join(KINDS)}")
        return
    required, optional = KINDS.get(kind, ((), ())) if isinstance(kind, str) else ((), ())
    if not c.fields(item, path, f"a '{kind}' assertion" if kind in KINDS else "an assertion", ("id", "kind", *required), ("label", *optional)):
        return
    if "id" in item:
        c.identifier(item["id"], (*path, "id"))
    if "label" in item:
        c.kind(item["label"], (*path, "label"), str, "a string")
    if "kind" in item and kind not in KINDS:
        c.say((*path, "kind"), f"'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
    if kind == "check":
        _check(c, item, path)
    elif kind in ("all", "any"):
        _assertions(c, item, path, 1, MAX_CHILDREN)
    elif kind == "evaluator":
        name = item.get("name")
        if "name" in item and c.identifier(name, (*path, "name")) and not all(p.isidentifier() for p in evaluator_parts(name)):
            c.say((*path, "name"), f"evaluator '{name}' names no Python function", "module.function in the app's scripts/, or a function of scripts/evaluators.py")
        if "params" in item:
            c.kind(item["params"], (*path, "params"), dict, "an object")


def _check(c: Checker, item: dict[str, Any], path: Path) -> None:
    steps: Any = item.get("path")
    if "path" in item and c.kind(steps, (*path, "path"), list, "a list of keys and indexes"):
        if not 1 <= len(steps) <= MAX_PATH:
            c.say((*path, "path"), f"'path' holds {len(steps)} steps; it must hold 1 to {MAX_PATH}")
        for j, step in enumerate(steps):
            if isinstance(step, bool) or not isinstance(step, (str, int)) or (isinstance(step, int) and step < 0):
                c.say((*path, "path", j), f"a path step is a key (a string) or an index (0 or more), not {step!r}")
            elif step in UNSAFE:
                c.say((*path, "path", j), f"'{step}' is not a safe path step", "name the field itself")
    operator = item.get("operator")
    if "operator" in item and operator not in OPERATORS:
        near = closest(str(operator), OPERATORS)
        c.say((*path, "operator"), f"'operator' cannot be {operator!r}", f"did you mean '{near}'?" if near else f"one of {', '.join(OPERATORS)}")
    if operator in ("equals", "contains") and "value" not in item:
        c.say(path, f"'{operator}' needs a 'value'")
    if operator in ("exists", "absent") and "value" in item:
        c.say((*path, "value"), f"'{operator}' takes no 'value'", "remove it", key=True)


def evaluator_parts(name: str) -> list[str]:
    """``module.function`` (under the app's scripts/), or a function of ``scripts/evaluators.py``; ``-`` and ``:``
    read as ``_`` (``selected-product`` is ``evaluators.selected_product``)."""
    parts = name.replace("-", "_").replace(":", "_").split(".")
    return parts if len(parts) > 1 else ["evaluators", *parts]


# ---- converting --------------------------------------------------------------------------------------


def convert(data: dict[str, Any]) -> dict[str, Any]:
    """A checked suite as agent-test's own file: ``{"suite": {...}, "cases": [...]}``."""
    suite: dict[str, Any] = {"id": data["id"], "name": data["name"]}
    if "metadata" in data:
        suite["metadata"] = data["metadata"]
    if data.get("assertions"):
        suite["assertions"] = [assertion(a) for a in data["assertions"]]
    return {"suite": suite, "cases": [case(s) for s in data["scenarios"]]}


def case(scenario: dict[str, Any]) -> dict[str, Any]:
    """A scenario as a scripted case."""
    out: dict[str, Any] = {"id": scenario["id"], "name": scenario["name"]}
    for key in ("description", "tags", "metadata"):
        if key in scenario:
            out[key] = scenario[key]
    if "skipReason" in scenario:  # a reviewed exclusion: skipped, never passed
        out.update(skip=True, skip_reason=scenario["skipReason"])
    out["policy"] = {"write_policy": scenario["writePolicy"]}
    out["turns"] = [turn(step) for step in scenario["steps"]]
    if scenario.get("assertions"):
        out["assertions"] = [assertion(a) for a in scenario["assertions"]]
    return out


def turn(step: dict[str, Any]) -> dict[str, Any]:
    """A step as a turn: its input's text and selection, its variants beside it (only they run), its checks."""
    out: dict[str, Any] = {"id": step["id"], **said(step["input"])}
    if "variants" in step:
        out["variants"] = [{"id": v["id"], **said(v["input"])} for v in step["variants"]]
    if step.get("assertions"):
        out["assertions"] = [assertion(a) for a in step["assertions"]]
    return out


def said(value: dict[str, Any]) -> dict[str, Any]:
    """An input: its text (an empty text as an empty message, which is sent) and its selection."""
    text = value["text"]
    out: dict[str, Any] = {"input": text if text else {"role": "user", "content": ""}}
    if "selection" in value:
        out["selection"] = value["selection"]
    return out


def assertion(item: dict[str, Any]) -> dict[str, Any]:
    """An assertion as agent-test's: its id, its label as the description, the kind's own fields."""
    kind = item["kind"]
    out: dict[str, Any] = {"type": kind, "id": item["id"]}
    if "label" in item:
        out["description"] = item["label"]
    if kind == "check":
        out.update(path=item["path"], operator=item["operator"], **({"value": item["value"]} if "value" in item else {}))
    elif kind in ("all", "any"):
        out["assertions"] = [assertion(a) for a in item["assertions"]]
    else:
        out["use"] = "scripts." + ".".join(evaluator_parts(item["name"]))
        if "params" in item:
            out["params"] = item["params"]
    return out


# ---- where a converted place was written ----------------------------------------------------------


def original(scenario: int, path: Path) -> Path:
    """The place in the A file that a place in scenario ``scenario``'s converted case came from (-1: the suite's)."""
    if scenario < 0:
        rest = path[1:]  # ("suite", …)
        if rest[:1] == ("assertions",) and len(rest) >= 2:
            return ("assertions", rest[1], *_field(rest[2:]))
        return rest[:1] if rest[:1] in (("id",), ("name",), ("metadata",)) else ()
    base: Path = ("scenarios", scenario)
    if not path:
        return base
    head, rest = path[0], path[1:]
    if head == "turns" and rest:
        step: Path = (*base, "steps", rest[0])
        tail = rest[1:]
        if tail[:1] in (("assertions",), ("assert",)) and len(tail) >= 2:
            return (*step, "assertions", tail[1], *_field(tail[2:]))
        if tail[:1] == ("variants",) and len(tail) >= 2:
            return (*step, "variants", tail[1], *(("input",) if tail[2:3] in (("input",), ("selection",)) else ()))
        return (*step, "input") if tail[:1] in (("input",), ("selection",)) else step
    if head in ("assertions", "assert") and rest:
        return (*base, "assertions", rest[0], *_field(rest[1:]))
    named = {"name": "name", "description": "description", "tags": "tags", "metadata": "metadata", "skip_reason": "skipReason",
             "policy": "writePolicy", "id": "id"}
    return (*base, named[head]) if head in named else base


def _field(rest: Path) -> Path:
    """A converted assertion's field as A's: ``use`` was ``name``, ``description`` was ``label``; nested ones too."""
    if not rest:
        return ()
    if rest[0] == "assertions" and len(rest) >= 2:
        return ("assertions", rest[1], *_field(rest[2:]))
    return ({"use": "name", "description": "label", "type": "kind"}.get(rest[0], rest[0]),) if isinstance(rest[0], str) else ()
