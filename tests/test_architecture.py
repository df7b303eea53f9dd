"""Imports point down: every module of the package sits on a layer, imports only from its own layer or
below (function-level imports included), and no import cycle exists. docs/architecture.md draws the same
layers; a new module must be placed here, which makes its place in the architecture a decision."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import agenttest

from helpers import REPO

PACKAGE = REPO / "agenttest"

# bottom (0) to top; a package's name stands for all of its modules. The stage packages are the pipeline
# (docs/architecture.md): inputs (load) → selection → resolution → runner/modes → assertions (check) →
# verdicts (decide) → reporting → history; app, agents, connectors and runtime are what the stages use.
LAYERS: dict[str, int] = {
    "version": 0, "errors": 0, "schema": 0,
    "util": 1, "speed": 1, "stats": 1,
    "model": 2, "config": 2, "plugins": 2,
    "runtime": 3, "selection": 3,
    "app": 4, "verdicts": 4, "accounting": 4,
    "connectors": 5,
    "agents": 6,
    "assertions": 7,
    "modes": 8, "resolution": 8, "reporting": 8,
    "inputs": 9, "runner": 9, "history": 9,
    "session": 10, "ci": 10,
    "cli": 11, "__main__": 11, "__init__": 11,
}
STAGES = ("inputs", "selection", "resolution", "runner", "modes", "assertions", "verdicts", "reporting", "history")
TOP_LEVEL_MODULES = {"__init__", "__main__", "version", "cli", "config", "errors", "plugins", "session"}


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
    assert "session" in edges["cli"]  # a function-level import: the session is imported when a run starts
    assert "runtime.usercalls" in edges["runner.scheduling"] and "assertions.registry" in edges["assertions.static"]


def test_public_api_is_sorted_and_importable():
    assert agenttest.__all__ == sorted(agenttest.__all__, key=lambda n: (n.startswith("_") or n.islower(), n))
    for name in agenttest.__all__:
        assert hasattr(agenttest, name), name


def test_public_api_is_complete():
    """The table of public names is ``__all__``, each resolves, and the names imported for type checkers are the
    same (httpx's check, for an API imported when first used); the plug-in API is there."""
    assert set(agenttest._PUBLIC) == set(agenttest.__all__)
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    checked = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    typed = {alias.asname or alias.name for node in ast.walk(checked) if isinstance(node, ast.ImportFrom) and node.module != "typing"
             for alias in node.names}
    assert typed == set(agenttest.__all__)
    for name in agenttest.__all__:
        module, attr = agenttest._PUBLIC[name]
        assert getattr(agenttest, name) is (getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module))
    for name in ("Registry", "register_assertion", "register_connector", "register_report", "plugins", "CaseEnv", "Loaded"):
        assert name in agenttest.__all__


