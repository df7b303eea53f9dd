"""Report formats by file extension (``.json``, ``.html``, … and plug-ins), in the plug-in registry."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agenttest.model import RunReport
from agenttest.plugins import REPORTS, builtins

Render = Callable[[RunReport], "str | Iterable[str]"]  # a whole text, or chunks (large reports stream)


def register(extension: str) -> Callable[[Render], Render]:
    """``@register(".csv")`` on a render function: ``-o x.csv`` writes what it returns."""
    return REPORTS.register(extension)


def renderer(extension: str) -> Render | None:
    builtins()
    return REPORTS.get(extension)


def registered() -> list[str]:
    builtins()
    return REPORTS.names()
