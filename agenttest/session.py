"""One invocation, top to bottom, in one event loop: load → select → resolve → run (the console
watches) → report → exit code."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from typing import Any, TextIO

from collections.abc import Iterator
from contextlib import contextmanager

from agenttest import plugins, reporting
from agenttest.verdicts import budgets
from agenttest.verdicts import gates
from agenttest.selection import lastfailed
from agenttest.util import files as outputfiles
from agenttest.runner import scheduling as runner
from agenttest.selection import shards
from agenttest.runtime import usercalls
from agenttest.app.folders import App, find_root
from agenttest.agents.caller import Caller
from agenttest.connectors.cassettes import Cassettes
from agenttest.agents.catalog import Catalog
from agenttest.history.comparison import Comparison, compare
from agenttest.config import RunConfig
from agenttest.connectors.throttle import Traffic
from agenttest.errors import AgentTestError, ExitCode, HookError, InputError, InternalError
from agenttest.runtime.context import Identity, read_ctx
from agenttest.inputs.casefiles import SUFFIXES, KeyPolicy, Loaded, load_file
from agenttest.model import Case, CaseResult, Plan, RunHeader, RunReport
from agenttest.reporting import diffs
from agenttest.reporting.console import Console
from agenttest.reporting.events import EventStream
from agenttest.history.reading import read as read_report
from agenttest.resolution.resolve import resolve, unknown_tools
from agenttest.runner.scheduling import RunState
from agenttest.verdicts.costs import spend_of
from agenttest.util.secrets import MIN_LENGTH, Secrets
from agenttest.selection.filters import select
from agenttest.inputs.sources import Inputs, LoadEnv, expand, normalized
from agenttest.runtime.trace import Trace, current_trace
from agenttest.verdicts.outcome import exit_code, iso, make_report


class Session:
    """``out`` gets the console; ``events``, if given, the NDJSON event stream (``--json``)."""

    def __init__(self, config: RunConfig, out: TextIO, events: TextIO | None = None):
        self.config = config
        self.out = out
        self.secrets = Secrets()
        self.signalled: signal.Signals | None = None
        self.warnings: list[str] = []  # said in the header; kept in the report
        self.generation = Trace()  # what generating the cases (-i agents:…) spent
        self.selected = 0  # cases selected before --shard took its part
        self.baseline: RunReport | None = None
        self.events = EventStream(events, self.secrets) if events is not None else None

    async def run(self) -> ExitCode:
        plugins.load()  # third-party assertion types, connectors and report formats
        config = self.config
        self._check_outputs()
        self.baseline = read_report(config.baseline) if config.baseline else None
        found, problems = expand(list(config.inputs))
        problems += [p for f in found if f.path and not os.path.exists(f.path) for p in load_file(f.path).problems]
        if problems:  # a missing file is said as such (with a did-you-mean), before anything asks for its agent
            raise InputError(problems)
        source = Inputs(tuple(found))
        root = find_root(config.app, source.path)
        if root is None:
            raise AgentTestError("no app root found (a folder with assistants/ or app.yao)", hint="pass --app DIR or set AGENTTEST_APP")
        cassettes = self._cassettes(root)
        catalog = Catalog(App(root), self.secrets, strict=config.strict, cassettes=cassettes, traffic=Traffic(config.parallel))
        ctx = read_ctx(config.ctx_file, config.strict, catalog.warnings) if config.ctx_file else {}
        identity = Identity(config.user, config.team, ctx)
        caller = Caller(catalog, identity)
        caller.loop = asyncio.get_running_loop()
        try:
            return await self._run(source, catalog, caller)
        finally:
            await catalog.aclose()
            if cassettes is not None:
                await self._save(cassettes)

    def _cassettes(self, root: str) -> Cassettes | None:
        """--record/--replay: cassettes around every connector (checked before anything runs)."""
        config = self.config
        if config.replay_roles is not None and not config.replay:
            raise AgentTestError("--replay-roles needs --replay DIR", hint="e.g. --replay cassettes/ --replay-roles simulator,validator")
        if config.replay and not os.path.isdir(config.replay):
            raise AgentTestError(f"--replay {config.replay}: no such folder", hint="record cassettes first with --record DIR")
        if config.record and os.path.exists(config.record) and not os.path.isdir(config.record):
            raise AgentTestError(f"--record {config.record}: not a folder")
        if not (config.record or config.replay):
            return None
        return Cassettes(root, config.record, config.replay, config.replay_roles, self.secrets)

    async def _save(self, cassettes: Cassettes) -> None:
        for path, text in cassettes.files().items():
            try:
                await asyncio.to_thread(os.makedirs, os.path.dirname(path), exist_ok=True)
                await asyncio.to_thread(outputfiles.write_atomic, path, text)
            except OSError as exc:
                raise AgentTestError(f"--record: cannot write {path}: {exc}") from None

    def _check_outputs(self) -> None:
        """Every -o is checked (and its folder made) before anything runs."""
        for output in self.config.outputs:
            if self.config.dry_run:
                if os.path.splitext(output)[1].lower() not in SUFFIXES:
                    raise AgentTestError(f"-o {output}: --dry-run writes cases as {', '.join(SUFFIXES)}")
                outputfiles.prepare(output)
            else:
                reporting.check_path(output)

    def _agent_id(self, source: Inputs, app: App) -> str | None:
        """-n, else the agent the inputs imply; required unless only previewing or listing files."""
        config = self.config
        agent_id = config.agent or source.agent_hint(app) or app.only_agent()
        previewing = config.dry_run or config.list_only
        if agent_id is None and (source.needs_agent or not previewing):
            if source.path is not None:
                raise AgentTestError(f"no agent for {source.path}: no package.yao above it", hint="pass -n AGENT")
            shown = " ".join(f"-i {t!r}" for t in config.inputs)
            raise AgentTestError(f"-n AGENT is required with {shown}", hint=f"known agents: {', '.join(app.agent_ids())}")
        return agent_id

    async def _run(self, source: Inputs, catalog: Catalog, caller: Caller) -> ExitCode:
        config = self.config
        agent_id = self._agent_id(source, catalog.app)
        previewing = config.dry_run or config.list_only
        agent = catalog.agent(agent_id) if agent_id and (source.needs_agent or not previewing) else None
        token = current_trace.set(self.generation)  # what a generator agent spends is counted apart
        try:
            loaded: Loaded = await source.load(LoadEnv(config.simulator, agent, caller, KeyPolicy(strict=config.strict)))
        finally:
            current_trace.reset(token)
        if config.dry_run:
            return await self._dry_run(loaded.check())
        cases, note = loaded.cases, ""
        if not loaded.problems:
            remembered = lastfailed.load(catalog.app.root, config.inputs) if config.last_failed else None
            cases, note = select(cases, config.run_filter, config.keyword, remembered)
        self.selected = len(cases)
        if config.shard is not None:
            cases = shards.take(cases, config.shard, catalog.app.root)
        if config.list_only:
            loaded.check()
            return self._list(cases)
        first = config.matrix[0] if config.matrix else config.connector
        resolved = resolve(cases, catalog, agent_id, first, config.before, config.after)
        for other in config.matrix[1:]:  # a model matrix: every connector is checked before the first call
            resolved.attempt(None, catalog.check, agent_id, other)
        tapes = catalog.cassettes.preload(cases) if catalog.cassettes is not None and config.replay else []
        if loaded.problems or resolved.problems or tapes:
            raise InputError(loaded.problems + resolved.problems + tapes)
        assert agent_id is not None
        plan = Plan(tuple(cases), agent_id, config.connector, config.runs, config.parallel, config.timeout, config.fail_fast,
                    resolved.before_all, resolved.after_all, resolved.hooks, config.max_attachment, config.seed,
                    config.matrix, config.min_pass_rate, config.early_stop, config.budget)
        unpriced = budgets.problems(cases, lambda c: c.budget.over(plan.budget) if c.budget else plan.budget,
                                    lambda c: [runner.connector_label(plan, caller, c, conn) for conn in plan.connectors], catalog.prices)
        if unpriced:
            raise InputError(unpriced)
        await catalog.start()  # MCP servers: a server that cannot start is exit 2, before any case runs
        if catalog.agent(agent_id).spec.mcp:  # its MCP tools are known now: check mocks and faults
            tools = catalog.agent(agent_id).tools
            late = [p for c in cases if c.mode != "script" for p in unknown_tools(c, tools)]
            if late:
                raise InputError(late)
        warnings = [*([note] if note else []), *loaded.warnings, *catalog.warnings, *resolved.warnings, *self._short_secrets()]
        return await self._execute(plan, source, caller, warnings)

    def _list(self, cases: list[Case]) -> ExitCode:
        """``--list``: the selected cases, one a line — id, mode, tags, file:line — and nothing runs."""
        for case in cases:
            tags = f" [{', '.join(case.tags)}]" if case.tags else ""
            self.out.write(f"{case.id}  {case.mode}{tags}  {case.location}\n")
        self.out.write(f"{len(cases)} {'case' if len(cases) == 1 else 'cases'} selected\n")
        return ExitCode.OK

    async def _dry_run(self, cases: list[Case]) -> ExitCode:
        rows = [normalized(c) for c in cases]
        for row in rows:
            self.out.write(json.dumps(row, ensure_ascii=False) + "\n")
        for output in self.config.outputs:
            ext = os.path.splitext(output)[1].lower()
            if ext == ".jsonl":
                text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            elif ext == ".json":
                text = json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
            else:
                import yaml

                text = yaml.safe_dump(rows, allow_unicode=True, sort_keys=False)
            await asyncio.to_thread(outputfiles.write_atomic, output, text)
        return ExitCode.OK

    def header(self, plan: Plan, source: Inputs, caller: Caller) -> RunHeader:
        """What the console header and the report say about the run."""
        config = self.config
        per_case = not config.connector and any(c.options.get("connector") for c in plan.cases)
        try:
            connector = "per case" if per_case else caller.catalog.agent(plan.agent).connector_id(config.connector)
        except AgentTestError:
            connector = ""
        if plan.matrix:
            connector = ", ".join(plan.matrix)
        simulators = sorted({c.simulator.use for c in plan.cases if c.dynamic and c.simulator})
        described = source.describe(len(plan.cases))
        if config.shard is not None:
            described += f", shard {config.shard[0]}/{config.shard[1]} of {self.selected}"
        modes = {c.dynamic for c in plan.cases}
        notes = []
        if config.replay:
            notes.append(("Replay", f"{config.replay} ({', '.join(config.replay_roles) if config.replay_roles else 'every role'}"
                                    f"{'; misses called live and recorded' if config.record else ''})"))
        if config.record:
            notes.append(("Record", config.record))
        return RunHeader(config.agent or plan.agent, connector, ", ".join(simulators), described,
                         config.timeout, plan.total, config.runs, config.parallel, modes == {True}, len(modes) > 1, tuple(notes))

    async def _execute(self, plan: Plan, source: Inputs, caller: Caller, warnings: list[str]) -> ExitCode:
        config = self.config
        header = self.header(plan, source, caller)
        console = Console(self.out, config.color, config.verbose, config.parallel, progress=sys.stderr.isatty(),
                          show_reply=source.message is not None, secrets=self.secrets, quiet=config.quiet,
                          grouped=len(source.files) > 1, matrix=bool(plan.matrix))
        self.warnings = list(dict.fromkeys(warnings))
        console.header(header, self.warnings)
        state = RunState()
        runs = {(c.file, c.id): plan.runs_of(c) for c in plan.cases}
        events = self.events
        caller.catalog.traffic.listen(console.warning)
        if events is not None:
            events.start(header, iso(state.started_at), self.warnings)
            caller.catalog.traffic.listen(events.warning)

        def finished(result: CaseResult) -> None:
            console.finished(result, runs.get((result.file, result.id), config.runs))
            if events is not None:
                events.result(result)

        task = asyncio.create_task(runner.run(plan, caller, state, lambda c, r, conn: console.started(c, r, plan.runs_of(c), conn), finished,
                                              console.saved))
        failure: BaseException | None = None
        with self._signals(task):
            try:
                with usercalls.capturing():
                    await task
            except asyncio.CancelledError:
                if self.signalled is None:
                    raise
            except HookError:
                raise
            except Exception as exc:  # a bug of ours outside any case: exit 3, after writing what ran
                failure = exc
            outputs = list(config.outputs)
            if not outputs and source.report_folder() is not None:
                outputs = [outputfiles.default_report(source.report_folder() or ".")]
            report = self._report(plan, source, caller, state, header, outputs)
            written = [await self._write(report, path) for path in outputs]
            lastfailed.save(caller.catalog.app.root, config.inputs, report.results, report.gates)
            console.summary(report, ", ".join(written) or None)
            comparison = self._compare(report, console)
            code = comparison.gate() if comparison is not None and not report.interrupted else exit_code(report)
            self._remember(report, ExitCode.INTERNAL if failure is not None else code, caller.catalog.app.root)
            if events is not None and failure is None:
                events.summary(report, code)
        if failure is not None:
            from agenttest.runner.scheduling import internal_error

            message, tb = internal_error(failure)
            raise InternalError(message.removeprefix("internal error: "), tb)
        return code

    def _compare(self, report: RunReport, console: Console) -> Comparison | None:
        """--baseline: the comparison after the summary, and what it decides."""
        if self.baseline is None:
            return None
        comparison = compare(self.baseline, report, self.config.baseline or "", report.output_file)
        for line in diffs.console_lines(comparison, self.config.color) + diffs.gate_lines(comparison):
            console.line(line)
        return comparison

    def _short_secrets(self) -> list[str]:
        return [f"$ENV.{name} is shorter than {MIN_LENGTH} characters, so it is not hidden in output (only longer values are taken for secrets)"
                for name in self.secrets.short_names()]

    def _report(self, plan: Plan, source: Inputs, caller: Caller, state: RunState, header: RunHeader, outputs: list[str]) -> RunReport:
        config = self.config
        interrupted = self.signalled is not None
        output = outputs[0] if outputs else ""
        saved = sum(state.saved.values())
        return make_report(
            state.ordered(), state.started_at, (time.perf_counter() - state.started) * 1000, config.runs,
            policies=gates.policies(plan, lambda c, conn: runner.connector_label(plan, caller, c, conn)), saved=state.saved,
            matrix=plan.matrix, generation=spend_of(self.generation.by_connector, self.generation.calls, caller.catalog.prices),
            agent_id=header.agent, agent_path=caller.catalog.agent(plan.agent).spec.path, connector=header.connector,
            simulator=header.simulator, input_source=", ".join(source.files) or ", ".join(config.inputs), output_file=output,
            environment=caller.identity.environment(), options=self.options(), interrupted=interrupted,
            terminated=self.signalled == signal.SIGTERM, stopped_early=state.stopped_early,
            not_run=max(0, state.total - len(state.results) - saved) if (state.stopped_early or interrupted) else 0,
            warnings=tuple(dict.fromkeys([*self.warnings, *state.warnings, *self._short_secrets(), *caller.catalog.traffic.warnings()])),
            load=caller.catalog.traffic.load(),
        )

    def _remember(self, report: RunReport, code: int, root: str) -> None:
        """Add the run to the history (FORMATS §16) unless --no-history; if that fails, a warning says so."""
        if self.config.no_history:
            return
        from agenttest.history import store

        problem = store.record_run(self.config.history or store.default_path(root), report, code, self.config.inputs, self.secrets)
        if problem:
            sys.stderr.write(f"warning: {problem}\n")

    async def _write(self, report: RunReport, path: str) -> str:
        """Write one report; if that fails after the run, it is kept in a temporary file (said on stderr)."""
        rescued = await asyncio.to_thread(reporting.write, report, path, self.secrets)
        if rescued is None:
            return path
        sys.stderr.write(f"warning: could not write the report to {path}; it is saved in {rescued}\n")
        return rescued

    @contextmanager
    def _signals(self, task: asyncio.Task[Any]) -> Iterator[None]:
        """Ctrl-C and SIGTERM stop the cases (After and AfterAll still run); the report is then written."""
        loop = asyncio.get_running_loop()
        installed = []

        def stop(sig: signal.Signals) -> None:
            if self.signalled is None:
                self.signalled = sig
            task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop, sig)
                installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
                pass
        try:
            yield
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def options(self) -> dict[str, Any]:
        c = self.config
        return {k: v for k, v in {
            "timeout": c.timeout, "parallel": c.parallel, "runs": c.runs, "run": c.run_filter, "k": c.keyword,
            "last_failed": c.last_failed, "fail_fast": c.fail_fast,
            "connector": c.connector, "simulator": c.simulator, "before": c.before, "after": c.after,
            "user": c.user, "team": c.team, "ctx": c.ctx_file, "seed": c.seed or None,
            "connectors": list(c.matrix) or None, "min_pass_rate": c.min_pass_rate if c.min_pass_rate != 1.0 else None,
            "early_stop": c.early_stop, "budget": budgets.limits(c.budget) if c.budget is not None else None,
            "shard": f"{c.shard[0]}/{c.shard[1]}" if c.shard else None, "record": c.record, "replay": c.replay,
            "replay_roles": ",".join(c.replay_roles) if c.replay_roles else None, "baseline": c.baseline,
        }.items() if v not in (None, False)}

