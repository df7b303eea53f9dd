"""JUnit XML: one testcase per case (and run), with failure/error/skipped elements and durations."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..texts import as_text
from ..model import RunReport
from .formats import register


@register(".xml")
def to_junit(report: RunReport) -> str:
    suites = ET.Element("testsuites", name="agent-test")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=report.agent_id or "agent-test",
        tests=str(len(report.results)),
        failures=str(report.count("failed")),
        errors=str(report.count("error") + report.count("timeout")),
        skipped=str(report.count("skipped")),
        time=f"{report.duration_ms / 1000:.3f}",
        timestamp=report.started_at,
    )
    multi = any(r.run > 1 for r in report.results)
    for r in report.results:
        name = f"{r.id} (run {r.run})" if multi else r.id
        case = ET.SubElement(suite, "testcase", classname=report.agent_id or "agent-test", name=name, time=f"{r.duration_ms / 1000:.3f}")
        reasons = "\n".join(r.reasons)
        if r.status == "failed":
            ET.SubElement(case, "failure", message=(r.reasons[0] if r.reasons else "failed"), type="AssertionFailed").text = reasons
        elif r.status in ("error", "timeout"):
            ET.SubElement(case, "error", message=r.reasons[0], type=r.status).text = reasons
        elif r.status == "skipped":
            ET.SubElement(case, "skipped", message=r.skip_reason or "skipped")
        out = ET.SubElement(case, "system-out")
        text = f"input: {as_text(r.input)}\noutput: {as_text(r.output)}"
        for t in r.turns:
            text += f"\nturn {t.turn}: {as_text(t.input)} -> {as_text(t.output)}" + (f" [{', '.join(t.checkpoints)}]" if t.checkpoints else "")
        out.text = _clean(text)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _clean(ET.tostring(suites, encoding="unicode")) + "\n"


def _clean(text: str) -> str:
    """Drop characters XML 1.0 cannot hold."""
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20 and ord(ch) not in (0xFFFE, 0xFFFF))
