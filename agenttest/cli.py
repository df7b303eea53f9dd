"""The ``agent-test`` command: flags → RunConfig → Session → exit code; and its subcommands.

``agent-test [OPTIONS]`` runs tests (the ``run`` command is the default); ``agent-test COMMAND …`` runs a
subcommand. The only place that prints errors and exits."""

from __future__ import annotations

from agenttest.speed import collector

with collector.importing():  # the CLI's own imports (click, the run's configuration): ~20,000 objects, no garbage
    import difflib
    import importlib
    import os
    import re
    import sys
    from collections.abc import Callable
    from dataclasses import replace
    from typing import Any

    import click

    from agenttest import speed
    from agenttest.config import MAX_RUNS, RunConfig
    from agenttest.errors import AgentTestError, ExitCode, InternalError
    from agenttest.util.durations import parse_duration, parse_size
    from agenttest.version import __version__

EPILOG = """\b
Examples:
  agent-test -i assistants/expense/tests/inputs.jsonl -n assistants.expense
  agent-test -i "Hello, how are you?" -n expense
  agent-test -i "agents:workers.test.generator?count=10" -n expense --dry-run
  agent-test -i assistants/expense/tests/dynamic.jsonl --parallel 4 -o report.html

Exit codes: 0 all passed, 1 a case failed/errored/timed out (with --runs: missed its gate), 2 bad usage or input, 3 internal error,
130 interrupted, 143 terminated.
Docs: docs/README.md in the agent-test source (every page is plain Markdown)."""

SECTIONS = ("Input and selection", "Running", "Output", "Other")
SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}  # every command's


class Count(click.IntRange):
    """A whole number in a range: ``--runs three`` says "'three' is not a valid whole number" (click's own name for
    its type, "integer range", read as if a range such as 1-5 were wanted)."""

    name = "whole number"


