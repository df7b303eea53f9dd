"""CEL, the Common Expression Language, through cel-python (``celpy``): an expression is parsed once, checked
before the run (its syntax, the names it reads, the types that can be known without running it), and evaluated
over a case's context — ``world`` (the world as the agent left it), ``diff`` (what it changed: ``added``,
``removed`` and ``changed`` per collection) and ``journal`` (``entries``, ``tools``, ``final_response``) — with
the helpers ``calls``, ``count``, ``before``, ``last``, ``all_of`` and ``any_of`` (docs/formats-b.md)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agenttest.errors import did_you_mean

ROOTS = ("world", "diff", "journal")
HELPERS: dict[str, tuple[int, int | None]] = {"calls": (1, 1), "count": (1, 1), "before": (2, 2), "last": (1, 1),
                                              "all_of": (1, None), "any_of": (1, None)}
MACROS = ("exists", "all", "exists_one", "filter", "map")
JOURNAL_FIELDS = ("entries", "tools", "final_response")
DIFF_FIELDS = ("added", "removed", "changed")
# CEL's own functions and methods (celpy's standard library), which an expression may call besides the helpers
BUILTINS = ("size", "contains", "startsWith", "endsWith", "matches", "has", "dyn", "type", "int", "uint", "double", "string",
            "bytes", "bool", "duration", "timestamp", "list", "map", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
            "getFullYear", "getMonth", "getHours", "getMilliseconds", "getMinutes", "getSeconds")
_RESULT = {"calls": "list", "count": "int", "before": "bool", "last": "map", "all_of": "bool", "any_of": "bool", "size": "int",
           "contains": "bool", "startsWith": "bool", "endsWith": "bool", "matches": "bool", "has": "bool", "exists": "bool",
           "all": "bool", "exists_one": "bool", "filter": "list", "map": "list", "int": "int", "uint": "uint", "double": "double",
           "string": "string", "bool": "bool", "bytes": "bytes"}
_LITERALS = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string", "MLSTRING_LIT": "string",
             "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null"}
_NUMBERS = ("int", "uint", "double")
_COMPARED = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">="}
_ARITHMETIC = {"addition_add": "+", "addition_sub": "-", "multiplication_mul": "*", "multiplication_div": "/",
               "multiplication_mod": "%"}


@dataclass(frozen=True)
class CelProblem:
    """Why an expression cannot run: its syntax, or a name or type that is wrong. ``line`` and ``column`` are
    1-based inside the expression."""

    kind: Literal["syntax", "type"]
    message: str
    line: int = 1
    column: int = 1
    hint: str | None = None


class CelError(Exception):
    """An expression that could not be evaluated over this context (a missing key, an index past the end)."""


@dataclass(frozen=True)
class Shape:
    """What an expression may name: each pack's collections (None: any world) and the tools the journal can hold."""

    collections: dict[str, tuple[str, ...]] | None = None
    tools: tuple[str, ...] = ()


_lock = threading.Lock()
_env: Any = None
_trees: dict[str, Any] = {}


def _environment() -> Any:
    global _env
    with _lock:  # building the parser takes ~0.4 s, once per process
        if _env is None:
            import sys

            import celpy

            limit = sys.getrecursionlimit()
            _env = celpy.Environment()  # it raises the process's recursion limit to 2500: put back (it changes how
            sys.setrecursionlimit(limit)  # deep a case file may nest before the JSON parser gives up, and where)
    return _env


def parse(expr: str) -> Any:
    """The expression's syntax tree (kept per text); a syntax error raises ``SyntaxProblem``."""
    tree = _trees.get(expr)
    if tree is not None:
        return tree
    from celpy import CELParseError

    try:
        tree = _environment().compile(expr)
    except CELParseError as exc:
        raise SyntaxProblem(CelProblem("syntax", _syntax_message(exc, expr), exc.line or 1, exc.column or 1)) from None
    if len(_trees) < 4096:
        _trees[expr] = tree
    return tree


class SyntaxProblem(Exception):
    def __init__(self, problem: CelProblem):
        super().__init__(problem.message)
        self.problem = problem


def _syntax_message(exc: Exception, expr: str) -> str:
    if not expr.strip():
        return "empty CEL expression"
    near = (getattr(exc, "line", None), getattr(exc, "column", None))
    lines = expr.splitlines() or [""]
    line, col = near[0] or 1, near[1] or 1
    at = lines[line - 1][col - 1:col + 11] if line <= len(lines) else ""
    return f"CEL syntax error near {at!r}" if at.strip() else "CEL syntax error: the expression ends too early"


