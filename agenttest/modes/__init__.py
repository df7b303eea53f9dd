"""Test modes — how one case runs: ``standard`` (one call), ``dynamic`` (a simulator-driven conversation),
``script`` (a Python ``Test*`` function). Each mode module has ``run(case, env, trace)`` and
``partial(case, trace, status, error)``, the result of a run cut short (it keeps the work done)."""

from __future__ import annotations

from agenttest.model import Case
from agenttest.modes import dynamic, scripttest, standard
from agenttest.modes.base import CaseEnv, Mode

__all__ = ["CaseEnv", "Mode", "get"]

_MODES: dict[str, Mode] = {"standard": standard, "dynamic": dynamic, "script": scripttest}  # type: ignore[dict-item]


def get(case: Case) -> Mode:
    """The mode that runs ``case``."""
    return _MODES[case.mode]
