"""Test hooks by reference: per case (``"before": "env_test.Before"``) and global (``--before``/``--after``).

A ref ``mod.Func`` is ``<agent>/src/mod.py`` (``env.Before`` also finds ``env_test.py``). Hooks run as
user code (``usercalls.call``); this module finds them and reads what they return."""

from __future__ import annotations

import os
from typing import Any

from agenttest.errors import AgentTestError
from agenttest.util.paths import inside
from agenttest.app.yaofiles import function


def hook_path(agent_dir: str, module: str, what: str = "hook") -> str:
    """``<agent>/src/mod.py`` (or ``mod_test.py``): never a file outside the agent's folder."""
    candidates = [module] if module.endswith("_test") else [module, module + "_test"]
    for name in candidates:
        path = inside(agent_dir, name, "src", suffix=".py", what=what)
        if os.path.isfile(path):
            return path
    return inside(agent_dir, candidates[-1], "src", suffix=".py", what=what)


def resolve(agent_dir: str, ref: str, what: str) -> Any:
    """The hook function for a ref; a missing file or function is a usage error."""
    module, _, name = ref.rpartition(".")
    if not module or not name:
        raise AgentTestError(f"{what} '{ref}' must be <module>.<Function>", hint="e.g. env_test.Before")
    return function(hook_path(agent_dir, module, what), name, f"{what} '{ref}'")


def data_of(returned: Any) -> Any:
    """A Before hook's return value, or its ``data`` key."""
    if isinstance(returned, dict) and "data" in returned:
        return returned["data"]
    return returned
