"""Plug-ins: one ``Registry`` per plug-in kind — assertion types, connector types, report formats, input
sources and modes — and one list of the built-ins. The built-ins register exactly as a third party does:
a module that, when imported, adds itself to a registry; third-party modules are named by the
``agenttest.plugins`` entry-point group. ``load()`` imports both, once per process."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
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
        if module not in sys.modules:  # one imported already registered what it holds
            self._deferred[name] = module

    def pending(self, name: str) -> bool:
        """Whether ``name``'s deferred built-in is yet to be imported (it will register the name, or add to it)."""
        return name in self._deferred

    def add(self, name: str, item: T) -> T:
        self._items[name] = item
        self.version += 1
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """As a decorator: ``@REPORTS.register(".csv")``."""
        return lambda item: self.add(name, item)

    def get(self, name: str) -> T | None:
        module = self._deferred.pop(name, None)
        if module is not None:  # a deferred built-in: imported now, it registers the name (or adds to what it holds)
            importlib.import_module(module)
        return self._items.get(name)

    def names(self) -> list[str]:
        return sorted({*self._items, *self._deferred})

    def known(self) -> list[str]:
        """Every name, deferred ones included, in the order they became known (the built-ins' order first)."""
        return list(dict.fromkeys([*self._deferred, *self._items]))

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
REPORTS: Registry[Any] = Registry("report format")  # file extension → reporting.formats.ReportFormat (a run's report; a comparison's)
SOURCES: Registry[Any] = Registry("input source")  # -i prefix ("agents:") → factory(text after it) → Source
MODES: Registry[Any] = Registry("mode")  # name → a mode (run, partial; optional claims(case) and fields)


@dataclass(frozen=True)
class Builtin:
    """A built-in plug-in module: it registers what it holds when imported, as a third party's does. ``reports``:
    the report formats it registers, known by name from the start (the CLI's help, ``-o``'s did-you-mean) and
    imported when first asked for — a run that writes JSON only never imports the HTML viewer."""

    module: str
    reports: tuple[str, ...] = ()


# Every built-in plug-in, listed once.
BUILTINS = (
    Builtin("agenttest.assertions.static"), Builtin("agenttest.assertions.judge"), Builtin("agenttest.assertions.script"),
    Builtin("agenttest.assertions.state"), Builtin("agenttest.assertions.trajectory"), Builtin("agenttest.assertions.budget"),
    Builtin("agenttest.assertions.cel"), Builtin("agenttest.assertions.pairwise"), Builtin("agenttest.assertions.metrics"),
    Builtin("agenttest.assertions.observed"), Builtin("agenttest.assertions.evaluators"),
    Builtin("agenttest.connectors.openai"), Builtin("agenttest.connectors.mock"),
    Builtin("agenttest.reporting.jsonfile", reports=(".json", ".jsonl")), Builtin("agenttest.reporting.markdown", reports=(".md",)),
    Builtin("agenttest.reporting.html", reports=(".html",)), Builtin("agenttest.reporting.junit", reports=(".xml",)),
    Builtin("agenttest.inputs.sources.messages"), Builtin("agenttest.inputs.sources.generators"),
    Builtin("agenttest.inputs.sources.rescored"), Builtin("agenttest.inputs.sources.a"), Builtin("agenttest.inputs.sources.c"),
    Builtin("agenttest.modes.standard"), Builtin("agenttest.modes.dynamic"), Builtin("agenttest.modes.scripted"),
    Builtin("agenttest.modes.scripttest"), Builtin("agenttest.modes.scenario"), Builtin("agenttest.inputs.formats.b.source"),
    Builtin("agenttest.modes.judged"),
)

_loaded: set[str] = set()


def index() -> None:
    """Every deferred built-in known by name (once): nothing is imported."""
    if "index" not in _loaded:
        _loaded.add("index")
        for builtin in BUILTINS:
            for name in builtin.reports:
                REPORTS.defer(name, builtin.module)


def builtins() -> None:
    """Import the built-in plug-ins (once); the deferred ones are known by name."""
    index()
    if "builtins" not in _loaded:
        _loaded.add("builtins")
        for builtin in BUILTINS:
            if not builtin.reports:
                importlib.import_module(builtin.module)


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
