"""Case files → Case: parsing .jsonl/.json/.yaml, schema and semantic validation with locations and hints.

Every problem in the input is collected and raised together as one InputError before anything runs."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from . import assertions
from .config import parse_duration
from .errors import InputError, Location, Problem, did_you_mean
from .locate import json_offset, line_col, yaml_mark
from .messages import normalize
from .model import AssertionSpec, Case, Checkpoint, SimulatorSpec
from .quickcheck import plainly_valid

Path = tuple[Any, ...]
SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")


@dataclass(frozen=True)
class Document:
    """One raw case and how to find places inside it."""

    raw: Any
    source: str
    base: Path = ()
    text: str | None = None  # JSON text of the case alone (jsonl: its line)
    line_offset: int = 0  # lines before ``text`` starts
    col_offset: int = 0  # columns before ``text`` starts on its first line
    node: Any = None  # YAML node of the whole file

    def locate(self, path: Sequence[Any] = (), key: bool = False) -> Location:
        full = tuple(self.base) + tuple(path)
        if self.node is not None:
            line, col = yaml_mark(self.node, full, key)
        elif self.text is not None:
            line, col = line_col(self.text, json_offset(self.text, full, key))
            col += self.col_offset if line == 1 else 0
        else:
            return Location(self.source)
        return Location(self.source, line + self.line_offset, col)


# ---- parsing ------------------------------------------------------------------------------------


def load_file(path: str, default_simulator: str | None = None) -> list[Case]:
    """Read and validate a case file; raise InputError listing every problem."""
    if not os.path.exists(path):
        hint = _similar_file(path)
        raise InputError([Problem(f"input file '{path}' does not exist", None, hint)])
    if os.path.isdir(path):
        raise InputError([Problem(f"input '{path}' is a folder, not a case file", None, "pass a .jsonl, .json or .yaml file")])
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([Problem(f"cannot read '{path}': {exc}")]) from None
    return parse_text(text, path, default_simulator, os.path.dirname(os.path.abspath(path)))


def parse_text(text: str, source: str, default_simulator: str | None = None, base_dir: str = ".", kind: str | None = None) -> list[Case]:
    """Parse case text of the kind given by ``kind`` or the source's extension."""
    kind = kind or os.path.splitext(source)[1].lower()
    problems: list[Problem] = []
    if kind == ".jsonl":
        docs = list(_jsonl_documents(text, source, problems))
    elif kind in (".yaml", ".yml"):
        docs = _yaml_documents(text, source, problems)
    elif kind == ".json":
        docs = _json_documents(text, source, problems)
    else:
        raise InputError([Problem(f"'{source}': unknown case file type '{kind}'", None, "use .jsonl, .json, .yaml or .yml")])
    cases = build_cases(docs, base_dir, default_simulator, problems)
    if problems:
        raise InputError(problems)
    return cases


def _json_hint(msg: str, text: str, pos: int) -> str | None:
    nearby = text[max(0, pos - 1): pos + 1]
    if "'" in nearby:
        return "JSON strings and keys use double quotes"
    if msg.startswith("Expecting property name") or (msg.startswith("Expecting value") and text[pos: pos + 1] in "]}"):
        return "remove the trailing comma"
    if msg.startswith("Expecting ',' delimiter"):
        return "a ',' is missing between items, or a string is not closed"
    if msg.startswith("Extra data"):
        return "one JSON object per line in .jsonl files"
    if msg.startswith("Unterminated string"):
        return "close the string with a double quote"
    return None


def _jsonl_documents(text: str, source: str, problems: list[Problem]) -> Iterator[Document]:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"invalid JSON: {exc.msg}", Location(source, number, exc.colno), _json_hint(exc.msg, line, exc.pos)))
            continue
        yield Document(raw, source, (), line, number - 1)


