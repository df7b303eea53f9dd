"""Imports point down: every module of the package sits on a layer, imports only from its own layer or
below (function-level imports included), and no import cycle exists. docs/architecture.md draws the same
layers; a new module must be placed here, which makes its place in the architecture a decision."""

from __future__ import annotations

import ast
from pathlib import Path

import agenttest

from helpers import REPO

PACKAGE = REPO / "agenttest"

# bottom (0) to top; a package's name stands for all of its modules
LAYERS: dict[str, int] = {
    "version": 0, "errors": 0, "texts": 0, "config": 0, "schema": 0, "patterns": 0,
    "model": 1, "secrets": 1,
    "selection": 2, "lastfailed": 2, "scaffold": 2, "outputfiles": 0, "positions": 2, "userfiles": 2, "messages": 2, "attachments": 2, "prompts": 2, "tracking": 2, "usercode": 2, "plugins": 2, "records": 2,
    "verdict": 2, "workerprotocol": 2, "app": 2, "mcpfiles": 2, "costs": 2, "budgets": 2, "gates": 2,
    "requestdiff": 2, "sharding": 2, "reportfiles": 2, "parameters": 2,
    "connectors": 3, "assertions": 3, "world": 3, "runtime": 3, "comparison": 3, "merging": 3,
    "caseschema": 4, "validation": 4, "loading": 4, "agents": 4, "hooks": 4, "mcpservers": 4, "cassettes": 4,
    "catalog": 5, "identity": 5,
    "caller": 6,
    "modes": 7, "resolution": 7,
    "runner": 8, "sources": 8, "reporting": 8,
    "session": 9,
    "cli": 10, "__main__": 10, "__init__": 10,
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return ".".join(rel.parts)


def unit(module: str) -> str:
    """The layered unit a module belongs to: its top-level name (a package counts as one)."""
    return module.split(".")[0]


def imports(path: Path) -> set[str]:
    """Every agenttest module ``path`` imports, at any depth of the file (lazy imports count)."""
    name = module_name(path)
    package = name.split(".")[:-1]  # for a package's __init__, the package itself
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                target = ".".join([*base, node.module] if node.module else base)
            elif node.module and node.module.startswith("agenttest"):
                target = node.module.removeprefix("agenttest").lstrip(".")
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                found.add(sub if (PACKAGE / (sub.replace(".", "/") + ".py")).exists() or (PACKAGE / sub.replace(".", "/")).is_dir() else target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("agenttest."):
                    found.add(alias.name.removeprefix("agenttest."))
    return {m.removesuffix(".__init__") for m in found if m} - {name}


def graph() -> dict[str, set[str]]:
    files = [p for p in PACKAGE.rglob("*.py") if "templates" not in p.relative_to(PACKAGE).parts]  # templates are data
    modules = {module_name(p).removesuffix(".__init__") or "__init__": p for p in files}
    return {name: imports(path) for name, path in modules.items()}


def test_every_module_has_a_layer():
    missing = sorted({unit(m) for m in graph()} - set(LAYERS))
    assert not missing, f"place these modules in LAYERS (and docs/architecture.md): {missing}"


def test_imports_point_down():
    upward = []
    for module, targets in graph().items():
        for target in targets:
            if unit(target) != unit(module) and LAYERS[unit(target)] > LAYERS[unit(module)]:
                upward.append(f"{module} (layer {LAYERS[unit(module)]}) imports {target} (layer {LAYERS[unit(target)]})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycles():
    edges = graph()
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]) if nxt in stack else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def test_the_checker_sees_lazy_and_relative_imports():
    edges = graph()
    assert "reporting.html" in edges["reporting"]  # a function-level import of the built-in formats
    assert "records" in edges["runner"] and "assertions.registry" in edges["assertions.static"]


def test_public_api_is_sorted_and_importable():
    assert agenttest.__all__ == sorted(agenttest.__all__)
    for name in agenttest.__all__:
        assert hasattr(agenttest, name), name
