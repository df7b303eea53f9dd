"""``agent-test init [DIR]``: a working app — an agent with a tool, the mock connector, the three worker
agents with real prompts and mock rules, standard and dynamic cases, hooks, a script test — whose
suite passes at once, offline."""

from __future__ import annotations

import os
from importlib import resources
from typing import Any

from agenttest.errors import AgentTestError


DOTFILES = {"gitignore": ".gitignore"}  # shipped without the dot, which packaging tools drop


def init(folder: str) -> list[str]:
    """Write the app into ``folder`` (created if missing; it must not hold files already). Returns the
    files written, relative to it."""
    if os.path.exists(folder) and (not os.path.isdir(folder) or os.listdir(folder)):
        raise AgentTestError(f"init: {folder} already exists and is not empty", hint="choose a new folder, e.g. agent-test init my-app")
    written: list[str] = []
    _copy(resources.files("agenttest").joinpath("templates", "app"), folder, "", written)
    return written


def _copy(node: Any, folder: str, rel: str, written: list[str]) -> None:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.name == "__pycache__":
            continue
        path = os.path.join(rel, DOTFILES.get(child.name, child.name))
        if child.is_dir():
            _copy(child, folder, path, written)
        else:
            target = os.path.join(folder, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(child.read_bytes())
            written.append(path)
