"""What loading is made of: a case file's raw cases as ``Document``s (each knows how to find a place inside it),
what a source gave (``Loaded``), the policy for unknown keys, and the limits every case file is held to."""

from __future__ import annotations

import linecache
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import InputError, Location, Problem, closest
from agenttest.inputs.caseschema import CASE_KEYS
from agenttest.inputs.validation import Path, type_name
from agenttest.model import Case
from agenttest.util.positions import json_offset, line_col, yaml_mark


SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")


MAX_DEPTH = 64  # nesting of one case: real cases use about ten levels


MAX_YAML_VALUES = 1_000_000  # values a YAML file may expand to through its aliases


MAX_FILE_BYTES = 256 * 1024 * 1024


CASE_LIST_KEYS = ("cases", "test_cases")


@dataclass(frozen=True)
class KeyPolicy:
    """What loading holds a case file to. An unknown key in a case (FORMATS §2): a typo of a known field is an
    error; any other key is ignored with one warning per key and file, as Yao ignores it. ``strict``
    (``--strict``) makes every unknown key an error; ``lenient`` (generated cases) makes every unknown key a
    warning. ``max_cases`` (``--max-cases``): the most cases a file's variants may make."""

    strict: bool = False
    lenient: bool = False
    max_cases: int = 10_000

    def is_error(self, typo: str | None) -> bool:
        return self.strict or (typo is not None and not self.lenient)


@dataclass
class Loaded:
    """What a source gave: the cases that could be built, and every problem and warning found."""

    cases: list[Case] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # cases with problems of their own, built without what is at fault: never run, but the agents, connectors and
    # tools they name are resolved in the same round as the problems (not one round of fixes later)
    unbuilt: list[Case] = field(default_factory=list)

    def extend(self, other: Loaded) -> None:
        self.cases += other.cases
        self.problems += other.problems
        self.warnings += other.warnings
        self.unbuilt += other.unbuilt

    def check(self) -> list[Case]:
        """The cases, or an InputError listing every problem."""
        if self.problems:
            raise InputError(self.problems)
        return self.cases


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One raw case and how to find places inside it."""

    raw: Any
    source: str
    base: Path = ()
    text: str | None = None  # JSON text of the case alone (jsonl: its line; None: read it again from the file)
    line_offset: int = 0  # lines before ``text`` starts
    col_offset: int = 0  # columns before ``text`` starts on its first line
    node: Any = None  # YAML node of the whole file
    shallow: bool = False  # known to nest no deeper than MAX_DEPTH (checked as it was read)

    def locate(self, path: Sequence[Any] = (), key: bool = False) -> Location:
        full = tuple(self.base) + tuple(path)
        if self.node is not None:
            line, col = yaml_mark(self.node, full, key)
        elif self.text is not None or self.source.endswith(".jsonl"):
            # a .jsonl line is read again only when a place inside it is needed: 100,000 cases need not keep their text
            if self.text is None and not full:
                return Location(self.source, self.line_offset + 1, 1)
            if self.text is None:
                linecache.checkcache(self.source)  # a file written again since (by the same process) is read again
            text = self.text if self.text is not None else linecache.getline(self.source, self.line_offset + 1)
            line, col = line_col(text, json_offset(text, full, key))
            col += self.col_offset if line == 1 else 0
        else:
            return Location(self.source)
        return Location(self.source, line + self.line_offset, col)

    def __call__(self, path: Sequence[Any] = (), key: bool = False, line: int | None = None) -> Location:
        """A Document is its case's locator (``line``, the case's own, is known already)."""
        return self.locate(path, key)


@dataclass(frozen=True, slots=True)
class Lines:
    """The one locator of every case of a ``.jsonl`` file whose line is read again from the file when a place
    inside it is needed: given the case's line, it is that line's Document (100,000 Documents are not kept)."""

    source: str

    def __call__(self, path: Sequence[Any] = (), key: bool = False, line: int | None = None) -> Location:
        return Document(raw=None, source=self.source, base=(), text=None, line_offset=(line or 1) - 1).locate(path, key)


FILES: dict[str, Lines] = {}


def case_list(data: Any) -> tuple[Path, list[Any]]:
    """The cases of a file or a generator's reply: a list, or ``{"cases": [...]}`` (Yao: ``test_cases``).

    Raises ValueError saying what was expected."""
    if isinstance(data, list):
        return (), data
    if isinstance(data, dict):
        for key in CASE_LIST_KEYS:
            if isinstance(data.get(key), list):
                return (key,), data[key]
    near = [closest(k, CASE_LIST_KEYS) for k, v in data.items() if isinstance(k, str) and isinstance(v, list)] if isinstance(data, dict) else []
    hint = next((f"; did you mean '{m}'?" for m in near if m), "")  # {"case": [...]}, {"test_case": [...]}
    raise ValueError(f"expected a list of cases or an object with 'cases': [...], not {type_name(data)}{hint}")


WRAPPER_KEYS = ("$schema", "name", "description", "suite")  # what a case file may say beside its cases ("suite": its checks, inputs/suites.py)


def beside_cases(data: Any, base: Path, source: str, where: Callable[[Any], tuple[int, int]]) -> list[Problem]:
    """Each key beside ``cases`` in a case file's object: an error at its place, as a file's other keys were dropped
    without a word (a suite's ``assertions`` beside its cases were never checked). ``where``: a key's line and column."""
    if not base or type(data) is not dict:
        return []
    said = [(key, *_beside(str(key), base[0])) for key in data if key != base[0] and key not in WRAPPER_KEYS]
    return [Problem(message, Location(source, *where(key)), hint) for key, message, hint in said]


def _beside(key: str, listed: str) -> tuple[str, str]:
    """What to say of ``key`` beside the list ``listed``, and the way out."""
    if key in CASE_LIST_KEYS:
        return f"'{key}' beside '{listed}': a case file has one list of cases", f"put every case in '{listed}'"
    if key in ("assert", "assertions", "expected", "checks"):
        return (f"'{key}' beside '{listed}' is not read: a case file has no assertions of its own",
                "put them in each case that needs them ('assert' in the case)")
    if key in CASE_KEYS:
        return (f"'{key}' beside '{listed}' is a field of a case, not of the file",
                "write it in each case that needs it (a case file sets nothing for its cases)")
    meant = closest(key, [*WRAPPER_KEYS, *CASE_LIST_KEYS])
    known = f"beside '{listed}' a case file may have {', '.join(repr(k) for k in WRAPPER_KEYS)}"
    return f"'{key}' is not a field of a case file", f"did you mean '{meant}'? ({known})" if meant else known


def too_deep(value: Any, limit: int) -> bool:
    """Whether a parsed value nests deeper than ``limit`` (level by level: deep values must not recurse here;
    only containers are visited, so a case of a hundred strings costs a few steps)."""
    if limit < 1:
        return True
    level, depth = [value], 1
    while level:
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
            if children and depth + 1 > limit:
                return True
            below += [c for c in children if isinstance(c, (dict, list))]
        level, depth = below, depth + 1
    return False


def twice_hint(key: str) -> str:
    if key in ("assert", "assertions"):
        return "remove one; several assertions go in one list"
    if key in CASE_LIST_KEYS:
        return "remove one; all the cases go in one list"
    return "remove one of them"
