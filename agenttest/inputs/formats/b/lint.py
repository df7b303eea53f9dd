"""``agent-test lint``: fragile patterns in B files, in B's spirit (prefer ``diff.*`` and ``exists()`` to positions):

- W001 positional indexing into the world, a diff or the journal (``world.shop.orders[0]``): positions shift
  as the world or the journal grows; ``exists()`` or ``diff.*`` say what is meant.
- W002 CEL that can never be true: a constant false, one path equal to two different values, a count or size
  below zero, a helper reading a tool no enabled pack offers.
- W003 an assertion that reads nothing the run can change: only collections no tool and no world event writes,
  and neither ``diff`` nor the journal — its verdict is known before the run.
- W004 an exact comparison of the agent's final text (``journal.final_response == "…"``): any rewording fails it.
- W005 an assertion that is always true (``expr: "true"``, ``1 == 1``): it passes whatever the agent did.

Each finding has its code, place (line:column in the file) and a hint. ``--strict`` runs lint before a run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agenttest.errors import InputError, Location, Problem
from agenttest.inputs.formats.b import build as builder
from agenttest.inputs.formats.b.packs import WRITES
from agenttest.inputs.formats.b.shape import not_a_scenario
from agenttest.runtime import cel


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    location: Location
    hint: str

    def __str__(self) -> str:
        return f"{self.location}: {self.code}: {self.message}; {self.hint}"

    def json(self) -> str:
        where = self.location
        return json.dumps({"code": self.code, "message": self.message, "hint": self.hint, "file": where.file, "line": where.line,
                           "column": where.column}, ensure_ascii=False)


def lint_files(paths: list[str]) -> list[Finding]:
    """Every finding of every file; a file that does not load is exit 2 with its problems."""
    findings: list[Finding] = []
    problems: list[Problem] = []
    for path in paths:
        if (why := not_a_scenario(path)) is not None:
            problems.append(Problem(why, Location(path), "agent-test lint checks B scenario files (docs/formats-b.md); "
                                    "run a case file with agent-test -i FILE"))
            continue
        built = builder.build(path)
        if built.case is None:
            problems += built.problems
            continue
        findings += lint(built)
    if problems:
        raise InputError(problems)
    return findings


def as_problems(findings: list[Finding]) -> list[Problem]:
    return [Problem(f.message + " (lint, --strict)", f.location, f.hint, f.code) for f in findings]


def lint(built: builder.Built) -> list[Finding]:
    """The findings of a loaded B file."""
    doc, case = built.document, built.case
    assert doc is not None and case is not None
    written = _written(built)
    out: list[Finding] = []
    expressions: list[tuple[tuple[Any, ...], str, bool]] = []
    for i, item in enumerate(doc.data.get("turns") or []):
        if isinstance(item, dict) and isinstance(item.get("when"), str):
            expressions.append((("turns", i, "when"), item["when"], False))
    for i, item in enumerate(doc.data.get("assertions") or []):
        if isinstance(item, dict) and isinstance(item.get("expr"), str):
            expressions.append((("assertions", i, "expr"), item["expr"], True))
    tools = {t.name for t in case.scenario.tools} if case.scenario is not None else set()
    for path, expr, is_assertion in expressions:
        out += _expression(doc, path, expr, is_assertion, written, tools)
    return sorted(out, key=lambda f: (f.location.line or 0, f.location.column or 0, f.code))


def _written(built: builder.Built) -> set[str]:
    """``pack.collection`` of every collection a tool or a world event may change."""
    out: set[str] = set()
    for name, pack in built.packs.items():
        out |= {f"{name}.{c}" for c in pack.writes()}
        out |= {f"{name}.{e.collection}" for e in pack.events if e.op in WRITES}
    return out


def _expression(doc: Any, path: tuple[Any, ...], expr: str, is_assertion: bool, written: set[str], tools: set[str]) -> list[Finding]:
    tree = cel.parse(expr)
    found: list[Finding] = []

    def add(code: str, node: Any, message: str, hint: str) -> None:
        line, col = _place(node)
        found.append(Finding(code, message, doc.cel_place(path, expr, line, col), hint))

    reads: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data == "member_index":
            target = cel._path(node.children[0])
            if target and target[0] in cel.ROOTS and _int_literal(node.children[1]):
                shown = ".".join(target)
                add("W001", node, f"positional index into {shown}", f"positions shift as the world and the journal grow: say what is meant "
                    f"with {shown}.exists(x, …), or diff.* for what the agent changed")
            elif _helper_call(node.children[0]) and _int_literal(node.children[1]):
                add("W001", node, "positional index into the journal", "use .exists(c, …) or last(\"tool\") instead of a position")
        if node.data == "member_dot":
            target = cel._path(node)
            if target and target[0] in cel.ROOTS:
                reads.add(".".join(target[:3]) if target[0] == "world" else target[0])
        if node.data == "ident" and str(node.children[0]) in ("diff", "journal"):
            reads.add(str(node.children[0]))
        if node.data in ("member_dot_arg", "ident_arg"):
            _unknown_tool(node, tools, add)
        if node.data == "relation" and len([k for k in node.children if k is not None]) == 2:
            _never(node, add)
            _final_text(node, add)
    _contradiction(tree, add)
    if not _has_ident(tree):
        value = _constant(expr)
        if value is False:
            add("W002", tree, "this expression is always false", "it reads nothing of the run; check what it was meant to say")
        elif value is True and is_assertion:
            add("W005", tree, "this assertion is always true", "it reads nothing of the run and passes whatever the agent did; "
                "check what it was meant to say")
    reads = {r for r in reads if not any(o != r and o.startswith(r + ".") for o in reads)}  # the longest paths read
    if is_assertion and reads and all(r.startswith("world.") for r in reads):
        collections = {".".join(r.split(".")[1:3]) for r in reads}
        if collections and not any(c in written or any(w.startswith(c + ".") or c == w.split(".")[0] for w in written) for c in collections):
            add("W003", tree, f"reads only {', '.join(sorted(collections))}, which no tool and no world event of this scenario changes",
                "its verdict is known before the run: check what the agent did (diff.*, journal.*) or a collection its tools write")
    return found


def _place(node: Any) -> tuple[int, int]:
    return cel._place(node)


def _int_literal(node: Any) -> bool:
    from lark import Token

    leaves = list(node.scan_values(lambda v: isinstance(v, Token))) if hasattr(node, "scan_values") else [node]
    return len(leaves) == 1 and getattr(leaves[0], "type", "") in ("INT_LIT", "UINT_LIT")


def _helper_call(node: Any) -> bool:
    from lark import Tree

    while isinstance(node, Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]
    return isinstance(node, Tree) and node.data in ("member_dot_arg", "ident_arg") and \
        str(node.children[1 if node.data == "member_dot_arg" else 0]) in ("calls", "filter")


def _has_ident(tree: Any) -> bool:
    return any(n.data in ("ident", "ident_arg", "dot_ident", "dot_ident_arg") for n in tree.iter_subtrees())


def _constant(expr: str) -> Any:
    try:
        return cel.evaluate(expr, {})
    except cel.CelError:
        return None


def _unknown_tool(node: Any, tools: set[str], add: Any) -> None:
    kids = [k for k in node.children if k is not None]
    name = str(kids[1] if node.data == "member_dot_arg" else kids[0])
    if name not in ("calls", "count", "before", "last") or not tools:
        return
    args = kids[-1] if kids and getattr(kids[-1], "data", "") == "exprlist" else None
    for argument in (args.children if args is not None else []):
        literal = cel._string(argument)
        if literal is not None and literal not in tools:
            add("W002", argument, f"{name}(\"{literal}\") reads a tool no enabled pack offers",
                "the journal never holds it unless the agent has its own tool of that name: check the name (tools are pack.tool)")


def _never(node: Any, add: Any) -> None:
    """``size(x) < 0``, ``count("t") < 0``, ``… == -1``: a count is never negative."""
    op = node.children[0]
    right = node.children[1]
    left = op.children[0]
    number = _number(right)
    if number is None or not _counts(left):
        return
    if (op.data == "relation_lt" and number <= 0) or (op.data == "relation_le" and number < 0) or (op.data == "relation_eq" and number < 0):
        add("W002", node, "a count or size compared with a number it can never reach", "counts and sizes are 0 or more")


def _counts(node: Any) -> bool:
    from lark import Tree

    for sub in node.iter_subtrees() if isinstance(node, Tree) else ():
        if sub.data in ("member_dot_arg", "ident_arg"):
            kids = [k for k in sub.children if k is not None]
            name = str(kids[1] if sub.data == "member_dot_arg" else kids[0])
            return name in ("size", "count")
    return False


def _number(node: Any) -> float | None:
    try:
        value = cel.evaluate(_text(node), {}) if not _has_ident(node) else None
    except (cel.CelError, cel.SyntaxProblem):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(node: Any) -> str:
    from lark import Token

    parts = []
    for token in node.scan_values(lambda v: isinstance(v, Token)):
        parts.append(str(token))
    text = " ".join(parts)
    if getattr(node, "data", "") == "unary" and node.children and getattr(node.children[0], "data", "") == "unary_neg":
        text = "-" + text
    return text


def _final_text(node: Any, add: Any) -> None:
    op = node.children[0]
    if op.data not in ("relation_eq", "relation_ne"):
        return
    for side in (op.children[0], node.children[1]):
        if cel._path(side) == ["journal", "final_response"]:
            add("W004", node, "an exact comparison of the agent's final text", "any rewording fails it: use .contains(\"…\") or "
                ".matches(\"…\"), or check the world and the journal instead")
            return


def _contradiction(tree: Any, add: Any) -> None:
    """``a == 1 && a == 2`` in one conjunction: never true."""
    for node in tree.iter_subtrees():
        if node.data != "conditionaland" or len([k for k in node.children if k is not None]) != 2:
            continue
        seen: dict[str, str] = {}
        for leaf in _conjuncts(node):
            pair = _equality(leaf)
            if pair is None:
                continue
            path, value = pair
            if path in seen and seen[path] != value:
                add("W002", leaf, f"{path} cannot equal both {seen[path]} and {value}", "one of the two comparisons is a mistake")
                return
            seen[path] = value


def _conjuncts(node: Any) -> list[Any]:
    kids = [k for k in node.children if k is not None]
    if node.data == "conditionaland" and len(kids) == 2:
        return _conjuncts(kids[0]) + [kids[1]]
    return [node]


def _equality(node: Any) -> tuple[str, str] | None:
    from lark import Tree

    while isinstance(node, Tree) and node.data != "relation" and len([k for k in node.children if k is not None]) == 1:
        node = next(k for k in node.children if k is not None)
    if not isinstance(node, Tree) or node.data != "relation" or len(node.children) != 2 or node.children[0].data != "relation_eq":
        return None
    path = cel._path(node.children[0].children[0])
    if path is None or _has_ident(node.children[1]):
        return None
    return ".".join(path), _text(node.children[1])
