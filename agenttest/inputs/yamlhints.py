"""What to say of a YAML case file that does not read as meant: where an unclosed bracket began, a value that
must be quoted, a tab, plain text YAML took for a boolean or a number, aliases that expand without end."""

from __future__ import annotations

import json
import re
from typing import Any

from agenttest.errors import Location, Problem
from agenttest.inputs.documents import MAX_DEPTH, MAX_YAML_VALUES, Document, twice_hint
from agenttest.inputs.validation import Path
from agenttest.util.positions import yaml_node, yaml_repeated


def syntax_hint(exc: Exception, said: str, text: str, mark: Any) -> str | None:
    """The hint for YAML the parser refused (``said`` at ``mark``): a value to quote, where an unclosed bracket
    or quote began, a tab."""
    tab = "\\t" in repr(said)  # a tab in the text, or the parser's '\t' for it
    return _flow_colon_hint(said, text, mark) or _yaml_opened(exc) or (_tab_hint(text, mark) if tab else None) or _quote_hint(said, text, mark)


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
    if found is None or not value or value[0] in "\"'[{|>&*!" or " #" in value or len(value) > 200:  # not a plain value to quote whole here
        return 'a value that holds ": " must be quoted'
    return f'a value that holds ": " must be quoted: {found.group(1)}: {json.dumps(value, ensure_ascii=False)}'


def yaml_repeated_keys(root: Any, source: str) -> list[Problem]:
    """A key written twice in one mapping (YAML keeps only the last, silently), at its second place."""
    return [Problem(f"'{key}' is written twice in one mapping (YAML keeps only the last)", Location(source, line, col), twice_hint(key))
            for key, line, col in yaml_repeated(root)]


def yaml_trouble(node: Any, source: str) -> Problem | None:
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


def yaml_hint(doc: Document, path: Path, key: bool, message: str) -> tuple[Path, bool, str] | None:
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
