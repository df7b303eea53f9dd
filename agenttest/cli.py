"""The ``agent-test`` command: flags → RunConfig → Session → exit code; and its subcommands.

``agent-test [OPTIONS]`` runs tests (the ``run`` command is the default); ``agent-test COMMAND …`` runs a
subcommand. The only place that prints errors and exits."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

from .config import RunConfig, parse_duration
from .errors import AgentTestError, ExitCode, InternalError

EPILOG = """\b
Examples:
  agent-test -i assistants/expense/tests/inputs.jsonl -n assistants.expense
  agent-test -i "Hello, how are you?" -n expense
  agent-test -i "agents:workers.test.generator?count=10" -n expense --dry-run
  agent-test -i assistants/expense/tests/dynamic.jsonl --parallel 4 -o report.html

Exit codes: 0 all passed, 1 a case failed/errored/timed out, 2 bad usage or input, 3 internal error,
130 interrupted, 143 terminated.
Docs: docs/README.md"""

SECTIONS = ("Input and selection", "Running", "Output", "Other")


class Option(click.Option):
    """An option that belongs to a section of ``--help``."""

    def __init__(self, *args: Any, section: str = "Other", **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.section = section


class RunCommand(click.Command):
    """Shows its options grouped by section, and the subcommands after them."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.find_root().info_name or "agent-test", "[OPTIONS]   (or: COMMAND [ARGS]...)")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, list[tuple[str, str]]] = {s: [] for s in SECTIONS}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                rows[getattr(param, "section", "Other")].append(record)
        for section in SECTIONS:
            if rows[section]:
                with formatter.section(section):
                    formatter.write_dl(rows[section])
        group = ctx.parent.command if ctx.parent is not None else None
        if isinstance(group, click.Group):
            commands = [(name, cmd.get_short_help_str(80)) for name, cmd in group.commands.items() if name != "run"]
            if commands:
                with formatter.section("Commands (agent-test COMMAND --help)"):
                    formatter.write_dl(commands)


