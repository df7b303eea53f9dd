"""The viewer's content without JavaScript: the summary cards, a row per result (failures first, their
reasons and transcript opened), the gates, matrix, stability and cost tables and the warnings."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape as _escape

from agenttest.reporting.codec import summary_dict
from agenttest.reporting.rows import change_text, row_input
from agenttest.model import AssertionResult, CaseResult, RunReport, ToolCall
from agenttest.reporting import figures
from agenttest.reporting import evidence as words
from agenttest.util.durations import format_duration
from agenttest.util.text import as_text, printable, shorten


def escape(text: str, quote: bool = True) -> str:
    """Text for the page: control characters and bidirectional overrides shown as their code (``\\u202e``),
    never obeyed — a reply could otherwise show "deliaf" reversed over "failed" — then HTML-escaped."""
    return _escape(printable(text, newlines=True), quote)

FAILING = ("failed", "error", "timeout")
ALL_DETAILS = 2000  # up to this many results every one has its details; beyond, only failures (the viewer has them all)

def _conversation(value: object) -> str:
    """A message history as ``role: text`` lines; anything else as text."""
    from agenttest.model.messages import content_text

    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return "\n".join(f"{m.get('role', 'user')}: {content_text(m.get('content'))}" for m in value)
    return as_text(value)


def _transcript(r: CaseResult) -> str:
    parts = []
    if r.reasons:
        parts.append("<ul>" + "".join(f'<li class="reason">{escape(x)}</li>' for x in r.reasons) + "</ul>")
    if r.assertions:
        items = "".join(
            f'<li class="{"passed" if a.passed else "failed"}">{"✓" if a.passed else "✗ minor" if a.severity == "minor" else "✗"} '
            f'<code>{escape(a.name)}</code> '
            f"{escape(a.message or a.checked or as_text(a.expected))}{_expected_actual(a)}</li>"
            for a in r.assertions
        )
        parts.append(f"<p><b>Assertions</b></p><ul>{items}</ul>")
    if r.turns:
        rows = "".join(
            f"<tr><td>{t.turn}</td><td>{escape(as_text(t.input))}</td><td>{escape(as_text(t.output))}</td>"
            f"<td>{escape(', '.join([*t.checkpoints, *(('✓ ' if a.passed else '✗ ') + (a.message or a.name) for a in t.assertions)]))}"
            f"{escape(' · ended: ' + t.ended) if t.ended else ''}</td></tr>"
            for t in r.turns
        )
        parts.append(f"<table><tr><th>Turn</th><th>User</th><th>Agent</th><th>Checks</th></tr>{rows}</table>")
    else:
        parts.append(f"<p><b>Input</b></p><pre>{escape(_conversation(r.input))}</pre><p><b>Output</b></p><pre>{escape(as_text(r.output))}</pre>")
    if r.tool_calls:
        calls = "".join(f"<li><code>{escape(c.name)}</code> {escape(as_text(c.arguments))} → {escape(as_text(c.error or c.result))}{_mark(c)}</li>"
                        for c in r.tool_calls)
        parts.append(f"<p><b>Tool calls</b></p><ul>{calls}</ul>")
    if r.world is not None:
        parts.append(_world(r))
    if r.calls is not None and r.calls.exchanges:  # what each model was sent and answered: drawn by the viewer's script
        n = len(r.calls.exchanges)
        parts.append(f'<p class="meta">{n} model call{"s" if n != 1 else ""} kept (requests as sent, responses as received): '
                     "shown with JavaScript on; the JSON report has them.</p>")
    return "".join(parts)


def _expected_actual(a: AssertionResult) -> str:
    if a.passed or (a.expected is None and a.actual is None):
        return ""
    return (f'<br><span class="meta">expected{" not" if a.negated else ""}</span> <code>{escape(shorten(a.expected, 300))}</code> '
            f'<span class="meta">actual</span> <code>{escape(shorten(a.actual, 300))}</code>')


def _mark(c: ToolCall) -> str:
    if c.violation:
        return f' <span class="mark">[policy violation: {escape(c.violation)}]</span>'
    if c.fault is not None:
        return f' <span class="mark">[fault: {escape(c.fault)}]</span>'
    return ' <span class="mark">[mocked]</span>' if c.mocked else ""


def _world(r: CaseResult) -> str:
    """The difference the agent made to the case's world."""
    assert r.world is not None
    changes = r.world.changes
    if not changes:
        return "<p><b>World</b> <span class=\"meta\">unchanged</span></p>"
    items = "".join(f'<li class="{c.op}"><code>{escape(change_text(c, 200))}</code></li>' for c in changes)
    return f"<p><b>World</b> <span class=\"meta\">{len(changes)} change{'s' if len(changes) != 1 else ''}</span></p><ul>{items}</ul>"


