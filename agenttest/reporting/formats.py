"""The registry of report formats, by file extension (``.json``, ``.html``, … and plug-ins)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agenttest.model import RunReport

Render = Callable[[RunReport], "str | Iterable[str]"]  # a whole text, or chunks (large reports stream)
_FORMATS: dict[str, Render] = {}


def register(extension: str) -> Callable[[Render], Render]:
    def decorate(fn: Render) -> Render:
        _FORMATS[extension] = fn
        return fn

    return decorate


def renderer(extension: str) -> Render | None:
    return _FORMATS.get(extension)


def registered() -> list[str]:
    return sorted(_FORMATS)
