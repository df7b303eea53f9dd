"""Plug-ins: modules named by the ``agenttest.plugins`` entry-point group, imported once per process.
They register assertion types, connector types and report formats exactly as the built-ins do."""

from __future__ import annotations

from agenttest.errors import AgentTestError

_loaded = False


def load() -> None:
    """Import every plug-in module (once); one that fails to import is a usage error naming it."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="agenttest.plugins"):
        try:
            ep.load()
        except Exception as exc:
            raise AgentTestError(f"plug-in '{ep.name}' ({ep.value}) failed to import: {type(exc).__name__}: {exc}") from None
