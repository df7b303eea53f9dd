"""The evidence said in words (FORMATS §19, docs/statistics.md): a rate with its interval and sample size, a paired
comparison's verdict ("worse (p = 0.01)", "no difference detectable — with 50 cases × 1 run, …"), the runs a
difference needs, the cases that moved, a judge's calibration. Every format (console, Markdown, HTML, JUnit) takes
its lines from here; the data is ``model.evidence``."""

from __future__ import annotations

import math

from agenttest.model import Calibration, Estimate, Mover, Paired, RunReport
from agenttest.model.results import digits_shown
from agenttest.verdicts import evidence
from agenttest.util.text import plural

TESTS = {"mcnemar": "McNemar's exact test", "sign-flip": "the exact paired sign-flip test"}


def pct(rate: float) -> str:
    """A share as a percent: ``90%``, ``87.5%``."""
    value = 100 * rate
    return f"{value:.0f}%" if abs(value - round(value)) < 0.05 else f"{value:.1f}%"


def span(low: float, high: float) -> str:
    """An interval of rates: ``44%–100%``."""
    return f"{_whole(low)}–{_whole(high)}"


def _whole(rate: float) -> str:
    return _digits(rate, 0) + "%"


def _digits(rate: float, digits: int) -> str:
    """A rate in percent with ``digits`` decimals — more when fewer would show a rate short of all (or above none)
    as 100 (or 0): 29,990 of 30,000 is 99.97%, never 100.0%."""
    return f"{100 * rate:.{digits_shown(rate, digits)}f}"


def rate_text(rate: float) -> str:
    """A pass rate (a share) as the summary shows it: ``85.0%``; ``99.97%`` for one that is not all."""
    return _digits(rate, 1) + "%"


def estimate(e: Estimate, confidence: float) -> str:
    """``85.0% (95% CI 71%–93%; 40 cases, 120 runs)``: every rate with what it stands on."""
    stands = plural(e.cases, "case") + (f", {e.runs:,} runs" if e.runs != e.cases else "")
    return f"{rate_text(e.rate)} ({level(confidence)} CI {span(e.low, e.high)}; {stands})"


def pass_rate_text(report: RunReport, rate: float) -> str:
    """``85.0% (95% CI 71%–93%; 40 cases, 120 runs)``: the pass rate (percent) with its interval and what it stands on."""
    known = evidence.of(report)
    if known.pass_rate is None:
        return f"{rate:.1f}%"
    e = known.pass_rate
    stands = plural(e.cases, "case") + (f", {e.runs:,} runs" if e.runs != e.cases else "")
    shown = rate_text(e.rate) if abs(100 * e.rate - rate) <= 0.05 + 1e-9 else f"{rate:.1f}%"  # the summary's rate is rounded to 0.1
    return f"{shown} ({level(known.confidence)} CI {span(e.low, e.high)}; {stands})"


def level(confidence: float) -> str:
    return f"{100 * confidence:g}%"


def points(difference: float) -> str:
    """A difference of rates in percentage points, signed: ``-12.0 points``."""
    return f"{100 * difference:+.1f} points".replace("+0.0 points", "0.0 points").replace("-0.0 points", "0.0 points")


def p_text(p: float, alpha: float) -> str:
    """``p = 0.012``; ``p < 0.001``; with the digits it takes to tell p from alpha (0.0499 is not "0.05")."""
    if p < 0.001:
        return "p < 0.001"
    if p > 0.995:
        return "p = 1"
    digits = 2
    shown = f"{p:.{digits}g}"
    while (float(shown) < alpha) != (p < alpha) or (float(shown) == alpha and p != alpha):
        digits += 1
        shown = f"{p:.{digits}g}"
    return f"p = {shown}"


def size(paired: Paired) -> str:
    """``50 cases × 1 run``, ``100 cases × 3 runs``; ``40 cases, 3–5 runs each`` when the runs differ."""
    most = max(paired.base_runs, paired.new_runs)
    if paired.fewest_runs == most:
        return f"{plural(paired.cases, 'case')} × {plural(most, 'run')}"
    return f"{plural(paired.cases, 'case')}, {paired.fewest_runs}–{most} runs each"