def _table(table: figures.Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in table.rows)
    return f"<table><tr>{head}</tr>{rows}</table>"


def _cell(text: str) -> str:
    """A table cell; a failed verdict is red (and nothing else is)."""
    return f'<td class="failed">{escape(text)}</td>' if text.startswith(("FAILED", "NOT RUN")) else f"<td>{escape(text)}</td>"


def _state(report: RunReport) -> str:
    """Interrupted, stopped early, not run: a banner above the results."""
    said = [f"<b>{escape(label)}</b> {escape(text)}" for label, text in figures.run_state(report)]
    return f'<div class="banner">{" ".join(said)}</div>' if said else ""


def _figures(report: RunReport) -> str:
    """Gates, the model matrix, Yao's stability figures, costs and warnings."""
    parts = []
    gates = figures.gate_table(report)
    if gates is not None:
        parts.append(f"<h2>Gates</h2><p class=\"meta\">Gates {escape(figures.gate_summary(report))}.</p>{_table(gates)}")
    passk = figures.pass_k_table(report)
    if passk is not None:
        parts.append(f"<h2>pass^k</h2><p class=\"meta\">{escape(figures.pass_k_caption(report))}; unbiased over runs.</p>{_table(passk)}")
    matrix = figures.matrix_table(report)
    if matrix is not None:
        said = "".join(f"<li>{escape(line.strip())}</li>" for line in figures.evidence_lines(report))
        parts.append("<h2>Matrix</h2><p class=\"meta\">The agent under test on each connector: verdict, pass rate, tokens, cost, "
                     f"median latency.</p>{_table(matrix)}" + (f'<ul class="evidence">{said}</ul>' if said else ""))
    judges = "".join(f"<li>{escape(line.strip())}</li>" for line in words.judge_lines(report))
    if judges:
        parts.append(f'<h2>Judges</h2><ul class="evidence" id="judges">{judges}</ul>')
    if report.stability:
        head = "<tr><th>ID</th>" + ("<th>Connector</th>" if report.matrix else "") + "<th>Runs</th><th>Pass rate</th><th>Avg</th>"
        head += "<th>Min</th><th>Max</th><th>Std dev</th><th>Class</th></tr>"
        rows = "".join(
            f"<tr><td>{escape(st.id)}</td>" + (f"<td>{escape(st.connector)}</td>" if report.matrix else "")
            + f"<td>{st.runs}</td><td>{st.percent}%</td><td>{st.mean_ms:.0f}ms</td><td>{st.min_ms:.0f}ms</td>"
            f"<td>{st.max_ms:.0f}ms</td><td>{st.std_ms:.0f}ms</td><td>{escape(st.classification)}</td></tr>"
            for st in report.stability
        )
        parts.append(f"<h2>Stability</h2><table>{head}{rows}</table>")
    tagged = figures.tag_table(report)
    if tagged is not None:
        parts.append(f"<h2>Tags</h2>{_table(tagged)}")
    costs = figures.cost_lines(report)
    if costs:
        parts.append("<h2>Costs</h2><ul>" + "".join(f"<li>{escape(c)}</li>" for c in costs) + "</ul>")
    warnings = [escape(w) for w in report.warnings]
    repeated = report.repeated
    warnings += [f"{escape(r.id)}{_where(r, report, repeated)}: {escape(w)}" for r in report.results for w in r.warnings]
    if warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f'<li class="warn">{w}</li>' for w in warnings) + "</ul>")
    return "".join(parts)


