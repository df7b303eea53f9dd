"""Validation of one raw case: structural problems from the JSON Schema, explained in plain words, and
semantic ones beyond structure (assertion parameters, durations, the checkpoint graph, modes).

Pure functions: a problem is a ``Finding`` (a path inside the case, a message, a hint); the loader
turns paths into ``file:line:column``."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from agenttest import assertions
from agenttest.inputs import caseschema
from agenttest.util.matching import pattern_problems
from agenttest.util.durations import parse_duration
from agenttest.util.text import written
from agenttest.errors import did_you_mean, typo_of

Path = tuple[Any, ...]


class Finding(NamedTuple):
    path: Path
    message: str
    hint: str | None = None
    key: bool = False  # points at the key rather than its value
    unknown: bool = False  # an unknown key: a typo (``typo`` names the field meant) is an error, others are ignored
    typo: str | None = None


def container(path: Path) -> str:
    """What holds the key at ``path``: a case, an assertion, a checkpoint, a simulator, a message."""
    parent = [p for p in path[:-1] if isinstance(p, str)]
    last = parent[-1] if parent else ""
    return {"assert": "an assertion", "assertions": "an assertion", "assertion": "an assertion", "checkpoints": "a checkpoint",
            "simulator": "a simulator", "input": "a message", "options": "the options",
            "turns": "a turn", "variants": "a variant", "mocks": "a mock", "faults": "a fault", "budget": "the budget",
            "world": "the world", "policy": "the policy", "selection": "a selection"}.get(last, "a case")


def unknown_key(path: Path, known: Any) -> Finding:
    """An unknown key: a typo of a known field when it is a small edit away from one."""
    key = str(path[-1])
    typo = typo_of(key, list(known))
    hint = f"did you mean '{typo}'?" if typo else None
    return Finding(path, f"'{key}' is not a field" + ("" if typo else f" of {container(path)}"), hint, True, True, typo)


_TYPE_NAMES = {"string": "a string", "object": "an object", "array": "a list", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}


def type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


_NEEDS = re.compile(r"(?:needs a|missing required field) '(\w+)'")


def misnamed(found: list[Finding], raw: Any, typos_fail: bool = True) -> list[Finding]:
    """An unknown key in an object that lacks a field it needs is most likely that field under another name
    (``messages`` for a case's ``input``, ``expected`` for an assertion's ``value``, ``type`` for a fault's
    ``kind``): the missing field's problem is placed at that key and says so. A mock with neither ``returns``
    nor ``error`` answers null, so an unknown key in it (``result``) is taken for ``returns``, as a typo is.
    A missing field that a typo's problem already names (``inptu``: did you mean ``input``?) is not said twice
    (``typos_fail``: unless typos are only warnings, as in a generator's cases)."""
    unknown: dict[Path, list[Finding]] = {}
    typos: set[tuple[Path, str]] = set()
    for f in found:
        if f.unknown and f.typo is None:
            unknown.setdefault(f.path[:-1], []).append(f)
        elif f.unknown and (typos_fail or container(f.path) == "an assertion"):  # an assertion's typo always fails
            typos.add((f.path[:-1], f.typo))  # type: ignore[arg-type]
    if not unknown and not typos:
        return found
    out, told = [], set()
    for f in found:
        need = None if f.unknown else _NEEDS.search(f.message)
        owner = f.path if f.path in unknown or any(t[0] == f.path for t in typos) else f.path[:-1]
        if need is not None and (owner, need.group(1)) in typos:
            continue  # said by the typo's own problem: 'inptu' … did you mean 'input'?
        if need is not None and len(unknown.get(owner, ())) == 1 and f"'{unknown[owner][0].path[-1]}'" not in f.message:
            key = unknown[owner][0]  # (a message that names the key already says what it is: 'contains' is a type)
            told.add(key.path)  # its own problem would say it again
            f = f._replace(path=key.path, key=True,
                           hint=f"'{key.path[-1]}' is not a field of {container(key.path)}: did you mean '{need.group(1)}'?")
        elif f.unknown and f.typo is None and len(f.path) == 3 and f.path[0] == "mocks" and len(unknown[f.path[:-1]]) == 1:
            mock = _at(raw, f.path[:-1])
            if isinstance(mock, dict) and "returns" not in mock and "error" not in mock:
                f = f._replace(hint="did you mean 'returns'? (a mock with neither 'returns' nor 'error' answers null)", typo="returns")
        out.append(f)
    return [f for f in out if not (f.unknown and f.path in told)] if told else out


def at_item(found: list[Finding], raw: Any) -> list[Finding]:
    """A list that must hold text (strings, tool names) with an item that is not: the problem is at that item,
    not at the list (``["help", true]`` at the ``true``)."""
    out = []
    for f in found:
        if not f.unknown and ("of strings" in f.message or "tool names" in f.message):
            value = _at(raw, f.path)
            if isinstance(value, list):
                i = next((i for i, item in enumerate(value) if not isinstance(item, str)), None)
                f = f if i is None else f._replace(path=(*f.path, i), key=False)
        out.append(f)
    return out


def _at(raw: Any, path: Path) -> Any:
    for step in path:
        try:
            raw = raw[step]
        except (KeyError, IndexError, TypeError):
            return None
    return raw


def _field(path: Sequence[Any]) -> str:
    names = [p for p in path if isinstance(p, str)]
    return f"'{names[-1]}'" if names else "the case"


def schema_problems(raw: Any) -> list[Finding]:
    """Structural problems as (path, message, hint, points-at-key)."""
    out: list[Finding] = []
    for error in caseschema.validator().iter_errors(raw):
        out.extend(_explain(error))
    return out


def _explain(error: Any) -> list[Finding]:
    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return _translate(error)
    # Explain the branch whose type fits the value; if none fits, say which shapes are accepted.
    branches: dict[int, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0], []).append(sub)
    depth = len(error.absolute_path)
    for subs in branches.values():
        if not any(s.validator in ("type", "anyOf") and len(s.absolute_path) == depth for s in subs):
            return [p for s in subs for p in _explain(s)]
    return [Finding(tuple(error.absolute_path), _any_of_message(error), None, False)]


