"""Markdown report: the summary, a table of cases, then each failure's reasons and transcript."""

from __future__ import annotations

import re

from ..config import format_duration
from ..texts import as_text, printable, shorten
from ..model import CaseResult, RunReport, ToolCall
from .formats import register
from ..records import change_text, row_input, summary_dict

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


def _details(r: CaseResult) -> list[str]:
    lines = [f"### {ICONS.get(r.status, '')} {_text(r.id)} — {r.status}", ""]
    if r.name:
        lines += [f"*{_text(r.name)}*", ""]
    for reason in r.reasons:
        lines.append(f"- {_text(reason)}")
    lines += ["", "**Input**", "", *_fence(r.input), "", "**Output**", "", *_fence(r.output), ""]
    if r.tool_calls:
        lines.append("**Tool calls**")
        lines.append("")
        lines += [f"- {_code(c.name)} {_text(c.arguments)} → {_text(c.error or c.result)}" + _mark(c) for c in r.tool_calls]
        lines.append("")
    if r.world is not None:
        lines += ["**World**", ""] + ([f"- {_code(change_text(c, 200))}" for c in r.world.changes] or ["- unchanged"]) + [""]
    lines += _turns(r)
    return lines


def _mark(c: ToolCall) -> str:
    if c.fault is not None:
        return f" *(fault: {c.fault})*"
    return " *(mocked)*" if c.mocked else ""


def _turns(r: CaseResult) -> list[str]:
    if not r.dynamic:
        return []
    lines = [f"- Turn {t.turn}: “{_cell(t.input, 200)}” → “{_cell(t.output, 200)}”" + (f" ✓ {', '.join(_code(c) for c in t.checkpoints)}" if t.checkpoints else "") for t in r.turns]
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
        f"- **Input:** {_text(report.input_source)}",
        f"- **Started:** {report.started_at}",
        "",
        "| Total | Passed | Failed | Errors | Timeouts | Skipped | Pass rate | Duration |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {s['total']} | {s['passed']} | {s['failed']} | {s['errors']} | {s['timeouts']} | {s['skipped']} | {s['pass_rate']}% | {format_duration(report.duration_ms / 1000)} |",
        "",
        "## Cases",
        "",
        "| | ID | Input | Status | Duration | Reason |",
        "|---|---|---|---|---:|---|",
    ]
    for r in report.results:
        reason = r.reasons[0] if r.reasons else ""
        lines.append(f"| {ICONS.get(r.status, '')} | {_cell(r.id, 40)} | {_cell(row_input(r), 50)} | {r.status} | {format_duration(r.duration_ms / 1000)} | {_cell(reason)} |")
    if report.stability:
        lines += ["", "## Stability", "", "| ID | Runs | Pass rate | Avg | Min | Max | Std dev | Class |", "|---|---:|---:|---:|---:|---:|---:|---|"]
        for st in report.stability:
            lines.append(f"| {_cell(st.id)} | {st.runs} | {st.pass_rate}% | {st.avg_ms:.0f}ms | {st.min_ms:.0f}ms | {st.max_ms:.0f}ms | {st.std_ms:.0f}ms | {st.classification} |")
    conversations = [r for r in report.results if r.dynamic and r.status == "passed"]
    if conversations:
        lines += ["", "## Conversations", ""]
        for r in conversations:
            lines += [f"### {ICONS['passed']} {_text(r.id)}" + (f" — {_text(r.name)}" if r.name else ""), ""] + _turns(r)
        lines.pop()  # the last conversation's trailing blank line
    failures = [r for r in report.results if r.status not in ("passed", "skipped")]
    if failures:
        lines += ["", "## Failures", ""]
        for r in failures:
            lines += _details(r)
    return "\n".join(lines) + "\n"
