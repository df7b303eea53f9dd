"""``-o report.html``: the run in the viewer — its JSON report inside one self-contained page."""

from __future__ import annotations

from agenttest.history.writing import report_dict
from agenttest.model import RunReport
from agenttest.reporting import viewer
from agenttest.reporting.formats import register
from agenttest.reporting.viewer import static


@register(".html")
def to_html(report: RunReport) -> str:
    return viewer.page("report", {"report": report_dict(report)}, f"Agent Test — {report.agent_id or 'report'}", static.report(report))
