"""A comparison of two runs shown: on the console, as Markdown (a pull-request comment), HTML or JSON."""

from __future__ import annotations

import json
import os
from html import escape
from typing import Any

from agenttest.errors import AgentTestError
from agenttest.history.comparison import BAD, KINDS, UNTESTED, CaseDiff, Comparison
from agenttest.reporting.codec import paired_dict, result_dict
from agenttest.model import CaseResult, RunReport
from agenttest.reporting import evidence, viewer
from agenttest.reporting.console import RULE, THIN, cut, safe
from agenttest.util.text import plural
from agenttest.reporting.formats import comparer, comparison_formats, register_comparison
from agenttest.reporting.markdown import _code, _text
from agenttest.util.files import prepare

ICONS = {"regressed": "🔴", "fixed": "🟢", "still failing": "❌", "new": "🆕", "not run": "⏸", "removed": "➖", "flaky": "🟡",
         "changed": "🔄", "unchanged": "⚪"}
COLORS = {"regressed": "31", "fixed": "32", "still failing": "31", "flaky": "33", "new": "36", "not run": "33", "removed": "2", "changed": "36"}


def headline(comparison: Comparison) -> str:
    counts = comparison.counts()
    return ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no cases"


def _verdicts(d: CaseDiff) -> str:
    before = d.before + (f" ({d.runs_before})" if d.runs_before else "")
    after = d.after + (f" ({d.runs_after})" if d.runs_after else "")
    if d.kind == "new":
        return after
    if d.kind == "removed":
        return f"{before} (no longer in the run)"
    if d.kind == "not run":
        return f"{before} → not run (the run was cut short before it)"
    return f"{before} → {after}" if before != after else after


def coverage(comparison: Comparison) -> tuple[str, ...]:
    """Said loudly when few cases ran in both runs: none (nothing was compared), or fewer than the new or removed."""
    new, gone = len(comparison.of("new")), len(comparison.vanished)
    both = comparison.paired.cases if comparison.paired is not None else 0
    if not both and (new or gone):
        return (f"NO CASE RAN IN BOTH RUNS ({new} new, {gone} removed): nothing is paired, nothing was compared — "
                "did the case ids, files or connectors change?",)
    if both and new + gone > both:
        return (f"only {plural(both, 'case')} ran in both runs ({new} new, {gone} removed): the comparison covers them alone",)
    return ()


def judge_lines(comparison: Comparison) -> list[str]:
    """The judges against the labels, before → after: ``judge on fake: agreement 75.0% → 87.5%, κ 0.25 → 0.50 (…)``."""
    if not comparison.judges:
        return []
    lines = ["Judges against the labels (before → after):"]
    for before, after in comparison.judges:
        who = evidence.judge_name(after or before)  # type: ignore[arg-type]
        rate = [f"{100 * c.agreement.rate:.1f}%" if c is not None and c.agreement is not None else "—" for c in (before, after)]
        kappa = [f"{c.kappa:.2f}" if c is not None and c.kappa is not None else "—" for c in (before, after)]
        n = [str(c.labelled) if c is not None else "0" for c in (before, after)]
        lines.append(f"  {who}: agreement {rate[0]} → {rate[1]}, κ {kappa[0]} → {kappa[1]} ({n[0]} → {n[1]} labelled verdicts)")
    return lines


def console_lines(comparison: Comparison, color: bool = False) -> list[str]:
    """The comparison for the console: one line of counts, then each case that differs with its changes."""
    def paint(text: str, kind: str) -> str:
        return f"\x1b[{COLORS[kind]}m{text}\x1b[0m" if color and kind in COLORS else text

    lines = [THIN, f"  Compared with {safe(comparison.base)}", THIN, *[f"  ⚠ {safe(n)}" for n in comparison.notes + coverage(comparison)],
             f"  {headline(comparison)}"]
    if comparison.paired is not None:
        said = evidence.lines(comparison.paired)
        lines.append(f"  {paint(said[0], 'regressed' if comparison.paired.verdict == 'worse' else 'fixed' if comparison.paired.verdict == 'better' else '')}")
        lines += [f"    {safe(line)}" for line in said[1:]]
    lines += [f"  {safe(line)}" for line in judge_lines(comparison)]
    for d in comparison.cases:
        if d.kind == "unchanged":
            continue
        lines.append(f"  {paint(d.kind.upper(), d.kind)} [{safe(d.label)}] {safe(_verdicts(d))}")
        for c in d.changes:
            lines.append(f"    └─ {safe(c.what)}: {cut(c.before, 100)} → {cut(c.after, 100)}")
        if d.kind in ("new", "regressed", "still failing") and d.reason and not any(c.what == "reason" for c in d.changes):
            lines.append(f"    └─ {cut(d.reason, 200)}")
    return lines