# ---- checking before the run ---------------------------------------------------------------------------


def check(expr: str, shape: Shape = Shape()) -> list[CelProblem]:
    """Every problem of an expression that can be known before it runs: syntax, names (roots, helpers, packs,
    collections, the journal's fields, tool names) and the types of what it combines; it must give a boolean."""
    try:
        tree = parse(expr)
    except SyntaxProblem as exc:
        return [exc.problem]
    checker = _Checker(shape)
    kind = checker.kind(tree, frozenset())
    checker.problems = list(dict.fromkeys(checker.problems))
    if kind is not None and kind != "bool" and not checker.problems:
        checker.problems.append(CelProblem("type", f"the expression gives {_a(kind)}, not a boolean", 1, 1,
                                           "an assertion or a condition must be true or false, e.g. journal.count(\"email.send\") >= 1"))
    return checker.problems


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _place(node: Any) -> tuple[int, int]:
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True) and getattr(meta, "line", None) is not None:
        return meta.line, meta.column  # (a bare literal's tree has a meta without a line: "true")
    line = getattr(node, "line", None)
    return (line, node.column) if line is not None else (1, 1)


class _Checker:
    """Walks a syntax tree: what each node gives, when that can be known, and the problems met on the way."""

    def __init__(self, shape: Shape):
        self.shape = shape
        self.problems: list[CelProblem] = []

    def problem(self, node: Any, message: str, hint: str | None = None) -> None:
        line, col = _place(node)
        self.problems.append(CelProblem("type", message, line, col, hint))

    def kind(self, node: Any, bound: frozenset[str]) -> str | None:  # one branch per rule of the grammar
        from lark import Token, Tree

        if isinstance(node, Token):
            return _LITERALS.get(node.type)
        assert isinstance(node, Tree)
        rule, kids = node.data, [k for k in node.children if k is not None]
        if rule in ("expr",) and len(kids) == 3:
            cond = self.kind(kids[0], bound)
            if cond not in (None, "bool"):
                self.problem(kids[0], f"the condition of ?: gives {_a(cond)}, not a boolean")
            a, b = self.kind(kids[1], bound), self.kind(kids[2], bound)
            return a if a == b else None
        if rule in ("conditionalor", "conditionaland") and len(kids) == 2:
            for kid in kids:
                got = self.kind(kid, bound)
                if got not in (None, "bool"):
                    self.problem(kid, f"'{'||' if rule == 'conditionalor' else '&&'}' needs booleans, not {_a(got)}")
            return "bool"
        if rule == "relation" and len(kids) == 2:
            return self._relation(kids[0], kids[1], bound)
        if rule in ("addition", "multiplication") and len(kids) == 2:
            return self._arithmetic(kids[0], kids[1], bound)
        if rule == "unary" and len(kids) == 2:
            got = self.kind(kids[1], bound)
            if kids[0].data == "unary_not":
                if got not in (None, "bool"):
                    self.problem(kids[1], f"'!' needs a boolean, not {_a(got)}")
                return "bool"
            if got not in (None, *_NUMBERS):
                self.problem(kids[1], f"'-' needs a number, not {_a(got)}")
            return got
        if rule == "literal":
            return self.kind(kids[0], bound)
        if rule == "list_lit":
            self._all(kids, bound)
            return "list"
        if rule == "map_lit":
            self._all(kids, bound)
            return "map"
        if rule == "paren_expr":
            return self.kind(kids[0], bound)
        if rule == "ident":
            name = str(kids[0])
            if name not in bound and name not in ROOTS:
                hint = did_you_mean(name, [*ROOTS, *bound]) or f"an expression reads {', '.join(ROOTS)}"
                self.problem(node, f"undeclared reference to '{name}'", hint)
            return None
        if rule == "ident_arg":
            return self._call(node, str(kids[0]), None, kids[1] if len(kids) > 1 else None, bound)
        if rule == "member_dot":
            return self._member(node, kids[0], str(kids[1]), bound)
        if rule == "member_dot_arg":
            return self._call(node, str(kids[1]), kids[0], kids[2] if len(kids) > 2 else None, bound)
        if rule == "member_index":
            self.kind(kids[1], bound)
            self.kind(kids[0], bound)
            return None
        if len(kids) == 1:
            return self.kind(kids[0], bound)
        self._all(kids, bound)
        return None

    def _all(self, kids: Sequence[Any], bound: frozenset[str]) -> None:
        from lark import Tree

        for kid in kids:
            if isinstance(kid, Tree) and kid.data in ("exprlist", "mapinits", "fieldinits"):
                self._all([k for k in kid.children if k is not None], bound)
            elif isinstance(kid, Tree):
                self.kind(kid, bound)

    def _relation(self, left_tree: Any, right: Any, bound: frozenset[str]) -> str:
        op_node = left_tree  # relation_xx → (relation, op)
        left = self.kind(op_node.children[0], bound)
        got = self.kind(right, bound)
        op = op_node.data
        if op in _COMPARED:
            if left is not None and got is not None and not _comparable(left, got):
                self.problem(right, f"'{_COMPARED[op]}' cannot compare {_a(left)} with {_a(got)}")
        elif op in ("relation_eq", "relation_ne"):
            if left is not None and got is not None and "null" not in (left, got) and not _comparable(left, got):
                word = "==" if op == "relation_eq" else "!="
                self.problem(right, f"'{word}' compares {_a(left)} with {_a(got)}: they are never equal")
        elif op == "relation_in" and got is not None and got not in ("list", "map"):
            self.problem(right, f"'in' needs a list or a map on its right, not {_a(got)}")
        return "bool"

    def _arithmetic(self, left_tree: Any, right: Any, bound: frozenset[str]) -> str | None:
        left = self.kind(left_tree.children[0], bound)
        got = self.kind(right, bound)
        op = _ARITHMETIC.get(left_tree.data, "?")
        if left is None or got is None:
            return None
        if op == "+" and left == got and left in ("string", "bytes", "list", *_NUMBERS):
            return left
        if left in _NUMBERS and got in _NUMBERS:
            return left if left == got else None
        self.problem(right, f"'{op}' cannot combine {_a(left)} with {_a(got)}")
        return None

    def _member(self, node: Any, target: Any, name: str, bound: frozenset[str]) -> str | None:
        path = _path(target)
        if path and path[0] in ROOTS and path[0] not in bound:
            self._names(node, (*path, name), _tokens(node))
            if path == ["journal"]:
                return {"final_response": "string", "entries": "list", "tools": "list"}.get(name)
            return None
        self.kind(target, bound)
        return None

    def _names(self, node: Any, path: tuple[str, ...], tokens: list[Any] | None = None) -> None:
        """world.PACK.COLLECTION, diff.PACK.COLLECTION.FIELD and journal.FIELD against what exists (each problem
        at the name at fault: ``tokens`` are the chain's names)."""
        def at(i: int) -> Any:
            return tokens[i] if tokens is not None and i < len(tokens) else node

        root, rest = path[0], path[1:]
        if root == "journal":
            if rest and rest[0] not in JOURNAL_FIELDS and rest[0] not in HELPERS:
                self.problem(at(1), f"the journal has no field '{rest[0]}'", did_you_mean(rest[0], JOURNAL_FIELDS)
                             or f"its fields: {', '.join(JOURNAL_FIELDS)}; its helpers: {', '.join(HELPERS)}")
            return
        collections = self.shape.collections
        if collections is None or not rest:
            return
        pack = rest[0]
        if pack not in collections:
            self.problem(at(1), f"{root} has no pack '{pack}'", did_you_mean(pack, collections)
                         or f"its packs: {', '.join(collections) or 'none'}")
            return
        if len(rest) > 1 and rest[1] not in collections[pack]:
            self.problem(at(2), f"pack '{pack}' has no collection '{rest[1]}'", did_you_mean(rest[1], collections[pack])
                         or f"its collections: {', '.join(collections[pack])}")
            return
        if root == "diff" and len(rest) > 2 and rest[2] not in DIFF_FIELDS:
            self.problem(at(3), f"a collection's diff has no field '{rest[2]}'", did_you_mean(rest[2], DIFF_FIELDS)
                         or f"its fields: {', '.join(DIFF_FIELDS)}")

    def _call(self, node: Any, name: str, target: Any, args: Any, bound: frozenset[str]) -> str | None:
        arguments = [k for k in args.children if k is not None] if args is not None else []
        if name in MACROS and target is not None:
            self.kind(target, bound)
            if len(arguments) != 2 or _path(arguments[0]) is None or len(_path(arguments[0]) or ()) != 1:
                self.problem(node, f"{name}() takes a variable and an expression: {name}(x, x.status == \"done\")")
                return _RESULT.get(name)
            variable = (_path(arguments[0]) or [""])[0]
            body = self.kind(arguments[1], bound | {variable})
            if name != "map" and body not in (None, "bool"):
                self.problem(arguments[1], f"the body of {name}() gives {_a(body)}, not a boolean")
            return _RESULT.get(name)
        if name in HELPERS:
            self._helper(node, name, target, arguments, bound)
            return _RESULT[name]
        if name not in BUILTINS:
            hint = did_you_mean(name, [*HELPERS, *MACROS, *BUILTINS]) or f"the helpers: {', '.join(HELPERS)}"
            named = [k for k in node.children if k is not None][1 if target is not None else 0]
            self.problem(named, f"unknown function '{name}'", hint)
        if target is not None:
            self.kind(target, bound)
        if name == "has":
            return "bool"
        for argument in arguments:
            self.kind(argument, bound)
        return _RESULT.get(name)

    def _helper(self, node: Any, name: str, target: Any, arguments: list[Any], bound: frozenset[str]) -> None:
        if target is not None and _path(target) != ["journal"]:
            self.problem(node, f"{name}() is a helper of the journal: journal.{name}(…) or {name}(…)")
        low, high = HELPERS[name]
        if len(arguments) < low or (high is not None and len(arguments) > high):
            wanted = f"{low}" if low == high else f"{low} or more"
            self.problem(node, f"{name}() takes {wanted} argument{'' if wanted == '1' else 's'}, not {len(arguments)}")
        for argument in arguments:
            got = self.kind(argument, bound)
            if name in ("calls", "count", "before", "last") and got not in (None, "string"):
                self.problem(argument, f"{name}() takes a tool's name, not {_a(got)}")
            literal = _string(argument)
            if literal is not None and name in ("calls", "count", "before", "last") and self.shape.tools and literal not in self.shape.tools:
                typo = did_you_mean(literal, self.shape.tools)
                if typo:
                    self.problem(argument, f"no tool '{literal}'", typo)