def noticeable(mdd: float) -> str:
    """The minimum detectable difference in points, rounded up to a tenth (never flattering the run)."""
    value = math.ceil(1000 * mdd - 1e-9) / 10
    return f"{value:g} points"


def verdict(paired: Paired) -> str:
    """``worse (p = 0.01)``, ``better (p = 0.003)``, ``no difference detectable``."""
    if paired.verdict == "no difference":
        return "no difference detectable"
    return f"{paired.verdict} ({p_text(paired.p, paired.alpha)})"


def sentence(paired: Paired) -> str:
    """The comparison in one sentence, with its size and the figures behind the verdict."""
    ci = f"{level(1 - paired.alpha)} CI {points(paired.low).removesuffix(' points')} to {points(paired.high).removesuffix(' points')}"
    observed = f"{points(paired.difference)} ({ci}), {p_text(paired.p, paired.alpha)}"
    if paired.verdict == "no difference":
        return (f"no difference detectable — with {size(paired)}, differences under {noticeable(paired.mdd)} cannot be told "
                f"from noise; observed {observed}")
    return f"{paired.verdict}: {observed} — {size(paired)}, {TESTS[paired.test]}"


def rates(paired: Paired) -> str:
    """``72.0% → 64.0% mean pass rate of the 50 cases both ran (8 worse, 2 better)``."""
    return (f"{100 * paired.base_rate:.1f}% → {100 * paired.new_rate:.1f}% mean pass rate of the {plural(paired.cases, 'case')} "
            f"both ran ({paired.worse} worse, {paired.better} better)")


def runs_sentence(paired: Paired) -> str | None:
    """How many runs per case would detect which difference (80% power): ``2 runs per case would detect a 10-point
    difference, 7 a 5-point one``."""
    needed = sorted(paired.runs_needed, key=lambda x: -x[0])  # the largest difference first
    if not needed:
        return None

    def runs(r: int | None) -> str:
        return "more than 1,000" if r is None else str(r)

    (first, r), *rest = needed
    text = f"{runs(r)} run{'' if r == 1 else 's'} per case would detect a {100 * first:g}-point difference"
    return text + "".join(f", {runs(n)} a {100 * d:g}-point one" for d, n in rest) + " (80% power)"


def case_note(paired: Paired) -> str | None:
    """Why no case is flagged on its own, when its runs could not show it."""
    if paired.tested or paired.base_runs == paired.new_runs == 1:
        return None
    return (f"no single case can be shown to have moved: with these runs the smallest p-value a case can have is "
            f"{paired.case_floor:.2g} (Fisher's exact test); more runs per case would tell")


def mover(m: Mover) -> str:
    """``checkout: 10/10 → 0/10 runs passed (Fisher p = 1.1e-05, 0.00022 after Holm)``."""
    where = m.id + (f" on {m.connector}" if m.connector else "")
    return (f"{where}: {m.before[0]}/{m.before[1]} → {m.after[0]}/{m.after[1]} runs passed ({'worse' if m.worse else 'better'}; "
            f"Fisher p = {m.p:.2g}, {m.adjusted:.2g} after Holm)")


def lines(paired: Paired) -> list[str]:
    """Everything a comparison says, one statement a line."""
    out = [sentence(paired), rates(paired)]
    if paired.moved:
        out.append(f"{plural(len(paired.moved), 'case')} moved beyond noise:")
        out += [f"  {mover(m)}" for m in paired.moved]
    note = case_note(paired)
    if note:
        out.append(note)
    more = runs_sentence(paired)
    if more and paired.verdict == "no difference":
        out.append(more)
    return out


