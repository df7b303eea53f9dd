"""Markdown report: the summary, a table of cases, then each failure's reasons and transcript."""

from __future__ import annotations

import re

from agenttest.util.durations import format_duration
from agenttest.util.text import as_text, printable, shorten
from agenttest.model import AssertionResult, CaseResult, RunReport, ToolCall
from agenttest.reporting import figures
from agenttest.reporting import evidence as words
from agenttest.reporting.formats import register
from agenttest.reporting.codec import summary_dict
from agenttest.reporting.rows import change_text, row_input

ICONS = {"passed": "✅", "failed": "❌", "error": "💥", "timeout": "⏱", "skipped": "⏭"}


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|~"} | {"\n": " ", "\r": " "})


def _text(value: object, limit: int | None = None) -> str:
    """Quoted text (model output, ids, reasons) as inert Markdown: one line, specials escaped — a reply
    cannot add links, images, HTML or table columns to the report."""
    line = printable(shorten(value, limit) if limit else as_text(value))
    return line.translate(_MARKDOWN)


_cell = _text


def _code(value: object) -> str:
    """Inline code that the quoted text cannot close."""
    text = printable(as_text(value)).replace("|", "\\|")
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(value: object) -> list[str]:
    """A fenced block that the quoted text cannot close: the fence outgrows any run of backticks in it."""
    text = printable(as_text(value), newlines=True)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def _title(r: CaseResult, report: RunReport) -> str:
    """A result's id with its connector (a matrix) and run number (repeated runs)."""
    where = f" @ {_text(r.connector)}" if report.matrix else ""
    run = f" (run {r.run})" if report.repeated else ""
    file = f" in {_code(r.file)}" if r.file and len(report.files) > 1 else ""
    return f"{_text(r.id)}{where}{run}{file}"


def _details(r: CaseResult, report: RunReport) -> list[str]:
    lines = [f"### {ICONS.get(r.status, '')} {_title(r, report)} — {r.status}", ""]
    if r.name:
        lines += [f"*{_text(r.name)}*", ""]
    for reason in r.reasons:
        lines.append(f"- {_text(reason)}")
    failed = [a for a in r.assertions if not a.passed and (a.expected is not None or a.actual is not None)]
    if failed:
        lines += ["", "**Expected vs actual**", ""]
        for a in failed:
            lines += _expected_actual(a)
    if r.warnings:
        lines += ["", *[f"- ⚠ {_text(w)}" for w in r.warnings]]
    lines += ["", "**Input**", "", *_fence(r.input), "", "**Output**" + (" (the first tool result: the agent's answer is its tool call)" if r.output_from else ""), "", *_fence(r.output), ""]
    if r.tool_calls:
        lines.append("**Tool calls**")
        lines.append("")
        lines += [f"- {_code(c.name)} {_text(c.arguments)} → {_text(c.error or c.result)}" + _where(c) + _mark(c) for c in r.tool_calls]
        lines.append("")
    if r.world is not None:
        lines += ["**World**", ""] + ([f"- {_code(change_text(c, 200))}" for c in r.world.changes] or ["- unchanged"]) + [""]
    lines += _turns(r)
    return lines + _captured(r)


def _where(c: ToolCall) -> str:
    return f" (raised at {_code(c.location)})" if c.location else ""


def _captured(r: CaseResult) -> list[str]:
    """What the case's user code printed, its traceback, and the tracebacks of tools that raised."""
    lines: list[str] = []
    for label, text in (("stdout", r.stdout), ("stderr", r.stderr), ("Traceback", r.traceback)):
        if text:
            lines += [f"**{label}**", "", *_fence(text.rstrip("\n")), ""]
    for c in r.tool_calls:
        if c.traceback:
            lines += [f"**Tool {_code(c.name)} raised** at {_code(c.location or '?')}", "", *_fence(c.traceback.rstrip("\n")), ""]
    return lines


def _expected_actual(a: AssertionResult) -> list[str]:
    return [f"- {_code(a.name)}: {_text(a.message, 300)}", f"  - expected{' not' if a.negated else ''}: {_text(a.expected, 300)}",
            f"  - actual: {_text(a.actual, 300)}"]