def _any_of_message(error: Any) -> str:
    field = _field(error.absolute_path)
    if field == "'input'" or (error.absolute_path and error.absolute_path[-1] == "input"):
        return f"'input' must be a string, a message {{\"role\", \"content\"}} or a list of messages, not {type_name(error.instance)}"
    if "content" in field:
        return f"'content' must be a string, a part or a list of parts, not {type_name(error.instance)}"
    return f"{field} must be an assertion object, a type name, or a list of them, not {type_name(error.instance)}"


def _translate(error: Any) -> list[Finding]:
    path = tuple(error.absolute_path)
    kind = error.validator
    if kind == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        return [unknown_key(path + (key,), allowed) for key in error.instance if key not in allowed]
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = "" if not path else f" in {_field(path)}"
        return [Finding(path, f"missing required field '{missing}'{where}", None, False)]
    if kind == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        names = " or ".join(_TYPE_NAMES.get(str(w), str(w)) for w in wanted)
        return [Finding(path, f"{_field(path)} must be {names}, not {type_name(error.instance)}", None, False)]
    if kind == "enum":
        choices = [str(c) for c in error.validator_value]
        hint = did_you_mean(str(error.instance), choices) or f"one of {', '.join(choices)}"
        return [Finding(path, f"{_field(path)} cannot be {written(error.instance)}", hint, False)]
    if kind == "minLength":
        return [Finding(path, f"{_field(path)} must not be empty", None, False)]
    if kind == "minProperties":
        return [Finding(path, f"{_field(path)} must not be empty", "give one or more limits: tokens, cost, tool_calls, turns, duration"
                        if path and path[-1] == "budget" else None, False)]
    if kind == "minItems":
        return [Finding(path, f"{_field(path)} must not be an empty list", None, False)]
    if kind == "minimum":
        return [Finding(path, f"{_field(path)} must be at least {error.validator_value}", None, False)]
    if kind == "maximum":
        more = "as --runs; for more, run again and join the reports with agent-test merge" if path == ("runs",) else None
        return [Finding(path, f"{_field(path)} must be at most {error.validator_value}", more, False)]
    return [Finding(path, error.message, None, False)]


