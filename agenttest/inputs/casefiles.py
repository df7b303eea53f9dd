"""Case files → Cases: parsing .jsonl/.json/.yaml into documents, validating each (``validation.py``)
and building Cases; every problem is kept, with its ``file:line:column``, to be reported together."""

from __future__ import annotations

import itertools
import json
import linecache
import math
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agenttest.accounting import budgets
from agenttest.inputs.caseschema import plainly_valid
from agenttest.util.durations import parse_duration
from agenttest.errors import InputError, Location, Problem, closest
from agenttest.model.messages import normalize
from agenttest.model import AssertionSpec, Case, Checkpoint, Fault, Mock, ScriptedTurn, SimulatorSpec
from agenttest.model.cases import Locator
from agenttest.util.positions import deeper_than, entries, json_hint, json_message, json_offset, json_place, json_repeated, line_col, yaml_mark, yaml_node, yaml_repeated
from agenttest.util.text import cleaned, escapes_surrogates
from agenttest.inputs.validation import Path, assertion_list, at_item, container, misnamed, schema_problems, semantic_problems, type_name

SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")
MAX_DEPTH = 64  # nesting of one case: real cases use about ten levels
MAX_YAML_VALUES = 1_000_000  # values a YAML file may expand to through its aliases
MAX_FILE_BYTES = 256 * 1024 * 1024


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


_NONE: dict[str, Any] = {}  # the options and metadata of every case without any: read only, one object for 100,000 cases


@dataclass
class Loaded:
    """What a source gave: the cases that could be built, and every problem and warning found."""

    cases: list[Case] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: Loaded) -> None:
        self.cases += other.cases
        self.problems += other.problems
        self.warnings += other.warnings

    def check(self) -> list[Case]:
        """The cases, or an InputError listing every problem."""
        if self.problems:
            raise InputError(self.problems)
        return self.cases


@dataclass(frozen=True, slots=True)
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
class _Lines:
    """The one locator of every case of a ``.jsonl`` file whose line is read again from the file when a place
    inside it is needed: given the case's line, it is that line's Document (100,000 Documents are not kept)."""

    source: str

    def __call__(self, path: Sequence[Any] = (), key: bool = False, line: int | None = None) -> Location:
        return Document(None, self.source, (), None, (line or 1) - 1).locate(path, key)


_FILES: dict[str, _Lines] = {}


# ---- parsing ------------------------------------------------------------------------------------


def load_file(path: str, default_simulator: str | None = None, policy: KeyPolicy = KeyPolicy()) -> Loaded:
    """Read and validate a case file."""
    if not os.path.exists(path):
        return Loaded(problems=[Problem(f"input file '{path}' does not exist", None, _similar_file(path))])
    if os.path.isdir(path):
        return Loaded(problems=[Problem(f"input '{path}' is a folder, not a case file", None, "pass a .jsonl, .json or .yaml file")])
    if not os.path.isfile(path):
        return Loaded(problems=[Problem(f"input '{path}' is not a regular file (a device, a pipe or a socket)", None, "pass a .jsonl, .json or .yaml file")])
    if os.path.splitext(path)[1].lower() not in SUFFIXES:
        return Loaded(problems=[Problem(f"'{path}': unknown case file type '{os.path.splitext(path)[1]}'", None, "use .jsonl, .json, .yaml or .yml")])
    if os.path.getsize(path) > MAX_FILE_BYTES:
        return Loaded(problems=[Problem(f"'{path}' is {os.path.getsize(path):,} bytes; case files are limited to {MAX_FILE_BYTES:,}", None, "split it into several files")])
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:  # only "\n" ends a line: a lone CR is JSON's whitespace
            text = fh.read()
    except UnicodeDecodeError:
        return Loaded(problems=[_not_utf8(path)])
    except OSError as exc:
        return Loaded(problems=[Problem(f"cannot read '{path}': {exc}")])
    return parse(text, path, default_simulator, os.path.dirname(os.path.abspath(path)), policy=policy)