class Option(click.Option):
    """An option that belongs to a section of ``--help``; ``formats`` fills ``{formats}`` in its help, when the help
    is shown, with the formats the registry knows (``reporting.formats``: ``report`` or ``comparison``)."""

    def __init__(self, *args: Any, section: str = "Other", formats: str = "", **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.section = section
        self.formats = formats

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.formats and self.help and "{formats}" in self.help:
            from agenttest.reporting import formats

            known = formats.report_formats() if self.formats == "report" else _comparison_formats()
            self.help = self.help.replace("{formats}", " ".join(known))
        return super().get_help_record(ctx)


def _comparison_formats() -> list[str]:
    from agenttest.history import diffs  # noqa: F401 — registers the built-in comparison formats
    from agenttest.reporting import formats

    return formats.comparison_formats()


# flags of ``yao agent test`` that agent-test does not have, and what to use instead
YAO_ONLY = {"-r": "Yao's -r (a reporter agent) is not supported: write the report with -o report.html or -o report.md "
                  "(docs/migrating-from-yao.md)"}
# options of other commands (or other tools) given to a run, and what a run takes instead
ELSEWHERE = {"--diff": "To compare this run with an earlier report, use --baseline REPORT.json; to compare two reports, "
                       "agent-test diff BASE.json NEW.json",
             "--merge": "To join shard reports, use agent-test merge A.json B.json … -o all.json",
             "--compare": "To compare this run with an earlier report, use --baseline REPORT.json"}


class RunCommand(click.Command):
    """Shows its options grouped by section, and the subcommands after them. A usage error still
    gives ``--json`` readers their ``error`` event; a flag only Yao has says what to use instead."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, list(args), parent=parent, **extra)
        except click.NoSuchOption as exc:
            if exc.option_name in YAO_ONLY:
                exc = click.NoSuchOption(exc.option_name, f"No such option: {exc.option_name}. {YAO_ONLY[exc.option_name]}", ctx=exc.ctx)
            elif exc.option_name in ELSEWHERE:
                exc = click.NoSuchOption(exc.option_name, f"No such option: {exc.option_name}. {ELSEWHERE[exc.option_name]}", ctx=exc.ctx)
            if "--json" in args:
                _error_event(exc.format_message(), ExitCode.USAGE)
            raise exc from None
        except click.UsageError as exc:
            exc = _extra_argument(exc, ctx=parent) or exc
            if "--json" in args:
                _error_event(exc.format_message(), ExitCode.USAGE)
            raise exc from None

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


def _extra_argument(exc: click.UsageError, ctx: click.Context | None) -> click.UsageError | None:
    """``agent-test tests`` (no ``-i``): click's "unexpected extra argument" with what was likely meant."""
    found = re.match(r"Got unexpected extra arguments? \((.*)\)", exc.message)
    if found is None:
        return None
    words = found.group(1).split(" ")
    group = ctx.command if ctx is not None and isinstance(ctx.command, click.Group) else None
    command = next(iter(difflib.get_close_matches(words[0], [c for c in group.commands if c != "run"], 1, 0.75)), None) if group else None
    if command is not None and not os.path.exists(words[0]):
        hint = f"did you mean the command '{command}'? (agent-test {command} --help)"
    else:
        hint = "did you mean " + " ".join(f"-i {w}" for w in words) + "? (inputs are given with -i; -m TEXT sends a message)"
    return click.UsageError(f"{exc.message}; {hint}", ctx=exc.ctx)


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _regex(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise click.BadParameter(f"{value!r} does not compile: {exc}") from None
    return value


def _rate(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value != value:  # nan: FloatRange lets it through, and every comparison with it is false
        raise click.BadParameter("nan is not a rate: give a number from 0 to 1, e.g. 0.8")
    return value


def _connectors(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """``-c a -c b`` and ``-c a,b``: the connectors in order, each once."""
    names = [name.strip() for item in value for name in item.split(",")]
    if any(not name for name in names):
        raise click.BadParameter("an empty connector ID (write -c a,b or -c a -c b)")
    return tuple(dict.fromkeys(names))


def _parsed_by(module: str) -> Callable[[click.Context, click.Parameter, str | None], Any]:
    """A callback that parses the flag's value with ``agenttest.<module>.parse`` (imported when used);
    its ValueError is a usage error."""
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        with collector.importing():  # --workers imports the runner: a large part of the run's modules
            parse = importlib.import_module(f"agenttest.{module}").parse
        try:
            return parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return callback


def _ref(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[\w.]+\.\w+", value):
        raise click.BadParameter(f"{value!r} must be <module>.<Function>, e.g. env_test.BeforeAll")
    return value


def _roles(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    from agenttest.connectors.cassettes import parse_roles

    try:
        return parse_roles(value)
    except AgentTestError as exc:
        raise click.BadParameter(exc.format_message()) from None


def finish(work: Callable[[], int], events: bool = False) -> None:
    """Run a command's work and exit with its code; every error becomes a message and an exit code
    (with ``--json``, also an ``error`` event on stdout)."""
    _never_fail_on_text()
    try:
        code = work()
    except AgentTestError as exc:
        click.echo(f"Error: {exc.format_message()}", err=True)
        if events:
            _error_event(exc.format_message(), exc.exit_code, exc.problems)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # agent-test … | head: the reader left before the verdict; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(ExitCode.FAILED)
    except Exception as exc:  # a bug of ours before or after the run: say so, with what to report
        error = InternalError.of(exc)
        click.echo(f"Error: {error.format_message()}", err=True)
        if events:
            _error_event(error.format_message(), ExitCode.INTERNAL)
        sys.exit(ExitCode.INTERNAL)
    sys.exit(code)


def _never_fail_on_text() -> None:
    """The console and the event stream write any text: what the terminal's encoding cannot hold (a lone
    surrogate, or an emoji on an ASCII terminal) is shown as its escape (``\\ud83d``) instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: nothing will be written there anyway
                pass


def _warn(text: str) -> None:
    """A warning the run says outside its console (a report rescued, the history not recorded, a preview's)."""
    click.echo(f"warning: {text}", err=True)


def _error_event(message: str, code: int, problems: list[Any] | None = None) -> None:
    from agenttest.reporting.events import EventStream

    EventStream(sys.stdout).error(message, code, problems)


@click.group(cls=Main, context_settings=SETTINGS)
def main() -> None:
    """Test LLM agents: run test cases against an agent and report the verdicts."""


@main.command("run", cls=RunCommand, epilog=EPILOG, context_settings=SETTINGS)
@click.option("-i", "--input", "inputs", multiple=True, metavar="SOURCE", cls=Option, section="Input and selection",
              help="Input, repeatable: a case file (.jsonl/.json/.yaml), a folder or glob of them, a literal message, message:TEXT, "
                   "agents:ID?count=N, scripts:mod.func, or scripts.NAME (script tests).")
@click.option("-m", "--message", "messages", multiple=True, metavar="TEXT", cls=Option, section="Input and selection",
              help="A message to send to the agent, never taken for a path (same as -i message:TEXT)")
@click.option("-n", "--name", "agent", metavar="AGENT", cls=Option, section="Input and selection",
              help="Agent under test, e.g. assistants.expense  [default: nearest package.yao above the case file]")
@click.option("--run", "run_filter", metavar="REGEX", callback=_regex, cls=Option, section="Input and selection",
              help="Run only cases whose id matches the regex (a search)  [default: all]")
@click.option("-k", "keyword", metavar="EXPR", cls=Option, section="Input and selection",
              help="Run only cases matching a pytest-style expression over id, name, tags and file name, e.g. 'expense and not slow'")
@click.option("--lf", "--last-failed", "last_failed", is_flag=True, cls=Option, section="Input and selection",
              help="Run only the cases that did not pass last time with these inputs (all if none failed)")
@click.option("--list", "list_only", is_flag=True, cls=Option, section="Input and selection",
              help="Print the selected cases (id, mode, tags, file:line) and exit without running")
@click.option("--dry-run", is_flag=True, cls=Option, section="Input and selection",
              help="Load (or generate) the cases and print them as JSON lines without running  [default: off]")
@click.option("--strict", is_flag=True, cls=Option, section="Input and selection",
              help="Unknown keys in cases, --ctx and package.yao are errors, not ignored with a warning; a case that checks nothing fails  [default: off]")
@click.option("--max-cases", default=10_000, show_default=True, type=Count(1, None), metavar="N", cls=Option,
              section="Input and selection", help="Most cases a file's scripted variants may make (counted before any is made).")
@click.option("--app", "app", metavar="DIR", cls=Option, section="Input and selection",
              help="App root  [default: $AGENTTEST_APP, else the nearest folder with assistants/ above the input or the current folder]")
@click.option("-c", "--connector", metavar="ID", multiple=True, callback=_connectors, cls=Option, section="Running",
              help="Connector of the agent under test, e.g. openai.gpt-4o-mini; several (-c a -c b or -c a,b) run every case on each, "
                   "side by side  [default: from the case, else package.yao]")
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
@click.option("--parallel", default=1, show_default=True, type=Count(1, 1000), metavar="N", cls=Option, section="Running",
              help="Number of test cases run at once.")
@click.option("--workers", default="1", show_default=True, callback=_parsed_by("runner.executors"), metavar="N|auto", cls=Option,
              section="Running", help="Worker processes that run the cases (auto: one per core; 0: in this process, e.g. for a debugger).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True, cls=Option, section="Running",
              help="Where workers run: local processes, or Ray actors on RAY_ADDRESS / --ray-address (pip install 'agent-test[ray]').")
@click.option("--ray-address", metavar="ADDRESS", cls=Option, section="Running",
              help="The Ray cluster of --executor ray, e.g. ray://head:10001  [default: $RAY_ADDRESS, else a local Ray]")
@click.option("--runs", default=1, show_default=True, type=Count(1, MAX_RUNS), metavar="N", cls=Option, section="Running",
              help="Run each case N times (a case's 'runs' wins) and gate it on its pass rate.")
@click.option("--min-pass-rate", default=1.0, show_default=True, type=click.FloatRange(0, 1), callback=_rate, metavar="RATE", cls=Option, section="Running",
              help="A case passes when this share of its runs passed (a case's 'min_pass_rate' wins); 1.0 is pass^k.")
@click.option("--early-stop", is_flag=True, cls=Option, section="Running",
              help="Stop a case's runs once no remaining run can change its verdict  [default: off]")
@click.option("--budget", metavar="LIMITS", callback=_parsed_by("accounting.budgets"), cls=Option, section="Running",
              help="Limits per case run, e.g. tokens=20000,cost=0.05,tool_calls=10,turns=8,duration=2m (a case's 'budget' wins)  [default: none]")
@click.option("--seed", default=0, show_default=True, type=int, metavar="N", cls=Option, section="Running",
              help="Seed of the faults given with a rate: the same seed injects the same faults.")
@click.option("--allow-external-writes", is_flag=True, cls=Option, section="Running",
              help="Run the cases whose policy may create or change external records (write_policy: external); without it they are skipped  [default: off]")
@click.option("-x", "--fail-fast", "fail_fast", is_flag=True, cls=Option, section="Running",
              help="Stop scheduling cases after the first that does not pass (with --runs: whose gate failed)  [default: off]")
@click.option("--max-attachment", default="20MB", show_default=True, callback=_size, metavar="SIZE", cls=Option, section="Running",
              help="Largest file an input may attach (file:// parts): 20MB, 500KB or bytes.")
@click.option("--shard", metavar="K/N", callback=_parsed_by("selection.shards"), cls=Option, section="Input and selection",
              help="Run shard K of N: a fixed 1/N of the selected cases, the same on every machine (merge the reports with agent-test merge)  [default: all]")
@click.option("--record", metavar="DIR", cls=Option, section="Running",
              help="Record every model call into cassettes in DIR (one JSONL file per case)  [default: off]")
@click.option("--replay", metavar="DIR", cls=Option, section="Running",
              help="Answer model calls from the cassettes in DIR, with no request to any endpoint; with --record, misses are called and added  [default: off]")
@click.option("--replay-roles", metavar="ROLES", callback=_roles, cls=Option, section="Running",
              help="With --replay: replay only these roles (agent, simulator, validator, generator), e.g. simulator,validator; the others run live  [default: all]")
@click.option("--baseline", metavar="REPORT", cls=Option, section="Output",
              help="Compare with an earlier JSON report after the summary; exit 1 only on a significant regression (see --fail-on-regression) "
              "or when a new case does not pass  [default: off]")
@click.option("--fail-on-regression", "fail_on", is_flag=False, flag_value="significant", default=None, type=click.Choice(["significant", "any"]),
              metavar="[=any]", cls=Option, section="Output",
              help="With --baseline: what fails the gate — a significant regression of the suite (the paired test at --alpha) or of a case "
              "(Fisher's test after Holm); =any: any case that passed in the baseline and not now  [default: significant]")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True), callback=_rate, metavar="P",
              cls=Option, section="Output", help="Significance level of paired comparisons (--baseline, a model matrix); docs/statistics.md.")
@click.option("--judge-min-agreement", type=click.FloatRange(0, 1), callback=_rate, metavar="RATE", cls=Option, section="Running",
              help="Fail the run when a judge (validator × connector) agrees with the labels (an agent assertion's 'label') less often "
              "than this; a case's judge: {min_agreement} wins  [default: none]")
@click.option("--judge-min-kappa", type=click.FloatRange(-1, 1), callback=_rate, metavar="KAPPA", cls=Option, section="Running",
              help="Fail the run when a judge's Cohen's kappa against the labels is below this (agreement beyond chance); a case's "
              "judge: {min_kappa} wins  [default: none]")
@click.option("--confidence", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True), callback=_rate,
              metavar="LEVEL", cls=Option, section="Output",
              help="Level of every interval: Wilson per case, the bootstrap over cases for the suite (docs/statistics.md).")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FILE", cls=Option, section="Output",
              formats="report", help="Report file, repeatable; format by extension: {formats}; missing folders are made  [default: reports/output-<timestamp>.json in the app root, for a case file]")
@click.option("--report-world", type=click.Choice(["full", "changes"]), default="full", show_default=True, cls=Option, section="Output",
              help="What reports keep of each case's tool world: the initial and final world and their changes, or the changes only.")
@click.option("--calls", type=click.Choice(["none", "failed", "all"]), default="failed", show_default=True, cls=Option, section="Output",
              help="Which results keep their model calls — every request as sent and response as received (the agent's, the judges', the "
              "simulator's), timings and retries — for the report and the viewer: none, failures only, or all (docs/viewer.md).")
@click.option("--history", "history", metavar="FILE", cls=Option, section="Output",
              help="Record the run in this history database  [default: .agent-test/history.sqlite in the app root]")
@click.option("--no-history", is_flag=True, cls=Option, section="Output", help="Do not record this run in the history  [default: recorded]")
@click.option("-v", "--verbose", is_flag=True, cls=Option, section="Output",
              help="Show outputs, tool calls, what user code printed and whole tracebacks under every case  [default: off]")
@click.option("--json", "json", is_flag=True, cls=Option, section="Output",
              help="Stream NDJSON events (start, result, warning, summary; error if it cannot start) to stdout for other programs; the console goes to stderr  [default: off]")
@click.option("-q", "--quiet", count=True, cls=Option, section="Output", help="-q: one line per case, no trees; -qq: the summary only")
@click.version_option(__version__, "-V", "--version", prog_name="agent-test", cls=Option, section="Other")
@click.help_option("-h", "--help", cls=Option, section="Other", help="Show this message and exit.")
def run_command(**flags: Any) -> None:
    """Test LLM agents: run test cases against an agent and report the verdicts."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    inputs = (*flags["inputs"], *(f"message:{m}" for m in flags["messages"]))
    problem = ("Missing option '-i' / '--input' (or -m TEXT)." if not inputs else
               "--list prints the cases and writes no file: -o has nothing to write (--dry-run -o FILE writes the cases)"
               if flags["list_only"] and flags["outputs"] else
               "--fail-on-regression gates a run on its --baseline REPORT: give one (agent-test diff BASE NEW --fail-on-regression compares two reports)"
               if flags["fail_on"] and not flags["baseline"] else None)
    flags["fail_on"] = flags["fail_on"] or "significant"
    if problem:
        error = click.UsageError(problem, ctx=click.get_current_context())
        if flags["json"]:
            _error_event(error.format_message(), ExitCode.USAGE)
        raise error

    def work() -> int:
        with collector.importing():  # the run's modules: ~60,000 objects, no garbage (frozen: speed.install claimed the process)
            import asyncio  # here, not at the top: --version, --help and the subcommands that need no event loop never import it

            from agenttest.runner import containment
            from agenttest.runtime import fdcapture
            from agenttest.session import RUN_MODULES, Session
            from agenttest.util.pipes import PipeSafe

            previewing = flags["list_only"] or flags["dry_run"]
            if not previewing:  # what runs, decides and reports (a preview needs none of it)
                for module in RUN_MODULES:
                    importlib.import_module(module)

        config = RunConfig.from_flags(flags, color=color and not flags["json"], inputs=inputs)

        # no process the run starts outlives it (a preview runs no case: the nets at its end, without the cgroup and the
        # watchdog that guard a run's controller killed by SIGKILL — docs/scale.md); what user code writes below Python
        # never reaches the console or the events
        with containment.contained(owner=_OWNS_PROCESS and not previewing), fdcapture.own_output():
            out, err = PipeSafe(sys.stdout), PipeSafe(sys.stderr)  # type: ignore[arg-type]  # `| head`: the run goes on
            collector.run_begins()
            if config.json:  # stdout carries the events; the console goes to stderr
                return asyncio.run(Session(config, err, events=out, warn=_warn).run())  # type: ignore[arg-type]
            return asyncio.run(Session(config, out, warn=_warn).run())  # type: ignore[arg-type]

    finish(work, events=flags["json"])


@main.command("diff", short_help="Compare two JSON reports case by case: regressed, fixed, flaky, …", context_settings=SETTINGS)
@click.argument("base", metavar="BASE")
@click.argument("new", metavar="NEW")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FILE",
              cls=Option, formats="comparison", help="Also write the comparison, repeatable: {formats} (.md: a pull-request comment)  [default: the console only]")
@click.option("--fail-on-regression", "fail_on", is_flag=False, flag_value="significant", default=None, type=click.Choice(["significant", "any"]),
              metavar="[=any]", help="Exit 1 on a significant regression (the paired test of the suite at --alpha, or a case's "
              "Fisher test after Holm) or when NEW was cut short before a case of BASE; =any: when any case passed in BASE and not in NEW  [default: exit 0]")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True), metavar="P",
              help="Significance level of the paired comparison (docs/statistics.md).")
@click.option("--format", "form", type=click.Choice(["github"]), default=None,
              help="github: -o .md files get the pull-request comment the GitHub Action posts (docs/ci.md)  [default: by extension]")
@click.option("--viewer-url", metavar="URL", default="", help="With --format github: where the viewer's diff page is, for the cases' links")
@click.option("--comment-key", metavar="KEY", default="", help="With --format github: the comment's hidden key (one comment per key and pull request)")
def diff_command(base: str, new: str, outputs: tuple[str, ...], fail_on: str | None, alpha: float, form: str | None, viewer_url: str,
                 comment_key: str) -> None:
    """Compare two JSON reports case by case: regressed, fixed, still failing, new, removed, flaky, changed — and
    whether the difference is real: the paired test, the difference with its interval, what this size can detect."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def work() -> int:
        from agenttest.history.comparison import compare
        from agenttest.util.files import write_atomic
        from agenttest.reporting.codec import read
        from agenttest.history import diffs

        for output in outputs:
            diffs.check_path(output)
        if form == "github" and not any(o.lower().endswith(".md") for o in outputs):
            raise AgentTestError("--format github writes the pull-request comment to a .md file", hint="add -o comment.md")
        before, after = read(base), read(new)
        comparison = compare(before, after, base, new, alpha)
        for line in diffs.console_lines(comparison, color):
            click.echo(line)
        for output in outputs:
            if form == "github" and output.lower().endswith(".md"):
                from agenttest.history.pullrequest import comment

                write_atomic(output, comment(comparison, before, after, viewer_url, comment_key, fail_on or "significant"))
            else:
                write_atomic(output, diffs.render(comparison, output, before, after))
            click.echo(f"  Output: {output}")
        if fail_on is None:
            return ExitCode.OK
        click.echo(diffs.regression_line(comparison, fail_on))
        return comparison.gate(fail_on)

    finish(work)


@main.command("import", short_help="Make cases from recorded conversations: OpenTelemetry GenAI traces or chat logs.", context_settings=SETTINGS)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("-o", "--output", required=True, metavar="CASES", help="The case file to write: .jsonl or .yaml (one case per conversation)")
@click.option("--judge", metavar="AGENT", help="Also check that the new reply is equivalent to the recorded one, judged by this validator agent  [default: no judge]")
@click.option("--redact", "redact", multiple=True, metavar="[NAME=]REGEX", help="Also replace what this pattern finds, as <NAME_1>…; repeatable")
@click.option("--no-redact", "no_redact", multiple=True, metavar="RULE", help="Keep what a built-in rule would replace: key, card, email, phone or all; repeatable")
@click.option("--sequence", default="strict", show_default=True, type=click.Choice(["strict", "ordered", "unordered", "subset", "superset"]),
              help="The mode of the proposed tool_sequence check")
@click.option("--allow-gaps", is_flag=True, help="Import traces whose spans name parents that are in no file  [default: a gap is an error]")
@click.option("--force", is_flag=True, help="Replace the -o file if it exists  [default: an existing file is an error]")
def import_command(files: tuple[str, ...], output: str, judge: str | None, redact: tuple[str, ...], no_redact: tuple[str, ...],
                   sequence: str, allow_gaps: bool, force: bool) -> None:
    """Make cases from recorded conversations: OpenTelemetry GenAI traces (OTLP/JSON, as the file exporters write
    them) or JSON Lines chat logs of chat-completions requests and responses. One case per conversation: the
    history as input, production's tool results as mocks, proposed checks; secrets and personal data replaced."""

    def work() -> int:
        from agenttest.inputs.traces.importing import Request, lines, run

        summary = run(Request(files=files, output=output, judge=judge, redact=redact, no_redact=no_redact, sequence=sequence,
                              allow_gaps=allow_gaps, force=force))
        for line in lines(summary):
            click.echo(line)
        return ExitCode.OK

    finish(work)


@main.command("rescore", short_help="Judge a recorded run's outputs again with today's assertions; no agent call.",
              context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"],
                                "max_content_width": 100})
@click.argument("report", metavar="REPORT.json")
@click.option("-i", "--input", "inputs", multiple=True, metavar="CASES", help="Today's case files  [default: those the report's results name]")
@click.pass_context
def rescore_command(ctx: click.Context, report: str, inputs: tuple[str, ...]) -> None:
    """Judge a recorded run's outputs again — today's assertions, labels and judges, no agent call — and compare the
    verdicts with the recorded ones, paired (as --baseline does: a significant change fails). Any other option is
    a run's: -o, --replay/--record (the validators' calls), --fail-on-regression[=any], --alpha, --judge-min-kappa …"""

    def work() -> int:
        from agenttest.reporting.codec import read

        recorded = read(report)  # a missing or malformed report is said now, at its place
        source = "rescore:" + report + ("?cases=" + ",".join(inputs) if inputs else "")
        args = ["-i", source, "--baseline", report]
        given = set(ctx.args)
        if recorded.agent_id and not given & {"-n", "--name"}:
            args += ["-n", recorded.agent_id]
        if recorded.matrix and not given & {"-c", "--connector"}:
            args += ["-c", ",".join(recorded.matrix)]  # each connector's outputs judged as its own
        elif recorded.connector and recorded.connector != "per case" and not given & {"-c", "--connector"}:
            args += ["-c", recorded.connector]  # no agent is called: the outputs are the recorded connector's, and said so
        run_command.main([*args, *ctx.args], prog_name="agent-test rescore")  # exits with the run's code
        return ExitCode.OK

    finish(work)


@main.command("convert", short_help="Write a seed-format file (e.g. a scenario suite) as agent-test's own case file.",
              context_settings=SETTINGS)
@click.argument("file", metavar="FILE")
@click.option("-o", "--output", metavar="CASES", help="The case file to write: .json, .yaml or .yml  [default: stdout]")
@click.option("--format", "style", type=click.Choice(["json", "yaml"]), default=None,
              help="JSON or YAML  [default: by -o's extension; JSON on stdout]")
def convert_command(file: str, output: str | None, style: str | None) -> None:
    """Convert FILE — a file in a seed format, e.g. a scenario suite (format A), recognised by its shape or forced
    with its prefix (a:FILE) — into agent-test's own case file, which runs to the same verdicts (docs/formats-a.md)."""

    def work() -> int:
        from agenttest.inputs.converting import convert

        written = convert(file, output, style)
        if output is None:
            click.echo(written, nl=False)
        else:
            click.echo(f"wrote {output}")
        return ExitCode.OK

    finish(work)


@main.command("merge", short_help="Join the JSON reports of shards (--shard K/N) into one.", context_settings=SETTINGS)
@click.argument("reports", nargs=-1, required=True, metavar="REPORT...")
@click.option("-o", "--output", "outputs", multiple=True, metavar="FILE",
              cls=Option, formats="report", help="The merged report (several allowed); format by extension: {formats}")
@click.option("--partial", is_flag=True, help="Join the shards there are when some are missing (never exits 0).")
def merge_command(reports: tuple[str, ...], outputs: tuple[str, ...], partial: bool) -> None:
    """Join the JSON reports of shards (--shard K/N) into one report; exit 1 when a case did not pass.

    Every shard 1/N … N/N of one run must be given (exit 2 otherwise); --partial joins what there is,
    says which shards are missing, and exits 1 at best."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def work() -> int:
        from agenttest import reporting
        from agenttest.history.merging import merge
        from agenttest.reporting.codec import read
        from agenttest.reporting.console import Console
        from agenttest.verdicts.outcome import exit_code

        for path in outputs:
            reporting.check_path(path)
        merged = merge([(path, read(path)) for path in reports], partial)
        written = []
        for path in outputs:
            rescued = reporting.write(replace(merged, output_file=path), path)
            if rescued is not None:
                click.echo(f"warning: could not write the report to {path}; it is saved in {rescued}", err=True)
            written.append(rescued or path)
        console = Console(sys.stdout, color)
        console.total = len(merged.results)
        console.summary(merged, ", ".join(written) or None)
        return exit_code(merged)

    finish(work)


@main.command("snapshot", short_help="Write a world (a B scenario's, or JSONL rows) as a base_snapshot SQLite file.",
              context_settings=SETTINGS)
@click.argument("source", metavar="SCENARIO.yaml|ROWS.jsonl")
@click.option("-o", "--output", required=True, metavar="FILE", help="The snapshot file to write (e.g. base.sqlite).")
def snapshot_command(source: str, output: str) -> None:
    """Write the world of a B scenario (seeded as a run seeds it: base_snapshot, from_file, the inline entities)
    or of a JSONL file of {"collection": "pack.collection", "data": {...}} lines, for a scenario's base_snapshot
    (docs/formats-b.md)."""

    def work() -> int:
        from agenttest.inputs.formats.b.snapshots import snapshot

        count, digest = snapshot(source, output)
        click.echo(f"Wrote {output}: {count} entit{'y' if count == 1 else 'ies'} (content sha256 {digest[:16]}…)")
        return ExitCode.OK

    finish(work)


@main.command("lint", short_help="Flag fragile patterns in B scenario files (W001–W005).",
              context_settings=SETTINGS)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per finding on stdout.")
def lint_command(files: tuple[str, ...], as_json: bool) -> None:
    """Check B scenario files (docs/formats-b.md#lint): load problems exit 2; findings (code, place, hint) exit 1;
    a clean file exits 0. --strict on a run runs the same checks first."""

    def work() -> int:
        from agenttest.inputs.formats.b.lint import lint_files

        findings = lint_files(list(files))
        for finding in findings:
            click.echo(finding.json() if as_json else str(finding))
        if not as_json:
            click.echo(f"{len(findings)} finding{'' if len(findings) == 1 else 's'} in {len(files)} file{'' if len(files) == 1 else 's'}")
        return ExitCode.FAILED if findings else ExitCode.OK

    finish(work)


@main.command("history", short_help="List the recorded runs, newest first, with their pass rates.", context_settings=SETTINGS)
@click.option("--history", "history_file", metavar="FILE", help="The history database  [default: .agent-test/history.sqlite in the app root]")
@click.option("--app", "app_dir", metavar="DIR", help="App root  [default: the nearest folder with assistants/ above the current one]")
@click.option("-n", "--limit", default=20, show_default=True, type=Count(1, None), metavar="N", help="Show the last N runs.")
def history_command(history_file: str | None, app_dir: str | None, limit: int) -> None:
    """List the recorded runs, newest first: when, inputs, connector, cases, pass rate, exit code."""

    def work() -> int:
        from agenttest.history.store import History, locate
        from agenttest.history.runs import judge_lines, run_lines

        path = locate(history_file, app_dir)
        with History(path, create=False) as history:
            runs, judges = history.runs(limit), history.judges(limit)
        for line in (run_lines(runs) + judge_lines(judges)) if runs else [f"No runs recorded in {path} yet."]:
            click.echo(line)
        return ExitCode.OK

    finish(work)


@main.command("view", short_help="Serve the run history (or one report) in the viewer.", context_settings=SETTINGS)
@click.argument("report", required=False, metavar="[REPORT.json]")
@click.option("--port", default=8642, show_default=True, type=Count(0, 65535), metavar="N", help="Port on 127.0.0.1 (0: any free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the web browser  [default: print its address]")
@click.option("--history", "history_file", metavar="FILE", help="The history database  [default: .agent-test/history.sqlite in the app root]")
@click.option("--app", "app_dir", metavar="DIR", help="App root  [default: the nearest folder with assistants/ above the current one]")
@click.option("--paged", is_flag=True, help="Show REPORT.json a page at a time, whatever its size  [default: past 32 MB] (docs/reports.md)")
def view_command(report: str | None, port: int, open_browser: bool, history_file: str | None, app_dir: str | None, paged: bool) -> None:
    """Serve the run history (or one JSON report) in the viewer on 127.0.0.1 until Ctrl-C."""

    def work() -> int:
        from agenttest.history.store import History, locate
        from agenttest.history import server

        if paged and report is None:
            raise AgentTestError("--paged shows one report file a page at a time", hint="pass it: agent-test view REPORT.json --paged")
        if report is not None:
            pages, what = server.report_pages(report, paged), report
        else:
            path = locate(history_file, app_dir)
            History(path, create=False).close()  # a missing or foreign database is said now, not on the first page
            pages, what = server.Pages(history=path), f"the run history {path}"
        httpd = server.make_server(pages, port)
        click.echo(f"Serving {what} at {server.url_of(httpd)} (Ctrl-C to stop)")
        if open_browser:
            import webbrowser

            webbrowser.open(server.url_of(httpd))
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
        return ExitCode.OK

    finish(work)


@main.command("init", short_help="Make a working app in DIR: an agent, tools, cases, hooks.")
@click.argument("folder", default=".", metavar="[DIR]")
def init_command(folder: str) -> None:
    """Make a working app in DIR: an agent with a tool, worker agents, cases, hooks and a script test."""

    def work() -> int:
        from agenttest.app.scaffold import init

        written = init(folder)
        click.echo(f"Made an agent-test app in {folder} ({len(written)} files). Try it (offline):")
        where = "" if folder in (".", "") else f"cd {folder} && "
        click.echo(f"  {where}agent-test -i tests")
        click.echo("  agent-test -i scripts.support.support")
        click.echo("See its README.md.")
        return 0

    finish(work)


_OWNS_PROCESS = False


def entry() -> None:
    """The ``agent-test`` script: the speed machinery installed, ``main``, then leave at once — the report is
    written and flushed, the files are closed; only the interpreter's teardown of a run's objects (0.1–0.2 s)
    is skipped."""
    global _OWNS_PROCESS
    _OWNS_PROCESS = True  # the command is this process: a run may give it a cgroup and a watchdog
    speed.install()  # the one door to the speed machinery (agenttest/speed): the command's process only
    try:
        main(prog_name="agent-test")
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            raise  # a message to print: the interpreter's own way
        _leave(exc.code or 0)


def _leave(code: int) -> None:
    """Exit without the interpreter's teardown: atexit handlers run, output is flushed, then os._exit —
    also when user code left a thread running that would never end (the report is written)."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said on it
            pass
    os._exit(code)