def assertion_list(raw: Any, key: str) -> list[tuple[Path, dict[str, Any]]]:
    value = raw.get(key)
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        return [((key,), {"type": value} if isinstance(value, str) else value)]
    return [((key, i), {"type": a} if isinstance(a, str) else a) for i, a in enumerate(value)]


def semantic_problems(raw: dict[str, Any], default_simulator: str | None) -> list[Finding]:
    """Problems beyond structure: assertion types and parameters, durations, checkpoint graph, modes."""
    out: list[Finding] = []
    if "assert" in raw and "assertions" in raw:
        out.append(Finding(("assertions",), "give 'assert' or 'assertions', not both", None, True))
    listed = next((k for k in ("assert", "assertions") if raw.get(k) not in (None, [])), None)
    if listed is not None and "expected" in raw:  # Yao lets 'assert' win and drops 'expected' without a word
        out.append(Finding(("expected",), f"give '{listed}' or 'expected', not both: 'expected' would be ignored",
                           f"check it among the assertions: {{\"type\": \"equals\", \"value\": …}} in '{listed}'", True))
    for path, params in assertion_list(raw, "assert") + assertion_list(raw, "assertions"):
        out += assertion_problems(path, params)
    if "timeout" in raw and isinstance(raw["timeout"], (str, int, float)):
        try:
            parse_duration(raw["timeout"])
        except ValueError as exc:
            out.append(Finding(("timeout",), f"bad 'timeout': {exc}", None, False))
    out += _tool_world_problems(raw)
    out += _number_problems(raw)
    budget = raw.get("budget")
    if isinstance(budget, dict) and isinstance(budget.get("duration"), (str, int, float)):
        try:
            parse_duration(budget["duration"])
        except ValueError as exc:
            out.append(Finding(("budget", "duration"), f"bad 'duration': {exc}", None, False))
    checkpoints = raw.get("checkpoints")
    ends_by_simulator = raw.get("end", "checkpoints") != "checkpoints"  # a misspelt value is its own error, not more
    simulated = "simulator" in raw or (ends_by_simulator and bool(default_simulator))
    out += _simulator_problems(raw.get("simulator"))
    if "simulator" in raw and not checkpoints and not ends_by_simulator:
        out.append(Finding(("simulator",), "a dynamic case needs 'checkpoints' as well as 'simulator'",
                           "or \"end\": \"simulator\" to let the simulator end it and final assertions judge it", True))
    if ends_by_simulator and "simulator" not in raw and not checkpoints and not default_simulator:
        out.append(Finding(("end",), "\"end\": \"simulator\" needs a 'simulator'", "add \"simulator\": {\"use\": \"workers.test.user-simulator\"} or {\"script\": [...]}", True))
    if "judge" in raw and not _labelled(raw):
        out.append(Finding(("judge",), "'judge' gates the judges of this case's labelled assertions, and it has none",
                           "add \"label\": true or false to its agent or pairwise assertions, or remove 'judge'", True))
    if "output" in raw:
        out += _judged_problems(raw)
    elif "tool_calls" in raw or "history" in raw:
        key = "tool_calls" if "tool_calls" in raw else "history"
        out.append(Finding((key,), f"'{key}' belongs to a judge-only case: give its 'output' too", "or remove it: a case that calls the agent gets its own", True))
    if "output" in raw:
        pass  # judged as given: no input needed
    elif "turns" in raw:
        out += _turns_problems(raw)
    elif checkpoints and isinstance(checkpoints, list):
        if "simulator" not in raw and not default_simulator:
            out.append(Finding(("checkpoints",), "checkpoints need a simulator", "add \"simulator\": {\"use\": \"workers.test.user-simulator\"} or pass --simulator", True))
        out += _checkpoint_problems(checkpoints)
    elif simulated:
        pass  # the simulator opens the conversation
    elif "input" not in raw or raw.get("input") in ("", [], None):
        if "input" not in raw:
            out.append(Finding((), "missing required field 'input'", "standard cases need 'input'; dynamic cases need 'checkpoints'", False))
        else:
            out.append(Finding(("input",), "'input' is empty", None, False))
    out += _without_effect(raw, bool(checkpoints) or simulated)
    return out


