"""Resolution: everything a run names — the agent under test and its connectors, validators, simulators,
scripts, hooks, attachments — is loaded and checked before the first model call; every problem is
reported together, each at the ``file:line:column`` where it was named."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from . import assertions, hooks
from .catalog import Catalog
from .errors import AgentTestError, Location, Problem
from .model import AssertionSpec, Case
from .parameters import unknown_case_options, unknown_option_warning


@dataclass
class Resolved:
    """What resolution found: hook functions by ref, and the problems and warnings met on the way."""

    hooks: dict[str, Any] = field(default_factory=dict)
    before_all: Any = None
    after_all: Any = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

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
    if agent_id and agent is not None:
        check(agent_id, connector, None)
    for case in cases:
        if agent is not None and case.mode != "script" and not connector and case.options.get("connector"):
            check(agent_id, case.options["connector"], case.locate(("options", "connector")))  # type: ignore[arg-type]
        for spec in [*case.assertions, *(cp.assertion for cp in case.checkpoints)]:
            _assertion(spec, case, catalog, check, out)
        if case.dynamic and case.simulator is not None:
            conn = case.simulator.options.get("connector")
            check(case.simulator.use, conn, case.locate(("simulator", "use")))
        if agent is not None:
            for key in ("before", "after"):
                ref = getattr(case, key)
                if ref and ref not in out.hooks:
                    out.hooks[ref] = out.attempt(case.locate((key,)), hooks.resolve, agent.spec.path, ref, "hook")
        out.warnings += _missing_attachments(case)
    out.warnings += _unknown_options(cases)
    if agent is not None:
        if before:
            out.before_all = out.attempt(None, hooks.resolve, agent.spec.path, before, "--before")
        if after:
            out.after_all = out.attempt(None, hooks.resolve, agent.spec.path, after, "--after")
    return out


def _assertion(spec: AssertionSpec, case: Case, catalog: Catalog, check: Any, out: Resolved) -> None:
    """What the assertion will call — validator agents, scripts — as its type declares."""
    for need in assertions.needs(spec.params):
        where = case.locate(spec.path + (need.field,))
        if need.kind == "agent":
            check(need.ref, need.connector, where)
        else:
            out.attempt(where, catalog.script, need.ref)


def _unknown_options(cases: list[Case]) -> list[str]:
    """Case options that are neither model parameters nor Yao context options: one warning per key and file."""
    seen: dict[tuple[str, str], Case] = {}
    for case in cases:
        for key in unknown_case_options(case.options):
            seen.setdefault((case.file, key), case)
    return [unknown_option_warning(key, str(case.locate(("options", key), key=True))) for (_, key), case in seen.items()]


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
