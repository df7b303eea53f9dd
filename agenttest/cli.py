"""The ``agent-test`` command: flags → RunConfig → load → select → resolve → run → report → exit code.

The only place that prints errors and exits."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
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


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}, epilog=EPILOG)
@click.option("-i", "--input", "input_", required=True, metavar="SOURCE",
              help="Input: a case file (.jsonl/.json/.yaml), a literal message, agents:ID?count=N, scripts:mod.func, or scripts.NAME (script tests).")
@click.option("-n", "--name", "agent", metavar="AGENT", help="Agent under test, e.g. assistants.expense  [default: nearest package.yao above the case file]")
@click.option("-o", "--output", metavar="FILE", help="Report file; format by extension: .json .jsonl .md .html .xml  [default: output-<timestamp>.json beside a case file]")
@click.option("-c", "--connector", metavar="ID", help="Override the connector of the agent under test, e.g. openai.gpt-4o-mini  [default: from the case, else package.yao]")
@click.option("-u", "--user", metavar="ID", help="Test user ID  [default: the case's user, else --ctx, else test-user]")
@click.option("-t", "--team", metavar="ID", help="Test team ID  [default: the case's team, else --ctx, else test-team]")
@click.option("-v", "--verbose", is_flag=True, help="Show outputs and tool calls under every case  [default: off]")
@click.option("--ctx", "ctx_file", metavar="FILE", help="Context JSON: chat_id, locale, authorized, metadata, client  [default: none]")
@click.option("--simulator", metavar="AGENT", help="Simulator agent for dynamic cases without one, e.g. workers.test.user-simulator  [default: none]")
@click.option("--before", metavar="REF", callback=_ref, help="Global before hook in the agent's src/, e.g. env_test.BeforeAll  [default: none]")
@click.option("--after", metavar="REF", callback=_ref, help="Global after hook in the agent's src/, e.g. env_test.AfterAll  [default: none]")
@click.option("--timeout", default="5m", show_default=True, callback=_duration, metavar="DURATION", help="Timeout per test case: 30s, 2m30s, 1h or seconds.")
@click.option("--parallel", default=1, show_default=True, type=click.IntRange(1, 1000), metavar="N", help="Number of test cases run at once.")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1, 1000), metavar="N", help="Run each case N times and report stability.")
@click.option("--run", "run_filter", metavar="REGEX", callback=_regex, help="Run only cases whose id matches (a search, like pytest -k)  [default: all]")
@click.option("--fail-fast", is_flag=True, help="Stop scheduling cases after the first that does not pass  [default: off]")
@click.option("--dry-run", is_flag=True, help="Load (or generate) the cases and print them as JSON lines without running  [default: off]")
@click.option("--app", "app_dir", metavar="DIR", help="App root  [default: $AGENTTEST_APP, else the nearest folder with assistants/ above the input or the current folder]")
@click.version_option(package_name="agenttest", prog_name="agent-test")
def main(**flags: Any) -> None:
    """Test LLM agents: run test cases against an agent and report the verdicts."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    try:
        config = RunConfig(
            input=flags["input_"], agent=flags["agent"], output=flags["output"], connector=flags["connector"],
            user=flags["user"], team=flags["team"], verbose=flags["verbose"], ctx_file=flags["ctx_file"],
            simulator=flags["simulator"], before=flags["before"], after=flags["after"], timeout=flags["timeout"],
            parallel=flags["parallel"], runs=flags["runs"], run_filter=flags["run_filter"], fail_fast=flags["fail_fast"],
            dry_run=flags["dry_run"], app=flags["app_dir"], color=color,
        )
        from .session import Session

        code = asyncio.run(Session(config, sys.stdout).run())
    except AgentTestError as exc:
        click.echo(f"Error: {exc.format_message()}", err=True)
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
        sys.exit(ExitCode.INTERNAL)
    sys.exit(code)


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
