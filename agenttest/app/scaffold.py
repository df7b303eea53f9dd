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
    other = "my-app" if os.path.basename(os.path.normpath(folder)) != "my-app" else "my-new-app"
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise AgentTestError(f"init: {folder} is a file", hint=f"choose a new folder, e.g. agent-test init {other}")
    if os.path.isdir(folder) and os.listdir(folder):
        raise AgentTestError(f"init: {folder} already exists and is not empty", hint=f"choose a new folder, e.g. agent-test init {other}")
    written: list[str] = []
    try:
        _copy(resources.files("agenttest").joinpath("templates", "app"), folder, "", written)
    except OSError as exc:  # a read-only place, a full disk: said in a line; the files it wrote are taken back
        for rel in written:
            try:
                os.unlink(os.path.join(folder, rel))
            except OSError:
                pass
        raise AgentTestError(f"init: cannot write {exc.filename or folder}: {exc.strerror or exc}",
                             hint="choose a folder you can write to, e.g. agent-test init ~/my-app") from None
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
