"""Plug-ins: one ``Registry`` per plug-in kind — assertion types, connector types, report formats, input
sources and modes — and one list of the built-ins. The built-ins register exactly as a third party does:
a module that, when imported, adds itself to a registry; third-party modules are named by the
``agenttest.plugins`` entry-point group. ``load()`` imports both, once per process."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from agenttest.errors import AgentTestError, did_you_mean

T = TypeVar("T")

GROUP = "agenttest.plugins"


class Registry(Generic[T]):
    """Named plug-ins of one kind; ``version`` changes whenever one is added (derived data is rebuilt)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self.version = 0

    def add(self, name: str, item: T) -> T:
        self._items[name] = item
        self.version += 1
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """As a decorator: ``@REPORTS.register(".csv")``."""
        return lambda item: self.add(name, item)

    def get(self, name: str) -> T | None:
        return self._items.get(name)

    def names(self) -> list[str]:
        return sorted(self._items)

    def values(self) -> list[T]:
        return [self._items[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def hint(self, name: str) -> str:
        """A did-you-mean, or the known names."""
        return did_you_mean(name, self._items) or f"known {self.kind}s: {', '.join(self.names())}"


ASSERTIONS: Registry[Any] = Registry("assertion type")  # name → assertions.registry.AssertionType
CONNECTORS: Registry[Any] = Registry("connector type")  # type name → factory(ConnectorSpec) → Connector
REPORTS: Registry[Any] = Registry("report format")  # file extension → render(RunReport) → text or chunks
SOURCES: Registry[Any] = Registry("input source")  # -i prefix ("agents:") → factory(text after it) → Source
MODES: Registry[Any] = Registry("mode")  # name → a mode (run, partial; optional claims(case) and fields)

# Every built-in plug-in, listed once; each module registers what it holds when imported.
BUILTINS = (
    "agenttest.assertions.static", "agenttest.assertions.judge", "agenttest.assertions.script", "agenttest.assertions.state",
    "agenttest.assertions.trajectory", "agenttest.assertions.budget",
    "agenttest.connectors.openai", "agenttest.connectors.mock",
    "agenttest.reporting.jsonfile", "agenttest.reporting.markdown", "agenttest.reporting.html", "agenttest.reporting.junit",
    "agenttest.inputs.sources",
    "agenttest.modes.standard", "agenttest.modes.dynamic", "agenttest.modes.scripttest",
)

_loaded: set[str] = set()


def builtins() -> None:
    """Import the built-in plug-ins (once)."""
    if "builtins" not in _loaded:
        _loaded.add("builtins")
        for module in BUILTINS:
            importlib.import_module(module)


def load() -> None:
    """The built-ins, then every third-party plug-in module (once); one that fails to import is a usage
    error naming it."""
    builtins()
    if "entry points" in _loaded:
        return
    _loaded.add("entry points")
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        try:
            ep.load()
        except Exception as exc:
            raise AgentTestError(f"plug-in '{ep.name}' ({ep.value}) failed to import: {type(exc).__name__}: {exc}") from None
