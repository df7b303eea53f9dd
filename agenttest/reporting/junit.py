"""JUnit XML: one testcase per case (per connector in a model matrix), its verdict the case's gate over its
runs, with the pass rate and ``flaky`` as properties; failure/error/skipped elements and durations."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator

from agenttest.accounting.costs import totals
from agenttest.verdicts import evidence
from agenttest.verdicts.gates import runs_saved
from agenttest.model import CaseResult, Gate, RunReport
from agenttest.util.spool import is_spooled
from agenttest.util.text import BIDI, as_text
from agenttest.reporting.figures import percents, players_text
from agenttest.reporting.formats import register


def _groups(report: RunReport) -> list[tuple[list[CaseResult], Gate | None]]:
    """Each case's (× connector's) results with its gate; a report without gates: each result alone."""
    if not report.gates:
        return [([r], None) for r in report.results]
    return [(list(runs), gate) for _, gate, runs in report.groups()]


def _single(runs: list[CaseResult], gate: Gate | None) -> bool:
    """A case run once under the default gate: its run's outcome is its verdict. A lower gate decides itself
    (``min_pass_rate`` 0 passes a run that failed)."""
    return len(runs) == 1 and (gate is None or (gate.planned == 1 and gate.min_pass_rate >= 1))


def _status(runs: list[CaseResult], gate: Gate | None) -> str:
    """failed / error / skipped / passed / not run, as JUnit counts them. A failed gate is an error when its
    worst run was an error or a timeout, as the console counts it."""
    if gate is None or _single(runs, gate):
        status = runs[0].status if runs else "not run"
        return "error" if status == "timeout" else status
    if gate.verdict == "failed" and any(r.status in ("error", "timeout") for r in runs):
        return "error"
    return "not run" if gate.verdict == "incomplete" else gate.verdict


@register(".xml")
def to_junit(report: RunReport) -> str | Iterator[str]:
    if is_spooled(report.results) and report.results:
        return _streamed(report)
    groups = [(runs, gate, _status(runs, gate)) for runs, gate in _groups(report)]
    suites, suite = _suites(report, [s for *_, s in groups])
    for runs, gate, status in groups:
        _testcase(suite, report, runs, gate, status)
    _checks(suite, report)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _clean(ET.tostring(suites, encoding="unicode")) + "\n"


_SPLICE = "agent-test: the cases go here"


def _streamed(report: RunReport) -> Iterator[str]:
    """The same text for a streamed run's report, one testcase at a time: its results are read from disk twice
    (the suite's counts, then each case), never held together."""
    suites, suite = _suites(report, (_status(list(runs), gate) for _, gate, runs in report.groups()))
    ET.SubElement(suite, "testcase", name=_SPLICE)
    _checks(suite, report)
    ET.indent(suites)
    text = ET.tostring(suites, encoding="unicode")
    marker = f'<testcase name="{_SPLICE}" />'
    before, after = text.split(marker, 1)
    last = after[:len(after) - len(after.lstrip(" \n"))]  # what follows the last case
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' + _clean(before)
    tail = "\n" + " " * 4
    ahead = None
    for _, gate, runs in report.groups():
        if ahead is not None:
            yield _case_text(report, ahead[0], ahead[1], tail)
        ahead = (list(runs), gate)
    if ahead is not None:
        yield _case_text(report, ahead[0], ahead[1], last)
    yield _clean(after[len(last):]) + "\n"


def _case_text(report: RunReport, runs: list[CaseResult], gate: Gate | None, tail: str) -> str:
    """One testcase as the whole document's text has it (indented at its depth), followed by ``tail``."""
    wrapper = ET.Element("testsuites")
    suite = ET.SubElement(wrapper, "testsuite")
    _testcase(suite, report, runs, gate, _status(runs, gate))
    ET.indent(wrapper)
    case = suite[0]
    case.tail = tail
    return _clean(ET.tostring(case, encoding="unicode"))


def _suites(report: RunReport, statuses: Iterable[str]) -> tuple[ET.Element, ET.Element]:
    """The document and its test suite, with the counts of ``statuses`` (one per case × connector) and the properties."""
    checks = report.suites
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    suites = ET.Element("testsuites", name="agent-test")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=report.agent_id or "agent-test",
        tests=str(sum(counts.values()) + len(checks)),
        failures=str(counts.get("failed", 0) + sum(1 for c in checks if not c.passed)),
        errors=str(counts.get("error", 0)),
        skipped=str(counts.get("skipped", 0) + counts.get("not run", 0)),
        time=f"{report.duration_ms / 1000:.3f}",
        timestamp=report.started_at,
    )
    _suite_properties(suite, report)
    return suites, suite