def _comparable(a: str, b: str) -> bool:
    return a == b or (a in _NUMBERS and b in _NUMBERS)


def _path(node: Any) -> list[str] | None:
    """``world.shop.orders`` as its names, for a chain of plain member accesses from an identifier; else None."""
    from lark import Tree

    names: list[str] = []
    while isinstance(node, Tree):
        kids = [k for k in node.children if k is not None]
        if node.data == "member_dot":
            names.insert(0, str(kids[1]))
            node = kids[0]
        elif node.data == "ident":
            return [str(kids[0]), *names]
        elif len(kids) == 1 and node.data in ("expr", "conditionalor", "conditionaland", "relation", "addition",
                                              "multiplication", "unary", "member", "primary"):
            node = kids[0]
        else:
            return None
    return None


def _tokens(node: Any) -> list[Any]:
    """The names of a member chain in order, as tokens (their places): ``world.shop.orders`` → 3 tokens."""
    from lark import Tree

    out: list[Any] = []
    while isinstance(node, Tree):
        kids = [k for k in node.children if k is not None]
        if node.data == "member_dot":
            out.insert(0, kids[1])
            node = kids[0]
        elif node.data == "ident":
            return [kids[0], *out]
        elif len(kids) == 1:
            node = kids[0]
        else:
            return out
    return out