def calibration(c: Calibration, confidence: float) -> str:
    """``workers.test.validator on mock: 30 labelled, agreement 90.0% (95% CI 74%–97%), κ 0.78, TPR 0.93, TNR 0.87,
    precision 0.88``."""
    if not c.labelled:
        return f"{judge_name(c)}: no labelled verdict ({plural(c.judgements, 'judgement')})"
    said = [f"{judge_name(c)}: {c.labelled} labelled",
            f"agreement {estimate_short(c.agreement, confidence)}" if c.agreement is not None else "",
            f"κ {_figure(c.kappa)}", f"TPR {_figure(c.tpr)}", f"TNR {_figure(c.tnr)}", f"precision {_figure(c.precision)}"]
    if c.unusable:
        said.append(f"{c.unusable} without a verdict")
    return ", ".join(s for s in said if s)


def noise(c: Calibration) -> str | None:
    """A judge's own noise: ``flip rate 20% (4 of 20 repeated judgements split)``, ``swap consistency 90% (…)``."""
    parts = []
    if c.repeated:
        parts.append(f"flip rate {pct(c.flipped / c.repeated)} ({c.flipped} of {plural(c.repeated, 'repeated judgement')} split)")
    if c.pairwise:
        parts.append(f"swap consistency {pct(c.consistent / c.pairwise)} ({c.consistent} of {plural(c.pairwise, 'pairwise judgement')} "
                     f"the same in both orders)")
    return "; ".join(parts) or None


def estimate_short(e: Estimate, confidence: float) -> str:
    return f"{rate_text(e.rate)} ({level(confidence)} CI {span(e.low, e.high)})"


def judge_name(c: Calibration) -> str:
    return c.validator + (f" on {c.connector}" if c.connector else "")


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


SHOWN = 5  # disagreements the console and Markdown list per judge (the JSON report and the viewer have them all)


def judge_lines(report: RunReport) -> list[str]:
    """Each judge against the labels: its figures, its noise, its confusion matrix, its first disagreements, its gate."""
    known = evidence.of(report)
    lines: list[str] = []
    for c in known.judges:
        lines.append(calibration(c, known.confidence))
        more = noise(c)
        if more:
            lines.append(f"  {more}")
        if c.labelled:
            lines.append(f"  labelled pass: judged pass {c.tp}, fail {c.fn} · labelled fail: judged pass {c.fp}, fail {c.tn}")
        for d in c.disagreements[:SHOWN]:
            where = d.id + (f" on {d.connector}" if d.connector and report.matrix else "") + (f" (run {d.run})" if d.run > 1 else "")
            lines.append(f"  ✗ {where}: labelled {'pass' if d.label else 'fail'}, judged {'pass' if d.verdict else 'fail'} — "
                         f"criterion: {d.criterion or '—'} — judge: {d.reason or '—'}")
        if len(c.disagreements) > SHOWN:
            lines.append(f"  … {len(c.disagreements) - SHOWN} more disagreements in the report")
        if c.gated:
            lines.append(f"  gate fails: {gate_line(c).split(': ', 1)[1]}" if c.shortfalls else f"  gate passes: {thresholds(c)}")
    return lines


def thresholds(c: Calibration) -> str:
    """``agreement ≥ 80%, κ ≥ 0.60``."""
    parts = ([f"agreement ≥ {100 * c.min_agreement:g}%"] if c.min_agreement is not None else []) + (
        [f"κ ≥ {c.min_kappa:.2f}"] if c.min_kappa is not None else [])
    return ", ".join(parts)


def gate_line(c: Calibration) -> str:
    """Why a judge's gate failed: ``agreement 70.0% < 80%, κ 0.35 < 0.60``."""
    parts = []
    rate = c.agreement.rate if c.agreement is not None else None
    if "agreement" in c.shortfalls:
        parts.append(f"agreement {'—' if rate is None else f'{100 * rate:.1f}%'} < {100 * (c.min_agreement or 0):g}%")
    if "kappa" in c.shortfalls:
        parts.append(f"κ {_figure(c.kappa)} < {c.min_kappa:.2f}")
    return f"{judge_name(c)}: " + ", ".join(parts) + f" ({plural(c.labelled, 'labelled verdict')})"
