"""Markdown report: the summary, a table of cases, then each failure's reasons and transcript."""

from __future__ import annotations

from ..config import format_duration
from ..texts import as_text, shorten
from ..model import CaseResult, RunReport, ToolCall
from .formats import register
from ..records import change_text, row_input, summary_dict

ICONS = {"passed": "✅", "failed": "❌", "error": "💥", "timeout": "⏱", "skipped": "⏭"}


def _cell(text: object, limit: int = 80) -> str:
    return shorten(text, limit).replace("|", "\\|")


def _details(r: CaseResult) -> list[str]:
    lines = [f"### {ICONS.get(r.status, '')} {r.id} — {r.status}", ""]
    if r.name:
        lines += [f"*{r.name}*", ""]
    for reason in r.reasons:
        lines.append(f"- {reason}")
    lines += ["", "**Input**", "", "```", as_text(r.input), "```", "", "**Output**", "", "```", as_text(r.output), "```", ""]
    if r.tool_calls:
        lines.append("**Tool calls**")
        lines.append("")
        lines += [f"- `{c.name}` {as_text(c.arguments)} → {as_text(c.error or c.result)}" + _mark(c) for c in r.tool_calls]
        lines.append("")
    if r.world is not None:
        lines += ["**World**", ""] + ([f"- `{change_text(c, 200)}`" for c in r.world.changes] or ["- unchanged"]) + [""]
    lines += _turns(r)
    return lines


def _mark(c: ToolCall) -> str:
    if c.fault is not None:
        return f" *(fault: {c.fault})*"
    return " *(mocked)*" if c.mocked else ""


def _turns(r: CaseResult) -> list[str]:
    if not r.dynamic:
        return []
    lines = [f"- Turn {t.turn}: “{_cell(t.input, 200)}” → “{_cell(t.output, 200)}”" + (f" ✓ {', '.join(t.checkpoints)}" if t.checkpoints else "") for t in r.turns]
    reached = sum(1 for c in r.checkpoints if c.reached)
    lines.append(f"- Checkpoints {reached}/{len(r.checkpoints)}: " + ", ".join(f"{'✓' if c.reached else '✗'} {c.id}" + ("" if c.required else " (optional)") for c in r.checkpoints))
    return lines + [""]


@register(".md")
def to_markdown(report: RunReport) -> str:
    s = summary_dict(report)
    lines = [
        "# Agent Test Report",
        "",
        f"- **Agent:** {report.agent_id or '—'}",
        f"- **Connector:** {report.connector or '—'}",
        f"- **Input:** {report.input_source}",
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
            lines.append(f"| {st.id} | {st.runs} | {st.pass_rate}% | {st.avg_ms:.0f}ms | {st.min_ms:.0f}ms | {st.max_ms:.0f}ms | {st.std_ms:.0f}ms | {st.classification} |")
    conversations = [r for r in report.results if r.dynamic and r.status == "passed"]
    if conversations:
        lines += ["", "## Conversations", ""]
        for r in conversations:
            lines += [f"### {ICONS['passed']} {r.id}" + (f" — {r.name}" if r.name else ""), ""] + _turns(r)
        lines.pop()  # the last conversation's trailing blank line
    failures = [r for r in report.results if r.status not in ("passed", "skipped")]
    if failures:
        lines += ["", "## Failures", ""]
        for r in failures:
            lines += _details(r)
    return "\n".join(lines) + "\n"
