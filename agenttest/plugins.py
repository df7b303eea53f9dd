"""Plug-ins: one ``Registry`` per plug-in kind — assertion types, connector types, report formats, input
sources and modes — and one list of the built-ins. The built-ins register exactly as a third party does:
a module that, when imported, adds itself to a registry; third-party modules are named by the
``agenttest.plugins`` entry-point group. ``load()`` imports both, once per process."""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from agenttest.errors import AgentTestError, did_you_mean

T = TypeVar("T")

GROUP = "agenttest.plugins"


class Registry(Generic[T]):
    """Named plug-ins of one kind; ``version`` changes whenever one is added (derived data is rebuilt)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._deferred: dict[str, str] = {}  # name → the built-in module that registers it when imported
        self.version = 0
        self.mapping: Mapping[str, T] = MappingProxyType(self._items)  # what is registered now, read-only (deferred names not yet in it)

    def defer(self, name: str, module: str) -> None:
        """A built-in known by name at once and imported when first asked for (``-o x.html`` imports the HTML
        writer; a run without one never pays for it)."""
        if name not in self._items:
            self._deferred[name] = module

    def add(self, name: str, item: T) -> T:
        self._items[name] = item
        self.version += 1
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """As a decorator: ``@REPORTS.register(".csv")``."""
        return lambda item: self.add(name, item)

    def get(self, name: str) -> T | None:
        module = self._deferred.pop(name, None)
        if module is not None and name not in self._items:
            importlib.import_module(module)
        return self._items.get(name)

    def names(self) -> list[str]:
        return sorted({*self._items, *self._deferred})

    def values(self) -> list[T]:
        return [item for item in (self.get(n) for n in self.names()) if item is not None]

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._deferred

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """What is registered inside the block is gone after it, the registry as it was (a test's plug-ins)."""
        items, deferred = dict(self._items), dict(self._deferred)
        try:
            yield
        finally:
            if items != self._items or deferred != self._deferred:
                self._items.clear()
                self._items.update(items)
                self._deferred = deferred
                self.version += 1

    def hint(self, name: str) -> str:
        """A did-you-mean, or the known names."""
        return did_you_mean(name, self.names()) or f"known {self.kind}s: {', '.join(self.names())}"


ASSERTIONS: Registry[Any] = Registry("assertion type")  # name → assertions.registry.AssertionType
CONNECTORS: Registry[Any] = Registry("connector type")  # type name → factory(ConnectorSpec) → Connector
REPORTS: Registry[Any] = Registry("report format")  # file extension → render(RunReport) → text or chunks
SOURCES: Registry[Any] = Registry("input source")  # -i prefix ("agents:") → factory(text after it) → Source
MODES: Registry[Any] = Registry("mode")  # name → a mode (run, partial; optional claims(case) and fields)

# Every built-in plug-in, listed once; each module registers what it holds when imported.
BUILTINS = (
    "agenttest.assertions.static", "agenttest.assertions.judge", "agenttest.assertions.script", "agenttest.assertions.state",
    "agenttest.assertions.trajectory", "agenttest.assertions.budget", "agenttest.assertions.cel",
    "agenttest.assertions.pairwise",
    "agenttest.connectors.openai", "agenttest.connectors.mock",
    "agenttest.reporting.jsonfile", "agenttest.reporting.markdown", "agenttest.reporting.html", "agenttest.reporting.junit",
    "agenttest.inputs.sources.messages", "agenttest.inputs.sources.generators", "agenttest.inputs.sources.rescored",
    "agenttest.modes.standard", "agenttest.modes.dynamic", "agenttest.modes.scripted", "agenttest.modes.scripttest",
    "agenttest.modes.scenario", "agenttest.inputs.formats.b.source", "agenttest.modes.judged",
)

# Built-ins imported only when asked for by name (kind, name, module); each is in BUILTINS too.
DEFERRED = (
    (REPORTS, ".md", "agenttest.reporting.markdown"), (REPORTS, ".html", "agenttest.reporting.html"),
    (REPORTS, ".xml", "agenttest.reporting.junit"),
)

_loaded: set[str] = set()


def builtins() -> None:
    """Import the built-in plug-ins (once)."""
    if "builtins" not in _loaded:
        _loaded.add("builtins")
        for registry, name, module in DEFERRED:
            registry.defer(name, module)
        deferred = {module for _, _, module in DEFERRED}
        for module in BUILTINS:
            if module not in deferred:
                importlib.import_module(module)


def load() -> None:
    """The built-ins, then every third-party plug-in module (once); one that fails to import is a usage
    error naming it."""
    builtins()
    if "entry points" in _loaded:
        return
    _loaded.add("entry points")
    if not _may_have_plugins():
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        try:
            ep.load()
        except Exception as exc:
            raise AgentTestError(f"plug-in '{ep.name}' ({ep.value}) failed to import: {type(exc).__name__}: {exc}") from None


def _may_have_plugins() -> bool:
    """Whether any installed distribution may declare an ``agenttest.plugins`` entry point: a look at the
    ``entry_points.txt`` files on ``sys.path`` (~1 ms) before ``importlib.metadata`` (~20 ms to import and
    scan every distribution). Anything it cannot look through itself — a zip on the path, a finder of
    distributions other than the standard one — counts as a maybe."""
    import sys
    from importlib.machinery import PathFinder

    if any(getattr(f, "find_distributions", None) is not None and f is not PathFinder for f in sys.meta_path):
        return True
    marker = f"[{GROUP}]"
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:  # a zip or an egg file
            return True
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8", errors="replace") as fh:
                        if marker in fh.read():
                            return True
                except OSError:  # no entry points, or an .egg-info that is a file
                    continue
    return False
