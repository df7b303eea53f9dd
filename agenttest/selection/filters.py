"""Which cases run: ``--run REGEX`` on ids, ``-k EXPR`` (pytest's keyword expressions over id, name, tags
and file name: ``expense and not slow``), ``--lf`` (the cases that did not pass last time). Pure functions."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection

from agenttest.errors import AgentTestError
from agenttest.model import Case

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


def keyword_matcher(expr: str) -> Callable[[Case], bool]:
    """``-k EXPR``: words joined by ``and``/``or``/``not`` and parentheses; a word matches a case when it is
    a substring (ignoring case) of its id, its name, one of its tags or its file's name. Raises AgentTestError on bad syntax."""
    tokens = [t for t in _TOKEN.findall(expr) if t]
    pos = 0

    def fail(why: str) -> AgentTestError:
        return AgentTestError(f"-k {expr!r}: {why}", hint="e.g. -k 'expense and not slow' or -k '(smoke or quick) and not flaky'")

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def primary() -> Callable[[set[str]], bool]:
        token = peek()
        if token is None:
            raise fail("the expression ends too soon")
        if token == "not":
            take()
            inner = primary()
            return lambda words: not inner(words)
        if token == "(":
            take()
            inner = either()
            if peek() != ")":
                raise fail("a '(' is not closed")
            take()
            return inner
        if token in ("and", "or", ")"):
            raise fail(f"unexpected '{token}'")
        word = take().lower()
        return lambda words: any(word in w for w in words)

    def both() -> Callable[[set[str]], bool]:
        terms = [primary()]
        while peek() == "and":
            take()
            terms.append(primary())
        return lambda words: all(term(words) for term in terms)

    def either() -> Callable[[set[str]], bool]:
        terms = [both()]
        while peek() == "or":
            take()
            terms.append(both())
        return lambda words: any(term(words) for term in terms)

    if not tokens:
        raise fail("the expression is empty")
    test = either()
    if peek() is not None:
        raise fail(f"unexpected '{peek()}'")
    return lambda case: test(_words(case))


def _words(case: Case) -> set[str]:
    """What ``-k`` words match: the id, the name, the tags and, as pytest's module names, the case file's name."""
    name = os.path.basename(case.file) if case.file and not case.file.startswith("<") else ""
    return {w.lower() for w in (case.id, case.name, *case.tags, name) if w}


def select(cases: list[Case], run_filter: str | None = None, keyword: str | None = None,
           last_failed: Collection[tuple[str, str]] | None = None) -> tuple[list[Case], str]:
    """The selected cases, and a note when ``--lf`` had nothing to narrow (then every case runs, as pytest
    does). Selecting nothing at all is a usage error: a run that tests nothing must not pass."""
    chosen = cases
    if run_filter:
        rx = re.compile(run_filter)
        chosen = [c for c in chosen if rx.search(c.id)]
        if not chosen:
            raise AgentTestError(f"--run {run_filter!r} matches no case", hint=f"ids: {_ids(cases)}")
    if keyword:
        matches = keyword_matcher(keyword)
        narrowed = [c for c in chosen if matches(c)]
        if not narrowed:
            raise AgentTestError(f"-k {keyword!r} matches no case", hint=f"ids: {_ids(chosen)}")
        chosen = narrowed
    note = ""
    if last_failed is not None:
        failed = [c for c in chosen if (c.file, c.id) in last_failed]
        if failed:
            note = f"--lf: running the {len(failed)} of {len(chosen)} cases that did not pass last time"
            chosen = failed
        else:
            note = "--lf: no case failed last time; running them all"
    return chosen, note


def _ids(cases: list[Case]) -> str:
    return ", ".join(c.id for c in cases[:10]) + (" …" if len(cases) > 10 else "")
