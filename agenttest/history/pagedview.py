"""The pages of a paged report (history/paging.py) as HTML made on the server: the summary's cards, the
statuses to show and a search — both over every result, on the server —, one page of rows (failures first) and
the pager; a result on a page of its own in the viewer. Every value is escaped; no script is needed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from agenttest.errors import AgentTestError
from agenttest.history.paging import ORDER, PagedReport, valid_query
from agenttest.reporting.codec import report_of
from agenttest.reporting.viewer import asset
from agenttest.reporting.viewer.static import escape
from agenttest.util.text import shorten

PER_PAGE = 200
WAIT = 1.5  # seconds a page waits for the scan before it shows what is indexed and reloads itself
LABELS = {"failed": "Failed", "error": "Errored", "timeout": "Timed out", "passed": "Passed", "skipped": "Skipped"}
WIDER = ".cards{grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr))}"  # room for 1,000,000
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'none'"


class BadQuery(Exception):
    """A page number, status or search that cannot be meant (a 400 page)."""


@dataclass(frozen=True)
class View:
    """What the overview lists: the statuses chosen (none: every one), the search and the page (from 1)."""

    statuses: tuple[str, ...] = ()
    query: str = ""
    page: int = 1

    def url(self, **change: Any) -> str:
        view = {"statuses": self.statuses, "query": self.query, "page": self.page, **change}
        pairs = [("status", s) for s in view["statuses"]] + ([("q", view["query"])] if view["query"] else [])
        pairs += [("page", str(view["page"]))] if view["page"] != 1 else []
        return "/" + ("?" + urlencode(pairs) if pairs else "")


def view_of(query: dict[str, list[str]], statuses: list[str]) -> View:
    """The view a query string asks for; a page that is not a number ≥ 1, a status the report has not, or a search
    that is too long or holds control characters is BadQuery."""
    page = (query.get("page") or ["1"])[-1]
    if not (page.isascii() and page.isdigit() and 0 < len(page) <= 9 and int(page) >= 1):
        raise BadQuery(f"page '{page}' is not a page number (1, 2, …)")
    chosen = tuple(dict.fromkeys(query.get("status") or ()))
    unknown = [s for s in chosen if s not in statuses and s not in ORDER]
    if unknown:
        raise BadQuery(f"status '{unknown[0]}' is not one of {', '.join(dict.fromkeys([*ORDER, *statuses]))}")
    text = (query.get("q") or [""])[-1].strip()
    wrong = valid_query(text)
    if wrong:
        raise BadQuery(f"the search must be {wrong}")
    return View(statuses=chosen, query=text, page=int(page))


def overview(report: PagedReport, view: View, per_page: int = PER_PAGE, wait: float = WAIT) -> str:
    """One page of the report's results; while the scan has not reached them, what is indexed and a reload."""
    order = report.order(view.statuses)
    first = (view.page - 1) * per_page
    buckets = None
    if view.query:
        ready = report.wait_done(wait)
        buckets = report.search(view.query) if ready else {}
    else:
        ready = report.wait(order, first + per_page, wait)
    numbers, total = report.rows(order, first, per_page, buckets)
    expected = [report.expected(s) for s in order]
    if not view.query and not report.done and None not in expected:  # the summary's counts: the pages to come are known
        total = sum(e for e in expected if e is not None)
    pages = max(1, -(-total // per_page))
    if ready and view.page > pages:
        raise BadQuery(f"page {view.page} is past the last page ({pages}) of this list")
    rows = "".join(_row(report, n) for n in numbers)
    body = (f"{_header(report)}{_state(report, ready)}{_toolbar(report, view)}"
            f'<p class="meta small" id="shown">{total:,} result{"s" if total != 1 else ""}{"" if ready else " so far"} · '
            f"page {view.page:,} of {pages:,}{'' if ready else '+'}</p>"
            f'<table class="cases" id="cases"><thead><tr><th>#</th><th></th><th>Result</th><th>Input</th><th>Time</th><th>Output</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>{_pager(view, pages, ready)}")
    return _page(f"Agent Test — {report.summary.get('agent_id') or 'report'}", body, refresh=not ready)


def _page(title: str, body: str, refresh: bool = False) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">" + ("<meta http-equiv=\"refresh\" content=\"1\">" if refresh else "")
            + f"<title>{escape(title)}</title><style>{asset('viewer.css')}{WIDER}</style></head><body><div id=\"static\">{body}</div></body></html>\n")


def _rate(s: dict[str, Any]) -> str:
    """The whole report's pass rate, from its counts when it has them: a rate short of all never reads 100%."""
    from agenttest.reporting.evidence import rate_text

    counts = [s.get(k) for k in ("passed", "total", "skipped")]
    if all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        passed, total, skipped = counts
        ran = total - skipped - (s.get("not_run") if isinstance(s.get("not_run"), int) else 0)  # type: ignore[operator]
        if ran > 0:
            return rate_text(passed / ran)  # type: ignore[operator]
    rate = s.get("pass_rate")
    return rate_text(rate / 100) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else "—"


def _header(report: PagedReport) -> str:
    s, meta = report.summary, report.metadata
    def number(key: str) -> str:
        value = s.get(key)
        return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "—"
    cards = "".join(f'<div class="card"><span class="meta">{label}</span><b class="{cls if s.get(key) else ""}">{number(key)}</b></div>'
                    for label, key, cls in (("Results", "total", ""), ("Passed", "passed", "passed"), ("Failed", "failed", "failed"),
                                            ("Errors", "errors", "error"), ("Timeouts", "timeouts", "timeout"), ("Skipped", "skipped", "skipped")))
    cards += f'<div class="card"><span class="meta">Pass rate</span><b>{escape(_rate(s))}</b></div>'
    return (f"<h1>Agent Test Report</h1><p class=\"meta\">Agent <b>{escape(str(s.get('agent_id') or '—'))}</b> · connector "
            f"<b>{escape(str(s.get('connector') or '—'))}</b> · input {escape(str(meta.get('input_file') or '—'))} · started "
            f"{escape(str(meta.get('started_at') or '—'))} · {escape(report.path)}</p><div class=\"cards\" id=\"cards\">{cards}</div>")


def _state(report: PagedReport, ready: bool) -> str:
    said = []
    if report.failure:
        said.append(f"The report could not be read to its end ({escape(report.failure)}): the pages show the results read before.")
    if not ready:
        said.append(f"Indexing the report: {report.progress():.0%} read, {len(report.starts):,} results so far — this page reloads itself.")
    elif report.done and isinstance(report.summary.get("total"), int) and len(report.starts) + int(report.summary.get("not_run") or 0) != report.summary["total"]:
        said.append(f"The summary counts {report.summary['total']:,} results; the file holds {len(report.starts):,}.")
    said.append("A big report is shown a page at a time: each row is one result (one run of a case); the JSON report has everything.")
    return "".join(f'<div class="banner">{x}</div>' for x in said)


def _toolbar(report: PagedReport, view: View) -> str:
    """The statuses as checkboxes and the search, one GET form: filtering and searching happen on the server."""
    boxes = "".join(
        f'<label class="chip"><input type="checkbox" name="status" value="{escape(s)}" data-chip="{escape(s)}"'
        f'{" checked" if s in view.statuses else ""}> {escape(LABELS.get(s, s))}'
        f' <span class="n">{_count(report, s):,}</span></label>'
        for s in report.order())
    return (f'<form class="toolbar" method="get" action="/" id="filters">{boxes}'
            f'<input type="search" id="search" name="q" value="{escape(view.query)}" maxlength="200" '
            f'placeholder="Search every result: id, input, output, reasons…" aria-label="search">'
            f'<button class="chip" type="submit" id="apply">Apply</button><a class="chip" href="/" id="clear">All</a></form>')


def _count(report: PagedReport, status: str) -> int:
    """The results of ``status``: the summary's count while indexing, the file's after."""
    expected = report.expected(status)
    return expected if expected is not None and not report.done else len(report.buckets.get(status, ()))


def _pager(view: View, pages: int, ready: bool) -> str:
    links = []
    if view.page > 1:
        links += [f'<a class="chip" id="first" href="{escape(view.url(page=1))}">« first</a>',
                  f'<a class="chip" id="prev" href="{escape(view.url(page=view.page - 1))}">‹ previous</a>']
    if view.page < pages or not ready:
        links.append(f'<a class="chip" id="next" href="{escape(view.url(page=view.page + 1))}">next ›</a>')
        if ready:
            links.append(f'<a class="chip" id="last" href="{escape(view.url(page=pages))}">last »</a>')
    hidden = "".join(f'<input type="hidden" name="status" value="{escape(s)}">' for s in view.statuses)
    hidden += f'<input type="hidden" name="q" value="{escape(view.query)}">' if view.query else ""
    jump = (f'<form method="get" action="/" class="toolbar">{hidden}<label>page <input name="page" id="page" size="7" value="{view.page}">'
            '</label><button class="chip" type="submit">Go</button></form>')
    return f'<div class="more" id="pager">{"".join(links)}{jump}</div>'


def _row(report: PagedReport, number: int) -> str:
    try:
        r = report.result(number)
    except AgentTestError as exc:
        return f'<tr class="case"><td>{number + 1}</td><td></td><td colspan="4" class="reason">{escape(exc.format_message())}</td></tr>'
    status = str(r.get("status", ""))
    rid = str(r.get("id", ""))
    reason = _reason(r)
    title = (f'<a href="/result/{number + 1}#{escape(quote(rid, safe=""))}">{escape(rid)}</a>'
             + (f'<div class="meta small">{escape(str(r.get("name")))}</div>' if r.get("name") else "")
             + (f'<div class="meta small">{escape(str(r.get("connector")))} · run {escape(str(r.get("run")))}</div>' if r.get("run", 1) != 1 else "")
             + (f'<div class="reason small">{escape(shorten(reason, 160))}</div>' if reason else ""))
    duration = r.get("duration_ms")
    took = f"{duration:.1f} ms" if isinstance(duration, (int, float)) and not isinstance(duration, bool) else "—"
    return (f'<tr class="case" data-id="{escape(rid)}" data-verdict="{escape(status)}" data-number="{number + 1}"><td class="meta">{number + 1}</td>'
            f'<td><span class="badge {escape(status)}">{escape(status.upper())}</span></td><td>{title}</td>'
            f'<td class="small">{escape(shorten(_input(r.get("input")), 120))}</td><td>{took}</td>'
            f'<td class="out">{escape(shorten(_text(r.get("output")), 200))}</td></tr>')


def _reason(r: dict[str, Any]) -> str:
    if r.get("status") == "passed":
        return ""
    for key in ("error", "skip_reason"):
        if r.get(key):
            return _text(r[key])
    failed = [a for a in r.get("assertions") or () if isinstance(a, dict) and a.get("passed") is False]
    return _text(failed[0].get("message") or failed[0].get("type")) if failed else ""


def _text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def _input(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return _text(value[-1].get("content"))  # a conversation: its last message
    return _text(value)


def result_page(report: PagedReport, number_text: str) -> str:
    """Result ``number_text`` (from 1) in the viewer, alone; a number that is not one is BadQuery, one past the
    results LookupError."""
    from agenttest.reporting import html

    if not (number_text.isascii() and number_text.isdigit() and 0 < len(number_text) <= 12 and int(number_text) >= 1):
        raise BadQuery(f"'{number_text}' is not a result number")
    number = int(number_text) - 1
    if not report.wait_number(number, WAIT):
        raise LookupError(f"result {number_text}" + ("" if report.done else " (not indexed yet: the report is still being read)"))
    light = {k: v for k, v in report.summary.items() if k not in ("gates", "stability", "pass_k", "pass_k_by_connector")}  # one result's page
    data = {"summary": light, "environment": report.environment if report.environment is not None else {},
            "results": [report.result(number)], "metadata": report.metadata}
    try:
        one = report_of(data)
    except Exception as exc:  # noqa: BLE001 — the codec says what is wrong with the value
        raise AgentTestError(f"result {number + 1} of {report.path} cannot be read: {exc}") from None
    counts = [report.expected(s) for s in ("failed", "error", "timeout")]
    failing = None if None in counts else sum(c or 0 for c in counts)
    return html.one_of(one, number + 1, len(report.starts) if report.done else None, failing, {"all": "/"}, light)
