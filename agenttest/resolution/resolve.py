"""Resolution: everything a run names — the agent under test and its connectors, validators, simulators,
scripts, hooks, attachments — is loaded and checked before the first model call; every problem is
reported together, each at the ``file:line:column`` where it was named."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agenttest import assertions
from agenttest.app import hooks
from agenttest.util.matching import name_matches
from agenttest.agents.catalog import Catalog
from agenttest.errors import AgentTestError, Location, Problem, did_you_mean, typo_of
from agenttest.model import AssertionSpec, Case
from agenttest.model.parameters import KNOWN_CASE_OPTIONS, unknown_case_options, unknown_option_warning


@dataclass(kw_only=True)
class Resolved:
    """What resolution found: hook functions by ref, and the problems and warnings met on the way."""

    hooks: dict[str, Any] = field(default_factory=dict)
    before_all: Any = None
    after_all: Any = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unknown_tools: set[str] = field(default_factory=set)  # named by assertions, warned of once each

    def attempt(self, where: Location | None, fn: Any, *args: Any) -> Any:
        """``fn(*args)``; its usage errors become problems placed at ``where``."""
        try:
            return fn(*args)
        except AgentTestError as exc:
            self.problems.extend(p.at(where) for p in exc.problems)
            return None


def resolve(cases: list[Case], catalog: Catalog, agent_id: str | None, connector: str | None = None,
            before: str | None = None, after: str | None = None) -> Resolved:
    """Check every name the cases (and the run's flags) use; collect all problems."""
    out = Resolved()
    checked: set[tuple[str, str | None]] = set()

    def check(agent: str, conn: str | None, where: Location | None) -> None:
        if (agent, conn) not in checked:
            checked.add((agent, conn))
            out.attempt(where, catalog.check, agent, conn)

    agent = out.attempt(None, catalog.agent, agent_id) if agent_id else None
    if agent_id and agent is not None:  # a problem with package.yao's own connector points at it
        check(agent_id, connector, None if connector else agent.spec.connector_at)
    for case in cases:
        if agent is not None and case.mode != "script" and not connector and case.options.get("connector"):
            check(agent_id, case.options["connector"], case.locate(("options", "connector")))  # type: ignore[arg-type]
        named: list[tuple[str, str, Location | None]] = []  # tools the assertions name, checked below against the agent's
        for spec in [*case.assertions, *(cp.assertion for cp in case.checkpoints), *(a for t in case.turns for a in t.assertions)]:
            named += _assertion(spec, case, catalog, check, out)
        if case.dynamic and case.simulator is not None and case.simulator.script is None:
            conn = case.simulator.options.get("connector")
            check(case.simulator.use, conn, case.locate(("simulator", "use")))
        if agent is not None:
            for key in ("before", "after"):
                ref = getattr(case, key)
                if ref and ref not in out.hooks:
                    out.hooks[ref] = out.attempt(case.locate((key,)), hooks.resolve, agent.spec.path, ref, "hook")
        if agent is not None and case.mode not in ("script", "judged") and not getattr(agent.spec, "mcp", ()):  # MCP tools: known once their servers run; judged: calls none
            tools = tools_of(case, agent.tools)
            out.problems += unknown_tools(case, tools)
            _named_tools(named, tools, catalog.strict, out)
            out.problems += unknown_arguments(case, agent.tools)
        out.warnings += _missing_attachments(case)
    _suites(cases, catalog, out)
    _unknown_options(cases, catalog.strict, out)
    if agent is not None:
        if before:
            out.before_all = out.attempt(None, hooks.resolve, agent.spec.path, before, "--before")
        if after:
            out.after_all = out.attempt(None, hooks.resolve, agent.spec.path, after, "--after")
    return out


def _assertion(spec: AssertionSpec, case: Case, catalog: Catalog, check: Any, out: Resolved) -> list[tuple[str, str, Location | None]]:
    """What the assertion will call — validator agents, scripts — as its type declares; the tools it names."""
    tools: list[tuple[str, str, Location | None]] = []
    for need in assertions.needs(spec.params):
        where = case.locate(spec.path + (need.field if isinstance(need.field, tuple) else (need.field,)))
        if need.kind == "agent":
            check(need.ref, need.connector, where)
        elif need.kind == "tool":
            tools.append((need.ref, spec.type, where))
        else:
            out.attempt(where, catalog.script, need.ref)
    return tools


def _suites(cases: list[Case], catalog: Catalog, out: Resolved) -> None:
    """The evaluators a suite's checks name (FORMATS §18), each suite once."""
    seen: set[int] = set()
    for case in cases:
        suite = case.suite
        if suite is None or id(suite) in seen:
            continue
        seen.add(id(suite))
        for spec in suite.assertions:
            for need in assertions.needs(spec.params):
                where = suite.locate(spec.path + (need.field if isinstance(need.field, tuple) else (need.field,)))
                out.attempt(where, catalog.script, need.ref)


def _named_tools(named: list[tuple[str, str, Location | None]], tools: list[str], strict: bool, out: Resolved) -> None:
    """An assertion that names no tool of the agent: a misspelt one is an error (``tool_count`` of ``setwrld``
    with ``max: 0`` would always pass); another is a warning — the model may call a tool it was never given,
    and a guard against that is meant — or an error with --strict."""
    for name, kind, where in named:
        if any(name_matches(name, n) for n in tools):
            continue
        typo = did_you_mean(name, tools)
        if typo or strict:
            hint = typo or (f"its tools: {', '.join(tools)}" if tools else "it declares no tools")
            out.problems.append(Problem(f"{kind}: the agent has no tool '{name}'", where, hint + ("" if typo else "; unknown tools are errors with --strict")))
        elif name not in out.unknown_tools:
            out.unknown_tools.add(name)
            out.warnings.append(f"{where}: {kind}: the agent has no tool '{name}' (its tools: {', '.join(tools) or 'none'}): "
                                "the assertion checks for a call to a tool it was never given")


def unknown_arguments(case: Case, tools: Mapping[str, Any]) -> list[Problem]:
    """``tool_args`` naming an argument its tool's schema does not declare (``ordr_id`` for ``order_id``): negated it
    would always pass, plain always fail. Checked where the schema lists its properties and allows no others."""
    out = []
    turns = (a for t in case.turns for a in t.assertions)
    for spec in (*case.assertions, *(cp.assertion for cp in case.checkpoints), *turns):
        arguments, tool = spec.params.get("arguments"), tools.get(spec.params.get("tool"))  # type: ignore[arg-type]
        if spec.type != "tool_args" or not isinstance(arguments, dict) or tool is None:
            continue
        schema = getattr(tool, "schema", {}).get("parameters")
        if not isinstance(schema, dict) or schema.get("additionalProperties", False) is not False:
            continue
        declared = schema.get("properties")
        if not isinstance(declared, dict) or not declared:
            continue
        for name in arguments:
            if name not in declared:
                hint = did_you_mean(name, declared) or f"its arguments: {', '.join(declared)}"
                out.append(Problem(f"tool_args: tool '{tool.name}' has no argument '{name}'", case.locate((*spec.path, "arguments", name), True), hint))
    return out


def tools_of(case: Case, agent_tools: Iterable[str]) -> list[str]:
    """The tools a case's agent may call: its own, and a scenario's pack tools (FORMATS §18)."""
    return [*agent_tools, *(t.name for t in case.scenario.tools)] if case.scenario is not None else list(agent_tools)


def unknown_tools(case: Case, tools: Iterable[str]) -> list[Problem]:
    """Mocks, faults and end tools that name a tool the agent under test does not have (they could never apply)."""
    names = list(tools)
    out = []
    for i, name in enumerate(case.end_tools):
        if not any(name_matches(name, n) for n in names):
            hint = did_you_mean(name, names) or (f"its tools: {', '.join(names)}" if names else "it declares no tools")
            out.append(Problem(f"end_tools[{i}]: the agent has no tool '{name}'", case.locate(("end_tools", i)), hint))
    for key in ("mocks", "faults"):
        for i, item in enumerate(getattr(case, key)):
            if (key == "faults" and item.tool == "*") or any(name_matches(item.tool, n) for n in names):
                continue
            hint = did_you_mean(item.tool, names) or (f"its tools: {', '.join(names)}" if names else "it declares no tools")
            out.append(Problem(f"{key}[{i}]: the agent has no tool '{item.tool}'", case.locate((key, i, "tool")), hint))
    return out


def _unknown_options(cases: list[Case], strict: bool, out: Resolved) -> None:
    """Case options that are neither model parameters, Yao context options nor agent-test's own (FORMATS §2):
    a typo of a known option is an error (a ``temprature`` would silently not be sent), as is any with
    ``--strict``; others go to ``ctx.options`` with one warning per key and file."""
    seen: dict[tuple[str, str], Case] = {}
    for case in cases:
        for key in unknown_case_options(case.options):
            where = case.locate(("options", key), key=True)
            typo = typo_of(key, KNOWN_CASE_OPTIONS) if key != "model" else None  # "model" is no typo of "mode"
            if typo or strict:
                hint = f"did you mean '{typo}'?" if typo else "unknown keys are errors with --strict"
                out.problems.append(Problem(f"'{key}' is not a model parameter or a Yao context option", where, hint))
            elif (case.file, key) not in seen:
                seen[(case.file, key)] = case
                out.warnings.append(unknown_option_warning(key, str(where)))


def _missing_attachments(case: Case) -> list[str]:
    """Attachments that do not exist: the case will be an error when it runs (FORMATS §3), said now."""
    out = []
    for message in case.messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            source = str(part.get("source") or part.get("url") or "") if isinstance(part, dict) else ""
            if source.startswith("file://"):
                path = source[len("file://"):]
                full = path if os.path.isabs(path) else os.path.join(case.base_dir, path)
                if not os.path.exists(full):
                    out.append(f"{case.location}: case '{case.id}': attachment {source} does not exist ({os.path.normpath(full)}); the case will be an error")
    return out