def gate_lines(comparison: Comparison, mode: str = "significant") -> list[str]:
    """What --baseline decided, after the comparison: by default on a significant regression only (``mode`` "any":
    on any case that passed before and not now), and why — every reason it fails, and the facts behind a pass."""
    failing_new = [d for d in comparison.of("new") if d.after in BAD]
    verdict = "fails" if comparison.gate(mode) else "passes"
    parts = [_regressions(comparison, mode), f"{len(failing_new)} new not passing", *_untested(comparison, mode)]
    known = _known(comparison)
    if known:
        parts.append(f"{len(known)} still failing as in the baseline (not counted)")
    return ["", f"  Baseline gate {verdict}: {', '.join(parts)}", RULE, _banner(comparison, mode), RULE]  # the last word: it decides the exit code


def _banner(comparison: Comparison, mode: str) -> str:
    failing_new = [d for d in comparison.of("new") if d.after in BAD]
    compared = [d for d in comparison.cases if d.after and d.after != "skipped"]
    why = _why(comparison, mode)
    if comparison.regressed(mode) or failing_new:
        return f"  ❌ REGRESSED against the baseline{why}"
    if comparison.not_run:
        return "  ⚠ NOT COMPARED — the run was cut short before cases of the baseline"
    if not compared:
        return "  ⚠ NO TEST RAN — nothing was compared with the baseline"
    if comparison.paired is None:
        return "  ❌ NOT COMPARED — no case ran in both runs: nothing was compared with the baseline"
    if comparison.errored:
        return f"  ❌ NOT TESTED — {_count(comparison.errored)} errored or timed out: a baseline never greens a case the run could not test"
    if comparison.hidden(mode):
        return f"  ❌ NOT SHOWN — {_count(comparison.vanished)} of the baseline no longer in the run could hide a regression"
    return f"  ✅ NO {'SIGNIFICANT ' if mode != 'any' else ''}REGRESSION against the baseline{why}{_facts(comparison, mode)}"


def _count(cases: list[CaseDiff]) -> str:
    return f"{len(cases)} case{'s' if len(cases) != 1 else ''}"


def _names(cases: list[CaseDiff], most: int = 5) -> str:
    shown = ", ".join(d.label for d in cases[:most])
    return shown + (f" and {len(cases) - most} more" if len(cases) > most else "")


def _known(comparison: Comparison) -> list[CaseDiff]:
    """Still failing as in the baseline: failed there and here (an error or timeout now is not a known failure)."""
    return [d for d in comparison.of("still failing") if d.after not in UNTESTED]


def _untested(comparison: Comparison, mode: str) -> list[str]:
    """The gate's other reasons: cases not run, errored, removed, and no case in both runs."""
    out = []
    if comparison.not_run:
        out.append(f"{comparison.not_run} not run (the run was cut short: they were not compared)")
    if comparison.errored:
        out.append(f"{len(comparison.errored)} errored or timed out ({_names(comparison.errored)}: the run could not test them, "
                   "never as in the baseline)")
    gone = comparison.vanished
    if gone:
        passed = sum(d.before == "passed" for d in gone)
        if comparison.hidden(mode):
            held = "counted as failing now, they would be a regression" if mode != "any" else "they passed there and are not shown to pass now"
        else:
            held = "even counted as failing now, no significant regression" if passed and mode != "any" else "none passed there"
        out.append(f"{len(gone)} removed ({_names(gone)}; {passed} passed in the baseline: {held})")
    if comparison.paired is None:
        out.append("no case ran in both runs (nothing was compared)")
    return out