class Main(click.Group):
    """``agent-test`` with no command name runs tests; a known command name runs that command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:  # ``agent-test run --help``
        self.commands["run"].format_help(ctx, formatter)


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _regex(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise click.BadParameter(f"{value!r} does not compile: {exc}") from None
    return value


def _ref(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[\w.]+\.\w+", value):
        raise click.BadParameter(f"{value!r} must be <module>.<Function>, e.g. env_test.BeforeAll")
    return value


def finish(work: Callable[[], int], events: bool = False) -> None:
    """Run a command's work and exit with its code; every error becomes a message and an exit code
    (with ``--json``, also an ``error`` event on stdout)."""
    try:
        code = work()
    except AgentTestError as exc:
        click.echo(f"Error: {exc.format_message()}", err=True)
        if events:
            _error_event(exc.format_message(), exc.exit_code)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # agent-test … | head: the reader left before the verdict; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(ExitCode.FAILED)
    except Exception as exc:  # a bug of ours before or after the run: say so, with what to report
        import traceback

        error = InternalError(f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc)))
        click.echo(f"Error: {error.format_message()}", err=True)
        if events:
            _error_event(error.format_message(), ExitCode.INTERNAL)
        sys.exit(ExitCode.INTERNAL)
    sys.exit(code)


def _error_event(message: str, code: int) -> None:
    from .reporting.events import EventStream

    EventStream(sys.stdout).error(message, code)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def main() -> None:
    """Test LLM agents: run test cases against an agent and report the verdicts."""


@main.command("run", cls=RunCommand, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-i", "--input", "input_", required=True, metavar="SOURCE", cls=Option, section="Input and selection",
              help="Input: a case file (.jsonl/.json/.yaml), a literal message, agents:ID?count=N, scripts:mod.func, or scripts.NAME (script tests).")
@click.option("-n", "--name", "agent", metavar="AGENT", cls=Option, section="Input and selection",
              help="Agent under test, e.g. assistants.expense  [default: nearest package.yao above the case file]")
@click.option("--run", "run_filter", metavar="REGEX", callback=_regex, cls=Option, section="Input and selection",
              help="Run only cases whose id matches (a search, like pytest -k)  [default: all]")
@click.option("--dry-run", is_flag=True, cls=Option, section="Input and selection",
              help="Load (or generate) the cases and print them as JSON lines without running  [default: off]")
@click.option("--app", "app_dir", metavar="DIR", cls=Option, section="Input and selection",
              help="App root  [default: $AGENTTEST_APP, else the nearest folder with assistants/ above the input or the current folder]")
@click.option("-c", "--connector", metavar="ID", cls=Option, section="Running",
              help="Override the connector of the agent under test, e.g. openai.gpt-4o-mini  [default: from the case, else package.yao]")
@click.option("-u", "--user", metavar="ID", cls=Option, section="Running", help="Test user ID  [default: the case's user, else --ctx, else test-user]")
@click.option("-t", "--team", metavar="ID", cls=Option, section="Running", help="Test team ID  [default: the case's team, else --ctx, else test-team]")
@click.option("--ctx", "ctx_file", metavar="FILE", cls=Option, section="Running",
              help="Context JSON: chat_id, locale, authorized, metadata, client  [default: none]")
@click.option("--simulator", metavar="AGENT", cls=Option, section="Running",
              help="Simulator agent for dynamic cases without one, e.g. workers.test.user-simulator  [default: none]")
@click.option("--before", metavar="REF", callback=_ref, cls=Option, section="Running",
              help="Global before hook in the agent's src/, e.g. env_test.BeforeAll  [default: none]")
@click.option("--after", metavar="REF", callback=_ref, cls=Option, section="Running",
              help="Global after hook in the agent's src/, e.g. env_test.AfterAll  [default: none]")
@click.option("--timeout", default="5m", show_default=True, callback=_duration, metavar="DURATION", cls=Option, section="Running",
              help="Timeout per test case: 30s, 2m30s, 1h or seconds.")
@click.option("--parallel", default=1, show_default=True, type=click.IntRange(1, 1000), metavar="N", cls=Option, section="Running",
              help="Number of test cases run at once.")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1, 1000), metavar="N", cls=Option, section="Running",
              help="Run each case N times and report stability.")
@click.option("--fail-fast", is_flag=True, cls=Option, section="Running",
              help="Stop scheduling cases after the first that does not pass  [default: off]")
@click.option("-o", "--output", metavar="FILE", cls=Option, section="Output",
              help="Report file; format by extension: .json .jsonl .md .html .xml  [default: output-<timestamp>.json beside a case file]")
@click.option("-v", "--verbose", is_flag=True, cls=Option, section="Output", help="Show outputs and tool calls under every case  [default: off]")
@click.option("--json", "json_events", is_flag=True, cls=Option, section="Output",
              help="Stream NDJSON events (start, result, summary) to stdout for other programs; the console goes to stderr  [default: off]")
@click.version_option(package_name="agenttest", prog_name="agent-test", cls=Option, section="Other")
@click.help_option("-h", "--help", cls=Option, section="Other", help="Show this message and exit.")
def run_command(**flags: Any) -> None:
    """Test LLM agents: run test cases against an agent and report the verdicts."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def work() -> int:
        config = RunConfig(
            input=flags["input_"], agent=flags["agent"], output=flags["output"], connector=flags["connector"],
            user=flags["user"], team=flags["team"], verbose=flags["verbose"], ctx_file=flags["ctx_file"],
            simulator=flags["simulator"], before=flags["before"], after=flags["after"], timeout=flags["timeout"],
            parallel=flags["parallel"], runs=flags["runs"], run_filter=flags["run_filter"], fail_fast=flags["fail_fast"],
            dry_run=flags["dry_run"], app=flags["app_dir"], color=color and not flags["json_events"], json=flags["json_events"],
        )
        from .session import Session

        if config.json:  # stdout carries the events; the console goes to stderr
            return asyncio.run(Session(config, sys.stderr, events=sys.stdout).run())
        return asyncio.run(Session(config, sys.stdout).run())

    finish(work, events=flags["json_events"])


def entry() -> None:
    """The ``agent-test`` script: ``main``, then leave even if user code left threads running."""
    try:
        main(prog_name="agent-test")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
            # a tool or hook started a thread that never ends: the report is written, so do not wait for it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        raise