def _not_utf8(path: str) -> Problem:
    """A case file that is not UTF-8, at its first byte that is not (line and column, as every other problem)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = bom + exc.start
        start = data.rfind(b"\n", 0, at) + 1
        line, col = data.count(b"\n", 0, at) + 1, len(data[start:at].decode("utf-8", "replace")) + 1
        return Problem(f"the file is not UTF-8: byte 0x{data[at]:02x} cannot start or continue a character", Location(path, line, col),
                       "save the file as UTF-8 (an editor's 'Save with encoding', or iconv -f latin1 -t utf-8)")
    except OSError as exc:
        return Problem(f"cannot read '{path}': {exc}")
    return Problem(f"cannot read '{path}': it is not UTF-8")


def parse(text: str, source: str, default_simulator: str | None = None, base_dir: str = ".", kind: str | None = None,
          policy: KeyPolicy = KeyPolicy()) -> Loaded:
    """Parse case text of the kind given by ``kind`` or the source's extension."""
    kind = kind or os.path.splitext(source)[1].lower()
    loaded = Loaded()
    if kind == ".jsonl":
        docs = list(_jsonl_documents(text, source, loaded.problems, keep_text=not os.path.isfile(source)))
        if loaded.problems and _over_lines(text):  # pretty-printed JSON (a list, or objects as jq prints them) named .jsonl
            docs = []
            loaded.problems[:] = [Problem("the file is JSON written over several lines (pretty-printed), not one case per line",
                                          Location(source, 1, 1), "write each case on a line of its own (jq -c prints them so), "
                                          "or name the file .json with the cases in a list ([{...}, {...}])")]
    elif kind in (".yaml", ".yml"):
        docs = _yaml_documents(text, source, loaded.problems)
    elif kind == ".json":
        docs = _json_documents(text, source, loaded.problems)
    else:
        loaded.problems.append(Problem(f"'{source}': unknown case file type '{kind}'", None, "use .jsonl, .json, .yaml or .yml"))
        return loaded
    if not docs and not loaded.problems:  # never a silent green: a file with no cases is not a passing suite
        loaded.problems.append(Problem(f"holds no test cases: {_emptiness(text, kind)}", Location(source),
                                       "add cases, or point -i at the file that has them"))
    if escapes_surrogates(text):  # "\\ud83d" alone (a cut emoji): made safe before anything holds it
        docs = [replace(d, raw=cleaned(d.raw)) for d in docs]
    loaded.cases = build_cases(docs, base_dir, default_simulator, loaded, policy)
    if len(loaded.problems) > 1:  # in the file's order (a line's own, cause first, as found): parsing's come before building's
        loaded.problems.sort(key=_line_of)
    return loaded


def _line_of(problem: Problem) -> int:
    return (problem.location.line or 0) if problem.location is not None else 0


def _emptiness(text: str, kind: str) -> str:
    """What kind of empty a case file is, for the message."""
    if not text.strip():
        return "the file is empty"
    if kind == ".jsonl":
        return "it has only blank lines and // comments"
    if kind in (".yaml", ".yml") and all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        return "it has only comments"
    return "its list of cases is empty"


def parse_text(text: str, source: str, default_simulator: str | None = None, base_dir: str = ".", kind: str | None = None) -> list[Case]:
    """``parse``, raising an InputError listing every problem."""
    return parse(text, source, default_simulator, base_dir, kind).check()


def _jsonl_documents(text: str, source: str, problems: list[Problem], keep_text: bool = True) -> Iterator[Document]:
    strings: dict[Any, Any] = {}  # one copy of each key, string value and dict of text across the file's cases
    for number, line in enumerate(_lines(text), start=1):
        shift = 0
        if line.startswith("\ufeff"):  # a byte order mark where files were joined (cat a.jsonl b.jsonl): not the case's
            line, shift = line.lstrip("\ufeff"), len(line) - len(line.lstrip("\ufeff"))
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            parsed = json.loads(line)
            keys = [0]  # the walk counts the case's keys for the repeated-key check below
            try:
                raw, shallow = _shared(parsed, strings, 1, keys), True
            except _Deep:  # build_cases says so, at its place
                raw, shallow, keys[0] = parsed, False, entries(parsed)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"invalid JSON: {json_message(exc.msg)}", Location(source, number, json_place(exc.msg, line, exc.pos)[1] + shift),
                                    json_hint(exc.msg, line, exc.pos)))
            continue
        except RecursionError:  # said where the nesting passed the limit, as in a .json file
            at = deeper_than(line, MAX_DEPTH)
            problems.append(Problem(f"nested too deeply (more than {MAX_DEPTH} levels)", Location(source, number, (at or 0) + 1 + shift)))
            continue
        except ValueError:  # an integer too long to convert (Python refuses more than 4,300 digits)
            problems.append(_huge_number(line, source, number - 1))
            continue
        if line.count(":") > keys[0]:  # more ':' than keys: one in a string, or a key written twice
            problems += _repeated_keys(line, source, number - 1, shift)
        kept = keep_text or shift or "\r" in line  # a line read again from the file would be split at its lone CR
        yield Document(raw, source, (), line if kept else None, number - 1, shift, shallow=shallow)


