"""Reading a B file strictly: the YAML with every node's place, and B's error envelope — a code, a message, a
hint and the YAML line and column — for every problem (docs/formats-b.md lists the codes). Unknown fields fail
closed with the nearest field; nothing is guessed."""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import Location, Problem
from agenttest.runtime import cel
from agenttest.util.positions import yaml_node

# B's error codes (the envelope's ``code``); docs/formats-b.md says what each means
YAML_SYNTAX = "E001"
UNKNOWN_FIELD = "E002"
MISSING_FIELD = "E003"
WRONG_TYPE = "E004"
INVALID_VALUE = "E005"
ONE_OF = "E006"
UNKNOWN_PACK = "E007"
UNKNOWN_TOOL = "E008"
UNKNOWN_COLLECTION = "E009"
CEL_SYNTAX = "E010"
CEL_TYPE = "E011"
FILE_NOT_FOUND = "E012"
BAD_FIXTURE = "E013"
BAD_SNAPSHOT = "E014"
DUPLICATE_ID = "E015"
UNSUPPORTED_VERSION = "E016"
BAD_PACK = "E017"
CODES = {YAML_SYNTAX: "YAML_SYNTAX", UNKNOWN_FIELD: "UNKNOWN_FIELD", MISSING_FIELD: "MISSING_FIELD", WRONG_TYPE: "WRONG_TYPE",
         INVALID_VALUE: "INVALID_VALUE", ONE_OF: "ONE_OF", UNKNOWN_PACK: "UNKNOWN_PACK", UNKNOWN_TOOL: "UNKNOWN_TOOL",
         UNKNOWN_COLLECTION: "UNKNOWN_COLLECTION", CEL_SYNTAX: "CEL_SYNTAX", CEL_TYPE: "CEL_TYPE", FILE_NOT_FOUND: "FILE_NOT_FOUND",
         BAD_FIXTURE: "BAD_FIXTURE", BAD_SNAPSHOT: "BAD_SNAPSHOT", DUPLICATE_ID: "DUPLICATE_ID",
         UNSUPPORTED_VERSION: "UNSUPPORTED_VERSION", BAD_PACK: "BAD_PACK"}

