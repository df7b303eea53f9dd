"""``-o report.html``: the run in the viewer — its JSON report inside one self-contained page. A run of more than
``LIMIT`` results is cut (a page cannot usefully carry a million: 10,000 make 16 MB): the page keeps the whole
run's summary, every failure up to ``FAILURES`` and the first ``OTHERS`` other results, and says plainly that the
JSON report has them all and ``agent-test view`` shows them a page at a time (docs/reports.md)."""

from __future__ import annotations

from typing import Any

from agenttest.reporting.codec import jsonable, metadata_dict, report_dict, result_dict, summary_dict
from agenttest.model import CaseResult, RunReport
from agenttest.reporting import evidence as words
from agenttest.reporting import figures, viewer
from agenttest.reporting.formats import register
from agenttest.reporting.viewer import static

LIMIT = 10_000  # results a page carries whole (its first screen in about a second)
FAILURES, OTHERS = 5_000, 200  # what a cut page keeps: failures first, then the first page of the others


@register(".html")
def to_html(report: RunReport) -> str:
    return page_of(report)


def page_of(report: RunReport, links: dict[str, str] | None = None, limit: int = LIMIT) -> str:
    """The report's page; ``links`` (served by ``agent-test view``) lead to the history: home, a case across runs."""
    if len(report.results) > limit:
        return _cut(report, links)
    said = {k: v for k, v in (("matrix", figures.evidence_lines(report)), ("judges", words.judge_lines(report))) if v}  # made once here
    data: dict[str, Any] = {"report": report_dict(report), **({"links": links} if links else {}), **({"said": said} if said else {})}
    return viewer.page("report", data, f"Agent Test — {report.agent_id or 'report'}", static.report(report))


def kept(report: RunReport, failures: int = FAILURES, others: int = OTHERS) -> tuple[list[CaseResult], int]:
    """The results a cut page keeps, in input order — the first ``failures`` failures and the first ``others``
    other results — and how many failures there are in all (one pass over the results)."""
    out: list[CaseResult] = []
    failing = other = 0
    for r in report.results:
        if r.status in static.FAILING:
            failing += 1
            if failing <= failures:
                out.append(r)
        else:
            other += 1
            if other <= others:
                out.append(r)
    return out, failing


def cut_text(report: RunReport, shown: list[CaseResult], failing: int) -> str:
    total = len(report.results)
    every = (f"every failure ({failing:,})" if failing <= FAILURES else f"the first {FAILURES:,} of its {failing:,} failures")
    if report.output_file.endswith(".json"):
        where = f"Every result is in {report.output_file}: agent-test view {report.output_file} --paged"
    else:  # the first -o named here is not the JSON report (or there is none): say how to get one
        where = "Every result is in the run's JSON report (write one with -o report.json): agent-test view report.json --paged"
    return (f"This page holds {len(shown):,} of the run's {total:,} results — {every} and the first {min(OTHERS, total - failing):,} "
            f"others; its figures count them all. {where} shows them a page at a time, filtered and searched over all of them.")


def _cut(report: RunReport, links: dict[str, str] | None) -> str:
    shown, failing = kept(report)
    said = cut_text(report, shown, failing)
    ids = {r.id for r in shown}
    summary = summary_dict(report)
    for name in ("gates", "stability"):  # one per case: those of the cases kept
        if name in summary:
            summary[name] = [g for g in summary[name] if g.get("id") in ids]
    data: dict[str, Any] = {"report": {"summary": summary, "environment": jsonable(report.environment), "results": [result_dict(r) for r in shown],
                                       "metadata": metadata_dict(report)},
                            "cut": {"results": len(report.results), "kept": len(shown), "failures": failing, "said": said},
                            **({"links": links} if links else {})}
    return viewer.page("report", data, f"Agent Test — {report.agent_id or 'report'}", static.report(report, shown, said))


def one_of(report: RunReport, number: int, total: int | None, failing: int | None, links: dict[str, str] | None = None,
           summary: dict[str, Any] | None = None) -> str:
    """Result ``number`` (from 1) of a report of ``total`` results (None: not yet counted), alone on its page
    (``agent-test view`` of a big report, ``/result/N``): the summary's figures count them all, and a banner says
    it is one of them. ``summary``: the whole report's, as its file has it (the cards show it)."""
    of = f"of the report's {total:,}" if total is not None else "of the report"
    bad = f" ({failing:,} of them did not pass)" if failing is not None and total is not None else ""
    said = (f"This page holds result {number:,} {of}{bad}; its figures count them all. Every result, a page at a time, "
            "failures first: the viewer's first page (/).")
    whole = report_dict(report)
    if summary is not None:
        whole["summary"] = summary
    data: dict[str, Any] = {"report": whole, "cut": {"results": total or number, "kept": 1, "failures": failing or 0, "said": said},
                            **({"links": links} if links else {})}
    return viewer.page("report", data, f"Agent Test — result {number:,}", static.report(report, list(report.results), said))