def _table(table: figures.Table) -> list[str]:
    aligns = ["---" if i == 0 or not table.rows or not table.rows[0][i][:1].isdigit() else "---:" for i in range(len(table.headers))]
    return ["| " + " | ".join(_cell(h) for h in table.headers) + " |", "|" + "|".join(aligns) + "|",
            *["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]]


def _state(report: RunReport, s: dict) -> list[str]:
    """Interrupted, stopped early, not run: said before anything else."""
    lines = [f"> {'⚠ ' if label != 'Not run:' else ''}**{label}** {_text(text)}" for label, text in figures.run_state(report)]
    return lines + [""] if lines else []


def _warnings(report: RunReport) -> list[str]:
    """The run's warnings, then those on results (a failed After hook)."""
    lines = [f"- {_text(w)}" for w in report.warnings]
    lines += [f"- {_title(r, report)}: {_text(w)}" for r in report.results for w in r.warnings]
    return ["", "## Warnings", "", *lines] if lines else []


def _interval(report: RunReport, s: dict) -> list[str]:
    """The pass rate with its interval and what it stands on (docs/statistics.md)."""
    return [f"Pass rate {_text(words.pass_rate_text(report, s['pass_rate']))}.", ""] if "pass_rate_interval" in s else []


def _figures(report: RunReport) -> list[str]:
    lines: list[str] = []
    gates = figures.gate_table(report)
    if gates is not None:
        lines += ["", "## Gates", "", f"Gates {_text(figures.gate_summary(report))}.", "", *_table(gates)]
    passk = figures.pass_k_table(report)
    if passk is not None:
        lines += ["", "## pass^k", "", f"{_text(figures.pass_k_caption(report))}; unbiased: the mean over cases of C(c,k)/C(n,k).", "",
                  *_table(passk)]
    matrix = figures.matrix_table(report)
    if matrix is not None:
        lines += ["", "## Matrix", "", "The agent under test on each connector: verdict, pass rate, tokens, cost, median latency.", "",
                  *_table(matrix)]
        said = figures.evidence_lines(report)
        if said:
            lines += ["", *[f"{'  ' if text.startswith('  ') else ''}- {_text(text.strip())}" for text in said]]
    judges = words.judge_lines(report)
    if judges:
        lines += ["", "## Judges", "", "Each validator × connector against the labels (docs/statistics.md).", "",
                  *[f"{'  ' if text.startswith('  ') else ''}- {_text(text.strip())}" for text in judges]]
    costs = figures.cost_lines(report)
    if costs:
        lines += ["", "## Costs", "", *[f"- {_text(c)}" for c in costs]]
    if report.suites:
        lines += ["", "## Suite checks", ""]
        for suite in report.suites:
            on = f" on {_text(suite.connector)}" if suite.connector else ""
            lines.append(f"- {ICONS['passed' if suite.passed else 'failed']} {_code(suite.id)}{on}" + (f" — {_text(suite.name)}" if suite.name else ""))
            lines += [f"  - {'✓' if a.passed else '✗'} {_code(a.name)}" + ("" if a.passed else f": {_text(a.message, 300)}") for a in suite.assertions]
    return lines


def _mark(c: ToolCall) -> str:
    if c.violation:
        return " *(policy violation)*"
    if c.fault is not None:
        return f" *(fault: {c.fault})*"
    return " *(mocked)*" if c.mocked else ""


def _turns(r: CaseResult) -> list[str]:
    if not r.conversation:
        return []
    lines = []
    for t in r.turns:
        said = f"error: {_text(t.error, 300)}" if t.error else f"“{_cell(t.output, 200)}”" + (" (cut at its token limit)" if t.truncated else "")
        lines.append(f"- Turn {t.turn}{f' ({_text(t.id)})' if t.id else ''}: “{_cell(t.input, 200)}” → {said}"
                     + (f" ✓ {', '.join(_code(c) for c in t.checkpoints)}" if t.checkpoints else "") + (f" — ended: {_text(t.ended)}" if t.ended else ""))
        lines += [f"  - {'✓' if a.passed else '✗'} {_code(a.name)}" + ("" if a.passed else f": {_text(a.message, 300)}") for a in t.assertions]
    if r.not_run_turns:
        lines.append(f"- {r.not_run_turns} later turn{'s' if r.not_run_turns != 1 else ''} not run")
    if not r.dynamic:
        return lines + [""]
    reached = sum(1 for c in r.checkpoints if c.reached)
    lines.append(f"- Checkpoints {reached}/{len(r.checkpoints)}: " + ", ".join(f"{'✓' if c.reached else '✗'} {_code(c.id)}" + ("" if c.required else " (optional)") for c in r.checkpoints))
    return lines + [""]


@register(".md")
def to_markdown(report: RunReport) -> str:
    s = summary_dict(report)
    lines = [
        "# Agent Test Report",
        "",
        f"- **Agent:** {_text(report.agent_id or '—')}",
        f"- **Connector:** {_text(report.connector or '—')}",
        *([f"- **Roles:** {_text(figures.players_text(report.players))}"] if report.players else []),
        f"- **Input:** {_text(report.input_source)}",
        f"- **Started:** {report.started_at}",
        "",
        "| Total | Passed | Failed | Errors | Timeouts | Skipped | Pass rate | Duration |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {s['total']} | {s['passed']} | {s['failed']} | {s['errors']} | {s['timeouts']} | {s['skipped']} | {s['pass_rate']}% | {format_duration(report.duration_ms / 1000)} |",
        "",
        *_interval(report, s),
        *_state(report, s),
        "## Cases",
        "",
    ]
    lines += _cases(report)
    lines += _figures(report)
    if report.stability:
        conn = bool(report.matrix)
        lines += ["", "## Stability", "", "| ID |" + (" Connector |" if conn else "") + " Runs | Pass rate | Avg | Min | Max | Std dev | Class |",
                  "|---|" + ("---|" if conn else "") + "---:|---:|---:|---:|---:|---:|---|"]
        for st in report.stability:
            lines.append(f"| {_cell(st.id)} |" + (f" {_cell(st.connector)} |" if conn else "")
                         + f" {st.runs} | {st.percent}% | {st.mean_ms:.0f}ms | {st.min_ms:.0f}ms | {st.max_ms:.0f}ms | {st.std_ms:.0f}ms | {st.classification} |")
    conversations = [r for r in report.results if r.dynamic and r.status == "passed"]
    if conversations:
        lines += ["", "## Conversations", ""]
        for r in conversations:
            lines += [f"### {ICONS['passed']} {_text(r.id)}" + (f" — {_text(r.name)}" if r.name else ""), ""] + _turns(r)
        lines.pop()  # the last conversation's trailing blank line
    lines += _tags(report)
    lines += _warnings(report)
    failures = [r for r in report.results if r.status not in ("passed", "skipped")]
    if failures:
        lines += ["", "## Failures", ""]
        for r in failures:
            lines += _details(r, report)
    minors = [r for r in report.results if r.minor_failures]
    if minors:  # severity: minor — said, never a failure
        lines += ["", "## Minor failures (they never fail a case)", ""]
        lines += [f"- {_title(r, report)}: minor: {_text(m, 300)}" for r in minors for m in r.minor_failures]
    printed = [r for r in report.results if r.status in ("passed", "skipped") and _captured(r)]
    if printed:  # the failures show theirs above
        lines += ["", "## Captured output", ""]
        for r in printed:
            lines += [f"### {ICONS.get(r.status, '')} {_title(r, report)}", "", *_captured(r)]
    return "\n".join(lines) + "\n"


def _tags(report: RunReport) -> list[str]:
    """Results grouped by tag: how many passed of each tag's results."""
    table = figures.tag_table(report)
    return ["", "## Tags", "", *_table(table)] if table is not None else []


def _cases(report: RunReport) -> list[str]:
    """One row per result: the run number with repeated runs, the connector in a matrix."""
    run, conn = report.repeated, bool(report.matrix)
    tagged = any(r.tags for r in report.results)
    files = len(report.files) > 1  # ids are unique per file only: say which
    head = "| | ID |" + (" File |" if files else "") + (" Connector |" if conn else "") + (" Run |" if run else "") + (" Tags |" if tagged else "") + " Input | Status | Duration | Reason |"
    rule = "|---|---|" + ("---|" if files else "") + ("---|" if conn else "") + ("---:|" if run else "") + ("---|" if tagged else "") + "---|---|---:|---|"
    lines = [head, rule]
    for r in report.results:
        reason = r.reasons[0] if r.reasons else ""
        lines.append(f"| {ICONS.get(r.status, '')} | {_cell(r.id, 40)} |" + (f" {_cell(r.file)} |" if files else "")
                     + (f" {_cell(r.connector)} |" if conn else "")
                     + (f" {r.run} |" if run else "") + (f" {_cell(', '.join(r.tags))} |" if tagged else "")
                     + f" {_cell(row_input(r), 50)} | {r.status} | {format_duration(r.duration_ms / 1000)} | {_cell(reason)} |")
    return lines
