"""One invocation, top to bottom: load → select → resolve → run (the console watches) → report → exit code."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from dataclasses import replace
from datetime import datetime
from typing import Any, TextIO

from . import inputs, reporting
from .app import App, find_root
from .config import RunConfig
from .errors import AgentTestError, ExitCode
from .model import Case
from .reporting.console import Console
from .results import exit_code, make_report
from .runner import Plan, RunState
from .runtime import Runtime, read_ctx

DRY_RUN_FORMATS = (".jsonl", ".json", ".yaml", ".yml")


def default_output(input_path: str) -> str:
    """``output-YYYYMMDDHHMMSS.json`` beside the case file."""
    stamp = datetime.now().strftime("%Y%m%d%H%M%S")
    return os.path.join(os.path.dirname(input_path) or ".", f"output-{stamp}.json")


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
    def __init__(self, config: RunConfig, out: TextIO):
        if config.ctx_file:
            config = replace(config, ctx=read_ctx(config.ctx_file))
        self.config = config
        self.out = out
        self.source = inputs.classify(config.input)
        self._app: App | None = None

    # -- resolution ----------------------------------------------------------------------------

    @property
    def app(self) -> App:
        if self._app is None:
            root = find_root(self.config.app, self.source.path)
            if root is None:
                raise AgentTestError("no app root found (a folder with assistants/ or app.yao)", hint="pass --app DIR or set AGENTTEST_APP")
            self._app = App(root)
        return self._app

    def agent_id(self) -> str | None:
        if self.config.agent:
            return self.config.agent
        if self.source.kind == "file":
            folder = os.path.dirname(os.path.abspath(self.source.value))
            root = os.path.abspath(os.path.join(self.app.root, "assistants"))
            while folder.startswith(root) and folder != root:
                if os.path.isfile(os.path.join(folder, "package.yao")):
                    return self.app.agent_id_for(folder)
                folder = os.path.dirname(folder)
            raise AgentTestError(f"no agent for {self.source.value}: no package.yao above it", hint="pass -n AGENT")
        if self.source.kind in ("message", "script-tests") or not self.config.dry_run:
            raise AgentTestError(f"-n AGENT is required with -i {self.config.input!r}", hint=f"known agents: {', '.join(self.app.agent_ids())}")
        return None

    def load(self, runtime: Runtime | None) -> list[Case]:
        kind = self.source.kind
        if kind in ("file", "message"):
            return inputs.load(self.source, self.config.simulator)
        assert runtime is not None
        if kind == "script-tests":
            from . import scripttest

            return scripttest.collect(runtime.agent, self.source.value)
        return asyncio.run(self._generate(runtime))

    async def _generate(self, runtime: Runtime) -> list[Case]:
        try:
            return await inputs.generate(self.source, runtime, self.config.simulator)
        finally:
            await runtime.app.aclose()

    # -- the pipeline --------------------------------------------------------------------------

    def run(self) -> ExitCode:
        from .assertions import load_plugins

        load_plugins()  # third-party assertion types, connectors and report formats
        config = self.config
        if config.output:
            if config.dry_run:
                if os.path.splitext(config.output)[1].lower() not in DRY_RUN_FORMATS:
                    raise AgentTestError(f"-o {config.output}: --dry-run writes cases as {', '.join(DRY_RUN_FORMATS)}")
            else:
                reporting.check_path(config.output)
        needs_runtime = self.source.kind not in ("file", "message") or not config.dry_run
        runtime = Runtime(self.app, config, self.agent_id()) if needs_runtime else None
        cases = self.load(runtime)
        if config.dry_run:
            return self.dry_run(cases)
        assert runtime is not None
        cases = select(cases, config.run)
        runtime.prepare(cases)
        plan = self.plan(cases, runtime)
        return self.execute(plan, runtime)

    def dry_run(self, cases: list[Case]) -> ExitCode:
        rows = [inputs.normalized(c) for c in cases]
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
            reporting.write_atomic(self.config.output, text)
        return ExitCode.OK

    def plan(self, cases: list[Case], runtime: Runtime) -> Plan:
        from . import hooks

        agent = runtime.agent
        assert agent is not None
        refs = {ref for c in cases for ref in (c.before, c.after) if ref}
        problems = []
        case_hooks = {}
        for ref in sorted(refs):
            try:
                case_hooks[ref] = hooks.resolve(agent.spec.path, ref, "hook")
            except AgentTestError as exc:
                problems.extend(exc.problems)
        before_all = after_all = None
        try:
            if self.config.before:
                before_all = hooks.resolve(agent.spec.path, self.config.before, "--before")
            if self.config.after:
                after_all = hooks.resolve(agent.spec.path, self.config.after, "--after")
        except AgentTestError as exc:
            problems.extend(exc.problems)
        if problems:
            from .errors import InputError

            raise InputError(problems)
        return Plan(cases, self.config.runs, self.config.parallel, self.config.timeout, self.config.fail_fast, before_all, after_all, case_hooks)

    def header(self, cases: list[Case], runtime: Runtime) -> dict[str, Any]:
        """What the console header and the report say about the run."""
        config = self.config
        try:
            per_case = not config.connector and any(c.options.get("connector") for c in cases)
            connector = "per case" if per_case else runtime.connector_for(None)
        except AgentTestError:
            connector = ""
        simulators = sorted({c.simulator.use if c.simulator else (config.simulator or "") for c in cases if c.dynamic} - {""})
        return {
            "agent": (config.agent or runtime.agent.id) if runtime.agent else "", "connector": connector,
            "simulator": ", ".join(simulators), "input": self.source.describe(len(cases)), "timeout": config.timeout,
            "total": len(cases) * config.runs, "runs": config.runs, "dynamic": any(c.dynamic for c in cases),
        }

    def execute(self, plan: Plan, runtime: Runtime) -> ExitCode:
        from . import runner

        config = self.config
        info = self.header(plan.cases, runtime)
        console = Console(self.out, config.color, config.verbose, config.parallel, progress=sys.stderr.isatty(),
                          show_reply=self.source.kind == "message", secrets=runtime.app.secrets)
        console.header(info, list(dict.fromkeys(runtime.app.warnings)))
        state = RunState()
        interrupted = False
        try:
            asyncio.run(runner.run(plan, runtime, state, lambda c, r: console.started(c, r, config.runs), lambda r: console.finished(r, config.runs)))
        except KeyboardInterrupt:
            interrupted = True
        output = config.output
        if output is None and self.source.kind == "file":
            output = default_output(self.source.value)
        report = make_report(
            state.ordered(), state.started_at, (time.perf_counter() - state.started) * 1000, config.runs,
            agent_id=info["agent"], agent_path=runtime.agent.spec.path if runtime.agent else "", connector=info["connector"],
            simulator=info["simulator"], input_source=self.source.value if self.source.kind == "file" else config.input,
            output_file=output or "", environment=runtime.environment(), options=self.options(),
            interrupted=interrupted, stopped_early=state.stopped_early,
            not_run=max(0, state.total - len(state.results)) if (state.stopped_early or interrupted) else 0,
            warnings=tuple(state.warnings),
        )
        if output:
            reporting.write(report, output, sorted(runtime.app.secrets))
        console.summary(report, output)
        return exit_code(report)

    def options(self) -> dict[str, Any]:
        c = self.config
        return {k: v for k, v in {
            "timeout": c.timeout, "parallel": c.parallel, "runs": c.runs, "run": c.run, "fail_fast": c.fail_fast,
            "connector": c.connector, "simulator": c.simulator, "before": c.before, "after": c.after,
            "user": c.user, "team": c.team, "ctx": c.ctx_file,
        }.items() if v not in (None, False)}

