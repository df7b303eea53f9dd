"""Report formats by file extension (``.json``, ``.html``, … and plug-ins), in the one plug-in registry: each
format says how a run's report is written (``-o``) and, when it can, how a comparison of two runs is
(``agent-test diff -o``). The CLI's help, ``-o`` and ``diff -o`` all read it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agenttest.plugins import BUILTINS, REPORTS, builtins, index

if TYPE_CHECKING:
    from agenttest.model import RunReport

Render = Callable[["RunReport"], "str | Iterable[str]"]  # a whole text, or chunks (large reports stream)
Compare = Callable[..., str]  # (Comparison, base RunReport | None, new RunReport | None) → the comparison's text


@dataclass(frozen=True)
class ReportFormat:
    """What one extension writes: a run's report, and a comparison of two runs (either may be missing)."""

    report: Render | None = None
    comparison: Compare | None = None


def _add(extension: str, **facet: Any) -> None:
    REPORTS.add(extension, replace(REPORTS.mapping.get(extension) or ReportFormat(), **facet))


def register(extension: str) -> Callable[[Render], Render]:
    """``@register(".csv")`` on a render function: ``-o x.csv`` writes what it returns."""
    def add(render: Render) -> Render:
        _add(extension, report=render)
        return render
    return add


def register_comparison(extension: str) -> Callable[[Compare], Compare]:
    """``@register_comparison(".md")`` on a function of a comparison: ``agent-test diff -o x.md`` writes what it returns."""
    def add(compare: Compare) -> Compare:
        _add(extension, comparison=compare)
        _compared.setdefault(extension)
        return compare
    return add


_compared: dict[str, None] = {}  # the extensions given a comparison, in the order they were


def renderer(extension: str) -> Render | None:
    builtins()
    found = REPORTS.get(extension)
    return found.report if found is not None else None


def comparer(extension: str) -> Compare | None:
    found = REPORTS.get(extension)
    return found.comparison if found is not None else None


def report_formats() -> list[str]:
    """The extensions ``-o`` writes, built-ins first: known by name, none of their modules imported."""
    index()
    known = dict.fromkeys([*(name for builtin in BUILTINS for name in builtin.reports), *REPORTS.known()])
    return [name for name in known if REPORTS.pending(name) or (name in REPORTS.mapping and REPORTS.mapping[name].report is not None)]


def comparison_formats() -> list[str]:
    """The extensions ``diff -o`` writes (those registered so far: ``history.diffs`` registers the built-ins)."""
    return [name for name in _compared if comparer(name) is not None]