def _facts(comparison: Comparison, mode: str) -> str:
    """What a passing gate passed over, said as it is: the cases that moved (within noise), those failing as before."""
    facts = []
    moved = comparison.of("regressed")
    if moved:
        each = ", ".join(f"{d.label} ({_moved(d)})" for d in moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
        facts.append(f"{_count(moved)} regressed, not significantly: {each}")
    known = _known(comparison)
    if known:
        facts.append(f"{_count(known)} still failing as in the baseline")
    return f" — {'; '.join(facts)}" if facts else ""


def _moved(d: CaseDiff) -> str:
    """``3/3 → 2/3 runs passed``; ``passed → failed`` with one run."""
    if d.runs_before or d.runs_after:
        return f"{(d.runs_before or d.before).removesuffix(' runs passed')} → {d.runs_after or d.after}"
    return f"{d.before} → {d.after}"


def regression_line(comparison: Comparison, mode: str) -> str:
    """What ``diff --fail-on-regression`` decided (the same gate as --baseline's), and on what."""
    flag = f"--fail-on-regression{'=any' if mode == 'any' else ''}"
    if comparison.regressed(mode):
        why = _why(comparison, mode).removeprefix(" — ")
        return f"  {flag}: fails — {why or f'{comparison.regressions} regressed'}"
    if comparison.not_run:
        return f"  {flag}: fails — {comparison.not_run} not run (the new run was cut short: they were not compared)"
    failing_new = [d for d in comparison.of("new") if d.after in BAD]
    reasons = ([f"{len(failing_new)} new not passing ({_names(failing_new)})"] if failing_new else []) + _untested(comparison, mode)
    if comparison.gate(mode):
        return f"  {flag}: fails — {'; '.join(reasons)}"
    within = comparison.regressions and mode != "any" and comparison.paired is not None  # _regressions says why already
    return f"  {flag}: passes — {'; '.join([_regressions(comparison, mode) + ('' if within else _why(comparison, mode)), *reasons])}"


def _regressions(comparison: Comparison, mode: str) -> str:
    """``3 regressed (not significant: p = 0.25; --fail-on-regression=any fails on any)``."""
    text = f"{comparison.regressions} regressed"
    paired = comparison.paired
    if mode == "any" or paired is None or not comparison.regressions or paired.regression:
        return text
    return text + f" (within noise: {evidence.p_text(paired.p, paired.alpha)}; --fail-on-regression=any fails on any)"


def _why(comparison: Comparison, mode: str) -> str:
    """The evidence behind the banner: `` — worse (p = 0.01)``, `` — 2 cases moved``, or nothing."""
    paired = comparison.paired
    if mode == "any" or paired is None:
        return ""
    if paired.verdict == "worse":
        return f" — {evidence.verdict(paired)}, {evidence.points(paired.difference)}"
    moved = [m for m in paired.moved if m.worse]
    if moved:
        return f" — {len(moved)} case{'s' if len(moved) > 1 else ''} worse beyond noise"
    return f" ({evidence.verdict(paired)}, {evidence.size(paired)})"


def to_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "base": comparison.base,
        "new": comparison.new,
        "notes": list(comparison.notes),
        "counts": comparison.counts(),
        **({"paired": paired_dict(comparison.paired)} if comparison.paired is not None else {}),
        "cases": [{k: v for k, v in {
            "id": d.id, "connector": d.connector or None, "file": d.file or None, "kind": d.kind, "before": d.before or None, "after": d.after or None,
            "runs_before": d.runs_before or None, "runs_after": d.runs_after or None, "reason": d.reason or None,
            "changes": [{"what": c.what, "before": c.before, "after": c.after} for c in d.changes],
        }.items() if v is not None} for d in comparison.cases],
    }


@register_comparison(".md")
def to_markdown(comparison: Comparison, base: RunReport | None = None, new: RunReport | None = None) -> str:
    """The comparison as a pull-request comment."""
    lines = [f"## agent-test: {headline(comparison)}", "",
             f"Comparing {_code(os.path.basename(comparison.base) or comparison.base)} → {_code(os.path.basename(comparison.new) or comparison.new)}.", "",
             *[line for n in comparison.notes + coverage(comparison) for line in (f"> ⚠ {_text(n)}", "")]]
    if comparison.paired is not None:
        said = evidence.lines(comparison.paired)
        lines += [f"**{_text(said[0], 600)}**", ""] + [f"- {_text(line.strip(), 300)}" for line in said[1:]] + [""]
    said = judge_lines(comparison)
    lines += [f"**{_text(said[0])}**", "", *[f"- {_text(line.strip(), 300)}" for line in said[1:]], ""] if said else []
    shown = [d for d in comparison.cases if d.kind != "unchanged"]
    if not shown:
        return "\n".join(lines + ["Every case has the same verdict, output and tool calls."]) + "\n"
    lines += ["| | Case | Verdict | What changed |", "|---|---|---|---|"]
    for d in shown:
        what = "; ".join(_text(f"{c.what}: {c.before} → {c.after}", 160) for c in d.changes[:3]) or _text(d.reason, 160)
        lines.append(f"| {ICONS[d.kind]} {d.kind} | {_code(d.label)} | {_text(_verdicts(d))} | {what} |")
    detailed = [d for d in shown if d.changes]
    if detailed:
        lines += ["", "<details><summary>Details</summary>", ""]
        for d in detailed:
            lines += [f"**{_text(d.label)}** — {d.kind}", ""]
            lines += [f"- {_text(c.what)}: {_text(c.before, 300)} → {_text(c.after, 300)}" for c in d.changes]
            lines.append("")
        lines.append("</details>")
    return "\n".join(lines) + "\n"