def _json_documents(text: str, source: str, problems: list[Problem]) -> list[Document]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(f"invalid JSON: {exc.msg}", Location(source, exc.lineno, exc.colno), _json_hint(exc.msg, text, exc.pos)))
        return []
    base, items = _case_list(data, source, problems, Location(source, 1, 1))
    docs, pos, line = [], 0, 1
    for i, raw in enumerate(items):
        start = json_offset(text, base + (i,)) if i == 0 else _next_item(text, pos)
        _, end = json.JSONDecoder().raw_decode(text, start)
        line += text.count("\n", pos, start)
        col = start - (text.rfind("\n", 0, start) + 1)
        docs.append(Document(raw, source, (), text[start:end], line - 1, col))
        pos = start
    return docs


def _next_item(text: str, pos: int) -> int:
    """Offset of the array item after the one starting at ``pos``."""
    _, end = json.JSONDecoder().raw_decode(text, pos)
    while text[end] in " \t\r\n,":
        end += 1
    return end


def _yaml_documents(text: str, source: str, problems: list[Problem]) -> list[Document]:
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(source, mark.line + 1, mark.column + 1) if mark else Location(source)
        problems.append(Problem(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", loc))
        return []
    if node is None:
        return []
    base, items = _case_list(data, source, problems, Location(source, 1, 1))
    return [Document(raw, source, base + (i,), node=node) for i, raw in enumerate(items)]


def _case_list(data: Any, source: str, problems: list[Problem], loc: Location) -> tuple[Path, list[Any]]:
    if isinstance(data, list):
        return (), data
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        return ("cases",), data["cases"]
    problems.append(Problem("expected a list of cases or an object with 'cases': [...]", loc))
    return (), []


def _similar_file(path: str) -> str | None:
    """``did you mean 'tests/inputs.jsonl'?`` for a case file with a near name in the same folder."""
    folder = os.path.dirname(path)
    try:
        names = [n for n in os.listdir(folder or ".") if n.endswith(SUFFIXES)]
    except OSError:
        return None
    match = difflib.get_close_matches(os.path.basename(path), names, n=1, cutoff=0.6)
    return f"did you mean '{os.path.join(folder, match[0])}'?" if match else None


# ---- validation -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON Schema of one case, shipped in the package (usable by editors too)."""
    return json.loads(resources.files("agenttest.schema").joinpath("case.schema.json").read_text())


@lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


_TYPE_NAMES = {"string": "a string", "object": "an object", "array": "a list", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _field(path: Sequence[Any]) -> str:
    names = [p for p in path if isinstance(p, str)]
    return f"'{names[-1]}'" if names else "the case"


def schema_problems(raw: Any) -> list[tuple[Path, str, str | None, bool]]:
    """Structural problems as (path, message, hint, points-at-key)."""
    out: list[tuple[Path, str, str | None, bool]] = []
    for error in _validator().iter_errors(raw):
        out.extend(_explain(error))
    return out


def _explain(error: Any) -> list[tuple[Path, str, str | None, bool]]:
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
    return [(tuple(error.absolute_path), _any_of_message(error), None, False)]


def _any_of_message(error: Any) -> str:
    field = _field(error.absolute_path)
    if field == "'input'" or (error.absolute_path and error.absolute_path[-1] == "input"):
        return f"'input' must be a string, a message {{\"role\", \"content\"}} or a list of messages, not {_type_name(error.instance)}"
    if "content" in field:
        return f"'content' must be a string or a list of parts, not {_type_name(error.instance)}"
    return f"{field} must be an assertion object, a type name, or a list of them, not {_type_name(error.instance)}"


def _translate(error: Any) -> list[tuple[Path, str, str | None, bool]]:
    path = tuple(error.absolute_path)
    kind = error.validator
    if kind == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        out: list[tuple[Path, str, str | None, bool]] = []
        for key in error.instance:
            if key not in allowed:
                hint = did_you_mean(key, allowed) or f"allowed: {', '.join(allowed)}"
                out.append((path + (key,), f"'{key}' is not a field", hint, True))
        return out
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = "" if not path else f" in {_field(path)}"
        return [(path, f"missing required field '{missing}'{where}", None, False)]
    if kind == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        names = " or ".join(_TYPE_NAMES.get(str(w), str(w)) for w in wanted)
        return [(path, f"{_field(path)} must be {names}, not {_type_name(error.instance)}", None, False)]
    if kind == "enum":
        choices = [str(c) for c in error.validator_value]
        hint = did_you_mean(str(error.instance), choices) or f"one of {', '.join(choices)}"
        return [(path, f"{_field(path)} cannot be {error.instance!r}", hint, False)]
    if kind == "minLength":
        return [(path, f"{_field(path)} must not be empty", None, False)]
    if kind == "minItems":
        return [(path, f"{_field(path)} must not be an empty list", None, False)]
    if kind == "minimum":
        return [(path, f"{_field(path)} must be at least {error.validator_value}", None, False)]
    return [(path, error.message, None, False)]


def _assertion_list(raw: Any, key: str) -> list[tuple[Path, dict[str, Any]]]:
    value = raw.get(key)
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        return [((key,), {"type": value} if isinstance(value, str) else value)]
    return [((key, i), {"type": a} if isinstance(a, str) else a) for i, a in enumerate(value)]


def semantic_problems(raw: dict[str, Any], default_simulator: str | None) -> list[tuple[Path, str, str | None, bool]]:
    """Problems beyond structure: assertion types and parameters, durations, checkpoint graph, modes."""
    out: list[tuple[Path, str, str | None, bool]] = []
    if "assert" in raw and "assertions" in raw:
        out.append((("assertions",), "give 'assert' or 'assertions', not both", None, True))
    for path, params in _assertion_list(raw, "assert") + _assertion_list(raw, "assertions"):
        out += _assertion_problems(path, params)
    if "timeout" in raw and isinstance(raw["timeout"], (str, int, float)):
        try:
            parse_duration(raw["timeout"])
        except ValueError as exc:
            out.append((("timeout",), f"bad 'timeout': {exc}", None, False))
    checkpoints = raw.get("checkpoints")
    if "simulator" in raw and not checkpoints:
        out.append((("simulator",), "a dynamic case needs 'checkpoints' as well as 'simulator'", None, True))
    if checkpoints and isinstance(checkpoints, list):
        if "simulator" not in raw and not default_simulator:
            out.append((("checkpoints",), "checkpoints need a simulator", "add \"simulator\": {\"use\": \"workers.test.user-simulator\"} or pass --simulator", True))
        out += _checkpoint_problems(checkpoints)
    elif "input" not in raw or raw.get("input") in ("", [], None):
        if "input" not in raw:
            out.append(((), "missing required field 'input'", "standard cases need 'input'; dynamic cases need 'checkpoints'", False))
        else:
            out.append((("input",), "'input' is empty", None, False))
    return out


def _assertion_problems(path: Path, params: Any) -> list[tuple[Path, str, str | None, bool]]:
    if not isinstance(params, dict):
        return []
    out = []
    for field, message, hint in assertions.check(params):
        if field is None:
            out.append((path, message, hint, False))
        else:
            out.append((path + (field,), message, hint, field in params))
    return out


def _checkpoint_problems(checkpoints: list[Any]) -> list[tuple[Path, str, str | None, bool]]:
    out: list[tuple[Path, str, str | None, bool]] = []
    ids = [c.get("id") for c in checkpoints if isinstance(c, dict)]
    seen: set[Any] = set()
    for i, cp in enumerate(checkpoints):
        if not isinstance(cp, dict):
            continue
        base = ("checkpoints", i)
        cid = cp.get("id")
        if cid in seen:
            out.append((base + ("id",), f"duplicate checkpoint id '{cid}'", None, False))
        seen.add(cid)
        keys = [k for k in ("assert", "assertion") if k in cp]
        if not keys:
            out.append((base, f"checkpoint '{cid}' needs an 'assert' (or 'assertion')", None, False))
        elif len(keys) == 2:
            out.append((base + ("assertion",), "give 'assert' or 'assertion', not both", None, True))
        else:
            out += _assertion_problems(base + (keys[0],), cp[keys[0]])
        for j, dep in enumerate(cp.get("after") or []):
            if dep == cid:
                out.append((base + ("after", j), f"checkpoint '{cid}' cannot come after itself", None, False))
            elif dep not in ids:
                hint = did_you_mean(dep, [x for x in ids if isinstance(x, str)]) or f"known checkpoints: {', '.join(map(str, ids))}"
                out.append((base + ("after", j), f"'after' names unknown checkpoint '{dep}'", hint, False))
    return out


# ---- building -----------------------------------------------------------------------------------


def build_cases(docs: Sequence[Document], base_dir: str, default_simulator: str | None, problems: list[Problem]) -> list[Case]:
    """Validate every document; build Cases from the valid ones; append problems (duplicate ids too)."""
    cases: list[Case] = []
    first_seen: dict[str, Document] = {}
    for doc in docs:
        raw = doc.raw
        if not isinstance(raw, dict):
            problems.append(Problem(f"a case must be a JSON object, not {_type_name(raw)}", doc.locate()))
            continue
        found = [] if plainly_valid(raw) else schema_problems(raw)
        try:
            extra = semantic_problems(raw, default_simulator)
        except (TypeError, AttributeError, KeyError):
            extra = []  # a shape the schema already rejected
        seen = {path for path, *_ in found}
        found += [p for p in extra if p[0] not in seen]
        for path, message, hint, key in found:
            problems.append(Problem(message, doc.locate(path, key), hint))
        case_id = raw.get("id")
        if isinstance(case_id, str):
            if case_id in first_seen:
                prior = first_seen[case_id].locate(("id",))
                problems.append(Problem(f"duplicate id '{case_id}' (first used at line {prior.line})", doc.locate(("id",)), "ids must be unique in a run"))
            else:
                first_seen[case_id] = doc
        if not found:
            cases.append(make_case(raw, doc.locate(), base_dir))
    return cases


def _spec(params: dict[str, Any], location: Location | None) -> AssertionSpec:
    return AssertionSpec(params.get("type") or "equals", params, location)


def make_case(raw: dict[str, Any], location: Location, base_dir: str) -> Case:
    """A validated raw case → Case."""
    specs = tuple(_spec(p, location) for _, p in _assertion_list(raw, "assert") + _assertion_list(raw, "assertions"))
    sim = raw.get("simulator")
    checkpoints = tuple(
        Checkpoint(
            id=cp["id"],
            assertion=_spec(cp.get("assert") or cp.get("assertion") or {}, location),
            description=cp.get("description", ""),
            after=tuple(cp.get("after") or ()),
            required=cp.get("required", True),
        )
        for cp in raw.get("checkpoints") or ()
    )
    return Case(
        id=raw["id"],
        messages=normalize(raw.get("input")),
        raw=raw,
        location=location,
        base_dir=base_dir,
        name=raw.get("name", ""),
        description=raw.get("description", ""),
        assertions=specs,
        expected=raw.get("expected"),
        has_expected="expected" in raw,
        options=raw.get("options") or {},
        user=raw.get("user"),
        team=raw.get("team"),
        metadata=raw.get("metadata") or {},
        skip=bool(raw.get("skip", False)),
        skip_reason=raw.get("skip_reason", ""),
        timeout=parse_duration(raw["timeout"]) if "timeout" in raw else None,
        before=raw.get("before"),
        after=raw.get("after"),
        simulator=SimulatorSpec(sim["use"], sim.get("options") or {}) if sim else None,
        checkpoints=checkpoints,
        max_turns=raw.get("max_turns", 20),
    )
