"""Case files read: ``.jsonl``, ``.json`` and ``.yaml`` text parsed into ``Document``s, each problem at its
``file:line:column``, then built into Cases (``building``); every problem kept, to be reported together."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from agenttest import speed
from agenttest.speed import collector
from agenttest.errors import Location, Problem, closest
from agenttest.inputs import suites, yamlhints
from agenttest.inputs.building import build_cases
from agenttest.inputs.documents import (MAX_DEPTH, MAX_FILE_BYTES, SUFFIXES, Document, KeyPolicy, Loaded, beside_cases, case_list, twice_hint)
from agenttest.inputs.validation import Path
from agenttest.model import Case
from agenttest.util.positions import deeper_than, entries, json_hint, json_message, json_offset, json_place, json_repeated, line_col, yaml_mark
from agenttest.util import forked
from agenttest.util.text import cleaned, escapes_surrogates


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
    wrapper: list[Document] = []  # a .json or .yaml file's {"suite": {...}, "cases": [...]}: the suite's place
    if kind == ".jsonl":
        halves = _in_two(text, source, default_simulator, base_dir, policy)
        if halves is not None:
            return halves
        docs = list(_jsonl_documents(text, source, loaded.problems, keep_text=not os.path.isfile(source)))
        if loaded.problems and _over_lines(text):  # pretty-printed JSON (a list, or objects as jq prints them) named .jsonl
            docs = []
            loaded.problems[:] = [Problem("the file is JSON written over several lines (pretty-printed), not one case per line",
                                          Location(source, 1, 1), "write each case on a line of its own (jq -c prints them so), "
                                          "or name the file .json with the cases in a list ([{...}, {...}])")]
    elif kind in (".yaml", ".yml"):
        docs = _yaml_documents(text, source, loaded.problems, wrapper)
    elif kind == ".json":
        docs = _json_documents(text, source, loaded.problems, wrapper)
    else:
        loaded.problems.append(Problem(f"'{source}': unknown case file type '{kind}'", None, "use .jsonl, .json, .yaml or .yml"))
        return loaded
    if not docs and not loaded.problems:  # never a silent green: a file with no cases is not a passing suite
        loaded.problems.append(Problem(f"holds no test cases: {_emptiness(text, kind)}", Location(source),
                                       "add cases, or point -i at the file that has them"))
    if escapes_surrogates(text):  # "\\ud83d" alone (a cut emoji): made safe before anything holds it
        docs = [replace(d, raw=cleaned(d.raw)) for d in docs]
    loaded.cases = build_cases(docs, base_dir, default_simulator, loaded, policy)
    if wrapper:  # the file's suite: its checks run over these cases once the run ends (FORMATS §18)
        loaded.cases = suites.attach(wrapper[0], loaded)
    if len(loaded.problems) > 1:  # in the file's order (a line's own, cause first, as found): parsing's come before building's
        loaded.problems.sort(key=_line_of)
    return loaded


IN_TWO = 5_000  # lines: a larger .jsonl file is read in two parts at once (``_in_two``)
COPY_SHARE = 0.42  # of its text, read by the forked copy, which pickles its cases too (~a third more): both end together


def _in_two(text: str, source: str, default_simulator: str | None, base_dir: str, policy: KeyPolicy) -> Loaded | None:
    """A large .jsonl file read in two parts at once: its end by a forked copy of the command (on the other core,
    which loading left idle), its cases pickled back (~18 µs a case to unpickle, against ~70 to read one). None —
    read it whole — unless each part stands alone as it does in the whole file: no problem, no warning, one case a
    line (no variants), no id in both parts (nor alike once composed); a copy that fails or is too slow is killed."""
    if not (speed.installed() and forked.available()) or text.count("\n") < IN_TWO:
        return None
    cut = text.find("\n", int(len(text) * (1 - COPY_SHARE))) + 1
    if cut <= 0 or cut >= len(text):
        return None
    import pickle  # before the fork: the copy imports nothing

    first = text.count("\n", 0, cut)
    try:
        child = forked.Child(lambda _: pickle.dumps(_part(text, (cut, None), source, first, default_simulator, base_dir, policy), pickle.HIGHEST_PROTOCOL))
    except OSError:
        return None
    began = time.monotonic()
    try:
        head = _part(text, (0, cut), source, 0, default_simulator, base_dir, policy)
    except BaseException:
        child.stop()
        raise
    try:
        answer = child.answer(max(60.0, 10 * (time.monotonic() - began)))
        with collector.paused():  # a million objects and no cycle: the collector's passes over them were half the time
            tail = pickle.loads(answer)
    except (forked.Lost, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        return None
    return _joined(head, tail)


def _part(text: str, part: tuple[int, int | None], source: str, first: int, default_simulator: str | None, base_dir: str,
          policy: KeyPolicy) -> tuple[Loaded, int]:
    """The part of a .jsonl file's text from ``part[0]`` (its line ``first + 1``) to ``part[1]``, read as ``parse``
    reads the whole (the text is not copied): what it gave, and how many cases its lines hold."""
    loaded = Loaded()
    docs = list(_jsonl_documents(text, source, loaded.problems, keep_text=not os.path.isfile(source), first=first, part=part))
    if escapes_surrogates(text):
        docs = [replace(d, raw=cleaned(d.raw)) for d in docs]
    loaded.cases = build_cases(docs, base_dir, default_simulator, loaded, policy)
    return loaded, len(docs)


def _joined(head: tuple[Loaded, int], tail: tuple[Loaded, int]) -> Loaded | None:
    """The two parts as one, when what reading the whole would say across them cannot differ (``_in_two``)."""
    for loaded, lines in (head, tail):
        if loaded.problems or loaded.warnings or loaded.unbuilt or not lines or len(loaded.cases) != lines or any(c.variants for c in loaded.cases):
            return None
    ids = {_composed(c.id) for c in head[0].cases}
    if any(_composed(c.id) in ids for c in tail[0].cases):
        return None
    head[0].cases += tail[0].cases
    return head[0]


def _composed(case_id: str) -> str:
    return case_id if case_id.isascii() else unicodedata.normalize("NFC", case_id)


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


def parse_lines(text: str, source: str, first: int, default_simulator: str | None = None, policy: KeyPolicy = KeyPolicy()) -> Loaded:
    """Lines of a .jsonl file from its line ``first + 1`` on (a streamed run reads a large file so, a part at a time):
    its cases and problems at their places in the whole file. What spans parts (an id used twice, a file without
    cases) is the caller's to say (``inputs.streaming``)."""
    loaded = Loaded()
    docs = list(_jsonl_documents(text, source, loaded.problems, keep_text=not os.path.isfile(source), first=first))
    if escapes_surrogates(text):
        docs = [replace(d, raw=cleaned(d.raw)) for d in docs]
    loaded.cases = build_cases(docs, os.path.dirname(os.path.abspath(source)), default_simulator, loaded, policy)
    if len(loaded.problems) > 1:
        loaded.problems.sort(key=_line_of)
    return loaded


