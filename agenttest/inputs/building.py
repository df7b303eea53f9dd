"""Cases built: every raw case of a file validated (``validation``), the valid ones made into ``Case``s, a
scripted case with variants made into one case per combination."""

from __future__ import annotations

import copy
import itertools
import math
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agenttest.accounting import budgets
from agenttest.errors import Location, Problem
from agenttest.inputs import unknown
from agenttest.inputs.caseschema import plainly_valid
from agenttest.inputs.documents import FILES, MAX_DEPTH, Document, KeyPolicy, Lines, Loaded, too_deep
from agenttest.inputs.validation import Path, assertion_list, at_item, container, misnamed, schema_problems, semantic_problems, type_name
from agenttest.inputs.yamlhints import yaml_hint
from agenttest.model import AssertionSpec, Case, Checkpoint, Fault, Given, Mock, ScriptedTurn, SimulatorSpec, ToolCall
from agenttest.model.cases import Locator
from agenttest.model.messages import normalize
from agenttest.util.durations import parse_duration


_NONE: dict[str, Any] = {}  # the options and metadata of every case without any: read only, one object for 100,000 cases


def build_cases(docs: Sequence[Document], base_dir: str, default_simulator: str | None, loaded: Loaded,
                policy: KeyPolicy = KeyPolicy()) -> list[Case]:
    """Validate every document; build Cases from the valid ones; add problems (duplicate ids too) and
    warnings (unknown keys ignored) to ``loaded``."""
    cases: list[Case] = []
    first_seen: dict[str, Document] = {}
    forms: dict[str, str] = {}  # an id in Unicode's composed form (NFC) → the first id written so
    warned: set[tuple[str, str]] = set()
    specs: dict[Any, Any] = {}  # assertions written alike: one AssertionSpec for every case (make_case)
    made = [0]  # cases made from variants so far in the file
    for doc in docs:
        raw = doc.raw
        if not isinstance(raw, dict):
            yaml_file = doc.node is not None
            hint = ("a .jsonl file holds one case object per line; a list of cases goes in a .json file"
                    if isinstance(raw, list) and doc.source.endswith(".jsonl") else None)
            loaded.problems.append(Problem(f"a case must be {'a mapping' if yaml_file else 'a JSON object'}, not {type_name(raw)}",
                                           doc.locate(), hint))
            continue
        if not doc.shallow and too_deep(raw, MAX_DEPTH):
            loaded.problems.append(Problem(f"the case is nested more than {MAX_DEPTH} levels deep", doc.locate()))
            continue
        found = [] if plainly_valid(raw) else schema_problems(raw)
        try:
            extra = semantic_problems(raw, default_simulator)
        except (TypeError, AttributeError, KeyError):
            extra = []  # a shape the schema already rejected
        # an assertion's unknown key as its type says it, not as the schema does (unless both see the same typo)
        named = {f.path: f.typo for f in extra if f.unknown}
        found = [f for f in found if not (f.unknown and f.path in named and (f.typo is None or named[f.path] != f.typo))]
        seen = {f.path for f in found}
        found = at_item(misnamed(found + [f for f in extra if f.path not in seen], raw, not policy.lenient), raw)
        for f in found:
            error, f = unknown.judged(f, raw, policy.strict, policy.lenient) if f.unknown else (True, f)
            if error:
                path, key, hint = f.path, f.key, f.hint
                if doc.node is not None and not f.unknown:  # what YAML made of plain text says more than a general hint
                    path, key, hint = yaml_hint(doc, path, key, f.message) or (path, key, hint)
                loaded.problems.append(Problem(f.message, doc.locate(path, key), hint))
            elif (container(f.path), str(f.path[-1])) not in warned:
                warned.add((container(f.path), str(f.path[-1])))
                key, where = f.path[-1], container(f.path)
                loaded.warnings.append(f"{doc.locate(f.path, True)}: '{key}' is not a field of {where}; ignored")
        case_id = raw.get("id")
        if isinstance(case_id, str):
            if case_id in first_seen:
                prior = first_seen[case_id].locate(("id",))
                loaded.problems.append(Problem(f"duplicate id '{case_id}' (first used at line {prior.line})", doc.locate(("id",)), "ids must be unique in a file"))
            else:
                first_seen[case_id] = doc
                form = case_id if case_id.isascii() else unicodedata.normalize("NFC", case_id)
                twin = forms.setdefault(form, case_id)
                if twin != case_id:  # é as one character and as e + a combining accent: two ids every report shows alike
                    prior = first_seen[twin].locate(("id",))
                    loaded.warnings.append(f"{doc.locate(('id',))}: id {ascii(case_id)} differs from {ascii(twin)} (line {prior.line}) "
                                           f"only in how its Unicode is composed; both look like '{form}' in every report")
        if all(f.unknown for f in found):  # unknown keys aside, the case is whole: build it without them, so
            known = _without(raw, [f.path for f in found])  # that what it names is resolved in the same round
            too_many = _too_many(known, doc, made, policy.max_cases)
            if too_many is not None:
                loaded.problems.append(too_many)
                continue
            cases += products(make_case(known, doc, base_dir, default_simulator, specs))
        else:
            loaded.unbuilt += _unbuilt(raw, found, doc, base_dir, default_simulator)
    return cases


