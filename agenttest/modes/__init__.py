"""Test modes — how one case runs: ``standard`` (one call), ``dynamic`` (a simulator-driven conversation),
``scripted`` (a conversation whose user turns the case writes), ``script`` (a Python ``Test*`` function),
and plug-ins. A mode is registered in ``plugins.MODES`` and has
``run(case, env, trace)`` and ``partial(case, trace, status, error)``, the result of a run cut short (it
keeps the work done); a plug-in mode also has ``claims(case)`` — true for the cases it runs — and may
declare ``fields``, the case keys it reads (as JSON Schema), which case files then accept."""

from __future__ import annotations

from agenttest import plugins
from agenttest.model import Case
from agenttest.modes.base import CaseEnv, Mode

__all__ = ["CaseEnv", "Mode", "get", "name_of"]


_claiming: tuple[int, list[Mode]] = (-1, [])  # the registry's version, its modes with a claims()


def get(case: Case) -> Mode:
    """The mode that runs ``case``: a plug-in mode that claims it, else the built-in its fields name."""
    global _claiming
    plugins.builtins()
    if _claiming[0] != plugins.MODES.version:
        _claiming = (plugins.MODES.version, [m for m in plugins.MODES.values() if getattr(m, "claims", None) is not None])
    for mode in _claiming[1]:
        if mode.claims(case):  # type: ignore[attr-defined]
            return mode
    builtin: Mode = plugins.MODES.get(case.mode)  # type: ignore[assignment]  # every case.mode is a built-in
    return builtin


def name_of(case: Case) -> str:
    """The registered name of the mode that runs ``case``: a plug-in mode's that claims it, else its built-in's."""
    mode = get(case)
    return next((name for name, m in plugins.MODES.mapping.items() if m is mode), case.mode)