Path = tuple[Any, ...]
_KINDS = {dict: "a mapping", list: "a list", str: "a string", int: "a whole number", float: "a number", bool: "true or false"}


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known name nearest to ``word`` (B's "nearest-field suggestion"), or None when none is near."""
    found = difflib.get_close_matches(str(word), list(known), n=1, cutoff=0.5)
    return found[0] if found else None


def suggestion(word: str, known: Sequence[str], what: str = "fields") -> str:
    near = nearest(word, known)
    return f"did you mean '{near}'?" if near else f"the {what}: {', '.join(known) or 'none'}"


@dataclass
class Document:
    """One YAML file as read: its text, its node tree (places) and its data; the problems found in it."""

    path: str
    text: str
    data: Any = None
    node: Any = None
    problems: list[Problem] = field(default_factory=list)

    def at(self, path: Path = (), key: bool = False) -> Location:
        """``file:line:column`` of what ``path`` names (its key with ``key``)."""
        if self.node is None:
            return Location(self.path, 1, 1)
        found = yaml_node(self.node, path, key)
        return Location(self.path, found.start_mark.line + 1, found.start_mark.column + 1)

    def add(self, code: str, message: str, path: Path = (), hint: str | None = None, key: bool = False,
            where: Location | None = None) -> None:
        self.problems.append(Problem(message, where or self.at(path, key), hint, code))

    # -- shapes

    def mapping(self, value: Any, path: Path, what: str) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        self.add(WRONG_TYPE, f"{what} must be a mapping, not {kind_of(value)}", path)
        return {}

    def fields(self, value: dict[str, Any], path: Path, known: Sequence[str], required: Sequence[str] = (), what: str = "") -> None:
        """Unknown fields (fail closed, with the nearest field) and missing ones."""
        for key in value:
            if key not in known:
                where = f" of {what}" if what else ""
                self.add(UNKNOWN_FIELD, f"unknown field '{key}'{where}", (*path, key), suggestion(str(key), known), key=True)
        for key in required:
            if key not in value:
                self.add(MISSING_FIELD, f"{what or 'the file'} needs '{key}'", path, f"its fields: {', '.join(known)}")

    def typed(self, value: Any, path: Path, kinds: tuple[type, ...], what: str) -> bool:
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if not ok:
            wanted = " or ".join(_KINDS.get(k, k.__name__) for k in kinds)
            self.add(WRONG_TYPE, f"{what} must be {wanted}, not {kind_of(value)}", path)
        return ok

    def expression(self, expr: str, path: Path, shape: cel.Shape) -> None:
        """A CEL expression's syntax and type problems, each at its own line and column in the file."""
        for problem in cel.check(expr, shape):
            code = CEL_SYNTAX if problem.kind == "syntax" else CEL_TYPE
            self.add(code, problem.message, path, problem.hint, where=self.cel_place(path, expr, problem.line, problem.column))

    def cel_place(self, path: Path, expr: str, line: int, column: int) -> Location:
        """Where the expression's own ``line:column`` is in the file (its scalar may be plain, quoted or a block)."""
        node = yaml_node(self.node, path) if self.node is not None else None
        if node is None or not hasattr(node, "start_mark"):
            return self.at(path)
        offset = sum(len(x) + 1 for x in expr.split("\n")[: line - 1]) + column - 1
        return place_in_scalar(self.path, self.text, node, expr, offset)


def place_in_scalar(file: str, text: str, node: Any, value: str, offset: int) -> Location:
    """The file's line and column of character ``offset`` of a scalar's value: the value is walked along its source,
    so quotes, folded lines and a block's indentation are stepped over (an escape the walk cannot follow: the
    scalar's start)."""
    start, end = node.start_mark.index, node.end_mark.index
    source = text[start:end]
    i, indent = 0, 0
    if node.style in ("|", ">"):
        i = source.find("\n") + 1 if "\n" in source else len(source)
        indent = len(source[i:]) - len(source[i:].lstrip(" "))
        i += indent
    elif node.style in ("'", '"'):
        i = 1
    j = 0
    while j < offset and i < len(source) and j < len(value):
        if source[i] == value[j]:
            i, j = i + 1, j + 1
            if value[j - 1] == "\n":  # a block's next line: its indentation is not in the value
                i += min(indent, len(source[i:]) - len(source[i:].lstrip(" ")))
            continue
        if source[i] in " \t\n\r" and (value[j] == " " or value[j] == "\n"):
            while i < len(source) and source[i] in " \t\n\r":
                i += 1
            j += 1
            continue
        if source[i] in " \t\n\r":
            i += 1
            continue
        return Location(file, node.start_mark.line + 1, node.start_mark.column + 1)  # an escape: the scalar's start
    absolute = start + i
    line = text.count("\n", 0, absolute) + 1
    column = absolute - (text.rfind("\n", 0, absolute) + 1) + 1
    return Location(file, line, column)


def kind_of(value: Any) -> str:
    if value is None:
        return "empty"
    for t, word in _KINDS.items():
        if type(value) is t:
            return word
    return type(value).__name__


def read(path: str, text: str) -> Document:
    """Parse the YAML (one document, a mapping at the top), keeping every node's place."""
    import yaml

    doc = Document(path=path, text=text)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(path, mark.line + 1, mark.column + 1) if mark is not None else Location(path)
        doc.problems.append(Problem(f"not valid YAML: {exc.problem or exc}", where, "check the indentation and quoting here",
                                    YAML_SYNTAX))
        return doc
    except yaml.YAMLError as exc:
        doc.problems.append(Problem(f"not valid YAML: {exc}", Location(path, 1, 1), None, YAML_SYNTAX))
        return doc
    finally:
        loader.dispose()
    doc.node, doc.data = node, data
    if not isinstance(data, dict):
        doc.problems.append(Problem(f"a B file is a mapping at the top, not {kind_of(data)}", Location(path, 1, 1),
                                    "it starts with meta:, task:, world:, tools: and assertions:", WRONG_TYPE))
        doc.data = {}
    return doc


def timestamp(value: Any) -> float:
    """An ISO 8601 time (or a YAML timestamp) → epoch seconds, UTC unless it says otherwise. ValueError."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    else:
        raise ValueError(f"{value!r} is not a time")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()