PLACEHOLDER = {"type": "contains", "value": ""}  # stands for an assertion at fault: the others keep their places


def _unbuilt(raw: dict[str, Any], found: list[Any], doc: Document, base_dir: str, default_simulator: str | None) -> list[Case]:
    """The case without what is at fault — unknown keys dropped, each bad assertion replaced by a placeholder, any
    other bad field dropped — so that what it names is checked in the same round; none when it cannot be built."""
    out: dict[str, Any] = copy.deepcopy(_without(raw, [f.path for f in found if f.unknown]))
    for path in (f.path for f in found if not f.unknown):
        cut = max((i + 1 for i in range(len(path) - 1) if path[i] == "assert" and isinstance(path[i + 1], int)), default=0)
        if not cut:
            if path and isinstance(path[0], str):
                out.pop(path[0], None)
            continue
        parent: Any = out
        for part in path[:cut - 1]:
            parent = parent[part] if isinstance(parent, (dict, list)) and _has(parent, part) else None
        if isinstance(parent, list) and _has(parent, path[cut - 1]):
            parent[path[cut - 1]] = dict(PLACEHOLDER)
    try:
        return [make_case(out, doc, base_dir, default_simulator)]
    except Exception:  # noqa: BLE001 — only a help: the case's own problems are said anyway
        return []


def _has(holder: Any, part: Any) -> bool:
    return part in holder if isinstance(holder, dict) else isinstance(part, int) and -len(holder) <= part < len(holder)


def _too_many(raw: dict[str, Any], doc: Document, made: list[int], limit: int) -> Problem | None:
    """The problem of a case whose variants would make more cases than ``limit`` (with those the file's earlier
    cases made, ``made[0]``), counted before a single one is made: 12 turns of 10 variants are 10^12 cases."""
    counts = [len(t.get("variants") or ()) or 1 for t in raw.get("turns") or () if isinstance(t, dict)]
    if all(n == 1 for n in counts):
        return None
    count = math.prod(counts)
    if made[0] + count <= limit:
        made[0] += count
        return None
    total = made[0] + count  # the refused case's are not made, so not counted for the cases after it
    factors = [n for n in counts if n > 1]
    how = " × ".join(map(str, factors)) if len(factors) <= 6 else f"{factors[0]} × {factors[1]} × … over {len(factors)} turns"
    others = f", {total:,} with the file's other variants" if total != count else ""
    return Problem(f"the variants of '{raw['id']}' make {count:,} cases ({how}){others}; at most {limit:,} cases may be made from variants",
                   doc.locate(), "give fewer variants, or raise the limit with --max-cases N")


def products(case: Case) -> list[Case]:
    """A scripted case whose turns have ``variants``: one case per combination (FORMATS §14), each with
    the id ``<case id>[<variant id>,…]``; without variants, the case itself."""
    choices = [case.raw["turns"][i].get("variants") or [None] for i in range(len(case.turns))]
    if all(c == [None] for c in choices):
        return [case]
    out = []
    for combo in itertools.product(*choices):
        turns = tuple(t if v is None else replace(t, messages=normalize(v["input"]), input=v["input"], selection=v.get("selection"))
                      for t, v in zip(case.turns, combo))
        ids = tuple(v["id"] for v in combo if v is not None)
        out.append(replace(case, id=f"{case.id}[{','.join(ids)}]", turns=turns, variants=ids))
    return out


def _without(raw: dict[str, Any], paths: list[Path]) -> dict[str, Any]:
    """A copy of ``raw`` without the keys at ``paths`` (copying only what lies on those paths)."""
    if not paths:
        return raw
    out: dict[str, Any] = dict(raw)
    for path in paths:
        holder: Any = out
        for part in path[:-1]:
            child = holder[part]
            child = dict(child) if isinstance(child, dict) else list(child)
            holder[part] = child
            holder = child
        if isinstance(holder, dict):
            holder.pop(path[-1], None)
    return out


