"""``-o report.html``: the run in the viewer — its JSON report inside one self-contained page."""

from __future__ import annotations

from ..model import RunReport
from ..records import report_dict
from . import viewer
from .formats import register
from .viewer import static


@register(".html")
def to_html(report: RunReport) -> str:
    return viewer.page("report", {"report": report_dict(report)}, f"Agent Test — {report.agent_id or 'report'}", static.report(report))
