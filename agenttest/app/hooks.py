"""Test hooks by reference: per case (``"before": "env_test.Before"``) and global (``--before``/``--after``).

A ref ``mod.Func`` is ``<agent>/src/mod.py`` (``env.Before`` also finds ``env_test.py``), else Yao's
``mod.ts``/``mod.js`` of that name, run in Node. Hooks run as user code (``usercalls.call``); this
module finds them and reads what they return."""

from __future__ import annotations

import os
from typing import Any

from agenttest.errors import AgentTestError
from agenttest.util.paths import inside
from agenttest.app.yaofiles import function
from agenttest.runtime import node


def hook_path(agent_dir: str, module: str, what: str = "hook") -> str:
    """The ``.py`` file a ref names: one that exists, else one with Yao's ``.ts`` beside it, else the last tried
    — never a file outside the agent's folder (a path or ``..`` in the ref, a symlink out: AgentTestError)."""
    candidates = [module] if module.endswith("_test") else [module, module + "_test"]
    paths = [inside(agent_dir, name, "src", suffix=".py", what=what) for name in candidates]
    return next((p for p in paths if os.path.isfile(p)), None) or next((p for p in paths if node.source_beside(p)), paths[-1])


def resolve(agent_dir: str, ref: str, what: str) -> Any:
    """The hook function for a ref; a missing file or function is a usage error."""
    module, _, name = ref.rpartition(".")
    if not module or not name:
        raise AgentTestError(f"{what} '{ref}' must be <module>.<Function>", hint="e.g. env_test.Before")
    path = hook_path(agent_dir, module, what)
    script = node.source_beside(path)
    if script is not None:
        return node.function(script, name, f"{what} '{ref}'")
    return function(path, name, f"{what} '{ref}'")


def data_of(returned: Any) -> Any:
    """A Before hook's return value, or its ``data`` key."""
    if isinstance(returned, dict) and "data" in returned:
        return returned["data"]
    return returned
