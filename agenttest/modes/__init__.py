"""Test modes — how one case runs: ``standard`` (one call), ``dynamic`` (a simulator-driven conversation),
``script`` (a Python ``Test*`` function), and plug-ins. A mode is registered in ``plugins.MODES`` and has
``run(case, env, trace)`` and ``partial(case, trace, status, error)``, the result of a run cut short (it
keeps the work done); a plug-in mode also has ``claims(case)`` — true for the cases it runs — and may
declare ``fields``, the case keys it reads (as JSON Schema), which case files then accept."""

from __future__ import annotations

from agenttest import plugins
from agenttest.model import Case
from agenttest.modes.base import CaseEnv, Mode

__all__ = ["CaseEnv", "Mode", "get"]


def get(case: Case) -> Mode:
    """The mode that runs ``case``: a plug-in mode that claims it, else the built-in its fields name."""
    plugins.builtins()
    modes: list[Mode] = plugins.MODES.values()
    for mode in modes:
        claims = getattr(mode, "claims", None)
        if claims is not None and claims(case):
            return mode
    builtin: Mode = plugins.MODES.get(case.mode)  # type: ignore[assignment]  # every case.mode is a built-in
    return builtin
