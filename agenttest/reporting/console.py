"""The console: banner, header, one line per case (a tree per dynamic case), summary, final banner."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TextIO

from ..config import format_duration, format_timeout
from ..model import Case, CaseResult, RunHeader, RunReport
from ..records import preview, summary_dict
from ..secrets import Secrets
from ..texts import as_text, shorten

RULE = "═" * 63
THIN = "─" * 63
COLORS = {"green": "32", "red": "31", "yellow": "33", "cyan": "36", "dim": "2", "bold": "1"}
STATUS_COLOR = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow", "skipped": "yellow"}


def load_line(load: dict[str, Any]) -> str:
    """``12 × 429 absorbed, 3 retries; fake: concurrency 4 (lowest 2)``."""
    parts = [f"{load['absorbed']} × 429 absorbed"] + ([f"{load['retries']} retries"] if load["retries"] else [])
    limits = [f"{name}: concurrency {e['limit']} (lowest {e['lowest_limit']})" for name, e in load["connectors"].items() if e["rate_limited"]]
    return "; ".join([", ".join(parts), *limits])


def cut(text: Any, limit: int) -> str:
    """One line: its first ``limit`` characters (characters, not bytes), then ``...`` when cut."""
    line = shorten(text, 1 << 30)
    return line if len(line) <= limit else line[:limit].rstrip() + "..."


class Console:
    def __init__(self, out: TextIO, color: bool = False, verbose: bool = False, parallel: int = 1, progress: bool = False,
                 show_reply: bool = False, secrets: Secrets | None = None):
        self.out = out
        self.secrets = secrets if secrets is not None else Secrets()
        self.color = color
        self.verbose = verbose
        self.parallel = parallel
        self.show_reply = show_reply  # a literal message run: show the reply even without -v
        self.total = 0
        self.done = 0
        self._bar: Any = None
        self._progress = progress and parallel > 1
        self._pending_line = False
        self._blank = False

    # -- primitives --------------------------------------------------------------------------

    def _cut(self, text: Any, limit: int) -> str:
        """``cut`` after hiding secrets: cutting first could leave a secret's prefix on the screen."""
        return cut(self.secrets.redact(shorten(text, 1 << 30)), limit)

    def paint(self, text: str, color: str) -> str:
        return f"\x1b[{COLORS[color]}m{text}\x1b[0m" if self.color else text

    def line(self, text: str = "") -> None:
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
        if self.parallel > 1:
            title += f" (Parallel: {self.parallel})"
        self.section(title, heavy=True)
        for label, value in (("Agent", info.agent), ("Connector", info.connector), ("Simulator", info.simulator)):
            if value:
                self.line(f"{self.paint('ℹ', 'cyan')} {label}: {value}")
        self.line(f"{self.paint('ℹ', 'cyan')} Input: {info.input}")
        self.line(f"{self.paint('ℹ', 'cyan')} Timeout: {format_timeout(info.timeout)}")
        if self.parallel > 1:
            self.line(f"{self.paint('ℹ', 'cyan')} Parallel: {self.parallel} concurrent")
        if info.runs > 1:
            self.line(f"{self.paint('ℹ', 'cyan')} Runs: {info.runs} per case")
        for w in warnings:
            self.line(f"{self.paint('⚠', 'yellow')} {w}")
        self.line()
        self.section("Running Tests" + (f" ({self.parallel} parallel)" if self.parallel > 1 else ""))
        self.total = info.total
        if self._progress:
            from tqdm import tqdm

            import sys

            self._bar = tqdm(total=self.total, file=sys.stderr, unit="case", leave=False, dynamic_ncols=True)

    def warning(self, text: str) -> None:
        """A warning while cases run (an endpoint marked down), on a line of its own."""
        if self._pending_line:
            self.out.write("\n")
            self._pending_line = False
        self.line(f"{self.paint('⚠', 'yellow')} {text}")

    def _title(self, case_id: str, run: int, runs: int) -> str:
        return f"[{case_id}]" + (f" (run {run}/{runs})" if runs > 1 else "")

    def started(self, case: Case, run: int, runs: int = 1) -> None:
        """Sequential standard cases show their line at once and finish it when the result comes."""
        if self.parallel > 1 or case.dynamic or self.show_reply or self._bar is not None:
            return
        self.out.write(f"► {self._title(case.id, run, runs)} {self._cut(preview(case.input) or case.name, 48)} ")
        self.out.flush()
        self._pending_line = True

    def finished(self, result: CaseResult, runs: int = 1) -> None:
        self.done += 1
        status = self.paint(f"{result.status.upper()}", STATUS_COLOR[result.status])
        took = format_duration(result.duration_ms / 1000)
        if result.dynamic:
            self._tree(result, runs, status, took)
        else:
            head = "" if self._pending_line else f"► {self._title(result.id, result.run, runs)} {self._cut(preview(result.input) or result.name, 48)} "
            self._pending_line = False
            self.line(f"{head}{status} ({took})")
            self._details(result)
        if self._bar is not None:
            self._bar.update(1)
        elif self.parallel > 1 and result.dynamic and self.done < self.total:
            self.line(self.paint(f"[Progress: {self.done}/{self.total} completed]", "dim"))
            self.line()

    def _details(self, r: CaseResult) -> None:
        for reason in r.reasons:
            self.line(f"  └─ {self.paint(reason, 'red' if r.status != 'skipped' else 'yellow')}")
        for w in r.warnings:
            self.line(f"  └─ {self.paint('warning: ' + w, 'yellow')}")
        if self.verbose or self.show_reply:
            for c in r.tool_calls:
                result = f"error: {c.error}" if c.error else self._cut(as_text(c.result), 100)
                self.line(f"  │  tool {c.name}({self._cut(as_text(c.arguments), 80)}) → {result}")
            if r.status != "skipped":
                self.line(f"  │  output: {as_text(r.output)}" if self.show_reply else f"  │  output: {self._cut(as_text(r.output), 300)}")
            for log in r.logs:
                self.line(f"  │  log: {log}")
        if self.verbose:
            for a in r.assertions:
                mark = self.paint("✓", "green") if a.passed else self.paint("✗", "red")
                score = f" (score {a.score:g})" if a.score is not None else ""
                self.line(f"  │  {mark} {a.type}{score}" + ("" if a.passed else f": {a.message}"))

    def _tree(self, r: CaseResult, runs: int, status: str, took: str) -> None:
        self.line(f"► {self._title(r.id, r.run, runs)} {r.name or ''}".rstrip())
        for i, t in enumerate(r.turns):
            last = i == len(r.turns) - 1
            branch, stem = ("└─", "   ") if last else ("├─", "│  ")
            self.line(f"  {branch} Turn {t.turn}: \"{self._cut(as_text(t.input), 40)}\" → \"{self._cut(as_text(t.output), 40)}\"")
            for j, cp_id in enumerate(t.checkpoints):
                cp = next((c for c in r.checkpoints if c.id == cp_id), None)
                tool = f" (tool: {cp.tool})" if cp is not None and cp.tool else ""
                leaf = "└─" if j == len(t.checkpoints) - 1 else "├─"
                self.line(f"  {stem}{leaf} {self.paint('✓', 'green')} checkpoint: {cp_id}{tool}")
            if self.verbose:
                for c in t.tool_calls:
                    self.line(f"  {stem}   tool {c.name}({self._cut(as_text(c.arguments), 60)})")
        reached = sum(1 for c in r.checkpoints if c.reached)
        turns = len(r.turns)
        self.line(f"  {status} ({took}) - {turns} turn{'s' if turns != 1 else ''}, {reached}/{len(r.checkpoints)} checkpoints")
        for reason in r.reasons:
            self.line(f"  └─ {self.paint(reason, 'red')}")
        for w in r.warnings:
            self.line(f"  └─ {self.paint('warning: ' + w, 'yellow')}")
        self.line()

    def summary(self, report: RunReport, output: str | None) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        s = summary_dict(report)
        if not self._blank:
            self.line()
        self.section("Summary")
        rows = [("Agent", report.agent_id), ("Connector", report.connector), ("Simulator", report.simulator),
                ("Total", s["total"]), ("Passed", s["passed"]), ("Failed", s["failed"])]
        rows += [(k, v) for k, v in (("Errors", s["errors"]), ("Timeouts", s["timeouts"]), ("Skipped", s["skipped"])) if v]
        rows.append(("Pass Rate", f"{s['pass_rate']:.1f}%"))
        took = format_duration(report.duration_ms / 1000)
        if self.parallel > 1 and s["total"]:
            took += f" (effective: {format_duration(report.duration_ms / 1000 / s['total'])}/test with {self.parallel} parallel)"
        rows.append(("Duration", took))
        if s["usage"]["total_tokens"]:
            u = s["usage"]
            rows.append(("Tokens", f"{u['total_tokens']:,} ({u['prompt_tokens']:,} prompt + {u['completion_tokens']:,} completion)"))
        if "load" in s and (s["load"]["rate_limited"] or s["load"]["retries"]):
            rows.append(("Load", load_line(s["load"])))
        for label, value in rows:
            if value not in ("", None):
                self.line(f"  {label + ':':<10} {value}")
        if report.stability:
            self.line()
            self.line("  Stability:")
            for st in report.stability:
                self.line(f"    {st.id}: {st.passed}/{st.runs} passed ({st.pass_rate:.0f}%) {st.classification}, avg {format_duration(st.avg_ms / 1000)} ±{format_duration(st.std_ms / 1000)}")
            self.line(f"  Overall:   {s['overall_pass_rate']}% of runs passed; {s['stable_cases']}/{len(report.stability)} cases stable")
        if report.not_run:
            self.line(f"  Not run:   {report.not_run} (stopped early)")
        for w in report.warnings:
            self.line(f"  {self.paint('⚠', 'yellow')} {w}")
        if output:
            self.line()
            self.line(f"  Output: {output}")
        self.line()
        self.line(RULE)
        self.line("  " + self._verdict(report, s))
        self.line(RULE)

    def _verdict(self, report: RunReport, s: dict[str, Any]) -> str:
        if report.interrupted:
            return self.paint(f"⚠ INTERRUPTED after {s['total']} of {self.total} tests", "yellow")
        bad = s["failed"] + s["errors"] + s["timeouts"]
        if bad:
            word = "TEST" if bad == 1 else "TESTS"
            return self.paint(f"❌ {bad} {word} FAILED", "red")
        if report.stopped_early:
            return self.paint("⚠ STOPPED EARLY", "yellow")
        return self.paint("✨ ALL TESTS PASSED ✨", "green")
