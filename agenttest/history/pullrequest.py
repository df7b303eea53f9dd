"""The pull request's view of a comparison (FORMATS §20): the one comment the GitHub Action keeps up to date
(``agent-test diff BASE HEAD --format github -o comment.md``) — the paired verdict, the cases that changed
verdict with links into the viewer, costs, the gate — and each failing case as a workflow command
(``::error file=…,line=…::``) that GitHub shows at the case's line."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from agenttest.accounting.costs import money, totals
from agenttest.history.comparison import BAD, CaseDiff, Comparison
from agenttest.history.diffs import ICONS, headline, regression_line
from agenttest.model import CaseKey, RunReport
from agenttest.reporting import evidence
from agenttest.reporting.markdown import _code, _text
from agenttest.verdicts.outcome import exit_code

MARKER = "<!-- agent-test: pull-request comment{key} -->"
CHANGED_VERDICT = ("regressed", "fixed", "new", "removed", "not run")  # the cases listed first, each linked


def marker(key: str = "") -> str:
    """The hidden line that finds the Action's own comment again (one per ``key``: several suites, several comments)."""
    return MARKER.format(key=f" {key}" if key else "")


def comment(comparison: Comparison, base: RunReport, new: RunReport, viewer: str = "", key: str = "",
            mode: str = "significant") -> str:
    """The whole comment, in GitHub-flavoured Markdown; ``mode`` is the gate's (``diff --fail-on-regression``'s):
    ``significant`` or ``any``."""
    lines = [marker(key), f"## agent-test: {_title(comparison)}", ""]
    lines += _evidence(comparison) + [""]
    lines += _figures(comparison, base, new) + [""]
    lines += _gate(comparison, new, mode) + [""]
    lines += _changed(comparison, viewer)
    lines += _other(comparison)
    lines += ["", f"<sub>{headline(comparison)} · {_code(os.path.basename(comparison.base) or comparison.base)} → "
                  f"{_code(os.path.basename(comparison.new) or comparison.new)}"
              + (f" · [the viewer]({viewer})" if viewer else "") + " · agent-test diff --format github</sub>"]
    return "\n".join(lines) + "\n"


def _title(comparison: Comparison) -> str:
    """The paired verdict (worse, better, no difference detectable), and what moved."""
    paired = comparison.paired
    moved = [f"{comparison.regressions} regressed"] if comparison.regressions else []
    moved += [f"{len(comparison.of('fixed'))} fixed"] if comparison.of("fixed") else []
    if paired is None:
        return " · ".join(["⚪ nothing to compare: no case ran in both runs", *moved])
    icon = {"worse": "🔴", "better": "🟢"}.get(paired.verdict, "⚪")
    return " · ".join([f"{icon} {evidence.verdict(paired)}", *moved])


def _evidence(comparison: Comparison) -> list[str]:
    """The paired comparison in the words and figures every format of ``agent-test diff`` gives (reporting/evidence)."""
    if comparison.paired is None:
        return ["No case ran in both runs, so there is no paired comparison: the verdicts below stand alone."]
    said = evidence.lines(comparison.paired)
    return [f"**{_text(said[0], 600)}**", ""] + [f"- {_text(line.strip(), 300)}" for line in said[1:]]


def _rates(comparison: Comparison) -> tuple[tuple[int, int], tuple[int, int]]:
    """(passed, ran) of the base and of the head, over the cases each ran (the comparison's verdicts)."""
    ran_before = [d for d in comparison.cases if d.before and d.before != "skipped"]
    ran_after = [d for d in comparison.cases if d.after and d.after != "skipped"]
    return ((sum(d.before == "passed" for d in ran_before), len(ran_before)),
            (sum(d.after == "passed" for d in ran_after), len(ran_after)))


def _rate(passed: int, ran: int) -> str:
    return f"{passed}/{ran} ({100 * passed / ran:.1f}%)" if ran else "—"


def _figures(comparison: Comparison, base: RunReport, new: RunReport) -> list[str]:
    (bp, bn), (hp, hn) = _rates(comparison)
    cost_base, cost_new = totals(base.results, base.generation), totals(new.results, new.generation)
    tokens = (base.summary.usage.total_tokens, new.summary.usage.total_tokens)
    return ["| | base | head |", "|---|---|---|",
            f"| cases passed | {_rate(bp, bn)} | {_rate(hp, hn)} |",
            f"| tokens | {tokens[0]:,} | {tokens[1]:,} |",
            f"| cost | {money(cost_base.cost)} | {money(cost_new.cost)} |"]