def _checks(suite: ET.Element, report: RunReport) -> None:
    for check in report.suites:  # a suite's checks over its cases (FORMATS §18): one testcase each suite
        case = ET.SubElement(suite, "testcase", classname=report.agent_id or "agent-test", name=f"suite checks: {check.id}"
                             + (f" [{check.connector}]" if check.connector else ""), time="0.000")
        if check.file:
            case.set("file", check.file)
        if not check.passed:
            failure = ET.SubElement(case, "failure", message=_clean(check.failures[0]), type="SuiteCheckFailed")
            failure.text = _clean("\n".join(check.failures))


def _testcase(suite: ET.Element, report: RunReport, runs: list[CaseResult], gate: Gate | None, status: str) -> None:
    first = runs[0] if runs else None
    name = gate.id if gate is not None else first.id if first is not None else ""
    if gate is not None and report.matrix:
        name += f" [{gate.connector}]"
    took = sum(r.duration_ms for r in runs) / 1000
    case = ET.SubElement(suite, "testcase", classname=report.agent_id or "agent-test", name=name, time=f"{took:.3f}")
    if first is not None and first.file:
        case.set("file", first.file)  # as pytest's JUnit: ids are unique per file only
    full = gate is not None and (gate.planned > 1 or bool(report.matrix) or gate.min_pass_rate < 1)
    _properties(case, gate, full, tags=first.tags if first else (), confidence=evidence.of(report).confidence,
                unchecked=first is not None and first.checked_nothing)
    if _single(runs, gate) and first is not None:
        _outcome(case, first)
    elif gate is not None and status in ("failed", "error"):
        failure = ET.SubElement(case, "failure" if status == "failed" else "error", message=f"pass rate {' < '.join(percents(gate.pass_rate, gate.min_pass_rate))} "
                                f"({gate.passed} of {gate.runs} runs passed)", type="GateFailed")
        failure.text = _clean("\n".join(f"run {r.run}: {'; '.join(r.reasons) or r.status}" for r in runs if not r.ok))
    elif gate is not None and gate.verdict == "incomplete":
        ET.SubElement(case, "skipped", message=f"incomplete: {gate.runs} of {gate.planned} runs ran, {gate.passed} passed; "
                                               f"the runs not run could have changed the verdict")
    elif status in ("skipped", "not run"):
        ET.SubElement(case, "skipped", message=(first.skip_reason if first is not None and first.skip_reason else status))
    out = ET.SubElement(case, "system-out")
    out.text = _clean("\n".join(_transcript(r, len(runs) > 1) for r in runs))


def _suite_properties(suite: ET.Element, report: RunReport) -> None:
    """The run's cost and the runs --early-stop saved, when there are any."""
    cost = totals(report.results, report.generation).cost
    known = evidence.of(report)
    rate = known.pass_rate
    values = {"cost_usd": _usd(cost) if cost is not None else None, "runs_saved": runs_saved(report.gates) or None,
              "pass_rate": round(rate.rate, 4) if rate is not None else None,
              "pass_rate_interval": f"{rate.low:.4f}-{rate.high:.4f}" if rate is not None else None,
              "confidence": known.confidence if rate is not None else None,
              "cases": rate.cases if rate is not None else None, "checked_nothing": len(report.checked_nothing) or None,
              "roles": players_text(report.players) or None}
    for c in known.judges:  # each judge against the labels: judge.<validator>@<connector>.<figure>
        name = f"judge.{c.validator}@{c.connector}"
        values |= {f"{name}.labelled": c.labelled or None, f"{name}.agreement": _figure(c.agreement.rate if c.agreement else None),
                   f"{name}.kappa": _figure(c.kappa), f"{name}.gate": ("failed" if c.shortfalls else "passed") if c.gated else None}
    if any(v is not None for v in values.values()):
        props = ET.SubElement(suite, "properties")
        for key, value in values.items():
            if value is not None:
                ET.SubElement(props, "property", name=key, value=str(value))