def _where(r: CaseResult, report: RunReport, repeated: bool) -> str:
    """`` @ connector`` in a matrix and `` (run k)`` with repeated runs."""
    return (f" @ {escape(r.connector)}" if report.matrix else "") + (f" (run {r.run})" if repeated else "")


def report(report: RunReport, shown: Sequence[CaseResult] | None = None, said: str = "") -> str:
    """The body of a report page as static HTML: every failure in full first, then a row per other result; a cut
    page (reporting/html.py) the results it keeps, ``said`` above them and the whole run's cards."""
    s = summary_dict(report)
    cards = "".join(
        f'<div class="card"><span class="meta">{label}</span><b class="{cls if value else ""}">{value}</b></div>'
        for label, value, cls in [
            ("Total", s["total"], ""), ("Passed", s["passed"], "passed"), ("Failed", s["failed"], "failed"),
            ("Errors", s["errors"], "error"), ("Timeouts", s["timeouts"], "timeout"), ("Skipped", s["skipped"], "skipped"),
            ("Pass rate", escape(words.pass_rate_text(report, s["pass_rate"])), ""), ("Duration", format_duration(report.duration_ms / 1000), ""),
        ]
    )
    results = report.results if shown is None else shown
    ordered = sorted(results, key=lambda r: r.status not in FAILING)  # stable: input order within each group
    repeated = report.repeated
    rows = "".join(_row(r, report, len(results) <= ALL_DETAILS, repeated) for r in ordered)
    cut = f'<div class="banner" id="cut">{escape(said)}</div>' if said else ""
    return (
        f"<h1>Agent Test Report</h1><p class=\"meta\">Agent <b>{escape(report.agent_id or '—')}</b> · connector "
        f"<b>{escape(report.connector or '—')}</b> · input {escape(report.input_source)} · started {escape(report.started_at)}"
        + (f" · roles: {escape(figures.players_text(report.players))}" if report.players else "") + "</p>"
        f"<div class=\"cards\">{cards}</div>{_state(report)}{cut}<table><tr><th>ID</th><th>Input</th><th>Status</th><th>Duration</th><th></th></tr>"
        f"{rows}</table>{_suites(report)}{_figures(report) if shown is None else ''}"  # a cut page: its per-case tables are the JSON report's
    )


def _suites(report: RunReport) -> str:
    """Each suite's checks over its cases (a failed one fails the run)."""
    out = []
    for suite in report.suites:
        items = "".join(f'<li class="{"passed" if a.passed else "failed"}">{"✓" if a.passed else "✗"} <code>{escape(a.name)}</code> '
                        f"{escape(a.message)}</li>" for a in suite.assertions)
        on = f" on {escape(suite.connector)}" if suite.connector else ""
        verdict = "held" if suite.passed else "failed: the run fails"
        out.append(f"<h2>Suite {escape(suite.id)}{on}: {verdict}</h2><ul>{items}</ul>")
    return "".join(out)


def _row(r: CaseResult, report: RunReport, details: bool, repeated: bool) -> str:
    """One result: a failure with its details open, another with them closed (or only its output)."""
    if r.status in FAILING or details:
        detail = f"<details{' open' if r.status in FAILING else ''}><summary>details</summary>{_transcript(r)}</details>"
    else:
        detail = f'<span class="meta">{escape(shorten(r.output, 160) if r.output is not None else r.skip_reason)}</span>'
    meta = ""
    if r.dynamic:
        reached = sum(1 for c in r.checkpoints if c.reached)
        meta = f'<br><span class="meta">{len(r.turns)} turns · {reached}/{len(r.checkpoints)} checkpoints</span>'
    title = f'<br><span class="meta">{escape(r.name)}</span>' if r.name else ""
    where = _where(r, report, repeated)
    title += f'<br><span class="meta">{where.strip()}</span>' if where else ""
    return (f'<tr><td>{escape(r.id)}{title}</td><td>{escape(row_input(r)[:120])}</td><td class="{r.status}">{r.status.upper()}</td>'
            f"<td>{format_duration(r.duration_ms / 1000)}{meta}</td><td>{detail}</td></tr>")