def _labelled(raw: dict[str, Any]) -> bool:
    """Whether any assertion of the case (its own, its checkpoints', its turns') carries a person's ``label``."""
    found = assertion_list(raw, "assert") + assertion_list(raw, "assertions")
    for part in (raw.get("checkpoints") or []) + (raw.get("turns") or []):
        if isinstance(part, dict):
            found += assertion_list(part, "assert") + assertion_list(part, "assertions") + assertion_list(part, "assertion")
    return any(isinstance(params, dict) and "label" in params for _, params in found)


def _judged_problems(raw: dict[str, Any]) -> list[Finding]:
    """A judge-only case (``output``) calls no agent: nothing that drives one may come with it."""
    return [Finding((key,), f"a judge-only case (with 'output') cannot have '{key}': it judges what is given, it runs no conversation",
                    "remove one of them", True) for key in ("turns", "checkpoints", "simulator", "mocks", "faults", "world") if key in raw]


def _number_problems(raw: dict[str, Any]) -> list[Finding]:
    """What the schema lets through: ``runs: 2.0`` (JSON Schema counts it an integer; a count must be one) and
    NaN or infinity (every comparison with NaN is false, so no bound catches it)."""
    out = []
    if isinstance(raw.get("runs"), float):
        out.append(Finding(("runs",), f"'runs' must be a whole number, not {written(raw['runs'])}", "e.g. \"runs\": 3", False))
    budget = raw.get("budget")
    places: list[tuple[tuple[str, ...], Any]] = [(("min_pass_rate",), raw.get("min_pass_rate"))]
    places += [(("budget", k), v) for k, v in budget.items()] if isinstance(budget, dict) else []
    for path, value in places:
        if isinstance(value, float) and not math.isfinite(value):
            out.append(Finding(path, f"'{path[-1]}' must be a number, not {value}", None, False))
        elif path[0] == "budget" and path[-1] in ("tokens", "tool_calls", "turns", "model_calls") and isinstance(value, float):
            out.append(Finding(path, f"'{path[-1]}' must be a whole number, not {written(value)}", None, False))
    return out


def _simulator_problems(sim: Any) -> list[Finding]:
    if not isinstance(sim, dict):
        return []
    if "use" in sim and "script" in sim:
        return [Finding(("simulator", "script"), "give a simulator 'use' (an agent) or 'script' (its lines), not both", None, True)]
    if "use" not in sim and "script" not in sim:
        return [Finding(("simulator",), "a simulator needs 'use' (a simulator agent) or 'script' (the user's lines)",
                        "e.g. {\"use\": \"workers.test.user-simulator\"} or {\"script\": [\"Hi\", \"Yes\"]}", False)]
    if "script" in sim and "options" in sim:
        return [Finding(("simulator", "options"), "a scripted simulator has no 'options' (no agent is called)", None, True)]
    return []


