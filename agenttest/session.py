"""One invocation, top to bottom, in one event loop — the table of contents of the pipeline:
load → select → resolve → run (the console watches) → decide → report → exit code. Each step lives in
its stage package; this module only passes what one step gives to the next."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TextIO

from agenttest import plugins, reporting
from agenttest.agents.caller import Caller
from agenttest.agents.catalog import Catalog
from agenttest.app.folders import App, find_root
from agenttest.config import RunConfig
from agenttest.connectors.cassettes import Cassettes
from agenttest.connectors.throttle import Traffic
from agenttest.errors import AgentTestError, ExitCode, InputError, InternalError, Interrupted
from agenttest.inputs.documents import KeyPolicy, Loaded
from agenttest.inputs.reading import load_file
from agenttest.inputs.sources import Inputs, LoadEnv, expand
from agenttest.model import Case, Plan, RunHeader, RunReport
from agenttest.reporting.events import EventStream
from agenttest.reporting.header import header_of
from agenttest.reporting.watch import Watch
from agenttest.resolution import planning
from agenttest.runner import execution, executors
from agenttest.runner.controller import Pool, crashes
from agenttest.runtime import fdcapture
from agenttest.runtime.context import Identity, read_ctx
from agenttest.runtime.trace import Trace, current_trace
from agenttest.selection import lastfailed, shards
from agenttest.selection.filters import select
from agenttest import speed
from agenttest.util import files
from agenttest.util.secrets import MIN_LENGTH, Secrets
from agenttest.accounting.costs import spend_of
from agenttest.verdicts.outcome import exit_code, iso, judge_code

if TYPE_CHECKING:  # the history is imported when a run is recorded (start-up)
    from agenttest.history import store


class Session:
    """``out`` gets the console; ``events``, if given, the NDJSON event stream (``--json``)."""

    def __init__(self, config: RunConfig, out: TextIO, events: TextIO | None = None):
        self.config = config
        self.out = out
        self.secrets = Secrets()
        self.generation = Trace()  # what generating the cases (-i agents:…) spent
        self.events = EventStream(events, self.secrets) if events is not None else None
        self.cwd = os.getcwd()  # where relative paths point, whatever user code does to the working directory
        self._workers: Pool | None = None

    async def run(self) -> ExitCode:
        """The run; an error that ends it says no secret (a generator may have echoed the key into its cases)."""
        fdcapture.redact_with(self.secrets.redact)  # what user code writes outside any case is shown without keys
        try:
            return await self._run()
        except AgentTestError as exc:
            raise exc.redacted(self.secrets.redact) from None
        except BrokenPipeError:  # the reader left (agent-test … | head): the CLI says nothing more
            raise
        except Exception as exc:  # a bug of ours outside any case: exit 3, its text redacted too
            raise InternalError.of(exc).redacted(self.secrets.redact) from None

    def here(self, path: str) -> str:
        """``path`` as the user meant it when the run started (a tool's ``os.chdir`` moves no file)."""
        return os.path.join(self.cwd, path)

    async def _run(self) -> ExitCode:
        plugins.load()  # third-party plug-ins of every kind
        config = self.config
        self._check_outputs()  # -o: every target checked (its folder made) before anything runs
        baseline = None
        if config.baseline:
            from agenttest.history.baseline import Baseline

            baseline = Baseline(config.baseline)
        source = self._inputs()
        async with self._catalog(source) as caller:
            agent_id = self._agent_id(source, caller.catalog.app)
            loaded = await self._load(source, caller, agent_id)  # 1 load
            cases, note, selected = self._select(loaded, caller.catalog)  # 2 select
            previewing = config.dry_run or config.list_only
            self._workers = None if previewing else executors.pool_for(config, caller)  # they start the MCP servers
            plan, warnings = await self._plan(cases, caller.catalog, agent_id, loaded)  # 3 resolve
            if config.dry_run or config.list_only:
                if not config.outputs and source.report_folder() is not None:  # what the run would say of reports/
                    files.check_report_folder(os.path.join(caller.catalog.app.root, files.REPORTS), self.cwd)
                return await self._preview(loaded, cases, self._warnings(note, loaded, caller.catalog, warnings))
            header = header_of(plan, source.describe(len(plan.cases)), caller.catalog, selected)
            outputs = self._outputs(source, caller.catalog.app.root)
            spool = reporting.Spool() if any(o.lower().endswith(".json") for o in outputs) else None
            watch = Watch(config, plan, self.out, self.events, self.secrets, source.message is not None, len(source.files) > 1, spool)
            warnings = self._warnings(note, loaded, caller.catalog, warnings)
            watch.header(header, iso(time.time()), warnings)
            caller.catalog.traffic.listen(watch.warning)
            with execution.Signals() as signals:
                done = await execution.execute(plan, caller, watch, signals, self._workers)  # 4 run
                report = self._report(plan, done, source, caller, header, warnings)  # 5 decide, on ids as the plan has them
                shown = self.secrets.scrub(report)  # what every output shows and keeps: secrets hidden, once
                comparison = baseline.compare(shown, config.alpha) if baseline is not None else None
                code = max(comparison.gate(config.fail_on), judge_code(report)) if comparison is not None and not report.interrupted else exit_code(report)
                recording = self._remember(shown, ExitCode.INTERNAL if done.failure is not None else code, caller.catalog.app.root)  # 7 history
                written: list[str] = []
                try:
                    for path in outputs:  # 6 report
                        written.append(await self._write(shown, path, spool))
                finally:
                    if spool is not None:
                        spool.close()
                    if recording is not None:  # the JSON report's text, as written, is kept
                        recording.hand(next((self.here(w) for o, w in zip(outputs, written) if o.lower().endswith(".json")), None))
            lastfailed.save(caller.catalog.app.root, config.inputs, report.results, report.gates, self.secrets)
            watch.summary(shown, written)
            if comparison is not None:  # after the summary, ending with its banner
                from agenttest.history import diffs

                watch.lines(diffs.console_lines(comparison, config.color) + diffs.gate_lines(comparison, config.fail_on))
            if recording is not None and (problem := await asyncio.to_thread(recording.wait)):
                sys.stderr.write(f"warning: {problem}\n")
        if done.failure is not None:  # a bug of ours outside any case: exit 3, the report of what ran written
            raise InternalError.of(done.failure)
        watch.closing(shown, code)
        return code

    # -- the steps ------------------------------------------------------------------------------

    def _check_outputs(self) -> None:
        if self.config.dry_run:
            from agenttest.inputs import preview

            preview.check_outputs(self.config.outputs)
        else:
            for output in self.config.outputs:
                reporting.check_path(output)

    def _inputs(self) -> Inputs:
        """-i: files, folders, globs, messages and generators; a missing file is said as such (with a
        did-you-mean) before anything asks for its agent."""
        found, problems = expand(list(self.config.inputs))
        problems += [p for f in found if f.path and not os.path.exists(f.path) for p in load_file(f.path).problems]
        if problems:
            raise InputError(problems)
        ours = {os.path.realpath(f.path): f.path for f in found if f.path}
        for output in self.config.outputs:  # -i for -o, one letter: the report (or --dry-run's cases) would replace the suite
            if os.path.realpath(self.here(output)) in ours:
                raise AgentTestError(f"-o {output} is an input of this run: writing it would replace the cases",
                                     hint="give the report another name, e.g. -o report.json")
        return Inputs(tuple(found))

    @asynccontextmanager
    async def _catalog(self, source: Inputs) -> AsyncIterator[Caller]:
        """The app, its agents and connectors (with cassettes), and who the run acts as; closed (MCP servers
        stopped, cassettes written) however the run ends."""
        config = self.config
        root = find_root(config.app, source.path)
        if root is None:
            raise AgentTestError("no app root found (a folder with assistants/ or app.yao)", hint="pass --app DIR or set AGENTTEST_APP")
        cassettes = Cassettes.for_run(root, config, self.secrets, self.cwd)
        catalog = Catalog(App(root), self.secrets, strict=config.strict, cassettes=cassettes, traffic=Traffic(config.parallel),
                          recorded=config.calls != "none")
        try:
            ctx = read_ctx(config.ctx_file, config.strict, catalog.warnings) if config.ctx_file else {}
            caller = Caller(catalog, Identity(config.user, config.team, ctx))
            caller.loop = asyncio.get_running_loop()
            yield caller
        finally:
            if self._workers is not None:  # however the run ended, no worker outlives it
                await self._workers.aclose()
            await catalog.aclose()
            if cassettes is not None:
                await cassettes.save()

    def _agent_id(self, source: Inputs, app: App) -> str | None:
        """-n, else the agent the inputs imply; a preview of case files needs none (it then checks all that
        does not depend on the agent)."""
        agent_id = self.config.agent or source.agent_hint(app) or app.only_agent()
        previewing = self.config.dry_run or self.config.list_only
        if agent_id is None and (source.needs_agent or not previewing):
            if source.path is not None:
                agents = app.agents_under_test()
                why = f"and the app has {len(agents)} agents ({', '.join(agents)})" if agents else "and the app has no agent"
                raise AgentTestError(f"no agent for {source.path}: no package.yao above it, {why}",
                                     hint="pass -n AGENT" + (f" (e.g. -n {agents[0]})" if agents else ""))
            shown = " ".join(f"-i {t!r}" for t in self.config.inputs)
            raise AgentTestError(f"-n AGENT is required with {shown}", hint=f"known agents: {', '.join(app.agent_ids())}")
        return agent_id

    async def _load(self, source: Inputs, caller: Caller, agent_id: str | None) -> Loaded:
        try:
            agent = caller.catalog.agent(agent_id) if agent_id else None
        except AgentTestError:  # said by resolution with every other problem, unless loading needs the agent
            if source.needs_agent:
                raise
            agent = None
        token = current_trace.set(self.generation)  # what a generator agent spends is counted apart
        try:
            return await source.load(LoadEnv(self.config.simulator, agent, caller, KeyPolicy(strict=self.config.strict, max_cases=self.config.max_cases), self.config.timeout))
        finally:
            current_trace.reset(token)

    def _select(self, loaded: Loaded, catalog: Catalog) -> tuple[list[Case], str, int]:
        """-k, --run, --lf, then --shard: the cases to run, a note on the selection, how many before --shard."""
        config, cases, note = self.config, loaded.cases, ""
        if not loaded.problems and not config.dry_run:
            remembered = lastfailed.load(catalog.app.root, config.inputs, catalog.warnings) if config.last_failed else None
            cases, note = select(cases, config.run_filter, config.keyword, remembered)
        selected = len(cases)
        if config.shard is not None and not config.dry_run:
            cases = shards.take(cases, config.shard, catalog.app.root)
        return cases, note, selected

    async def _plan(self, cases: list[Case], catalog: Catalog, agent_id: str | None, loaded: Loaded) -> tuple[Plan, list[str]]:
        """The plan (MCP servers start here). Ctrl-C or SIGTERM meanwhile stops it at once: no case ran, so
        there is no report to write."""
        task = asyncio.current_task()
        assert task is not None
        with execution.Signals() as signals:
            signals.task = task
            try:
                start = self._workers.start if self._workers is not None else None
                return await planning.build(cases, catalog, agent_id, self.config, loaded.problems, start)
            except asyncio.CancelledError:
                if signals.caught is None:
                    raise
                task.uncancel()  # the stop is handled: closing the catalog may await again
        raise Interrupted(signals.caught == signal.SIGTERM)

    async def _preview(self, loaded: Loaded, cases: list[Case], warnings: list[str]) -> ExitCode:
        """--list or --dry-run: the cases on stdout (lines a program reads), and on stderr the warnings a run's
        header would give (unknown keys ignored, …): a preview checks what a run checks, and says it."""
        from agenttest.inputs import preview
        from agenttest.util.text import printable

        for warning in warnings:
            sys.stderr.write(f"warning: {printable(self.secrets.redact(warning))}\n")

        if self.config.list_only:
            preview.list_cases(cases, self.out, self.secrets)
        else:
            await preview.dry_run(loaded.cases, [self.here(o) for o in self.config.outputs], self.out, self.secrets)
        return ExitCode.OK

    def _report(self, plan: Plan, done: execution.Finished, source: Inputs, caller: Caller, header: RunHeader,
                warnings: list[str]) -> RunReport:
        catalog = caller.catalog
        return execution.report_of(
            plan, done, generation=spend_of(self.generation.by_connector, self.generation.calls, catalog.prices),
            agent_id=header.agent, agent_path=catalog.agent(plan.agent).spec.path, connector=header.connector,
            simulator=header.simulator, input_source=", ".join(source.files) or ", ".join(self.config.inputs),
            output_file=(self._outputs(source, catalog.app.root) or [""])[0], environment=caller.identity.environment(), options=self.config.options(),
            warnings=tuple(dict.fromkeys([*warnings, *done.state.warnings, *self._short_secrets(), *catalog.traffic.warnings(),
                                          *filter(None, [fdcapture.warning()]), *crashes(done.state.ordered())])),
            load=catalog.traffic.load(),
        )

    def _outputs(self, source: Inputs, root: str) -> list[str]:
        """-o, else the default report in the app's reports/ folder for case files (none for a literal message)."""
        if self.config.outputs:
            return list(self.config.outputs)
        if not hasattr(self, "_default"):
            wanted = source.report_folder() is not None
            self._default = [files.default_report(os.path.join(root, files.REPORTS), self.cwd)] if wanted else []
        return self._default

    async def _write(self, report: RunReport, path: str, spool: reporting.Spool | None = None) -> str:
        """Write one report; if that fails after the run, it is kept in a temporary file (said on stderr)."""
        is_json = path.lower().endswith(".json")
        rescued = await asyncio.to_thread(reporting.write, report, self.here(path), self.secrets, spool if is_json else None)
        if rescued is None:
            return path
        sys.stderr.write(f"warning: could not write the report to {path}; it is saved in {rescued}\n")
        return rescued

    def _remember(self, report: RunReport, code: int, root: str) -> store.Recording | None:
        """Begin adding the run to the history (FORMATS §16) unless --no-history: on a thread of its own, while
        the reports are written (``Recording``); if that fails, a warning says so."""
        if self.config.no_history:
            return None
        from agenttest.history import store

        return store.Recording(self.config.history or store.locate(None, root), report, code, self.config.inputs, self.secrets,
                               fork=speed.installed())

    def _warnings(self, note: str, loaded: Loaded, catalog: Catalog, resolved: list[str]) -> list[str]:
        """What the header says before the run: the selection's note, loading's, the catalog's, resolution's."""
        return list(dict.fromkeys([*([note] if note else []), *loaded.warnings, *catalog.warnings, *resolved, *self._short_secrets()]))

    def _short_secrets(self) -> list[str]:
        return [f"$ENV.{name} is shorter than {MIN_LENGTH} characters, so it is not hidden in output (only longer values are taken for secrets)"
                for name in self.secrets.short_names()]
