"""Test hooks by reference: per case (``"before": "env_test.Before"``) and global (``--before``/``--after``).

A ref ``mod.Func`` is ``<agent>/src/mod.py`` (``env.Before`` also finds ``env_test.py``). Hooks run as
user code (``usercalls.call``); this module finds them and reads what they return."""

from __future__ import annotations

import os
from typing import Any

from agenttest.errors import AgentTestError
from agenttest.app.yaofiles import function


def hook_path(agent_dir: str, module: str) -> str:
    src = os.path.join(agent_dir, "src")
    candidates = [module] if module.endswith("_test") else [module, module + "_test"]
    for name in candidates:
        path = os.path.join(src, *name.split(".")) + ".py"
        if os.path.isfile(path):
            return path
    return os.path.join(src, *candidates[-1].split(".")) + ".py"


def resolve(agent_dir: str, ref: str, what: str) -> Any:
    """The hook function for a ref; a missing file or function is a usage error."""
    module, _, name = ref.rpartition(".")
    if not module or not name:
        raise AgentTestError(f"{what} '{ref}' must be <module>.<Function>", hint="e.g. env_test.Before")
    return function(hook_path(agent_dir, module), name, f"{what} '{ref}'")


def data_of(returned: Any) -> Any:
    """A Before hook's return value, or its ``data`` key."""
    if isinstance(returned, dict) and "data" in returned:
        return returned["data"]
    return returned