def _properties(case: ET.Element, gate: Gate | None, full: bool, tags: tuple[str, ...] = (), confidence: float = evidence.CONFIDENCE,
                unchecked: bool = False) -> None:
    """The case's tags, the gate's figures (with several runs, a lower gate or a matrix), its cost (when priced), and
    ``checked_nothing`` for a case with nothing to check but an answer."""
    values: dict[str, object] = {"tags": ",".join(tags)} if tags else {}
    if unchecked:
        values["checked_nothing"] = True
    if gate is not None and full:
        interval = evidence.case_interval(gate, confidence)
        values |= {"runs": gate.runs, "planned": gate.planned, "passed": gate.passed, "pass_rate": round(gate.pass_rate, 4),
                   **({"pass_rate_interval": f"{interval[0]:.4f}-{interval[1]:.4f}"} if interval is not None else {}),
                  "min_pass_rate": gate.min_pass_rate, "flaky": gate.flaky, "pass_hat_k": gate.pass_hat_k, "pass_at_k": gate.pass_at_k,
                  "connector": gate.connector, "saved": gate.saved}
    if gate is not None and gate.total_cost is not None:
        values["cost_usd"] = _usd(gate.total_cost)
    if not values:
        return
    props = ET.SubElement(case, "properties")
    for key, value in values.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        ET.SubElement(props, "property", name=key, value=text)


def _figure(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


def _usd(cost: float) -> str:
    return f"{cost:.10f}".rstrip("0").rstrip(".")


def _outcome(case: ET.Element, r: CaseResult) -> None:
    reasons = "\n".join(r.reasons)
    if r.status == "failed":
        ET.SubElement(case, "failure", message=(r.reasons[0] if r.reasons else "failed"), type="AssertionFailed").text = _clean(reasons)
    elif r.status in ("error", "timeout"):
        ET.SubElement(case, "error", message=r.reasons[0] if r.reasons else r.status, type=r.status).text = _clean(reasons)
    elif r.status == "skipped":
        ET.SubElement(case, "skipped", message=r.skip_reason or "skipped")


def _transcript(r: CaseResult, numbered: bool) -> str:
    head = f"run {r.run}: {r.status}\n" if numbered else ""
    cut = " (cut at its token limit)" if r.truncated else ""
    text = f"{head}input: {as_text(r.input)}\noutput{cut}: {as_text(r.output)}"
    for t in r.turns:
        said = f"error: {t.error}" if t.error else as_text(t.output) + (" (cut at its token limit)" if t.truncated else "")
        text += f"\nturn {t.turn}: {as_text(t.input)} -> {said}" + (f" [{', '.join(t.checkpoints)}]" if t.checkpoints else "")
    for w in r.warnings:
        text += f"\nwarning: {w}"
    text += "".join(f"\nminor: {m}" for m in r.minor_failures)  # never a failure, said all the same
    if r.score is not None:
        text += f"\nscore: {r.score:g}"
    return text


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # what XML 1.0 cannot hold (tab, line feed and return it can)


def _clean(text: str) -> str:
    """Drop characters XML 1.0 cannot hold; show right-to-left overrides as their code (a CI page shows them inert).
    One regular expression over the text, not a test per character (that was 1 s of a 5,000-case JUnit file)."""
    return _NOT_XML.sub("", text).translate(BIDI)