def _turns_problems(raw: dict[str, Any]) -> list[Finding]:
    """A scripted conversation (FORMATS §14): each turn says something, its variants have unique ids."""
    out: list[Finding] = []
    for key in ("checkpoints", "simulator"):
        if key in raw:
            out.append(Finding((key,), f"a case has 'turns' (a scripted conversation) or '{key}' (a simulated one), not both", None, True))
    for i, turn in enumerate(raw.get("turns") or ()):
        if not isinstance(turn, dict):
            continue
        base = ("turns", i)
        if "input" not in turn and "variants" not in turn:
            out.append(Finding(base, f"turn {i + 1} needs an 'input' (or 'variants')", None, False))
        elif turn.get("input") in ("", [], None) and "input" in turn and "variants" not in turn and "selection" not in turn:
            out.append(Finding(base + ("input",), f"turn {i + 1}'s 'input' is empty", None, False))
        if "assert" in turn and "assertions" in turn:
            out.append(Finding(base + ("assertions",), "give 'assert' or 'assertions', not both", None, True))
        for path, params in assertion_list(turn, "assert") + assertion_list(turn, "assertions"):
            out += assertion_problems(base + path, params)
        out += _selection_problems(base, turn.get("selection"))
        for j, variant in enumerate(turn.get("variants") or ()):
            if isinstance(variant, dict):
                out += _selection_problems(base + ("variants", j), variant.get("selection"))
        ids = [v.get("id") for v in turn.get("variants") or () if isinstance(v, dict)]
        for j, vid in enumerate(ids):
            if vid in ids[:j]:
                out.append(Finding(base + ("variants", j, "id"), f"duplicate variant id '{vid}'", "variant ids name the cases they make", False))
    return out


SELECTORS = ("optionIndex", "optionLabel", "optionId")


def _selection_problems(base: Path, selection: Any) -> list[Finding]:
    """A selection names exactly one option, by one of its three selectors (seed format A)."""
    if not isinstance(selection, dict) or any(k not in SELECTORS for k in selection):  # an unknown key is said as such
        return []
    given = [k for k in SELECTORS if k in selection]
    if len(given) == 1:
        return []
    if not given:
        return [Finding(base + ("selection",), "a selection needs one of optionIndex, optionLabel, optionId", "e.g. {\"optionIndex\": 0}", False)]
    return [Finding(base + ("selection", given[1]), f"a selection gives one selector, not {' and '.join(given)}", "keep one of them", True)]


def _without_effect(raw: dict[str, Any], dynamic: bool) -> list[Finding]:
    """Fields that would do nothing in this case are refused, so that no field is silently ignored."""
    out = []
    if not dynamic and "max_turns" in raw:
        what = "scripted (its turns are its length)" if "turns" in raw else "standard"
        out.append(Finding(("max_turns",), "'max_turns' applies only to dynamic cases (with 'simulator' and 'checkpoints'); "
                           f"this case is {what}", "remove it, or add checkpoints", True))
    for key in ("end", "end_tools"):
        if not dynamic and key in raw:
            out.append(Finding((key,), f"'{key}' applies only to dynamic cases (with a 'simulator')", "remove it, or add a simulator", True))
    if "skip_reason" in raw and raw.get("skip") is not True:
        out.append(Finding(("skip_reason",), "'skip_reason' has no effect without \"skip\": true", "add \"skip\": true, or remove it", True))
    return out


def assertion_problems(path: Path, params: Any) -> list[Finding]:
    if not isinstance(params, dict):
        return []
    out = []
    kind = assertions.get(params.get("type") or "equals")
    if kind is not None and kind.nested and isinstance(params.get(kind.nested), list):  # all/any: each of its own at its place
        for i, child in enumerate(params[kind.nested]):
            out += assertion_problems(path + (kind.nested, i), {"type": child} if isinstance(child, str) else child)
    for field, message, hint in assertions.check(params):
        if field is None:
            out.append(Finding(path, message, hint, False))
        elif kind is not None and field in params and field not in kind.fields:
            out.append(Finding(path + (field,), message, hint, True, True, assertions.meant(kind, field)))
        else:
            out.append(Finding(path + (field,), message, hint, field in params))
    return out


