"""``-o report.html``: the run in the viewer — its JSON report inside one self-contained page."""

from __future__ import annotations

from typing import Any

from agenttest.reporting.codec import report_dict
from agenttest.model import RunReport
from agenttest.reporting import evidence as words
from agenttest.reporting import figures, viewer
from agenttest.reporting.formats import register
from agenttest.reporting.viewer import static


@register(".html")
def to_html(report: RunReport) -> str:
    return page_of(report)


def page_of(report: RunReport, links: dict[str, str] | None = None) -> str:
    """The report's page; ``links`` (served by ``agent-test view``) lead to the history: home, a case across runs."""
    said = {k: v for k, v in (("matrix", figures.evidence_lines(report)), ("judges", words.judge_lines(report))) if v}  # made once here
    data: dict[str, Any] = {"report": report_dict(report), **({"links": links} if links else {}), **({"said": said} if said else {})}
    return viewer.page("report", data, f"Agent Test — {report.agent_id or 'report'}", static.report(report))