def _string(node: Any) -> str | None:
    """A string literal's value, when ``node`` is only that."""
    from lark import Token, Tree

    while isinstance(node, Tree) and len([k for k in node.children if k is not None]) == 1:
        node = next(k for k in node.children if k is not None)
    if isinstance(node, Token) and node.type == "STRING_LIT":
        text = str(node)
        if text[:1] in "\"'" and text[-1:] == text[:1] and len(text) >= 2 and not text.startswith(("'''", '"""')):
            return text[1:-1]
    return None


def nodes(expr: str) -> Iterator[Any]:
    """Every node of an expression's tree (for lint)."""
    return parse(expr).iter_subtrees()  # type: ignore[no-any-return]


# ---- evaluating -------------------------------------------------------------------------------------


def evaluate(expr: str, context: dict[str, Any]) -> Any:
    """The expression's value over ``context`` (JSON values under ``world``, ``diff``, ``journal``), as Python;
    ``CelError`` when it cannot be evaluated."""
    import celpy
    from celpy import CELEvalError

    tree = parse(expr)
    activation = {name: celpy.json_to_cel(value) for name, value in context.items()}
    program = _environment().program(tree, functions=_helpers(context.get("journal") or {}))
    try:
        value = program.evaluate(activation)
    except CELEvalError as exc:
        raise CelError(_eval_message(exc)) from None
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, RecursionError) as exc:
        raise CelError(f"{type(exc).__name__}: {exc}") from None
    if isinstance(value, CELEvalError):
        raise CelError(_eval_message(value))
    return _python(value)


