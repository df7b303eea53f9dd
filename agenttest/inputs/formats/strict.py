"""Reading a seed format's file strictly, as its document says: JSON parsed with every problem at its
``file:line:column`` (a key written twice included), and a checker that refuses unknown fields with the nearest
known one, missing fields, wrong types, bad ids and lists past their limits."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import Location, Problem, closest
from agenttest.inputs.documents import MAX_DEPTH, Document, too_deep
from agenttest.inputs.validation import Path, type_name
from agenttest.util.positions import json_hint, json_message, json_place, json_repeated, line_col

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,159}")
ID_RULE = "1–160 characters: a letter or digit, then letters, digits, _ . : or -"


@dataclass(frozen=True)
class Read:
    """A seed file read: its parsed JSON and where each place in it was written; ``problems`` when it could not be."""

    path: str
    data: Any = None
    doc: Document | None = None
    problems: tuple[Problem, ...] = ()


def read_json(path: str) -> Read:
    """A seed file's JSON, or its problems (not there, not UTF-8, not JSON, a key written twice, too deep)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except FileNotFoundError:
        return Read(path, problems=(Problem(f"input file '{path}' does not exist"),))
    except UnicodeDecodeError:
        return Read(path, problems=(Problem("the file is not UTF-8", Location(path), "save it as UTF-8"),))
    except OSError as exc:
        return Read(path, problems=(Problem(f"cannot read '{path}': {exc}"),))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Read(path, problems=(Problem(f"invalid JSON: {json_message(exc.msg)}", Location(path, *json_place(exc.msg, text, exc.pos)),
                                            json_hint(exc.msg, text, exc.pos, "file")),))
    except (RecursionError, ValueError):
        return Read(path, problems=(Problem(f"the file is nested more than {MAX_DEPTH} levels deep, or holds a number too long to read",
                                            Location(path)),))
    doc = Document(raw=data, source=path, text=text)
    twice = [Problem(f"'{key}' is written twice in one object (JSON keeps only the last)", Location(path, line, col), "remove one of them")
             for key, line, col in json_repeated(text)]
    if too_deep(data, MAX_DEPTH):
        twice.append(Problem(f"the file is nested more than {MAX_DEPTH} levels deep", Location(path, 1, 1)))
    return Read(path, data, doc, tuple(twice))


def sniff(path: str, keys: Sequence[str]) -> Any:
    """The parsed JSON of a ``.json`` file whose first 64 KB name every one of ``keys`` as a key, else None: a case
    file of another shape is not parsed twice."""
    if not path.lower().endswith(".json") or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(65536)
        if not all(f'"{k}"' in head for k in keys):
            return None
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None


@dataclass
class Checker:
    """Collects the problems of one document, each as (path, message, hint, at the key)."""

    found: list[tuple[Path, str, str | None, bool]] = field(default_factory=list)

    def say(self, path: Path, message: str, hint: str | None = None, key: bool = False) -> None:
        self.found.append((tuple(path), message, hint, key))

    def fields(self, value: Any, path: Path, what: str, required: Iterable[str], optional: Iterable[str] = ()) -> bool:
        """``value`` is an object with every required field and no other than those: unknown fields fail closed."""
        if not isinstance(value, dict):
            self.say(path, f"{what} must be an object, not {type_name(value)}")
            return False
        required, known = list(required), [*required, *optional]
        for key in value:
            if key not in known:
                near = closest(str(key), known)
                self.say((*path, key), f"'{key}' is not a field of {what}",
                         f"did you mean '{near}'?" if near else f"its fields: {', '.join(known)}", key=True)
        for key in required:
            if key not in value:
                self.say(path, f"{what} needs '{key}'")
        return True

    def kind(self, value: Any, path: Path, kind: type | tuple[type, ...], said: str) -> bool:
        ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)))
        if not ok:
            self.say(path, f"'{path[-1]}' must be {said}, not {type_name(value)}")
        return ok

    def identifier(self, value: Any, path: Path) -> bool:
        if not isinstance(value, str) or not ID.fullmatch(value):
            shown = repr(value) if isinstance(value, str) else type_name(value)
            self.say(path, f"'{path[-1]}' must be an id of {ID_RULE}, not {shown}")
            return False
        return True

    def listed(self, value: Any, path: Path, least: int, most: int, of: str) -> bool:
        if not isinstance(value, list):
            self.say(path, f"'{path[-1]}' must be a list of {of}, not {type_name(value)}")
            return False
        if not least <= len(value) <= most:
            self.say(path, f"'{path[-1]}' holds {len(value)} {of}; it must hold {least} to {most:,}" if least else
                     f"'{path[-1]}' holds {len(value)} {of}; at most {most:,}")
            return False
        return True

    def unique(self, items: list[Any], path: Path, what: str) -> None:
        """The ids of sibling items are unique."""
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            ident = item.get("id") if isinstance(item, dict) else None
            if isinstance(ident, str):
                if ident in seen:
                    self.say((*path, i, "id"), f"duplicate {what} id '{ident}' (first at {path[-1]}[{seen[ident]}])")
                else:
                    seen[ident] = i

    def problems(self, doc: Document) -> list[Problem]:
        """Each problem at its ``file:line:column``."""
        return [Problem(message, doc.locate(path, key), hint) for path, message, hint, key in self.found]


def located(doc: Document, path: Path) -> Location:
    """Where ``path`` was written (the start of the file when it is the whole document)."""
    where = doc.locate(path)
    if where.line is None and doc.text is not None:
        return Location(doc.source, *line_col(doc.text, 0))
    return where


@dataclass(frozen=True, slots=True)
class Translated(Document):
    """A converted case (or suite) whose places are found in the seed file it came from: ``origin`` maps a place in
    the converted value to the place in the file (a module-level function or a partial of one: cases are pickled)."""

    origin: Any = None

    def locate(self, path: Sequence[Any] = (), key: bool = False) -> Location:
        return Document.locate(self, self.origin(tuple(path)) if self.origin is not None else tuple(path), key)

    def __call__(self, path: Sequence[Any] = (), key: bool = False, line: int | None = None) -> Location:
        return self.locate(path, key)