def make_case(raw: dict[str, Any], doc: Document | Location, base_dir: str, default_simulator: str | None = None,
              specs: dict[Any, Any] | None = None) -> Case:
    """A validated raw case → Case; ``doc`` locates places inside it for later problems (an assertion's place
    too: ``case.locate(spec.path)``). ``specs``: one AssertionSpec (and one tuple of them) for the cases of a
    file that write an assertion alike — what the loader's shared dicts make possible (``_shared``)."""
    locator: Locator | None = doc if isinstance(doc, Document) else None
    if isinstance(doc, Document) and doc.text is None and doc.node is None and not doc.base and not doc.col_offset:
        locator = FILES.get(doc.source) or FILES.setdefault(doc.source, Lines(doc.source)) if len(FILES) < 4096 else Lines(doc.source)
    location = doc.locate() if isinstance(doc, Document) else doc

    def spec(params: dict[str, Any], path: Path) -> AssertionSpec:
        if specs is None:
            return AssertionSpec(params.get("type") or "equals", params, None, path)
        key = (id(params), path)  # the memo holds the spec, so the params, so their id stays theirs
        made = specs.get(key)
        if made is None:
            made = specs[key] = AssertionSpec(params.get("type") or "equals", params, None, path)
        return made  # type: ignore[no-any-return]

    listed = tuple(spec(p, path) for path, p in assertion_list(raw, "assert") + assertion_list(raw, "assertions"))
    if specs is not None and listed:
        listed = specs.setdefault((_TUPLE, *map(id, listed)), listed)
    checkpoints = tuple(
        Checkpoint(
            id=cp["id"],
            assertion=spec(cp.get("assert") or cp.get("assertion") or {}, ("checkpoints", i, "assert" if "assert" in cp else "assertion")),
            description=cp.get("description", ""),
            after=tuple(cp.get("after") or ()),
            required=cp.get("required", True),
        )
        for i, cp in enumerate(raw.get("checkpoints") or ())
    )
    sim = raw.get("simulator")
    simulator = None
    if sim:
        script = tuple(sim["script"]) if "script" in sim else None
        simulator = SimulatorSpec(sim.get("use", ""), sim.get("options") or {}, script, bool(sim.get("hide_checkpoints", False)))
    if simulator is None and (checkpoints or raw.get("end") == "simulator") and default_simulator:
        simulator = SimulatorSpec(default_simulator)
    return Case(
        id=_interned(raw["id"]),  # its results' ids are rebuilt as this very object (runner/local/wire._LABELS)
        messages=normalize(raw.get("input")),
        raw=raw,
        location=location,
        base_dir=base_dir,
        file=_interned(location.file),
        name=raw.get("name", ""),
        description=raw.get("description", ""),
        assertions=listed,
        expected=raw.get("expected"),
        has_expected="expected" in raw,
        options=raw.get("options") or _NONE,
        user=raw.get("user"),
        team=raw.get("team"),
        metadata=raw.get("metadata") or _NONE,
        skip=bool(raw.get("skip", False)),
        skip_reason=raw.get("skip_reason", ""),
        timeout=parse_duration(raw["timeout"]) if "timeout" in raw else None,
        before=raw.get("before"),
        after=raw.get("after"),
        simulator=simulator,
        checkpoints=checkpoints,
        max_turns=raw.get("max_turns", 20),
        tags=tuple(raw.get("tags") or ()),
        world=raw.get("world"),
        mocks=tuple(mock_of(m) for m in raw.get("mocks") or ()),
        faults=tuple(fault_of(f) for f in raw.get("faults") or ()),
        runs=raw.get("runs"),
        min_pass_rate=float(raw["min_pass_rate"]) if "min_pass_rate" in raw else None,
        budget=budgets.of_case(raw["budget"]) if raw.get("budget") else None,
        end=raw.get("end", "checkpoints"),
        end_tools=tuple(raw.get("end_tools") or ()),
        output_from=raw.get("output_from"),
        policy=raw.get("policy"),
        turns=tuple(
            ScriptedTurn(normalize(t.get("input")), t.get("input"),
                         tuple(spec(p, ("turns", i, *path)) for path, p in assertion_list(t, "assert") + assertion_list(t, "assertions")),
                         t.get("id", ""), t.get("selection"))
            for i, t in enumerate(raw.get("turns") or ())
        ),
        given=given_of(raw),
        judge=(raw["judge"].get("min_agreement"), raw["judge"].get("min_kappa")) if isinstance(raw.get("judge"), dict) else None,
        locator=locator,
    )


def given_of(raw: dict[str, Any]) -> Given | None:
    """A judge-only case's output, tool calls and history (FORMATS §19)."""
    if "output" not in raw:
        return None
    calls = tuple(ToolCall(name=c["name"], arguments=c.get("arguments") or {}, result=c.get("result")) for c in raw.get("tool_calls") or ())
    return Given(raw["output"], calls, normalize(raw.get("history")))


_TUPLE = object()  # marks the key of a tuple of specs in ``make_case``'s memo


def _interned(text: Any) -> Any:
    return sys.intern(text) if type(text) is str else text


def mock_of(raw: dict[str, Any]) -> Mock:
    """A validated ``mocks`` item → Mock."""
    delay = parse_duration(raw["delay"]) if "delay" in raw else 0.0
    return Mock(tool=raw["tool"], match=raw.get("match"), returns=raw.get("returns"), error=raw.get("error"), delay=delay, times=raw.get("times"))


def fault_of(raw: dict[str, Any]) -> Fault:
    """A validated ``faults`` item → Fault."""
    return Fault(tool=raw["tool"], kind=raw["kind"], at=tuple(raw.get("at") or ()), rate=raw.get("rate"), message=raw.get("message"))