def _tool_world_problems(raw: dict[str, Any]) -> list[Finding]:
    """Mocks and faults beyond structure (FORMATS §11): one answer each, durations, patterns, triggers."""
    out: list[Finding] = []
    for i, mock in enumerate(raw.get("mocks") or ()):
        if not isinstance(mock, dict):
            continue
        if "returns" in mock and "error" in mock:
            out.append(Finding(("mocks", i, "error"), "give a mock 'returns' or 'error', not both", None, True))
        if isinstance(mock.get("delay"), (str, int, float)):
            try:
                parse_duration(mock["delay"])
            except ValueError as exc:
                out.append(Finding(("mocks", i, "delay"), f"bad 'delay': {exc}", None, False))
        out += [Finding(("mocks", i, "match"), message, None, False) for message in pattern_problems(mock.get("match"))]
    for i, fault in enumerate(raw.get("faults") or ()):
        if not isinstance(fault, dict):
            continue
        if "at" in fault and "rate" in fault:
            out.append(Finding(("faults", i, "rate"), "give a fault 'at' or 'rate', not both", "with neither, every call fails", True))
        if fault.get("kind") == "empty" and "message" in fault:
            out.append(Finding(("faults", i, "message"), "an 'empty' fault has no 'message'", "use kind 'malformed' to return a text of your own", True))
    return out


def _checkpoint_problems(checkpoints: list[Any]) -> list[Finding]:
    out: list[Finding] = []
    ids = [c.get("id") for c in checkpoints if isinstance(c, dict)]
    seen: set[Any] = set()
    for i, cp in enumerate(checkpoints):
        if not isinstance(cp, dict):
            continue
        base = ("checkpoints", i)
        cid = cp.get("id")
        if cid in seen:
            out.append(Finding(base + ("id",), f"duplicate checkpoint id '{cid}'", None, False))
        seen.add(cid)
        keys = [k for k in ("assert", "assertion") if k in cp]
        if not keys:
            out.append(Finding(base, f"checkpoint '{cid}' needs an 'assert' (or 'assertion')", None, False))
        elif len(keys) == 2:
            out.append(Finding(base + ("assertion",), "give 'assert' or 'assertion', not both", None, True))
        else:
            out += assertion_problems(base + (keys[0],), cp[keys[0]])
        for j, dep in enumerate(cp.get("after") or []):
            if dep == cid:
                out.append(Finding(base + ("after", j), f"checkpoint '{cid}' cannot come after itself", None, False))
            elif dep not in ids:
                hint = did_you_mean(dep, [x for x in ids if isinstance(x, str)]) or f"known checkpoints: {', '.join(map(str, ids))}"
                out.append(Finding(base + ("after", j), f"'after' names unknown checkpoint '{dep}'", hint, False))
    return out + _after_cycle(checkpoints)


def _after_cycle(checkpoints: list[Any]) -> list[Finding]:
    """A cycle through 'after' (x after y, y after x): none of its checkpoints can ever be reached, so the case
    could never pass. Said once, at the 'after' that closes it (a checkpoint after itself is said above)."""
    after: dict[str, list[tuple[int, int, str]]] = {}
    for i, cp in enumerate(checkpoints):
        if isinstance(cp, dict) and isinstance(cp.get("id"), str) and isinstance(cp.get("after"), list):
            after.setdefault(cp["id"], []).extend((i, j, d) for j, d in enumerate(cp["after"]) if isinstance(d, str) and d != cp["id"])
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(cid: str, path: list[str]) -> Finding | None:
        state[cid] = 1
        for i, j, dep in after.get(cid, ()):
            if state.get(dep) == 1:
                loop = path[path.index(dep):] + [cid, dep] if dep in path else [cid, dep]
                loop = list(dict.fromkeys(loop[:-1])) + [dep]
                waits = [f"'{a}' waits for '{b}'" if n == 0 else f"'{a}' for '{b}'" for n, (a, b) in enumerate(zip(loop, loop[1:]))]
                return Finding(("checkpoints", i, "after", j), "checkpoints wait for each other in a cycle — "
                               + ", ".join(waits) + " — so none of them can be reached",
                               "remove one 'after' of the cycle", False)
            if dep in after and state.get(dep) is None:
                found = walk(dep, path + [cid])
                if found is not None:
                    return found
        state[cid] = 2
        return None

    for cid in after:
        if state.get(cid) is None:
            found = walk(cid, [])
            if found is not None:
                return [found]
    return []