def test_importing_agenttest_changes_nothing_outside_it():
    """``import agenttest`` (and its public names) leaves the standard library as it was: the dataclasses'
    method writer, the garbage collector; our dataclasses keep the ``__init__`` dataclasses wrote. The speed
    machinery is the command's own (``agenttest.speed.install``, called by ``cli.entry``)."""
    probe = """
import dataclasses, gc, json, sys
create_fn, thresholds, enabled = dataclasses._create_fn, gc.get_threshold(), gc.isenabled()
import agenttest
from agenttest import Case, CaseResult, RunReport, plugins, register_assertion
plugins.builtins()
import agenttest.cli, agenttest.session
same = {"create_fn": dataclasses._create_fn is create_fn, "gc": [gc.get_threshold() == thresholds, gc.isenabled() == enabled, gc.get_freeze_count()],
        "init": [c.__init__.__code__.co_filename for c in (Case, CaseResult)]}
from agenttest import speed
speed.install()
same["installed"] = [dataclasses._create_fn is not create_fn, Case.__init__.__code__.co_filename]
print(json.dumps(same))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120, check=True).stdout
    assert json.loads(out) == {"create_fn": True, "gc": [True, True, 0], "init": ["<string>", "<string>"],
                               "installed": [sys.version_info[:2] == (3, 11), "<__init__ of Case>"]}  # classcache mirrors 3.11's


def test_every_dataclass_past_five_fields_is_keyword_only():
    """STYLE rule 2: a record of more than five fields is made with its fields named (``kw_only=True``), so that
    no caller depends on their order and a field can be added anywhere."""
    positional = []
    for path in PACKAGE.rglob("*.py"):
        if "templates" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                if ast.unparse(call.func if call else decorator).split(".")[-1] != "dataclass":
                    continue
                kw_only = any(k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value for k in (call.keywords if call else []))
                fields = [s for s in node.body if isinstance(s, ast.AnnAssign) and "ClassVar" not in ast.unparse(s.annotation)]
                if len(fields) > 5 and not kw_only:
                    positional.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({len(fields)} fields)")
    assert not positional, "make these kw_only=True:\n" + "\n".join(positional)


def test_every_built_in_plug_in_module_is_listed_once():
    """A module that registers a plug-in is one of plugins.BUILTINS (the built-ins register as third parties do)."""
    from agenttest import plugins

    registering = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if "templates" in path.parts or path.name == "plugins.py":
            continue
        if any(marker in text for marker in ("\n@register(", "\n@SOURCES.register", "MODES.add(", "\n@assertion(")):
            registering.add("agenttest." + module_name(path).removesuffix(".__init__"))
    modules = [b.module for b in plugins.BUILTINS]
    assert registering - {"agenttest.assertions.registry", "agenttest.reporting.formats", "agenttest.connectors.base"} <= set(modules)
    assert len(modules) == len(set(modules))


def test_the_top_level_is_the_stages_and_a_handful_of_modules():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == TOP_LEVEL_MODULES, f"a new top-level module belongs in a stage package: {sorted(modules - TOP_LEVEL_MODULES)}"
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert set(STAGES) <= packages


def test_every_package_says_its_job():
    for init in PACKAGE.rglob("__init__.py"):
        if "templates" in init.relative_to(PACKAGE).parts:
            continue
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(REPO)} needs a docstring saying its job"


CLOCKS = {"perf_counter", "monotonic", "time", "perf_counter_ns", "monotonic_ns", "time_ns"}


def _reads_a_clock(node: ast.AST, clocked: set[str]) -> bool:
    """Whether ``node`` calls a clock (``time.perf_counter()``, ``loop.time()`` …) or names a value made from one."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in CLOCKS and not sub.args:
            return True
        if isinstance(sub, ast.Name) and sub.id in clocked:
            return True
    return False


def timed_asserts(source: str) -> list[int]:
    """The lines of ``assert``s that compare a clock's reading: a duration measured by the test itself."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        clocked: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call | ast.BinOp) and _reads_a_clock(node.value, clocked):
                if isinstance(node.value, ast.BinOp) or isinstance(node.value.func, ast.Attribute) and node.value.func.attr in CLOCKS:
                    clocked.update(t.id for t in node.targets if isinstance(t, ast.Name))
        found += [node.lineno for node in ast.walk(function) if isinstance(node, ast.Assert) and _reads_a_clock(node.test, clocked)]
    return found


def test_no_test_asserts_a_duration():
    """Performance is measured in benchmarks (bench/), not timed tests: a bound on wall time fails when the machine is
    loaded, whatever the code does. Assert the behaviour instead — the connection closed before the answer, the mark
    never written, the count of calls, the order of events."""
    offenders = [f"tests/{path.name}:{line}" for path in sorted((REPO / "tests").glob("*.py")) for line in timed_asserts(path.read_text())]
    assert not offenders, offenders
    assert timed_asserts("def t():\n    start = time.perf_counter()\n    go()\n    took = time.perf_counter() - start\n    assert took < 4.5\n") == [5]
    assert timed_asserts("def t():\n    start = time.monotonic()\n    assert time.monotonic() - start < 5\n") == [3]
    assert timed_asserts("def t():\n    deadline = time.time() + 20\n    while time.time() < deadline:\n        pass\n    assert done\n") == []

