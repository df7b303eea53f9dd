"""Find where a value sits in JSON or YAML source, so errors can name ``line:column``, and say what is
wrong where JSON stops parsing. Parsing itself uses the fast ``json``/``yaml`` modules; these walkers
run only when there is an error."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

_decoder = json.JSONDecoder()
_WS = " \t\r\n"


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def json_offset(text: str, path: Sequence[Any], key: bool = False, start: int = 0) -> int:
    """Offset of the value at ``path`` in ``text`` (of its key when ``key``); the deepest reachable part."""
    i = _skip_ws(text, start)
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        if i >= len(text):
            return i
        ch = text[i]
        if ch == "{" and isinstance(part, str):
            found = _find_key(text, i, part)
            if found is None:
                return i
            key_at, value_at = found
            if last and key:
                return key_at
            i = value_at
        elif ch == "[" and isinstance(part, int):
            found_at = _find_index(text, i, part)
            if found_at is None:
                return i
            i = found_at
        else:
            return i
    return i


def _after_value(text: str, i: int) -> int | None:
    """Offset of what follows the JSON value at ``i`` and its comma, or None if it does not parse."""
    try:
        _, i = _decoder.raw_decode(text, i)
    except ValueError:
        return None
    i = _skip_ws(text, i)
    if i < len(text) and text[i] == ",":
        i = _skip_ws(text, i + 1)
    return i


def _find_key(text: str, i: int, wanted: str) -> tuple[int, int] | None:
    """Where the key ``wanted`` and its value start in the object at ``i``: its last copy, the one JSON keeps
    (a problem of a key written twice is about the value that was read)."""
    i = _skip_ws(text, i + 1)
    found: tuple[int, int] | None = None
    while i < len(text) and text[i] != "}":
        key_at = i
        try:
            name, i = _decoder.raw_decode(text, i)
        except ValueError:
            return found
        i = _skip_ws(text, i)
        if i >= len(text) or text[i] != ":":
            return found
        i = _skip_ws(text, i + 1)
        if name == wanted:
            found = key_at, i
        after = _after_value(text, i)
        if after is None:
            return found
        i = after
    return found


def _find_index(text: str, i: int, wanted: int) -> int | None:
    i = _skip_ws(text, i + 1)
    index = 0
    while i < len(text) and text[i] != "]":
        if index == wanted:
            return i
        found = _after_value(text, i)
        if found is None:
            return None
        i, index = found, index + 1
    return None


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of an offset."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def yaml_repeated(root: Any) -> list[tuple[str, int, int]]:
    """Each key written twice in one mapping of a composed YAML tree (YAML keeps only the last, silently):
    the key and the 1-based line and column of its second place. Merge keys (``<<``) may repeat."""
    import yaml

    out, seen, todo = [], set(), [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value != "<<":
                    if key.value in keys:
                        out.append((key.value, key.start_mark.line + 1, key.start_mark.column + 1))
                    keys.add(key.value)
                todo += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return sorted(out, key=lambda k: (k[1], k[2]))


def entries(value: Any) -> int:
    """How many key–value pairs the dicts of a parsed JSON value hold (visited level by level). Each is one
    ':' of its text outside any string: a text with no more ':' than this holds no key twice."""
    count, level = 0, [value]
    while level:
        below: list[Any] = []
        for item in level:
            if type(item) is dict:
                count += len(item)
                below += [v for v in item.values() if type(v) is dict or type(v) is list]
            elif type(item) is list:
                below += [v for v in item if type(v) is dict or type(v) is list]
        level = below
    return count


def json_repeated(text: str, outermost: bool = False) -> list[tuple[str, int, int]]:
    """Each key written twice in one object of JSON ``text`` (JSON keeps only the last, silently): the key and
    the 1-based line and column of its second ``"key":`` in the text (the text's start, when written escaped).
    ``outermost``: only the outermost object's keys."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        made = dict(items)
        if outermost:
            repeated.clear()  # the outermost object is the last one read
        if len(made) < len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
        return made

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return []
    return [(key, *line_col(text, second_key(text, key))) for key in dict.fromkeys(repeated)]


_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')  # a JSON string followed by ':' is a key


def second_key(text: str, key: str) -> int:
    """The offset of the second place ``key`` is written as a key in JSON ``text`` — however it is escaped
    (``"\\u0061ssert"`` is ``"assert"``) — else 0."""
    seen = 0
    for found in _KEY.finditer(text):
        written = found.group(1)
        if written != key and ("\\" not in written or _decoded(written) != key):
            continue
        seen += 1
        if seen == 2:
            return found.start()
    return 0


def _decoded(written: str) -> str | None:
    try:
        value = json.loads('"' + written + '"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def yaml_node(node: Any, path: Sequence[Any], key: bool = False) -> Any:
    """The node at ``path`` in a composed YAML tree (the deepest reachable; its key with ``key``)."""
    import yaml

    current = node
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        if isinstance(current, yaml.MappingNode):
            kept = [(k, v) for k, v in current.value if k.value == part]
            if not kept:
                break
            k, v = kept[-1]  # a key written twice: the copy YAML keeps, the last
            current = k if (last and key) else v
        elif isinstance(current, yaml.SequenceNode) and isinstance(part, int) and part < len(current.value):
            current = current.value[part]
        else:
            break
    return current


def yaml_mark(node: Any, path: Sequence[Any], key: bool = False) -> tuple[int, int]:
    """1-based line and column of the node at ``path`` in a composed YAML tree (the deepest reachable)."""
    current = yaml_node(node, path, key)
    return current.start_mark.line + 1, current.start_mark.column + 1


_CLOSER = {"{": "}", "[": "]"}
_KIND = {"{": "object", "[": "list"}


def json_place(msg: str, text: str, pos: int) -> tuple[int, int]:
    """Line and column (from 1) to point at for ``json``'s error ``msg`` at offset ``pos``: there, except for a
    trailing comma (``[1, 2,]``, ``{"a": 1,}``), where the comma itself is what to remove."""
    if msg.startswith("Expecting") and text[pos: pos + 1] in ("]", "}"):
        before = len(text[:pos].rstrip()) - 1
        if before >= 0 and text[before] == ",":
            pos = before
    return line_col(text, pos)


_SAID = {  # json's messages that end in " at" (its position follows in str(exc), not in exc.msg), said whole
    "Invalid control character at": "a control character (a tab, a line break) inside a string",
    "Unterminated string starting at": "a string is never closed",
    "Unexpected UTF-8 BOM (decode using utf-8-sig)": "a byte order mark (U+FEFF) where the JSON starts",
}


def json_message(msg: str) -> str:
    """``json``'s error ``msg`` as a sentence of its own."""
    return _SAID.get(msg, msg.removesuffix(" at"))


def json_hint(msg: str, text: str, pos: int, unit: str = "line") -> str | None:
    """A remedy for ``json``'s error ``msg`` at offset ``pos`` of ``text`` (a .jsonl ``line`` or a ``file``),
    judged from what is really there: the character at ``pos``, the last one before it, the open brackets."""
    if msg.startswith("Invalid control character"):
        return "write a tab as \\t and a line break as \\n inside JSON strings"
    if "BOM" in msg:
        return "remove the U+FEFF character (files joined together keep each file's mark)"
    if msg.startswith("Invalid \\escape"):
        return "a backslash starts an escape in JSON strings: write \\\\ for a backslash itself (C:\\\\dir), \\n for a line break"
    if msg.startswith("Invalid \\uXXXX escape"):
        return "\\u takes four hexadecimal digits (\\u00e9); write \\\\u for a backslash and a u"
    if "'" in text[max(0, pos - 1): pos + 1]:
        return "JSON strings and keys use double quotes"
    if msg.startswith("Unterminated string"):
        return "close the string with a double quote"
    if msg.startswith("Extra data"):
        if unit == "file":  # a .json file: one value, its cases in a list
            return "text after the file's JSON value: a .json case file holds one object, or one list of cases"
        return "one JSON object per line in .jsonl files"
    if not msg.startswith("Expecting"):
        return None
    opened = _open_brackets(text, pos)
    here, before = text[pos: pos + 1], text[:pos].rstrip()[-1:]
    if not text[pos:].strip():
        if not opened:
            return None
        kind = _KIND[opened[-1]]
        if before == ",":
            return f"the {unit} ends after a comma: it is cut off, or the {kind} is not closed"
        return f"the {unit} ends before the {kind} is closed"
    if opened and here in "]}" and here != _CLOSER[opened[-1]]:
        return f"the {_KIND[opened[-1]]} opened with '{opened[-1]}' is closed with '{here}'"
    if msg.startswith("Expecting ','"):
        return "a ',' is missing between items, or a string is not closed"
    if msg.startswith("Expecting ':'"):
        return "a ':' is missing after the key"
    if before == "," and here in "]}":
        return "remove the trailing comma"
    if before == "," and here == ",":
        return "remove the extra comma"
    if msg.startswith("Expecting property name"):
        return "keys are strings in double quotes" if here.isalnum() or here == "_" else "a key in double quotes is missing here"
    if here in ",]}":
        return "a value is missing here"
    return "values are strings in double quotes, numbers, true, false or null"


def _brackets(text: str) -> Iterator[tuple[int, str]]:
    """The offset and character of each bracket of JSON ``text`` outside its strings."""
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            in_string, escaped = (True, False) if escaped else (ch != '"', ch == "\\")
        elif ch == '"':
            in_string = True
        elif ch in "[]{}":
            yield i, ch


def _open_brackets(text: str, pos: int) -> str:
    """The brackets still open at offset ``pos`` of JSON ``text``, outermost first (strings skipped)."""
    opened: list[str] = []
    for _, ch in _brackets(text[:pos]):
        if ch in "[{":
            opened.append(ch)
        elif opened:
            opened.pop()
    return "".join(opened)


def deeper_than(text: str, limit: int) -> int | None:
    """The offset of the first bracket of JSON ``text`` that opens past ``limit`` levels (strings skipped):
    where JSON too deep for the parser itself passed the limit."""
    depth = 0
    for i, ch in _brackets(text):
        depth += 1 if ch in "[{" else -1
        if depth > limit:
            return i
    return None