def _static(comparison: Comparison) -> str:
    """The comparison as a table, for a reader without JavaScript."""
    rows = []
    for d in comparison.cases:
        if d.kind == "unchanged":
            continue
        changes = "".join(f"<li><b>{escape(c.what)}</b>: {escape(c.before)} → {escape(c.after)}</li>" for c in d.changes)
        rows.append(f'<tr class="{d.kind.replace(" ", "-")}"><td>{ICONS[d.kind]} {escape(d.kind)}</td><td><code>{escape(d.label)}</code></td>'
                    f"<td>{escape(_verdicts(d))}</td><td><ul>{changes}</ul>{escape(d.reason) if not changes else ''}</td></tr>")
    table = ("<table><tr><th></th><th>Case</th><th>Verdict</th><th>What changed</th></tr>" + "".join(rows) + "</table>") if rows \
        else "<p>Every case has the same verdict, output and tool calls.</p>"
    said = evidence.lines(comparison.paired) if comparison.paired is not None else []
    paired = (f'<div id="paired"><p><b>{escape(said[0])}</b></p><ul>' + "".join(f"<li>{escape(x.strip())}</li>" for x in said[1:])
              + "</ul></div>") if said else ""
    notes = "".join(f'<p class="warn">⚠ {escape(n)}</p>' for n in comparison.notes + coverage(comparison))
    return (f"<h1>agent-test diff</h1><p>{escape(comparison.base)} → {escape(comparison.new)}</p>{notes}"
            f"<p><b>{escape(headline(comparison))}</b></p>{paired}{table}")


def _runs(d: CaseDiff, report: RunReport | None) -> list[dict[str, Any]]:
    """The results a changed case had in one of the reports, for the before/after view."""
    if report is None:
        return []
    runs: list[CaseResult] = [r for r in report.results if r.id == d.id and (not d.connector or r.connector == d.connector)]
    same_file = [r for r in runs if r.file == d.file]
    return [result_dict(r) for r in (same_file or runs)]


@register_comparison(".html")
def to_html(comparison: Comparison, base: RunReport | None = None, new: RunReport | None = None) -> str:
    """The comparison in the viewer: regressions first, each changed case before and after in full."""
    data = to_dict(comparison)
    if comparison.paired is not None:  # the words are made here, as every format makes them; the page shows them
        data["paired_lines"] = evidence.lines(comparison.paired)
    for entry, d in zip(data["cases"], comparison.cases):
        if d.kind != "unchanged":
            entry.update(before_runs=_runs(d, base), after_runs=_runs(d, new))
    return viewer.page("diff", {"diff": data}, "agent-test diff", _static(comparison))


@register_comparison(".json")
def to_json(comparison: Comparison, base: RunReport | None = None, new: RunReport | None = None) -> str:
    return json.dumps(to_dict(comparison), ensure_ascii=False, indent=2) + "\n"


def render(comparison: Comparison, path: str, base: RunReport | None = None, new: RunReport | None = None) -> str:
    """The comparison in the format of ``path``'s extension (checked by ``check_path``)."""
    compare = comparer(os.path.splitext(path)[1].lower())
    assert compare is not None, path
    return compare(comparison, base, new)


def check_path(path: str) -> None:
    """-o of ``diff``: a known format and a place that can be written (its folder made), before anything is read."""
    ext = os.path.splitext(path)[1].lower()
    if comparer(ext) is None:
        raise AgentTestError(f"-o {path}: diff writes {', '.join(comparison_formats())}, not '{ext or '(none)'}'")
    prepare(path)


__all__ = ["KINDS", "check_path", "console_lines", "coverage", "judge_lines", "gate_lines", "headline", "regression_line", "render", "to_dict", "to_html", "to_json", "to_markdown"]