def _over_lines(text: str) -> bool:
    """Whether ``text`` is JSON values (one, or several as ``jq`` prints them) of which one at least is written
    over several lines: pretty-printed JSON, not JSON Lines."""
    decoder, pos, spread = json.JSONDecoder(), 0, False
    try:
        while True:
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= len(text):
                return spread
            _, end = decoder.raw_decode(text, pos)
            spread = spread or "\n" in text[pos:end]
            pos = end
    except (ValueError, RecursionError):
        return False


_SPACE = re.compile(r"\s*")


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text``, one at a time (a list of 100,000 lines would double the file in memory).
    Only ``\n`` ends a line: JSON strings may hold U+2028 and other characters ``splitlines`` splits at."""
    start, end = 0, len(text)
    while start < end:
        stop = text.find("\n", start)
        stop = end if stop < 0 else stop
        yield text[start:stop].removesuffix("\r")
        start = stop + 1


class _Deep(Exception):
    """A value nested deeper than MAX_DEPTH met while sharing its strings."""


def _shared(value: Any, strings: dict[Any, Any], depth: int = 1, keys: list[int] | None = None) -> Any:
    """``value`` with equal strings (keys too) made one object: every case repeats its keys, and suites
    repeat roles and whole histories; at 100,000 cases this halves the memory of the parsed file. A dict
    of text alone (a message, an assertion) is one object wherever it is written alike, keys in the same
    order: what hands a case's data to user code hands a copy (``util.values.fresh``), so that a hook that
    edits one case's history edits no other's. A value nested deeper than MAX_DEPTH raises _Deep (this
    walk is the depth check of a ``.jsonl`` case). Lists
    are shared in place and dicts made again (a key cannot be swapped in place); text and numbers are
    looked at here, not in a call each (a call per value was two thirds of this walk). ``keys[0]`` counts
    the keys of every dict met (what the repeated-key check needs, without a walk of its own)."""
    kind = type(value)
    if kind is str:
        return strings.setdefault(value, value)
    if kind is not dict and kind is not list:
        return value
    if depth > MAX_DEPTH or (depth == MAX_DEPTH and value):  # its values would lie deeper than MAX_DEPTH
        raise _Deep
    share, below = strings.setdefault, depth + 1
    if kind is list:
        for i, v in enumerate(value):
            t = type(v)
            if t is str:
                value[i] = share(v, v)
            elif t is dict or t is list:
                value[i] = _shared(v, strings, below, keys)
        return value
    if keys is not None:
        keys[0] += len(value)
    out = {}
    leaf = True  # every value text: one dict for every case that writes it alike (a history's messages, an assertion)
    for k, v in value.items():
        t = type(v)
        if t is str:
            v = share(v, v)
        elif t is dict or t is list:
            v = _shared(v, strings, below, keys)
            leaf = False
        else:
            leaf = False
        out[share(k, k)] = v
    if leaf:  # known by its keys, then its values (no text equals a tuple); in order: {"a","b"} is not {"b","a"} as written
        return share((*out, *out.values()), out)  # type: ignore[arg-type]
    return out


_OPENED = {"while parsing a flow sequence": "the '[' at line {}, column {} is never closed",
           "while parsing a flow mapping": "the '{{' at line {}, column {} is never closed",
           "while scanning a quoted scalar": "the quote at line {}, column {} is never closed"}


def _yaml_opened(exc: Exception) -> str | None:
    """Where what the parser gave up on began, when that is elsewhere: an unclosed ``[`` is noticed lines
    later, often at the end of the file."""
    context, start, mark = getattr(exc, "context", None), getattr(exc, "context_mark", None), getattr(exc, "problem_mark", None)
    if not context or start is None or (mark is not None and (start.line, start.column) == (mark.line, mark.column)):
        return None
    template = _OPENED.get(context)
    where = (start.line + 1, start.column + 1)
    return template.format(*where) if template else f"{context.removeprefix('while ')} that starts at line {where[0]}, column {where[1]}"


_KEYED_LINE = re.compile(r"\s*(?:-\s+)?([^\s:#][^:#]*?):\s+(\S.*)")  # greedy to the end: linear on any line


def _marked_line(text: str, mark: Any) -> tuple[str, int]:
    """The line a YAML mark is on, read from the mark's offset (so any line break YAML counts ends it), and the
    mark's column in it."""
    at = min(mark.index, len(text))
    start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    ends = [i for i in (text.find("\n", at), text.find("\r", at)) if i >= 0]
    return text[start:min(ends) if ends else len(text)], at - start


def _flow_colon_hint(said: str, text: str, mark: Any) -> str | None:
    """``{role: user, content: Note: hi}``: inside flow brackets a second ``: `` is refused as a missing comma
    (PyYAML then points at the bracket as never closed, though it is). The entry quoted, when it reads plainly."""
    if mark is None or not said.startswith(("expected ',' or '}', but got ':'", "expected ',' or ']', but got ':'")):
        return None
    plain = 'inside { } or [ ], a value that holds ": " must be quoted'
    line, col = _marked_line(text, mark)
    start = max(line.rfind(c, 0, col) for c in ",{[") + 1
    ends = [i for i in (line.find(c, col) for c in ",}]") if i >= 0]
    end = min(ends) if ends else len(line)
    entry = line[start:end].strip()
    key, sep, value = entry.partition(": ")
    if (not re.fullmatch(r"[\s,}\]]*", line[end:]) or any(c in value for c in "[]{}")  # the value may go on past a comma or a bracket
            or not sep or not key or len(entry) > 200 or not value or value[0] in "\"'[{&*!|>%@`#" or " #" in value or any(c in key for c in "\"'")):
        return plain
    return f"{plain}: {key}: {json.dumps(value.strip(), ensure_ascii=False)}"


def _tab_hint(text: str, mark: Any) -> str:
    """A tab YAML refuses: in the indentation, or between tokens further on the line."""
    if mark is not None:
        line, col = _marked_line(text, mark)
        if line[:col].strip():
            return "YAML does not take a tab here: use a space (a tab is fine inside quotes)"
    return "YAML indents with spaces, not tabs"


def _quote_hint(said: str, text: str, mark: Any) -> str | None:
    """A plain value holding ``: `` (``input: note: a colon``) reads as a second key: the line quoted."""
    if mark is None or not said.startswith("mapping values are not allowed"):
        return None
    line, col = _marked_line(text, mark)
    if ":" not in line[:col]:  # the line's first key: it is indented past the key above, so continues its value
        return "this key is indented more than the one above it, so YAML reads it as the rest of that value: line them up"
    found = _KEYED_LINE.fullmatch(line)
    value = found.group(2).rstrip() if found is not None else ""
    if not value or value[0] in "\"'[{|>&*!" or " #" in value or len(value) > 200:  # not a plain value to quote whole here
        return 'a value that holds ": " must be quoted'
    return f'a value that holds ": " must be quoted: {found.group(1)}: {json.dumps(value, ensure_ascii=False)}'


def _nested(source: str, text: str | None = None, limit: int = MAX_DEPTH + 1) -> Problem:
    """JSON too deep for the parser itself (about a thousand levels): said where the nesting passed the limit
    (by default a .json file's: its list holds its cases one level down)."""
    where = Location(source)
    if text is not None:
        at = deeper_than(text, limit)
        if at is not None:
            where = Location(source, *line_col(text, at))
    return Problem(f"nested too deeply (more than {MAX_DEPTH} levels)", where)


def _sharing_hook(strings: dict[Any, Any]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """``json.loads``' ``object_pairs_hook`` that makes each object as ``_shared`` would, while the file is
    parsed: a list of 100,000 cases is never held unshared at once (489 MB at its peak, against 280 MB for
    the same cases in ``.jsonl``). Keys written twice keep the last value in the first one's place, as ``dict``
    does; ``_shared`` walks each case afterwards all the same (its depth, its keys)."""
    share = strings.setdefault

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        leaf = True
        for k, v in pairs:
            t = type(v)
            if t is str:
                v = share(v, v)
            else:
                leaf = False
                if t is list:
                    for i, x in enumerate(v):
                        if type(x) is str:
                            v[i] = share(x, x)
            out[share(k, k)] = v
        return share((*out, *out.values()), out) if leaf else out  # type: ignore[no-any-return]
    return hook


def _json_documents(text: str, source: str, problems: list[Problem]) -> list[Document]:
    strings: dict[Any, Any] = {}  # shared across the file's cases as in a .jsonl file (_shared)
    try:
        data = json.loads(text, object_pairs_hook=_sharing_hook(strings))
    except json.JSONDecodeError as exc:
        problems.append(Problem(f"invalid JSON: {json_message(exc.msg)}", Location(source, *json_place(exc.msg, text, exc.pos)), json_hint(exc.msg, text, exc.pos, "file")))
        return []
    except RecursionError:
        problems.append(_nested(source, text))
        return []
    except ValueError:
        problems.append(_huge_number(text, source))
        return []
    if type(data) is dict:  # the wrapper's own keys: a second "cases" would drop the first list without a word
        problems += _repeated_keys(text, source, outermost=True)
    base, items = _listed(data, source, problems)  # a case nested too deeply is said at its place, as in .jsonl (build_cases)
    # each item's place from the end of the one before (a file on one line made this quadratic: 100,000 cases
    # took 115 s, each decoded twice and each column found by a search back to the file's start)
    docs, pos, line, line_start, end = [], 0, 1, 0, 0
    decode = json.JSONDecoder().raw_decode
    for i, raw in enumerate(items):
        if i == 0:
            start = json_offset(text, base + (0,))
        else:
            start = end
            while text[start] in " \t\r\n,":
                start += 1
        _, end = decode(text, start)
        newlines = text.count("\n", pos, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", pos, start) + 1
        col = start - line_start
        keys = [0]
        try:
            raw, shallow = _shared(raw, strings, 1, keys), True
            items[i] = None  # the parsed case, made again shared: freed as the walk goes, not held to its end
        except _Deep:  # build_cases says so, at its place
            shallow, keys[0] = False, entries(raw)
        docs.append(Document(raw, source, (), text[start:end], line - 1, col, shallow=shallow))
        if text.count(":", start, end) > keys[0]:
            problems += _repeated_keys(text[start:end], source, line - 1, col)
        pos = start
    return docs


def _twice_hint(key: str) -> str:
    if key in ("assert", "assertions"):
        return "remove one; several assertions go in one list"
    if key in CASE_LIST_KEYS:
        return "remove one; all the cases go in one list"
    return "remove one of them"


def _repeated_keys(text: str, source: str, lines_before: int = 0, col_offset: int = 0, outermost: bool = False) -> list[Problem]:
    """A key written twice in one object of a case's JSON ``text``: JSON keeps only the last, so a second
    ``"assert"`` would drop the first without a word. Every key is followed by a ':' outside any string, so
    callers read a text again only when it has more ':' than its parsed value has keys (``entries``).
    ``outermost``: only the keys of the outermost object (a .json file's wrapper; its cases are checked one by one)."""
    return [Problem(f"'{key}' is written twice in one object (JSON keeps only the last)",
                    Location(source, lines_before + line, col + (col_offset if line == 1 else 0)), _twice_hint(key))
            for key, line, col in json_repeated(text, outermost)]


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


def _yaml_repeated_keys(root: Any, source: str) -> list[Problem]:
    """A key written twice in one mapping (YAML keeps only the last, silently), at its second place."""
    return [Problem(f"'{key}' is written twice in one mapping (YAML keeps only the last)", Location(source, line, col), _twice_hint(key))
            for key, line, col in yaml_repeated(root)]


def _yaml_trouble(node: Any, source: str) -> Problem | None:
    """A YAML file whose aliases refer to themselves, expand past MAX_YAML_VALUES, or nest too deeply."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(node, 1, False)]
    while stack:
        current, depth, done = stack.pop()
        key = id(current)
        if done:
            on_path.discard(key)
            children = _yaml_children(current)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_YAML_VALUES:
                return Problem(f"YAML aliases expand to more than {MAX_YAML_VALUES:,} values", _mark(current, source))
            continue
        if key in on_path:
            return Problem("a YAML alias refers to a structure that contains it", _mark(current, source))
        if depth > MAX_DEPTH + 2:
            return Problem(f"nested too deeply (more than {MAX_DEPTH} levels)", _mark(current, source))
        if key in sizes:
            continue
        on_path.add(key)
        stack.append((current, depth, True))
        stack.extend((c, depth + 1, False) for c in _yaml_children(current) if isinstance(c, yaml.Node))
    return None


def _yaml_children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


_PLAIN_TYPES = {"tag:yaml.org,2002:bool": "a boolean", "tag:yaml.org,2002:int": "a number", "tag:yaml.org,2002:float": "a number"}


def _yaml_hint(doc: Document, path: Path, key: bool, message: str) -> tuple[Path, bool, str] | None:
    """For a value that must be text, what YAML made of text written plainly, and the value quoted: an unquoted
    ``yes``, ``off`` or ``1042`` read as a boolean or a number, or an item of ``[ ]`` that holds ": " read as a
    mapping (``[Note: hi]``). In a list, the place is the item's. Returns (path, key, hint), or None."""
    import yaml

    accepted = message.split(" not ")[0]
    wants_text = ("string" in accepted or "names" in accepted) and "number" not in accepted and "integer" not in accepted  # a number taken too: a duration or the like
    missing = message.startswith("missing required field")
    full = tuple(doc.base) + tuple(path)
    if key and missing and len(full) >= 3 and full[-3] == "input":  # input: [Note: hi] — a message {Note: hi}, no 'content'
        pair = yaml_node(doc.node, full[:-1])
        hint = _plain_hint(pair)
        if hint is None or not hint.startswith("inside"):
            return None
        k, v = pair.value[0]
        said = json.dumps(f"{k.value}: {v.value}", ensure_ascii=False)
        return path, key, f"YAML reads {k.value}: {v.value} inside [ ] as a mapping, not text: for one message, write input: {said}"
    node = yaml_node(doc.node, full)  # the value, also where the problem points at its key
    if isinstance(node, yaml.SequenceNode) and wants_text:
        for i, item in enumerate(node.value):
            if hint := _plain_hint(item):
                return (*path, i), False, hint
        return None
    hint = _plain_hint(node) if wants_text else None
    return (path, False, hint) if hint else None


def _plain_hint(node: Any) -> str | None:
    import yaml

    if isinstance(node, yaml.ScalarNode) and not node.style and node.tag in _PLAIN_TYPES:  # plain: None, or "" from libyaml
        return f"YAML reads an unquoted {node.value} as {_PLAIN_TYPES[node.tag]}: quote it, {json.dumps(node.value, ensure_ascii=False)}"
    if (isinstance(node, yaml.MappingNode) and node.flow_style and len(node.value) == 1
            and node.start_mark.index == node.value[0][0].start_mark.index):  # no '{': YAML's pair of an item of [ ]
        k, v = node.value[0]
        said = f"{k.value}: {v.value}" if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode) else None
        return ('inside [ ], an item that holds ": " is read as a mapping: quote it'
                + (f", {json.dumps(said, ensure_ascii=False)}" if said is not None else ""))
    return None


def _mark(node: Any, source: str) -> Location:
    return Location(source, node.start_mark.line + 1, node.start_mark.column + 1)


def _yaml_documents(text: str, source: str, problems: list[Problem]) -> list[Document]:
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)  # libyaml's parser (PyYAML's wheels have it): ~5× the pure-Python one
    try:
        try:
            node = yaml.compose(text, Loader=fast or yaml.SafeLoader)
        except yaml.YAMLError:
            if fast is None:
                raise
            fast = None  # what is wrong is said as the pure-Python parser says it (its messages and marks)
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return []
        trouble = _yaml_trouble(node, source)
        if trouble is not None:
            problems.append(trouble)
            return []
        problems += _yaml_repeated_keys(node, source)
        data = yaml.load(text, Loader=fast or yaml.SafeLoader)  # the same constructor and resolver either way
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(source, mark.line + 1, mark.column + 1) if mark else Location(source)
        said = getattr(exc, "problem", None) or str(exc)
        tab = "\\t" in repr(said)  # a tab in the text, or the parser's '\t' for it
        if said.startswith("but found another document"):  # a second '---' document (PyYAML's phrase goes on from its context)
            said, hint = "a second document starts here", "a case file is one YAML document: remove the '---' and write the cases as one list (each starts with '- id: …')"
        else:
            hint = _flow_colon_hint(said, text, mark) or _yaml_opened(exc) or (_tab_hint(text, mark) if tab else None) or _quote_hint(said, text, mark)
        problems.append(Problem(f"invalid YAML: {said}", loc, hint))
        return []
    except RecursionError:  # flow brackets ([[[…): the first past the limit counted in brackets (block levels are not)
        problems.append(_nested(source, text, MAX_DEPTH))
        return []
    except ValueError:
        problems.append(_huge_number(text, source))
        return []
    base, items = _listed(data, source, problems)
    return [Document(raw, source, base + (i,), node=node) for i, raw in enumerate(items)]


_DIGITS = re.compile(r"\d{%d,}" % (sys.get_int_max_str_digits() + 1))


def _huge_number(text: str, source: str, lines_before: int = 0) -> Problem:
    """The problem of a number too long to read (Python converts at most 4,300 digits), at its place."""
    found = _DIGITS.search(text)
    where = Location(source, lines_before + 1)
    if found is not None:
        line, col = line_col(text, found.start())
        where = Location(source, lines_before + line, col)
    digits = len(found.group()) if found else 0
    return Problem(f"a number of {digits:,} digits: numbers in case files are limited to {sys.get_int_max_str_digits():,} digits",
                   where, "write it as a string if you need all of its digits")


CASE_LIST_KEYS = ("cases", "test_cases")


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


def _listed(data: Any, source: str, problems: list[Problem]) -> tuple[Path, list[Any]]:
    try:
        return case_list(data)
    except ValueError as exc:
        problems.append(Problem(str(exc), Location(source, 1, 1)))
        return (), []


def _similar_file(path: str) -> str | None:
    """``did you mean 'tests/inputs.jsonl'?`` for a case file with a near name in the same folder."""
    folder = os.path.dirname(path)
    try:
        names = [n for n in os.listdir(folder or ".") if n.endswith(SUFFIXES)]
    except OSError:
        return None
    match = closest(os.path.basename(path), names)
    return f"did you mean '{os.path.join(folder, match)}'?" if match else None


# ---- building -----------------------------------------------------------------------------------


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
        seen = {f.path for f in found}
        found = at_item(misnamed(found + [f for f in extra if f.path not in seen], raw, policy.is_error("")), raw)
        for f in found:
            if not f.unknown or policy.is_error(f.typo):
                hint = f.hint if not (f.unknown and policy.strict and not f.typo) else "unknown keys are errors with --strict"
                path, key = f.path, f.key
                if doc.node is not None and not f.unknown:  # what YAML made of plain text says more than a general hint
                    path, key, hint = _yaml_hint(doc, path, key, f.message) or (path, key, hint)
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
    return cases


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
        turns = tuple(t if v is None else replace(t, messages=normalize(v["input"]), input=v["input"]) for t, v in zip(case.turns, combo))
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
        locator = _FILES.get(doc.source) or _FILES.setdefault(doc.source, _Lines(doc.source)) if len(_FILES) < 4096 else _Lines(doc.source)
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
        id=_interned(raw["id"]),  # its results' ids are rebuilt as this very object (runner/workers._LABELS)
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
        turns=tuple(
            ScriptedTurn(normalize(t.get("input")), t.get("input"),
                         tuple(spec(p, ("turns", i, *path)) for path, p in assertion_list(t, "assert") + assertion_list(t, "assertions")),
                         t.get("id", ""))
            for i, t in enumerate(raw.get("turns") or ())
        ),
        locator=locator,
    )


_TUPLE = object()  # marks the key of a tuple of specs in ``make_case``'s memo


def _interned(text: Any) -> Any:
    return sys.intern(text) if type(text) is str else text


def mock_of(raw: dict[str, Any]) -> Mock:
    """A validated ``mocks`` item → Mock."""
    delay = parse_duration(raw["delay"]) if "delay" in raw else 0.0
    return Mock(raw["tool"], raw.get("match"), raw.get("returns"), raw.get("error"), delay, raw.get("times"))


def fault_of(raw: dict[str, Any]) -> Fault:
    """A validated ``faults`` item → Fault."""
    return Fault(raw["tool"], raw["kind"], tuple(raw.get("at") or ()), raw.get("rate"), raw.get("message"))
