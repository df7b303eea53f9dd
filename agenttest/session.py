"""One invocation, top to bottom, in one event loop: load → select → resolve → run (the console
watches) → report → exit code."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from typing import Any, TextIO

from collections.abc import Iterator
from contextlib import contextmanager

from . import plugins, reporting, runner, usercode
from .app import App, find_root
from .caller import Caller
from .catalog import Catalog
from .config import RunConfig
from .connectors.throttle import Traffic
from .errors import AgentTestError, ExitCode, HookError, InputError, InternalError
from .identity import Identity, read_ctx
from .loading import SUFFIXES, Loaded
from .model import Case, CaseResult, Plan, RunHeader, RunReport
from .reporting.console import Console
from .reporting.events import EventStream
from .resolution import resolve
from .runner import RunState
from .secrets import Secrets
from .sources import LoadEnv, Message, Source, classify, normalized
from .verdict import exit_code, iso, make_report


def select(cases: list[Case], pattern: str | None) -> list[Case]:
    """``--run REGEX`` on case ids (unanchored search); matching nothing is a usage error."""
    if not pattern:
        return cases
    rx = re.compile(pattern)
    chosen = [c for c in cases if rx.search(c.id)]
    if not chosen:
        ids = ", ".join(c.id for c in cases[:10]) + (" …" if len(cases) > 10 else "")
        raise AgentTestError(f"--run {pattern!r} matches no case", hint=f"ids: {ids}")
    return chosen


class Session:
    """``out`` gets the console; ``events``, if given, the NDJSON event stream (``--json``)."""

    def __init__(self, config: RunConfig, out: TextIO, events: TextIO | None = None):
        self.config = config
        self.out = out
        self.secrets = Secrets()
        self.signalled: signal.Signals | None = None
        self.events = EventStream(events, self.secrets) if events is not None else None

    async def run(self) -> ExitCode:
        plugins.load()  # third-party assertion types, connectors and report formats
        config = self.config
        self._check_output()
        source = classify(config.input)
        root = find_root(config.app, source.path)
        if root is None:
            raise AgentTestError("no app root found (a folder with assistants/ or app.yao)", hint="pass --app DIR or set AGENTTEST_APP")
        catalog = Catalog(App(root), self.secrets, Traffic(config.parallel))
        identity = Identity(config.user, config.team, read_ctx(config.ctx_file) if config.ctx_file else {})
        caller = Caller(catalog, identity)
        caller.loop = asyncio.get_running_loop()
        try:
            return await self._run(source, catalog, caller)
        finally:
            await catalog.aclose()

    def _check_output(self) -> None:
        output = self.config.output
        if output and self.config.dry_run:
            if os.path.splitext(output)[1].lower() not in SUFFIXES:
                raise AgentTestError(f"-o {output}: --dry-run writes cases as {', '.join(SUFFIXES)}")
        elif output:
            reporting.check_path(output)

    def _agent_id(self, source: Source, app: App) -> str | None:
        """-n, else the agent the source implies; required unless only previewing a file or message."""
        config = self.config
        agent_id = config.agent or source.agent_hint(app)
        if agent_id is None and (source.needs_agent or not config.dry_run):
            if source.path is not None:
                raise AgentTestError(f"no agent for {source.path}: no package.yao above it", hint="pass -n AGENT")
            if source.needs_agent or not config.dry_run:
                raise AgentTestError(f"-n AGENT is required with -i {config.input!r}", hint=f"known agents: {', '.join(app.agent_ids())}")
        return agent_id

    async def _run(self, source: Source, catalog: Catalog, caller: Caller) -> ExitCode:
        config = self.config
        agent_id = self._agent_id(source, catalog.app)
        agent = catalog.agent(agent_id) if agent_id and (source.needs_agent or not config.dry_run) else None
        loaded: Loaded = await source.load(LoadEnv(config.simulator, agent, caller))
        if config.dry_run:
            return await self._dry_run(loaded.check())
        cases = loaded.cases if loaded.problems and not config.run_filter else select(loaded.cases, config.run_filter)
        resolved = resolve(cases, catalog, agent_id, config.connector, config.before, config.after)
        if loaded.problems or resolved.problems:
            raise InputError(loaded.problems + resolved.problems)
        assert agent_id is not None
        plan = Plan(tuple(cases), agent_id, config.connector, config.runs, config.parallel, config.timeout, config.fail_fast,
                    resolved.before_all, resolved.after_all, resolved.hooks)
        warnings = [*loaded.warnings, *catalog.warnings, *resolved.warnings]
        return await self._execute(plan, source, caller, warnings)

    async def _dry_run(self, cases: list[Case]) -> ExitCode:
        rows = [normalized(c) for c in cases]
        for row in rows:
            self.out.write(json.dumps(row, ensure_ascii=False) + "\n")
        if self.config.output:
            ext = os.path.splitext(self.config.output)[1].lower()
            if ext == ".jsonl":
                text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            elif ext == ".json":
                text = json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
            else:
                import yaml

                text = yaml.safe_dump(rows, allow_unicode=True, sort_keys=False)
            await asyncio.to_thread(reporting.write_atomic, self.config.output, text)
        return ExitCode.OK

    def header(self, plan: Plan, source: Source, caller: Caller) -> RunHeader:
        """What the console header and the report say about the run."""
        config = self.config
        per_case = not config.connector and any(c.options.get("connector") for c in plan.cases)
        try:
            connector = "per case" if per_case else caller.catalog.agent(plan.agent).connector_id(config.connector)
        except AgentTestError:
            connector = ""
        simulators = sorted({c.simulator.use for c in plan.cases if c.dynamic and c.simulator})
        return RunHeader(config.agent or plan.agent, connector, ", ".join(simulators), source.describe(len(plan.cases)),
                         config.timeout, len(plan.cases) * config.runs, config.runs, config.parallel, any(c.dynamic for c in plan.cases))

    async def _execute(self, plan: Plan, source: Source, caller: Caller, warnings: list[str]) -> ExitCode:
        config = self.config
        header = self.header(plan, source, caller)
        console = Console(self.out, config.color, config.verbose, config.parallel, progress=sys.stderr.isatty(),
                          show_reply=isinstance(source, Message), secrets=self.secrets)
        console.header(header, list(dict.fromkeys(warnings)))
        state = RunState()
        events = self.events
        caller.catalog.traffic.listen(console.warning)
        if events is not None:
            events.start(header, iso(state.started_at), list(dict.fromkeys(warnings)))
            caller.catalog.traffic.listen(events.warning)

        def finished(result: CaseResult) -> None:
            console.finished(result, config.runs)
            if events is not None:
                events.result(result)

        task = asyncio.create_task(runner.run(plan, caller, state, lambda c, r: console.started(c, r, config.runs), finished))
        failure: BaseException | None = None
        with self._signals(task):
            try:
                with usercode.capturing():
                    await task
            except asyncio.CancelledError:
                if self.signalled is None:
                    raise
            except HookError:
                raise
            except Exception as exc:  # a bug of ours outside any case: exit 3, after writing what ran
                failure = exc
            report = self._report(plan, source, caller, state, header)
            if report.output_file:
                await self._write(report)
            console.summary(report, report.output_file or None)
            if events is not None and failure is None:
                events.summary(report, exit_code(report))
        if failure is not None:
            from .runner import internal_error

            message, tb = internal_error(failure)
            raise InternalError(message.removeprefix("internal error: "), tb)
        return exit_code(report)

    def _report(self, plan: Plan, source: Source, caller: Caller, state: RunState, header: RunHeader) -> RunReport:
        config = self.config
        interrupted = self.signalled is not None
        output = config.output or source.default_report() or ""
        return make_report(
            state.ordered(), state.started_at, (time.perf_counter() - state.started) * 1000, config.runs,
            agent_id=header.agent, agent_path=caller.catalog.agent(plan.agent).spec.path, connector=header.connector,
            simulator=header.simulator, input_source=source.path or config.input, output_file=output,
            environment=caller.identity.environment(), options=self.options(), interrupted=interrupted,
            terminated=self.signalled == signal.SIGTERM, stopped_early=state.stopped_early,
            not_run=max(0, state.total - len(state.results)) if (state.stopped_early or interrupted) else 0,
            warnings=(*state.warnings, *caller.catalog.traffic.warnings()), load=caller.catalog.traffic.load(),
        )

    async def _write(self, report: RunReport) -> None:
        await asyncio.to_thread(reporting.write, report, report.output_file, self.secrets)

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
            "timeout": c.timeout, "parallel": c.parallel, "runs": c.runs, "run": c.run_filter, "fail_fast": c.fail_fast,
            "connector": c.connector, "simulator": c.simulator, "before": c.before, "after": c.after,
            "user": c.user, "team": c.team, "ctx": c.ctx_file,
        }.items() if v not in (None, False)}