def _jsonl_documents(text: str, source: str, problems: list[Problem], keep_text: bool = True, first: int = 0,
                     part: tuple[int, int | None] = (0, None)) -> Iterator[Document]:
    strings: dict[Any, Any] = {}  # one copy of each key, string value and dict of text across the file's cases
    for number, line in enumerate(_lines(text, *part), start=first + 1):
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
        yield Document(raw=raw, source=source, base=(), text=line if kept else None, line_offset=number - 1, col_offset=shift, shallow=shallow)


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


def _lines(text: str, start: int = 0, end: int | None = None) -> Iterator[str]:
    """The lines of ``text`` (from ``start`` to ``end``), one at a time (a list of 100,000 lines would double the
    file in memory). Only ``\n`` ends a line: JSON strings may hold U+2028 and other characters ``splitlines`` splits at."""
    end = len(text) if end is None else end
    while start < end:
        stop = text.find("\n", start, end)
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


def _json_documents(text: str, source: str, problems: list[Problem], wrapper: list[Document] | None = None) -> list[Document]:
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
        if "suite" in data and wrapper is not None:
            wrapper.append(Document(raw=data, source=source, text=text))
    base, items = _listed(data, source, problems)  # a case nested too deeply is said at its place, as in .jsonl (build_cases)
    problems += beside_cases(data, base, source, lambda key: line_col(text, json_offset(text, (key,), key=True)))
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
        docs.append(Document(raw=raw, source=source, base=(), text=text[start:end], line_offset=line - 1, col_offset=col, shallow=shallow))
        if text.count(":", start, end) > keys[0]:
            problems += _repeated_keys(text[start:end], source, line - 1, col)
        pos = start
    return docs


def _repeated_keys(text: str, source: str, lines_before: int = 0, col_offset: int = 0, outermost: bool = False) -> list[Problem]:
    """A key written twice in one object of a case's JSON ``text``: JSON keeps only the last, so a second
    ``"assert"`` would drop the first without a word. Every key is followed by a ':' outside any string, so
    callers read a text again only when it has more ':' than its parsed value has keys (``entries``).
    ``outermost``: only the keys of the outermost object (a .json file's wrapper; its cases are checked one by one)."""
    return [Problem(f"'{key}' is written twice in one object (JSON keeps only the last)",
                    Location(source, lines_before + line, col + (col_offset if line == 1 else 0)), twice_hint(key))
            for key, line, col in json_repeated(text, outermost)]


def _yaml_documents(text: str, source: str, problems: list[Problem], wrapper: list[Document] | None = None) -> list[Document]:
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
        trouble = yamlhints.yaml_trouble(node, source)
        if trouble is not None:
            problems.append(trouble)
            return []
        problems += yamlhints.yaml_repeated_keys(node, source)
        data = yaml.load(text, Loader=fast or yaml.SafeLoader)  # the same constructor and resolver either way
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = Location(source, mark.line + 1, mark.column + 1) if mark else Location(source)
        said = getattr(exc, "problem", None) or str(exc)
        hint: str | None
        if said.startswith("but found another document"):  # a second '---' document (PyYAML's phrase goes on from its context)
            said, hint = "a second document starts here", "a case file is one YAML document: remove the '---' and write the cases as one list (each starts with '- id: …')"
        else:
            hint = yamlhints.syntax_hint(exc, said, text, mark)
        problems.append(Problem(f"invalid YAML: {said}", loc, hint))
        return []
    except RecursionError:  # flow brackets ([[[…): the first past the limit counted in brackets (block levels are not)
        problems.append(_nested(source, text, MAX_DEPTH))
        return []
    except ValueError:
        problems.append(_huge_number(text, source))
        return []
    base, items = _listed(data, source, problems)
    problems += beside_cases(data, base, source, lambda key: yaml_mark(node, (key,), key=True))
    if isinstance(data, dict) and "suite" in data and wrapper is not None:
        wrapper.append(Document(raw=data, source=source, node=node))
    return [Document(raw=raw, source=source, base=base + (i,), node=node) for i, raw in enumerate(items)]


_DIGITS = re.compile(rf"\d{{{sys.get_int_max_str_digits() + 1},}}")


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
    stems = {os.path.splitext(n)[0]: n for n in names}  # by the stem: a shared '.jsonl' made any two names close
    match = closest(os.path.splitext(os.path.basename(path))[0], stems)
    return f"did you mean '{os.path.join(folder, stems[match])}'?" if match else None