def _gate(comparison: Comparison, new: RunReport, mode: str) -> list[str]:
    """The gate on the base, as ``agent-test diff --fail-on-regression`` decides it, and the head run's own."""
    decided = regression_line(comparison, mode).strip().removeprefix("--fail-on-regression").removeprefix("=any").lstrip(": ")
    baseline = ("❌ " if comparison.gate(mode) else "✅ ") + decided
    failing_new = [d for d in comparison.of("new") if d.after in BAD]
    if failing_new and not comparison.regressed(mode):
        baseline = f"❌ fails — {len(failing_new)} new case{'s' if len(failing_new) > 1 else ''} not passing ({decided})"
    head = exit_code(new)
    own = "✅ every gate passed" if head == 0 else f"❌ exit {int(head)}: a case did not pass its gate"
    return [f"**Gate** (against the base, {'any regression' if mode == 'any' else 'a significant regression'}): {baseline}",
            f"· the head's own run: {own}"]


def _link(d: CaseDiff, viewer: str) -> str:
    if not viewer:
        return _code(d.label)
    target = viewer if "/artifacts/" in viewer else f"{viewer}#{quote(d.label, safe='')}"
    return f"[{_code(d.label)}]({target})"


def _why(d: CaseDiff) -> str:
    what = "; ".join(_text(f"{c.what}: {c.before} → {c.after}", 160) for c in d.changes[:3])
    return what or _text(d.reason, 160)


def _verdicts(d: CaseDiff) -> str:
    before = d.before + (f" ({d.runs_before})" if d.runs_before else "")
    after = d.after + (f" ({d.runs_after})" if d.runs_after else "")
    return after if d.kind == "new" else f"{before} → {after or 'not run'}" if d.kind != "removed" else f"{before} → removed"


def _changed(comparison: Comparison, viewer: str) -> list[str]:
    shown = [d for d in comparison.cases if d.kind in CHANGED_VERDICT]
    if not shown:
        return ["No case changed verdict."]
    lines = ["### Cases that changed verdict", "", "| | case | verdict | why |", "|---|---|---|---|"]
    lines += [f"| {ICONS[d.kind]} {d.kind} | {_link(d, viewer)} | {_text(_verdicts(d))} | {_why(d)} |" for d in shown]
    if viewer and "/artifacts/" in viewer:
        lines += ["", f"Each case's before and after: download [the viewer]({viewer}) and open `diff.html#<case>`."]
    return lines


def _other(comparison: Comparison) -> list[str]:
    rest = [d for d in comparison.cases if d.kind in ("still failing", "flaky", "changed")]
    if not rest:
        return []
    lines = ["", f"<details><summary>Same verdict, other differences ({len(rest)})</summary>", "",
             "| | case | verdict | what changed |", "|---|---|---|---|"]
    lines += [f"| {ICONS[d.kind]} {d.kind} | {_code(d.label)} | {_text(_verdicts(d))} | {_why(d)} |" for d in rest]
    return lines + ["", "</details>"]


# ---- workflow commands ---------------------------------------------------------------------------------


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_errors(report: RunReport, root: str = "", limit: int = 50) -> list[str]:
    """``::error file=…,line=…,title=…::reason`` for each case that did not pass its gate (once per case, at
    its case file's line, the path relative to ``root`` — the workspace — as GitHub wants it); GitHub shows
    at most 10 per step and 50 per job, so at most ``limit`` are made."""
    failing: dict[CaseKey, Any] = {}
    gates = {g.key: g for g in report.gates}
    for r in report.results:
        key = r.key
        gate = gates.get(key)
        bad = gate.verdict == "failed" if gate is not None else r.status in BAD
        if bad and key not in failing:
            failing[key] = r
    out = []
    for r in list(failing.values())[:limit]:
        path = os.path.relpath(r.file, root) if root and os.path.isabs(r.file) and _inside(r.file, root) else r.file
        where = f"file={_property(path)}" + (f",line={r.line}" if r.line else "")
        title = f"agent-test: {r.id}" + (f" on {r.connector}" if report.matrix and r.connector else "")
        reason = "; ".join(r.reasons) or r.status
        out.append(f"::error {where},title={_property(title)}::{_data(reason[:2000])}")
    return out


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)
