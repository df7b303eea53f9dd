"""The console: banner, header, one line per case (a tree per dynamic case), summary, final banner."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator
from typing import Any, TextIO

from agenttest.util.durations import format_duration, format_timeout
from agenttest.verdicts.gates import failed
from agenttest.model import Case, CaseKey, CaseResult, RunHeader, RunReport, ToolCall
from agenttest.reporting.codec import summary_dict
from agenttest.model.results import minor
from agenttest.reporting.rows import change_text, preview
from agenttest.reporting import figures
from agenttest.reporting import evidence as words
from agenttest.verdicts import evidence
from agenttest.util.secrets import Secrets
from agenttest.util.text import as_text, plural, printable, shorten

PREVIEW = 47  # characters of a case's input shown on its line, as Yao shows them
RULE = "═" * 63
THIN = "─" * 63
COLORS = {"green": "32", "red": "31", "yellow": "33", "cyan": "36", "dim": "2", "bold": "1"}
STATUS_COLOR = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow", "skipped": "yellow"}
WORLD_LINES = 10  # changes of the world shown under a case with -v


def load_line(load: dict[str, Any]) -> str:
    """``12 × 429 absorbed, 3 retries; fake: concurrency found 4 (lowest 2, at the end 5)``; without a 429,
    ``3 retries``. The level found is the one the adaptive limit held longest (a report without it: the end's)."""
    parts = ([f"{load['absorbed']} × 429 absorbed"] if load["rate_limited"] or load["absorbed"] else []) + (
        [f"{load['retries']} retries"] if load["retries"] else [])
    limits = [_limits(name, e) for name, e in load["connectors"].items() if e["rate_limited"]]
    return "; ".join([", ".join(parts), *limits])


def _limits(name: str, e: dict[str, Any]) -> str:
    found = e.get("found") or e["limit"]
    end = f", at the end {e['limit']}" if e["limit"] != found else ""
    return f"{name}: concurrency found {found} (lowest {e['lowest_limit']}{end})"


def cut(text: Any, limit: int) -> str:
    """One printable line: its first ``limit`` characters (characters, not bytes), then ``...`` when cut."""
    line = printable(shorten(text, 1 << 30))
    return line if len(line) <= limit else line[:limit].rstrip() + "..."


def safe(text: Any) -> str:
    """Text from outside (model output, ids, reasons) as one printable line, uncut."""
    return printable(as_text(text))


REASON_LIMIT = 500  # characters of a failure reason on the console; the report keeps all of it


def reason(text: str) -> str:
    line = safe(text)
    return line if len(line) <= REASON_LIMIT else line[:REASON_LIMIT].rstrip() + "… (the whole text is in the report)"


class Console:
    def __init__(self, out: TextIO, color: bool = False, verbose: bool = False, parallel: int = 1, progress: bool = False,
                 show_reply: bool = False, secrets: Secrets | None = None, quiet: int = 0, grouped: bool = False,
                 matrix: bool = False):
        self.out = out
        self.matrix = matrix  # several connectors: each line names its connector
        self.secrets = secrets if secrets is not None else Secrets()
        self.color = color
        self.verbose = verbose and not quiet
        self.quiet = quiet  # 1: one line per case, no trees; 2: the summary only
        self.grouped = grouped  # several case files: a line naming the file before its cases
        self._file = ""
        self.parallel = parallel
        self.show_reply = show_reply  # a literal message run: show the reply even without -v
        self.total = 0
        self.done = 0
        self.begun = 0
        self._bar: Any = None
        self._progress = progress and parallel > 1
        self._pending_line = False
        self._blank = False
        self._warned: set[str] = set()

    # -- primitives --------------------------------------------------------------------------

    def _cut(self, text: Any, limit: int) -> str:
        """``cut`` after hiding secrets: cutting first could leave a secret's prefix on the screen."""
        return cut(self.secrets.redact(shorten(text, 1 << 30)), limit)

    def paint(self, text: str, color: str) -> str:
        return f"\x1b[{COLORS[color]}m{text}\x1b[0m" if self.color else text

    def line(self, text: str = "") -> None:
        if self.quiet >= 2:
            return
        self._blank = not text
        text = self.secrets.redact(text)
        if self._bar is not None:
            self._bar.write(text, file=self.out)
        else:
            self.out.write(text + "\n")
            self.out.flush()

    def section(self, title: str, heavy: bool = False) -> None:
        rule = RULE if heavy else THIN
        self.line(rule)
        self.line(f"  {title}")
        self.line(rule)

    # -- phases ------------------------------------------------------------------------------

    def header(self, info: RunHeader, warnings: Collection[str] = ()) -> None:
        title = "Agent Test"
        if info.dynamic:
            title += " (Dynamic Mode)"
        elif info.mixed:
            title += " (Standard + Dynamic)"
        if self.parallel > 1:
            title += f" (Parallel: {self.parallel})"
        self.section(title, heavy=True)
        for label, value in (("Agent", info.agent), ("Connector", info.connector), ("Input", info.input), ("Simulator", info.simulator),
                             *info.notes):
            if value:
                self.line(f"{self.paint('ℹ', 'cyan')} {label}: {safe(value)}")
        self.line(f"{self.paint('ℹ', 'cyan')} Timeout: {format_timeout(info.timeout)}")
        if self.parallel > 1:
            self.line(f"{self.paint('ℹ', 'cyan')} Parallel: {self.parallel} concurrent")
        if info.runs > 1:
            self.line(f"{self.paint('ℹ', 'cyan')} Runs: {info.runs} per case")
        for w in warnings:
            self.line(f"{self.paint('⚠', 'yellow')} {safe(w)}")
        self._warned = set(warnings)
        self.line()
        self.section("Running Tests" + (f" ({self.parallel} parallel)" if self.parallel > 1 else ""))
        self.total = info.total
        if self._progress:
            from tqdm import tqdm

            import sys

            self._bar = tqdm(total=self.total, file=sys.stderr, unit="case", leave=False, dynamic_ncols=True)

    def saved(self) -> None:
        """--early-stop did not start a run: one less to wait for (the progress still reaches its end)."""
        self.total -= 1
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def warning(self, text: str) -> None:
        """A warning while cases run (an endpoint marked down), on a line of its own."""
        if self._pending_line:
            self.out.write("\n")
            self._pending_line = False
        self.line(f"{self.paint('⚠', 'yellow')} {text}")

    def title(self, case_id: str, run: int, runs: int, connector: str = "") -> str:
        """A case's run as its line names it: ``[id @ connector] (run 2/3)`` (an id may hold a comma or a space)."""
        where = f" @ {safe(connector)}" if self.matrix and connector else ""
        return f"[{safe(case_id)}{where}]" + (f" (run {run}/{runs})" if runs > 1 else "")

    def started(self, case: Case, run: int, runs: int = 1, connector: str = "") -> None:
        """Sequential standard cases show their line at once and finish it when the result comes."""
        self.begun += 1
        if self.parallel > 1 or case.mode in ("dynamic", "scripted") or self.show_reply or self._bar is not None or self.quiet >= 2:
            return
        self._group(case.file)
        self.out.write(f"► {self.secrets.redact(self.title(case.id, run, runs, connector))} {self._cut(preview(case.input) or case.name, PREVIEW)} ")
        self.out.flush()
        self._pending_line = True

    def _group(self, file: str) -> None:
        if self.grouped and file != self._file:
            self._file = file
            self.line(self.paint(safe(file), "bold"))

    def finished(self, result: CaseResult, runs: int = 1) -> None:
        self.done += 1
        status = self.paint(f"{result.status.upper()}", STATUS_COLOR[result.status])
        took = format_duration(result.duration_ms / 1000)
        if not self._pending_line:
            self._group(result.file)
        if result.conversation and self.quiet:
            self.line(f"► {self.title(result.id, result.run, runs, result.connector)} {safe(result.name or '')} {status} ({took}) - "
                      f"{_tally(result)}")
            self._reasons(result)
        elif result.conversation:
            self._tree(result, runs, status, took)
        else:
            head = "" if self._pending_line else f"► {self.title(result.id, result.run, runs, result.connector)} {self._cut(preview(result.input) or result.name, PREVIEW)} "
            self._pending_line = False
            scored = f" score {result.score:.2f}" if result.score is not None else ""
            self.line(f"{head}{status} ({took}){scored}")
            self._details(result)
        if self._bar is not None:
            self._bar.update(1)
        elif self.parallel > 1 and result.conversation and self.done < self.total:
            running = self.begun - self.done
            self.line(self.paint(f"[Progress: {self.done}/{self.total} completed, {running} running...]", "dim"))
            self.line()

    def _details(self, r: CaseResult) -> None:
        """Under a case: with -v (or for a literal message) what it did first, then why it did not pass."""
        if (self.verbose or self.show_reply) and not self.quiet:
            for c in r.tool_calls:
                self._tool_call(c, "  │  ", 80)
            if self.verbose:
                self._scenario(r, "  │  ")
                self._world(r, "  │  ")
            if r.status != "skipped" and r.output is not None:
                shown = printable(as_text(r.output), newlines=True) if self.show_reply else self._cut(as_text(r.output), 300)
                self.line(f"  │  output{' (first tool result)' if r.output_from else ''}: {shown}")
            for log in r.logs:
                self.line(f"  │  log: {safe(log)}")
            self._captured(r)
        if self.verbose:  # every verdict, then why the case did not pass: the tree ends with the reasons
            self._verdicts(r, "  │  ")
        self._reasons(r)

    def _verdicts(self, r: CaseResult, indent: str) -> None:
        """Each assertion's verdict and what it checked (``✓ state path=$.a value=1``)."""
        for a in r.assertions:
            mark = self.paint("✓", "green") if a.passed else self.paint("✗ (minor)", "yellow") if minor(a) else self.paint("✗", "red")
            score = f" (score {a.score:g})" if a.score is not None else ""
            weight = f" (weight {a.weight:g})" if a.weight is not None else ""
            what = f" {self._cut(a.checked, 120)}" if a.checked else ""
            named = f"{safe(a.name)}: " if a.named else ""
            self.line(f"{indent}{mark} {named}{safe(a.type)}{what}{score}{weight}" + ("" if a.passed else f": {safe(a.message)}"))

    def _reasons(self, r: CaseResult) -> None:
        for why in r.reasons:
            self.line(f"  └─ {self.paint(reason(why), 'red' if r.status != 'skipped' else 'yellow')}")
        if r.traceback and not self.quiet:
            lines = r.traceback.rstrip().splitlines()
            shown = lines if self.verbose else lines[-3:]  # the user's frame, its line, the exception (-v: all)
            for text in shown:
                self.line(f"     {self.paint(printable(text), 'dim')}")
        if not self.verbose:  # a minor failure never fails its case, and is said all the same
            for a in r.assertions:
                if minor(a):
                    self.line(f"  └─ {self.paint('minor: ' + (f'{a.label}: ' if a.label else '') + reason(a.message), 'yellow')}")
        for w in r.warnings:
            self.line(f"  └─ {self.paint('warning: ' + safe(w), 'yellow')}")
        if not self.verbose and not self.quiet and not r.ok:  # a tool that raised may be why: where (-v: the traceback)
            for c in r.tool_calls:
                if c.traceback:
                    where = f" at {safe(c.location)}" if c.location else ""
                    self.line(f"  └─ {self.paint(f'tool {safe(c.name)} raised {safe(c.error)}{where} (-v: its traceback)', 'yellow')}")

    def _captured(self, r: CaseResult) -> None:
        """What user code printed while the case ran (-v)."""
        for name, text in (("stdout", r.stdout), ("stderr", r.stderr)):
            for text_line in text.rstrip("\n").splitlines() if text else ():
                self.line(f"  │  {name}: {printable(text_line)}")

    def _tool_call(self, c: ToolCall, indent: str, width: int) -> None:
        """A tool call, what it gave (an error with where the tool raised), and with -v its traceback."""
        result = f"error: {safe(c.error)}" + (f" ({safe(c.location)})" if c.location else "") if c.error else self._cut(as_text(c.result), 100)
        at = f"[{safe(c.vt)}] " if c.vt else ""  # a scenario's virtual time
        self.line(f"{indent}{at}tool {safe(c.name)}({self._cut(as_text(c.arguments), width)}) → {result}{self._marks(c)}")
        if self.verbose:
            for text in c.traceback.rstrip().splitlines():
                self.line(f"{indent}   {self.paint(printable(text), 'dim')}")

    def _marks(self, c: ToolCall) -> str:
        """What answered a call instead of the tool: a mock, or an injected fault; a refusal by the case's policy."""
        if c.violation:
            return " " + self.paint("[policy violation]", "red")
        if c.fault is not None:
            return " " + self.paint(f"[fault: {c.fault}]", "yellow")
        return " " + self.paint("[mocked]", "cyan") if c.mocked else ""

    @staticmethod
    def _tool_of(r: CaseResult, cp_id: str) -> str:
        cp = next((c for c in r.checkpoints if c.id == cp_id), None)
        return f" (tool: {cp.tool})" if cp is not None and cp.tool else ""

    def _scenario(self, r: CaseResult, indent: str) -> None:
        """A scenario's clock, the turns delivered and the world events, each at its virtual time (-v)."""
        run = r.scenario
        if run is None:
            return
        self.line(f"{indent}scenario {run.identity[:12]}: virtual clock {run.started} → {run.ended}, {plural(run.steps, 'step')}"
                  + (f", {run.code}" if run.code else ""))
        for turn in run.turns:
            self.line(f"{indent}  [{safe(turn.get('vt'))}] turn {turn.get('turn')} delivered: {self._cut(turn.get('user'), 100)}")
        for event in run.events:
            self.line(f"{indent}  [{safe(event.get('vt'))}] world event {safe(event.get('op'))} {self._cut(as_text(event.get('data')), 80)}")

    def _world(self, r: CaseResult, indent: str) -> None:
        if r.world is None:
            return
        changes = r.world.changes
        self.line(f"{indent}world: {plural(len(changes), 'change')}" if changes else f"{indent}world: unchanged")
        for c in changes[:WORLD_LINES]:
            self.line(f"{indent}  {safe(change_text(c))}")
        if len(changes) > WORLD_LINES:
            self.line(f"{indent}  … {len(changes) - WORLD_LINES} more (see the report)")

    def _tree(self, r: CaseResult, runs: int, status: str, took: str) -> None:
        self.line(f"► {self.title(r.id, r.run, runs, r.connector)} {safe(r.name or '')}".rstrip())
        for i, t in enumerate(r.turns):
            last = i == len(r.turns) - 1
            branch, stem = ("└─", "   ") if last else ("├─", "│  ")
            attached = "".join(f" + [{safe(name)}]" for name in t.attachments)
            label = f"Turn {t.turn}" + (f" ({safe(t.id)})" if t.id else "")
            called = f" [tools: {safe(', '.join(c.name for c in t.tool_calls))}]" if t.tool_calls and not as_text(t.output) else ""
            width = 300 if self.verbose else 40  # -v shows what was said, not a glimpse of it
            said = self.paint(f"error: {self._cut(t.error, width * 2)}", "red") if t.error else f"\"{self._cut(as_text(t.output), width)}\"{called}"
            cut = self.paint(" (cut at its token limit)", "yellow") if t.truncated else ""
            self.line(f"  {branch} {label}: \"{self._cut(as_text(t.input), width)}\"{attached} → {said}{cut}")
            leaves = [f"{self.paint('✓', 'green')} checkpoint: {safe(cp_id)}{safe(self._tool_of(r, cp_id))}" for cp_id in t.checkpoints]
            leaves += [f"{self.paint('✓', 'green')} {safe(a.name)}" if a.passed else f"{self.paint('✗', 'red')} {safe(a.name)}: {reason(a.message)}"
                       for a in t.assertions]
            leaves += [self.paint(f"ended: {safe(t.ended)}", "dim")] if t.ended and self.verbose else []
            for j, leaf in enumerate(leaves):
                self.line(f"  {stem}{'└─' if j == len(leaves) - 1 else '├─'} {leaf}")
            if self.verbose:
                for c in t.tool_calls:
                    self._tool_call(c, f"  {stem}   ", 60)
        self.line(f"  {status} ({took}) - {_tally(r)}")
        for cp in r.checkpoints:  # why each was missed: what it waited for, or its closest attempt
            if not cp.reached:
                mark = self.paint("✗", "red") if cp.required else self.paint("○", "dim")
                what = "checkpoint not reached" if cp.required else "optional checkpoint not reached"
                self.line(f"  {mark} {what}: {safe(cp.id)}" + (f" — {reason(cp.message.removeprefix('not reached').lstrip('; '))}"
                                                                  if cp.message.removeprefix("not reached") else ""))
        if self.verbose:
            self._verdicts(r, "  ")  # a dynamic case's final assertions
            self._world(r, "  ")
            self._captured(r)
        self._reasons(r)
        self.line()

    def summary(self, report: RunReport, output: str | None, cut_short: list[str] | None = None) -> None:
        """``cut_short``: the cases (runs) that were running when Ctrl-C or SIGTERM stopped the run."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        brief = self.quiet >= 2
        self.quiet = min(self.quiet, 1)  # -qq shows the summary, and only it
        s = summary_dict(report)
        if not self._blank:
            self.line()
        self.section("Summary")
        rows = [("Agent", report.agent_id), ("Connector", report.connector), ("Simulator", report.simulator),
                ("Total", f'{s["total"]:,}'), ("Passed", f'{s["passed"]:,}'), ("Failed", f'{s["failed"]:,}')]
        rows += [(k, f"{v:,}" if isinstance(v, int) else v) for k, v in (("Errors", _errors(report, s["errors"])), ("Timeouts", s["timeouts"]), ("Skipped", s["skipped"])) if v]
        ran = s["total"] - report.not_run - s["skipped"]
        rows.append(("Pass Rate", words.pass_rate_text(report, s["pass_rate"]) + (f" (of the {ran:,} that ran)" if report.interrupted else "")))
        if report.checked_nothing:
            rows.append(("Checked nothing", figures.unchecked_text(report.checked_nothing)))
        took = format_duration(report.duration_ms / 1000)
        finished = len(report.results)  # an interrupted run: the tests that ran, not those selected
        if self.parallel > 1 and finished:
            took += f" (effective: {format_duration(report.duration_ms / 1000 / finished)}/test with {self.parallel} parallel)"
        rows.append(("Duration", took))
        if s["usage"]["total_tokens"]:
            u = s["usage"]
            rows.append(("Tokens", f"{u['total_tokens']:,} ({u['prompt_tokens']:,} prompt + {u['completion_tokens']:,} completion)"
                         + {"estimated": ", estimated: the endpoint sent no usage", "unknown": ", and some calls' usage unknown: the endpoint sent none"}.get(u.get("source", ""), "")))
        elif s["usage"].get("source") == "unknown":
            rows.append(("Tokens", "unknown (the endpoint sent no usage; pip install 'agent-test[tokens]' to estimate it)"))
        if "load" in s and (s["load"]["rate_limited"] or s["load"]["retries"]):
            rows.append(("Load", load_line(s["load"])))
        for label, value in rows:
            if value not in ("", None):
                self.line(f"  {label + ':':<10} {safe(value)}")
        self._figures(report, s, brief)
        self._suites(report)
        if report.not_run:
            runs = " runs" if _in_runs(report, s) else ""
            self.line(f"  Not run:   {report.not_run:,}{runs} ({'interrupted' if report.interrupted else 'stopped early'})")
        if cut_short:  # counted in "not run": they have no verdict line of their own
            shown = ", ".join(cut_short[:10]) + (f" and {len(cut_short) - 10} more" if len(cut_short) > 10 else "")
            self.line(f"  Cut short: {shown} (running when the run was stopped; no verdict)")
        for w in report.warnings:
            if w not in self._warned:  # each warning once: those of the header are not repeated
                self.line(f"  {self.paint('⚠', 'yellow')} {safe(w)}")
        if output:
            self.line()
            self.line(f"  Output: {output}")
        self.line()
        self.line(RULE)
        self.line("  " + self._verdict(report, s))
        self.line(RULE)

    def _figures(self, report: RunReport, s: dict[str, Any], brief: bool = False) -> None:
        """The gates (with Yao's stability class and figures), the model matrix and the costs, each when
        there is something to show; ``brief`` (-qq): of the gates, only the line and the failed ones."""
        gates = figures.gate_table(report)
        if gates is not None:
            self.line()
            self.line(f"  Gates:     {figures.gate_summary(report)}")
            if brief:
                gates = figures.Table(gates.headers, [r for r, v in zip(gates.rows, gates.verdicts) if v != "passed"],
                                      [v for v in gates.verdicts if v != "passed"])
            if gates.rows:
                self._table(gates)
        passk = figures.pass_k_table(report)
        if passk is not None:
            self.line()
            self.line(f"  pass^k:    {figures.pass_k_caption(report)} (unbiased: mean over cases of C(c,k)/C(n,k))")
            self._table(passk)
        if report.stability:
            self.line(f"  Overall:   {s['overall_pass_rate']}% of runs passed; {s['stable_cases']}/{len(report.stability)} cases stable")
        matrix = figures.matrix_table(report)
        if matrix is not None:
            self.line()
            self.line("  Matrix (the agent under test on each connector):")
            self._table(matrix)
            for text in figures.evidence_lines(report):
                self.line(f"    {safe(text)}")
        tagged = figures.tag_table(report)
        if tagged is not None:
            self.line()
            self.line("  Tags:")
            self._table(tagged)
        judges = words.judge_lines(report)
        if judges:
            self.line()
            self.line("  Judges (each validator × connector against the labels):")
            for text in judges:
                self.line(f"    {safe(text)}")
        lines = figures.cost_lines(report)
        if lines:
            self.line()
            self.line(f"  Cost:      {safe(lines[0])}")
            for more in lines[1:]:
                self.line(f"             {safe(more)}")

    def _suites(self, report: RunReport) -> None:
        """Each suite's checks over its cases (FORMATS §18): one line when they held, each failed one when not."""
        for suite in report.suites:
            on = f" on {suite.connector}" if suite.connector else ""
            if not suite.assertions:
                self.line(f"  Suite:     {safe(suite.id)}{on}" + (f" ({safe(suite.name)})" if suite.name else "") + ": no suite checks")
                continue
            if suite.passed:
                self.line(f"  Suite:     {self.paint('✓', 'green')} {safe(suite.id)}{on}: {plural(len(suite.assertions), 'suite check')} held")
                continue
            self.line(f"  Suite:     {self.paint('✗', 'red')} {safe(suite.id)}{on}: {len(suite.failures)} of "
                      f"{plural(len(suite.assertions), 'suite check')} failed")
            for failure in suite.failures:
                self.line(f"             {self.paint('✗', 'red')} {safe(reason(failure))}")

    def _table(self, table: figures.Table) -> None:
        safe_table = figures.Table(table.headers, [[safe(c) for c in row] for row in table.rows], table.verdicts)
        lines = figures.aligned(safe_table)
        self.line(f"    {self.paint(lines[0], 'dim')}")
        for text, verdict in zip(lines[1:], table.verdicts):
            self.line(f"    {self.paint(text, STATUS_COLOR[verdict]) if verdict in ('failed',) else text}")

    def _verdict(self, report: RunReport, s: dict[str, Any]) -> str:
        if report.interrupted:  # with --runs or a matrix, in runs and in cases (the banner counts cases)
            done, total = len(report.results), s["total"]
            if _in_runs(report, s):
                started = sum(1 for g in report.gates if g.runs or g.skipped)
                what = "cases × connectors" if report.matrix else "case" if len(report.gates) == 1 else "cases"
                return self.paint(f"⚠ INTERRUPTED after {done:,} of {total:,} runs ({started:,} of {len(report.gates):,} {what} ran)", "yellow")
            return self.paint(f"⚠ INTERRUPTED after {done:,} of {total:,} tests", "yellow")
        counts, cases = case_verdicts(report)
        bad = sum(counts.values())
        if bad:
            parts = ", ".join(f"{n:,} {label}{'s' if label == 'error' and n != 1 else ''}" for label, n in counts.items() if n)
            what = "cases × connectors" if report.matrix else ("test" if cases == 1 else "tests")
            unrun_cases = sum(1 for g in report.gates if g.verdict == "not run") if report.gates else report.not_run
            incomplete = sum(1 for g in report.gates if g.verdict == "incomplete")
            ran = " that ran" if unrun_cases or incomplete else ""
            left = [f"{n:,} {what}" for n, what in ((unrun_cases, "not run"), (incomplete, "incomplete")) if n]
            unrun = f" ({', '.join(left)})" if left else ""
            return self.paint(f"❌ {parts} — {bad:,} of {cases:,} {what}{ran} did not pass{unrun}{_suites_failed(report, '; ')}", "red")
        if _suites_failed(report):
            return self.paint(f"❌ {_suites_failed(report)} — the run fails", "red")
        if report.stopped_early:
            return self.paint("⚠ STOPPED EARLY", "yellow")
        if lacking := report.options.get("missing_shards"):
            return self.paint(f"⚠ PARTIAL MERGE — shard{'s' if len(lacking) > 1 else ''} {', '.join(map(str, lacking))} missing", "yellow")
        if report.results and all(r.status == "skipped" for r in report.results):  # skipped by the cases themselves: not a pass
            return self.paint(f"⚠ NO TEST RAN — {cases} skipped", "yellow")
        if not report.results and report.options.get("shard"):  # more shards than cases: exit 0, but not a green run
            return self.paint(f"⚠ NO TEST RAN — shard {report.options['shard']} holds none of the selected cases", "yellow")
        uncalibrated = evidence.of(report).judge_gate_failed
        if uncalibrated:
            return self.paint("❌ JUDGE GATE FAILED — " + "; ".join(words.gate_line(c) for c in uncalibrated), "red")
        none = sum(1 for g in report.gates if g.vacuous)  # passed by a gate of 0: no run had to pass
        if none:
            what = "cases × connectors" if report.matrix else ("case" if none == 1 else "cases")
            return self.paint(f"⚠ GATES PASSED — {none} {what} passed none of {'its' if none == 1 else 'their'} runs "
                              f"(min_pass_rate 0)", "yellow")
        if report.checked_nothing:
            n = len(report.checked_nothing)
            return self.paint(f"✨ ALL TESTS PASSED ✨ ({n} of them checked nothing but that the agent answered)", "yellow")
        return self.paint("✨ ALL TESTS PASSED ✨", "green")


def _suites_failed(report: RunReport, before: str = "") -> str:
    """``2 suite checks failed`` (with ``before`` in front), or "" when every suite check held."""
    failed = sum(len(s.failures) for s in report.suites)
    return f"{before}{plural(failed, 'suite check')} failed" if failed else ""


def _in_runs(report: RunReport, s: dict[str, Any]) -> bool:
    """Whether the summary's totals count runs rather than cases (--runs, or a model matrix)."""
    return bool(report.gates) and len(report.gates) != s["total"]


def _tally(r: CaseResult) -> str:
    """``3 turns, 2/3 checkpoints`` (dynamic) or ``3 turns, 4/5 turn checks, 1 not run`` (scripted)."""
    turns = plural(len(r.turns), "turn")
    if r.dynamic:
        ended = r.turns[-1].ended if r.turns else ""
        said = f"{turns}{f' (ended: {ended})' if ended and ended not in ('checkpoints reached', 'max turns') else ''}"
        return f"{said}, {sum(1 for c in r.checkpoints if c.reached)}/{len(r.checkpoints)} checkpoints" if r.checkpoints else said
    checks = [a for t in r.turns for a in t.assertions]
    said = f"{turns}, {sum(1 for a in checks if a.passed)}/{len(checks)} turn checks" if checks else turns
    return said + (f", {r.not_run_turns} not run" if r.not_run_turns else "")


def case_verdicts(report: RunReport) -> tuple[dict[str, int], int]:
    """How many cases (not runs; in a model matrix, case × connector) did not pass — by their gate, each
    counted once under its worst run — and how many cases ran."""
    rank = {"passed": 0, "skipped": 0, "failed": 1, "timeout": 2, "error": 3}
    gated = {g.key for g in failed(report.gates)} if report.gates else None
    counts = {"failed": 0, "timed out": 0, "error": 0}
    labels = {1: "failed", 2: "timed out", 3: "error"}
    cases = 0
    for key, level in _worst(report, rank):
        cases += 1
        if level and (gated is None or key in gated):  # a case within its gate passed, whatever some runs did
            counts[labels[level]] += 1
    return counts, cases


def _worst(report: RunReport, rank: dict[str, int]) -> Iterator[tuple[CaseKey, int]]:
    """Each case (× connector) that ran and the rank of its worst run, in the report's order."""
    for key, _, runs in report.groups():
        if runs:
            yield key, max(rank[r.status] for r in runs)


def _errors(report: RunReport, errors: int) -> Any:
    """The errors, with those that were a judge's or a simulator's fault (not the agent's) counted apart."""
    by = Counter(r.error_by for r in report.results if r.status == "error" and r.error_by)
    if not by:
        return errors
    apart = ", ".join(f"{n:,} {'judge' if who == 'validator' else who}" for who, n in sorted(by.items(), key=lambda item: item[0] != "validator"))
    return f"{errors:,} ({apart}; the agent's: {errors - sum(by.values()):,})"