_OVERLOAD = re.compile(r"found no matching overload for Token\('RULE', '(\w+)'\) applied to '\((.*)\)'")
_OPERATORS = {"relation_eq": "==", "relation_ne": "!=", "relation_lt": "<", "relation_le": "<=", "relation_gt": ">",
              "relation_ge": ">=", "relation_in": "in", "addition_add": "+", "addition_sub": "-", "multiplication_mul": "*",
              "multiplication_div": "/", "multiplication_mod": "%", "unary_neg": "-", "unary_not": "!"}


def _eval_message(exc: Exception) -> str:
    """celpy's message in plain words: ``'==' compares an int with a string`` for its "no matching overload for
    Token('RULE', 'relation_eq') applied to (IntType, StringType)"."""
    text = (str(exc.args[0]) if exc.args else str(exc)).split(" (in activation", 1)[0]
    found = _OVERLOAD.search(text)
    if found is None:
        return text
    op = _OPERATORS.get(found.group(1), found.group(1))
    kinds = [_a(_celtype(name)) for name in re.findall(r"celtypes\.(\w+)Type", found.group(2))]
    if len(kinds) == 2 and op in ("==", "!="):
        return (f"'{op}' compares {kinds[0]} with {kinds[1]} (a value of one type never equals one of another: compare "
                f"like with like, e.g. 2 with 2 or \"2\" with \"2\")")
    if len(kinds) == 2:
        return f"'{op}' cannot {'compare' if op in ('<', '<=', '>', '>=', 'in') else 'combine'} {kinds[0]} with {kinds[1]}"
    return f"'{op}' cannot take {', '.join(kinds) or 'these values'}"


def _celtype(name: str) -> str:
    """celpy's ``IntType`` → ``int``."""
    return {"Int": "int", "Uint": "uint", "Double": "double", "String": "string", "Bool": "bool", "Bytes": "bytes",
            "List": "list", "Map": "map", "Null": "null", "Timestamp": "timestamp", "Duration": "duration"}.get(name, name.lower())


def _python(value: Any) -> Any:
    from celpy import celtypes

    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_python(v) for v in value]
    if isinstance(value, dict):
        return {str(_python(k)): _python(v) for k, v in value.items()}
    return value


def _helpers(journal: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The helpers over this journal, called as ``journal.calls("x")`` (the journal first) or ``calls("x")``."""
    import celpy
    from celpy import celtypes

    entries = journal.get("entries") or []

    def tools(args: tuple[Any, ...]) -> list[str]:
        if args and isinstance(args[0], celtypes.MapType):
            args = args[1:]
        return [str(a) for a in args]

    def calls(*args: Any) -> Any:
        name = tools(args)[0]
        return celpy.json_to_cel([e for e in entries if e.get("tool") == name])

    def count(*args: Any) -> Any:
        name = tools(args)[0]
        return celtypes.IntType(sum(1 for e in entries if e.get("tool") == name))

    def before(*args: Any) -> Any:
        first, then = tools(args)[:2]
        steps = [e.get("tool") for e in entries]
        return celtypes.BoolType(first in steps and then in steps and steps.index(first) < steps.index(then))

    def last(*args: Any) -> Any:
        name = tools(args)[0]
        found = [e for e in entries if e.get("tool") == name]
        return celpy.json_to_cel(found[-1]) if found else None

    def truths(args: tuple[Any, ...]) -> list[bool]:
        if args and isinstance(args[0], celtypes.MapType):
            args = args[1:]
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        return [bool(a) for a in args]

    def all_of(*args: Any) -> Any:
        return celtypes.BoolType(all(truths(args)))

    def any_of(*args: Any) -> Any:
        return celtypes.BoolType(any(truths(args)))

    return {"calls": calls, "count": count, "before": before, "last": last, "all_of": all_of, "any_of": any_of}
