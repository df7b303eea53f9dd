"""One invocation, top to bottom, in one event loop — the table of contents of the pipeline:
load → select → resolve → run (the console watches) → decide → report → remember → exit code. Each step lives
in its stage package and returns a value; this module only passes what one step gives to the next, and says
warnings through the function the CLI gives it (it writes to no stream itself)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TextIO

from agenttest import plugins, speed
from agenttest.agents.caller import Caller
from agenttest.agents.catalog import Catalog
from agenttest.app.folders import App, find_root
from agenttest.config import RunConfig, check_environment
from agenttest.connectors.cassettes import Cassettes
from agenttest.connectors.throttle import Traffic
from agenttest.errors import AgentTestError, ExitCode, InputError, InternalError, Interrupted
from agenttest.inputs.documents import KeyPolicy, Loaded
from agenttest.inputs.reading import load_file
from agenttest.inputs import streaming
from agenttest.inputs.sources import Inputs, LoadEnv, expand
from agenttest.model import Case, Diagnostics, Plan, RunHeader, RunReport
from agenttest.resolution import planning
from agenttest.accounting.costs import spend_of
from agenttest.runner import executors
from agenttest.runner.signals import Signals
from agenttest.runtime import fdcapture
from agenttest.runtime.context import Identity, read_ctx
from agenttest.runtime.exchanges import generated_calls
from agenttest.runtime.trace import Trace, current_trace
from agenttest.selection import lastfailed, shards
from agenttest.selection.filters import select
from agenttest.util import files
from agenttest.util.secrets import MIN_LENGTH, Secrets

if TYPE_CHECKING:  # imported when used: a run without --baseline or history never imports them (start-up)
    from agenttest.history import store
    from agenttest.history.baseline import Baseline
    from agenttest.history.comparison import Comparison
    # what runs, watches, decides and reports: a preview (--list, --dry-run) imports none of it; a run imports it
    # with start-up (RUN_MODULES)
    from agenttest.reporting.events import EventStream
    from agenttest.reporting.watch import Watch
    from agenttest.runner.controller import Pool
    from agenttest.runner.execution import Finished

# The modules a run imports beyond a preview's: the CLI imports them with the rest of start-up (in
# ``collector.importing``: frozen, never scanned by the collector), a preview never does.
RUN_MODULES = ("agenttest.reporting", "agenttest.reporting.events", "agenttest.reporting.header", "agenttest.reporting.watch",
               "agenttest.runner.controller", "agenttest.runner.execution", "agenttest.verdicts.outcome")


@dataclass(frozen=True)
class Chosen:
    """What selection gives: the cases to run, how many were selected before ``--shard``, what it has to say."""

    cases: list[Case]
    selected: int
    said: Diagnostics


class Session:
    """``out`` gets the console; ``events``, if given, the NDJSON event stream (``--json``); ``warn`` each warning
    said outside the console (the CLI prints it on stderr; by default it is kept in ``warned``)."""

    def __init__(self, config: RunConfig, out: TextIO, events: TextIO | None = None, warn: Callable[[str], None] | None = None):
        self.config = config
        self.out = out
        self.secrets = Secrets()
        self.generation = Trace()  # what generating the cases (-i agents:…) spent
        self.events: EventStream | None = None
        if events is not None:
            from agenttest.reporting.events import EventStream

            self.events = EventStream(events, self.secrets)
        self.cwd = os.getcwd()  # where relative paths point, whatever user code does to the working directory
        fdcapture.redact_with(self.secrets.redact)  # what user code writes outside any case is shown without keys
        self.warned: list[str] = []
        self.warn = warn or self.warned.append
        self.workers: Pool | None = None
        self.header: RunHeader | None = None
        self.streamed = False  # the case files are read as they run, the results spooled (inputs.streaming)
        self.unstreamed: str | None = None  # why files past the threshold are held all the same
        self.sample: Plan | None = None  # a streamed run's: one item of each kind, for the header

    async def run(self) -> ExitCode:
        """The run, stage by stage; an error that ends it says no secret (a generator may have echoed the key)."""
        with self._redacting():
            plugins.load()  # third-party plug-ins of every kind
            source, baseline = self.inputs()  # -i expanded; -o and --baseline checked before anything runs
            async with self.opened(source) as caller:
                loaded = await self.load(source, caller)  # 1 load
                chosen = self.select(loaded, caller.catalog)  # 2 select
                plan, resolved = await self.resolve(chosen, caller, loaded, source)  # 3 resolve
                said = Diagnostics.of(chosen.said, loaded.warnings, caller.catalog.warnings, resolved, self._short_secrets())
                if self.config.dry_run or self.config.list_only:
                    return await self.preview(source, caller, loaded, chosen, said)
                watch = self.watch(plan, source, caller, chosen, said)
                with Signals() as signals:
                    done = await self.execute(plan, caller, watch, signals)  # 4 run
                    changed = self.changed(plan, done, after=False)
                    report = self.decide(plan, done, source, caller, said)  # 5 decide, on ids as the plan has them
                    if not changed and (changed := self.changed(plan, done, after=True)):  # found by the gates' read
                        report = self.decide(plan, done, source, caller, said)
                    shown = self.secrets.scrub(report)  # what every output shows and keeps: secrets hidden, once
                    code, comparison = self.verdict(shown, baseline)
                    code = max(code, ExitCode.USAGE) if changed else code  # not the suite that was checked: never green
                    recording = self.record(shown, ExitCode.INTERNAL if done.failure is not None else code, caller)  # 7, begun
                    written = await self.write(shown, watch, recording)  # 6 report
                self.remember(report, caller)  # 7
                await self.stopped()  # the workers, told to stop as the run ended, stopped while the report was written
                self.summary(watch, shown, written, comparison)
                await self.recorded(recording)
            return self.ended(watch, shown, code, done)

    def changed(self, plan: Plan, done: Finished, after: bool) -> str | None:
        """Where a streamed run's case file changed since it was checked (None: it did not, or the run held its
        cases): said, and the run marked stopped early — never a green run of cases nobody checked (exit 2)."""
        where = getattr(plan.items, "changed", None) if self.streamed else None
        if where:
            done.state.warnings.append(streaming.changed_said(where, after))
            done.state.stopped_early = True
        return where

    def here(self, path: str) -> str:
        """``path`` as the user meant it when the run started (a tool's ``os.chdir`` moves no file)."""
        return os.path.join(self.cwd, path)

    # -- the stages --------------------------------------------------------------------------------

    def inputs(self) -> tuple[Inputs, Baseline | None]:
        """-o: every target checked (its folder made); --baseline read; -i: files, folders, globs, messages and
        generators, a missing file said as such (with a did-you-mean) before anything asks for its agent; the
        environment's settings (AGENTTEST_*) checked."""
        check_environment()
        self._check_outputs()
        baseline = None
        if self.config.baseline:
            from agenttest.history.baseline import Baseline

            baseline = Baseline(self.config.baseline)
        found, problems = expand(list(self.config.inputs))
        problems += [p for f in found if f.path and not os.path.exists(f.path) for p in load_file(f.path).problems]
        if problems:
            raise InputError(problems)
        ours = {os.path.realpath(f.path): f.path for f in found if f.path}
        for output in self.config.outputs:  # -i for -o, one letter: the report (or --dry-run's cases) would replace the suite
            if os.path.realpath(self.here(output)) in ours:
                raise AgentTestError(f"-o {output} is an input of this run: writing it would replace the cases",
                                     hint="give the report another name, e.g. -o report.json")
        inputs = Inputs(tuple(found))
        self.streamed, self.unstreamed = streaming.engaged(self.config, inputs)
        return inputs, baseline

    @asynccontextmanager
    async def opened(self, source: Inputs) -> AsyncIterator[Caller]:
        """The app, its agents and connectors (with cassettes), and who the run acts as; closed (workers and MCP
        servers stopped, cassettes written) however the run ends."""
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
            # the workers, made now: Ray actors on a cluster joined by its address start while the cases load
            self.workers = None if config.dry_run or config.list_only or self.streamed else executors.pool_for(config, caller)
            yield caller
        finally:
            if self.workers is not None:  # however the run ended, no worker outlives it
                await self.workers.aclose()
            await catalog.aclose()
            if cassettes is not None:
                await cassettes.save()

    async def load(self, source: Inputs, caller: Caller) -> Loaded:
        """1 load: the cases of every -i, with every problem and warning found."""
        self.agent_id = self._agent_id(source, caller.catalog.app)
        try:
            agent = caller.catalog.agent(self.agent_id) if self.agent_id else None
        except AgentTestError:  # said by resolution with every other problem, unless loading needs the agent
            if source.needs_agent:
                raise
            agent = None
        if self.streamed:  # read, a part at a time, when the plan is checked (resolve) and again as the cases run
            return Loaded()
        token = current_trace.set(self.generation)  # what a generator agent spends is counted apart
        try:
            policy = KeyPolicy(strict=self.config.strict, max_cases=self.config.max_cases)
            loaded = await source.load(LoadEnv(self.config.simulator, agent, caller, policy, self.config.timeout))
            loaded.warnings += [self.unstreamed] if self.unstreamed else []
            return loaded
        finally:
            current_trace.reset(token)

    def select(self, loaded: Loaded, catalog: Catalog) -> Chosen:
        """2 select: -k, --run, --lf, then --shard."""
        config, cases, note = self.config, loaded.cases, ""
        if not loaded.problems and not config.dry_run:
            failed = lastfailed.load(catalog.app.root, config.inputs, catalog.warnings) if config.last_failed else None
            cases, note = select(cases, config.run_filter, config.keyword, failed)
        selected = len(cases)
        if config.shard is not None and not config.dry_run:
            cases = shards.take(cases, config.shard, catalog.app.root)
        return Chosen(cases, selected, Diagnostics.of([note]))

    async def resolve(self, chosen: Chosen, caller: Caller, loaded: Loaded, source: Inputs) -> tuple[Plan, Diagnostics]:
        """3 resolve: the plan, every problem in one round (the workers, made as the run opened, or the MCP servers,
        start here; a streamed run checks its files a part at a time). Ctrl-C or SIGTERM meanwhile stops it at once:
        no case ran, so there is no report to write."""
        task = asyncio.current_task()
        assert task is not None
        with Signals() as signals:
            signals.task = task
            try:
                if self.streamed:
                    from agenttest.reporting.header import kind_of

                    plan, self.sample, said = await streaming.check(source, caller.catalog, self.agent_id, self.config, kind_of)
                    return plan, Diagnostics.of(said)
                start = self.workers.start if self.workers is not None else None
                problems = [*loaded.problems, *planning.unbuilt_problems(loaded.unbuilt, caller.catalog, self.agent_id, self.config)]
                return await planning.build(chosen.cases, caller.catalog, self.agent_id, self.config, problems, start)
            except asyncio.CancelledError:
                if signals.caught is None:
                    raise
                task.uncancel()  # the stop is handled: closing the catalog may await again
        raise Interrupted(signals.caught == signal.SIGTERM)

    async def preview(self, source: Inputs, caller: Caller, loaded: Loaded, chosen: Chosen, said: Diagnostics) -> ExitCode:
        """--list or --dry-run: the cases on stdout (lines a program reads), and the warnings a run's header would
        give (unknown keys ignored, …): a preview checks what a run checks, and says it."""
        from agenttest.inputs import preview
        from agenttest.util.text import printable

        if not self.config.outputs and source.report_folder() is not None:  # what the run would say of reports/
            files.check_report_folder(os.path.join(caller.catalog.app.root, files.REPORTS), self.cwd)
        for warning in said:
            self.warn(printable(self.secrets.redact(warning)))
        if self.config.list_only:
            preview.list_cases(chosen.cases, self.out, self.secrets)
        else:
            await preview.dry_run(loaded.cases, [self.here(o) for o in self.config.outputs], self.out, self.secrets)
        return ExitCode.OK

    def watch(self, plan: Plan, source: Inputs, caller: Caller, chosen: Chosen, said: Diagnostics) -> Watch:
        """The console (and the event stream) that watch the run, told of its header and warnings."""
        from agenttest import reporting
        from agenttest.reporting.header import header_of
        from agenttest.reporting.watch import Watch
        from agenttest.verdicts.outcome import iso

        self.header = header_of(self.sample or plan, self.config, source.describe(plan.case_count()), caller.catalog, chosen.selected)
        if self.streamed:
            self.header = replace(self.header, total=plan.total, notes=(*self.header.notes, ("Streamed", streaming.NOTE)))
        self.outputs = self._outputs(source, caller.catalog.app.root)
        spool = reporting.Spool() if any(o.lower().endswith(".json") for o in self.outputs) and not self.streamed else None
        watch = Watch(self.config, plan, self.out, self.events, self.secrets, source.message is not None, len(source.files) > 1, spool)
        watch.header(self.header, iso(time.time()), list(said + self.header.warnings))
        caller.catalog.traffic.listen(watch.warning)
        return watch

    async def execute(self, plan: Plan, caller: Caller, watch: Watch, signals: Signals) -> Finished:
        """4 run: the plan scheduled on the workers (or here), the console watching."""
        from agenttest.runner import execution

        return await execution.execute(plan, caller, watch, signals, self.workers)

    def decide(self, plan: Plan, done: Finished, source: Inputs, caller: Caller, said: Diagnostics) -> RunReport:
        """5 decide: the report of what ran — verdicts, gates, costs — and what the run said."""
        from agenttest.runner.controller import crashes
        from agenttest.verdicts.outcome import decide

        catalog, header = caller.catalog, self.header
        assert header is not None
        warnings = (said + header.warnings + done.state.warnings + self._short_secrets() + catalog.traffic.warnings() + filter(None, [fdcapture.warning()])
                    + crashes(done.state.ordered()))
        return decide(
            plan, done.ran(), self.config.confidence, self.config.alpha, generation=spend_of(self.generation.by_connector, self.generation.calls, catalog.prices),
            generation_calls=generated_calls(self.generation, self.config.calls, done.state.ordered()),
            agent_id=header.agent, agent_path=catalog.agent(plan.agent).spec.path, connector=header.connector,
            simulator=header.simulator, input_source=", ".join(source.files) or ", ".join(self.config.inputs),
            output_file=(self.outputs or [""])[0], environment=caller.identity.environment(), options=self.config.options(),
            warnings=warnings.warnings, load=catalog.traffic.load(), players=header.players)

    def verdict(self, report: RunReport, baseline: Baseline | None) -> tuple[ExitCode, Comparison | None]:
        """The exit code: the gates', or with --baseline the comparison's."""
        from agenttest.verdicts.outcome import exit_code, judge_code

        comparison = baseline.compare(report, self.config.alpha) if baseline is not None else None
        code = max(comparison.gate(self.config.fail_on), judge_code(report)) if comparison is not None and not report.interrupted else exit_code(report)
        return code, comparison

    async def write(self, report: RunReport, watch: Watch, recording: store.Recording | None = None) -> list[str]:
        """6 report: one file per -o (or the default report); one that cannot be written after the run is kept in
        a temporary file, and said. Returns the files as written; ``recording`` hears where the JSON report is (or
        that the reports were not written: it records nothing)."""
        from agenttest import reporting

        written: list[str] = []
        try:
            for path in self.outputs:
                spool = watch.spool if path.lower().endswith(".json") else None
                rescued = await asyncio.to_thread(reporting.write, report, self.here(path), self.secrets, spool)
                if rescued is not None:
                    self.warn(f"could not write the report to {path}; it is saved in {rescued}")
                written.append(rescued or path)
        except BaseException:
            if recording is not None:
                recording.abandon()
            raise
        finally:
            if watch.spool is not None:
                watch.spool.close()
        if recording is not None:
            recording.written(next((self.here(w) for o, w in zip(self.outputs, written) if o.lower().endswith(".json")), None))
        return written

    def record(self, shown: RunReport, code: int, caller: Caller) -> store.Recording | None:
        """7 remember, begun: the run as shown added to the history (FORMATS §16) unless --no-history — in a forked
        copy of the command's process, its verdicts while the reports are written and the summary printed; the JSON
        report's text kept once it is written (``Recording``). A streamed run is not recorded: its results stay in its
        reports (docs/scale.md)."""
        if self.config.no_history or self.streamed:
            return None
        from agenttest.history import store

        return store.Recording(self.config.history or store.locate(None, caller.catalog.app.root), shown, code, self.config.inputs,
                               self.secrets, fork=speed.installed())

    async def stopped(self) -> None:
        """The workers, told to stop as the run ended (``Pool.aclose``), have stopped: what they said last (output
        written outside any case) comes before the summary."""
        if self.workers is not None:
            await self.workers.stopped()

    def remember(self, report: RunReport, caller: Caller) -> None:
        """7 remember: the cases that did not pass (--lf; by their ids as the plan has them)."""
        lastfailed.save(caller.catalog.app.root, self.config.inputs, report.results, report.gates, self.secrets)

    def summary(self, watch: Watch, report: RunReport, written: list[str], comparison: Comparison | None) -> None:
        """The summary, and with --baseline the comparison after it, ending with its banner."""
        watch.summary(report, written)
        if comparison is not None:
            from agenttest.history import diffs

            watch.lines(diffs.console_lines(comparison, self.config.color) + diffs.gate_lines(comparison, self.config.fail_on))

    async def recorded(self, recording: store.Recording | None) -> None:
        """The history's recording finished; if it failed, a warning says so (the run's verdict never depends on it)."""
        if recording is not None and (problem := await asyncio.to_thread(recording.wait)):
            self.warn(problem)

    def ended(self, watch: Watch, shown: RunReport, code: ExitCode, done: Finished) -> ExitCode:
        """The run's end: a bug of ours outside any case is exit 3 (the report of what ran written); else the
        event stream's summary, and the exit code."""
        if done.failure is not None:
            raise InternalError.of(done.failure)
        watch.closing(shown, code)
        return code

    # -- helpers -------------------------------------------------------------------------------------

    @contextmanager
    def _redacting(self) -> Iterator[None]:
        try:
            yield
        except AgentTestError as exc:
            raise exc.redacted(self.secrets.redact) from None
        except BrokenPipeError:  # the reader left (agent-test … | head): the CLI says nothing more
            raise
        except Exception as exc:  # a bug of ours outside any case: exit 3, its text redacted too
            raise InternalError.of(exc).redacted(self.secrets.redact) from None

    def _check_outputs(self) -> None:
        if self.config.dry_run:
            from agenttest.inputs import preview

            preview.check_outputs(self.config.outputs)
        else:
            for output in self.config.outputs:
                from agenttest import reporting  # here: --list (which takes no -o) never imports the report writers

                reporting.check_path(output)
            if self.config.history and not self.config.no_history and not self.config.list_only:
                from agenttest.history import store

                store.check_path(self.here(self.config.history), self.config.history)  # --history /dev/null: said before the run, not after it

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

    def _outputs(self, source: Inputs, root: str) -> list[str]:
        """-o, else the default report in the app's reports/ folder for case files (none for a literal message)."""
        if self.config.outputs:
            return list(self.config.outputs)
        return [files.default_report(os.path.join(root, files.REPORTS), self.cwd)] if source.report_folder() is not None else []

    def _short_secrets(self) -> list[str]:
        return [f"$ENV.{name} is shorter than {MIN_LENGTH} characters, so it is not hidden in output (only longer values are taken for secrets)"
                for name in self.secrets.short_names()]
