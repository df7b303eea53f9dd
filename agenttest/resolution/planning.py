"""The Plan, built once: every case × connector resolved (connector label, runs, gate, budget, hooks) and
every problem that can be known before the first model call — of loading, of names, of pricing, of the
cassettes and of the MCP tools once their servers run — reported in one round."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agenttest.agents.catalog import Catalog
from agenttest.config import RunConfig
from agenttest.errors import AgentTestError, InputError, Problem
from agenttest import modes
from agenttest.model import Case, CaseKey, Diagnostics, Plan, ResolvedCase, RunSettings
from agenttest.runtime import attachments
from agenttest.resolution.resolve import Resolved, resolve, tools_of, unknown_tools
from agenttest.accounting import budgets

Start = Callable[[Plan], Awaitable[list[Problem]]]  # start the workers for a plan; the problems they met


async def build(cases: list[Case], catalog: Catalog, agent_id: str | None, config: RunConfig,
                problems: list[Problem] | None = None, start: Start | None = None) -> tuple[Plan, Diagnostics]:
    """Resolve the selected cases for a run; raise InputError with every problem found (``problems``: those
    of loading, said in the same round). ``start``, if given, starts the workers (each starts its MCP servers
    and checks their tools) instead of starting the servers here. Returns the plan and the warnings met (as a value)."""
    plan, found, resolved = checked(cases, catalog, agent_id, config, problems)
    if start is not None and agent_id:
        found += await start(plan)
    else:
        found += await mcp_tools(cases, catalog, agent_id) if agent_id else []
    if found:
        raise InputError(found)
    return plan, Diagnostics.of(resolved.warnings, unchecked(plan))


def checked(cases: list[Case], catalog: Catalog, agent_id: str | None, config: RunConfig,
            problems: list[Problem] | None = None) -> tuple[Plan, list[Problem], Resolved]:
    """The plan of ``cases`` and every problem known before their MCP servers run (``problems``: those of loading,
    first); a streamed run checks its cases so, a part of its file at a time (``inputs.streaming``)."""
    first = config.matrix[0] if config.matrix else config.connector
    resolved = resolve(cases, catalog, agent_id, first, config.before, config.after)
    for other in config.matrix[1:] if agent_id else ():  # a model matrix: every connector is checked before the first call
        resolved.attempt(None, catalog.check, agent_id, other)
    found = [*(problems or []), *resolved.problems]
    if catalog.cassettes is not None and config.replay:
        found += catalog.cassettes.preload(cases)
    plan = plan_of(cases, agent_id, config, catalog, resolved)
    found += budgets.problems(plan.items, catalog.prices)
    return plan, found, resolved


def unbuilt_problems(cases: list[Case], catalog: Catalog, agent_id: str | None, config: RunConfig) -> list[Problem]:
    """What the cases that did not load name and the app lacks (an unknown validator, a misspelt tool): said with
    the cases' own problems, in one round. These cases never run."""
    if not cases:
        return []
    return resolve(cases, catalog, agent_id, config.matrix[0] if config.matrix else config.connector).problems


def unchecked(plan: Plan) -> list[str]:
    """The warning that some cases check nothing but that the agent answers (they pass whenever it does), or none."""
    ids = list(dict.fromkeys((i.case.file, i.case.id) for i in plan.items if i.checks_nothing and not i.case.skip))
    return unchecked_said(len(ids), [case_id for _, case_id in ids[:5]], plan.settings.strict)


def unchecked_said(count: int, first: list[str], strict: bool) -> list[str]:
    """The warning of ``unchecked``: ``count`` cases check nothing, ``first`` the ids of the first five."""
    if not count:
        return []
    shown = ", ".join(first[:5]) + (f" and {count - 5} more" if count > 5 else "")
    what = "it passes" if count == 1 else "they pass"
    then = f"--strict fails {'it' if count == 1 else 'them'}" if strict else f"add assertions, or --strict fails {'it' if count == 1 else 'them'}"
    return [f"{count} case{'s' if count > 1 else ''} check{'s' if count == 1 else ''} nothing but that the agent answers "
            f"(no assertion, expected, required checkpoint or budget): {shown} — {what} whenever it answers; {then}"]


def plan_of(cases: list[Case], agent_id: str | None, config: RunConfig, catalog: Catalog, resolved: Resolved | None = None) -> Plan:
    """The Plan of ``cases``: each on each connector of the run, its figures, deadline, mode, attachment policy and
    hooks computed once; the settings running it needs."""
    hooks = resolved.hooks if resolved is not None else {}
    policy = attachments.app_policy(catalog.app.root, config.max_attachment)  # one for every case of the app
    items = tuple(
        ResolvedCase(key=CaseKey(file=case.file, id=case.id, connector=_label(catalog, agent_id, scheduled or case.options.get("connector"))),
                     case=case, scheduled=scheduled,
                     runs=case.runs if case.runs is not None else config.runs,
                     min_pass_rate=case.min_pass_rate if case.min_pass_rate is not None else config.min_pass_rate,
                     budget=case.budget.over(config.budget) if case.budget is not None else config.budget,
                     deadline=case.timeout or config.timeout, mode=modes.get(case), attachments=policy,
                     before=hooks.get(case.before) if case.before else None, after=hooks.get(case.after) if case.after else None)
        for case in cases for scheduled in (config.matrix or (config.connector,))
    )
    return Plan(agent=agent_id or "", items=items, settings=settings_of(config),
                before_all=resolved.before_all if resolved is not None else None,
                after_all=resolved.after_all if resolved is not None else None)


def settings_of(config: RunConfig) -> RunSettings:
    """What running a plan needs of the flags."""
    return RunSettings(parallel=config.parallel, timeout=config.timeout, runs=config.runs, early_stop=config.early_stop,
                       fail_fast=config.fail_fast, seed=config.seed, strict=config.strict, full_world=config.report_world == "full", calls=config.calls,
                       allow_external_writes=config.allow_external_writes,
                       connector=config.connector, matrix=config.matrix)


def _label(catalog: Catalog, agent_id: str | None, chosen: str | None) -> str:
    """The connector a result carries: the one chosen, else the agent's own (as written when unknown)."""
    try:
        return catalog.agent(agent_id).connector_id(chosen) if agent_id else chosen or ""
    except AgentTestError:
        return chosen or ""


async def mcp_tools(cases: list[Case], catalog: Catalog, agent_id: str) -> list[Problem]:
    """Start the MCP servers (one that cannot start is a problem) and check the mocks and faults that name
    their tools, which are known only now."""
    try:
        agent = catalog.agent(agent_id)
        await catalog.start()
    except AgentTestError as exc:
        return list(exc.problems)
    if not agent.spec.mcp:
        return []
    return [p for c in cases if c.mode != "script" for p in unknown_tools(c, tools_of(c, agent.tools))]
