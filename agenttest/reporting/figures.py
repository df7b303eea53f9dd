"""The tables every report shows beside the results, as rows of text cells: the gates (pass rates, pass^k,
pass@k, durations, Yao's class), the model matrix (case × connector) and the costs. Each format lays them
out its own way (aligned columns, Markdown, HTML)."""

from __future__ import annotations

from dataclasses import dataclass

from agenttest.util.durations import format_duration
from agenttest.accounting.costs import counted, money, totals
from agenttest.verdicts import evidence
from agenttest.verdicts.gates import pass_k, runs_saved, shown
from agenttest.model import CaseKey, Gate, Player, RunReport, Usage
from agenttest.reporting import evidence as words

MARK = {True: "✓", False: "✗"}


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]
    verdicts: list[str]  # each row's verdict (passed, failed, …), for colour


def run_state(report: RunReport) -> list[tuple[str, str]]:
    """Interrupted, stopped early, not run — (label, what it means) — said above the results."""
    out = []
    if report.interrupted:
        out.append(("Interrupted", f"({'SIGTERM' if report.terminated else 'Ctrl-C'}): the report holds the results that finished."))
    elif report.stopped_early:
        out.append(("Stopped early", "(--fail-fast): no case was started after the first failure." if report.options.get("fail_fast")
                    else "a case file changed while the run read it (the warnings say where and what it cost)."))
    if lacking := report.options.get("missing_shards"):
        out.append(("Partial merge:", f"shard{'s' if len(lacking) > 1 else ''} {', '.join(map(str, lacking))} missing — their cases are in no figure here."))
    if report.not_run:
        out.append(("Not run:", str(report.not_run)))
    if report.checked_nothing:
        out.append(("Checked nothing:", unchecked_text(report.checked_nothing)))
    return out


def players_text(players: tuple[Player, ...]) -> str:
    """``agent bot on fake; validator judge on mock (a mock)``: who played each role, on which connector."""
    return "; ".join(f"{p.role} {p.agent} on {p.connector}" + (" (a mock)" if p.mock else "") for p in players)


def unchecked_text(ids: list[str]) -> str:
    """``2 cases (a, b) checked nothing but that the agent answered`` (at most ten ids named)."""
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return (f"{len(ids)} case{'s' if len(ids) > 1 else ''} ({shown}) checked nothing but that the agent answered "
            "(no assertion, expected, required checkpoint or budget).")


def percent(rate: float) -> str:
    return f"{100 * rate:.0f}%" if abs(100 * rate - round(100 * rate)) < 1e-9 else f"{100 * rate:.1f}%"


def percents(rate: float, least: float) -> tuple[str, str]:
    """A pass rate and its gate, with as many digits as it takes for them to differ where they do: 2 of 3 at a
    gate of 0.667 is 66.67% < 66.70%, not "66.7% ≥ 66.7% … FAILED"."""
    shown = percent(rate), percent(least)
    digits = 2
    while shown[0] == shown[1] and abs(rate - least) > 1e-12 and digits < 8:
        shown = f"{100 * rate:.{digits}f}%", f"{100 * least:.{digits}f}%"
        digits += 1
    return shown


def ms(value: float) -> str:
    return format_duration(value / 1000)


def verdict_text(g: Gate) -> str:
    word = g.verdict.upper()
    notes = [n for n, on in (("flaky", g.flaky and g.verdict == "passed"), (f"stopped early, {g.saved} saved", g.saved > 0),
                             (f"{g.runs} of {g.planned} runs ran", g.verdict == "incomplete")) if on]
    return word + (f" ({', '.join(notes)})" if notes else "")


def gate_table(report: RunReport) -> Table | None:
    """One row per case (× connector): runs, pass rate against its gate, pass^k, pass@k, class, durations, verdict."""
    if not shown(report.gates, report.matrix):
        return None
    level = evidence.of(report).confidence
    headers = ["case", *(["connector"] if report.matrix else []), "runs", "passed", "pass rate", f"{100 * level:g}% CI", "gate", "pass^k",
               "pass@k", "class", "median", "mean ± sd", "verdict"]
    rows: list[list[str]] = []
    verdicts: list[str] = []
    for g in report.gates:
        ran = f"{g.runs}/{g.planned}" if g.runs != g.planned else str(g.runs)
        decided = g.runs and g.verdict != "incomplete"  # pass^k, pass@k and the class of runs cut short say nothing yet
        cls = g.classification if decided else "—"
        rate, least = percents(g.pass_rate, g.min_pass_rate)
        interval = evidence.case_interval(g, level)
        row = [g.id, *([g.connector] if report.matrix else []), ran, str(g.passed), rate if g.runs else "—",
               words.span(*interval) if interval is not None else "—",
               f"≥ {least}", MARK[g.pass_hat_k] if decided else "—", MARK[g.pass_at_k] if decided else "—", cls,
               ms(g.median_ms) if g.runs else "—", f"{ms(g.mean_ms)} ± {ms(g.std_ms)}" if g.runs else "—", verdict_text(g)]
        rows.append(row)
        verdicts.append(g.verdict)
    return Table(headers, rows, verdicts)


def pass_k_table(report: RunReport) -> Table | None:
    """The suite's pass^k and pass@k for k = 1 … N as tau-bench tabulates them (unbiased: the mean over cases
    of C(c,k)/C(n,k)); None when no case ran twice."""
    table = pass_k(report.gates)
    if table is None:
        return None
    cols = shown_k(len(table.k))
    known = evidence.of(report)
    rows = [["pass^k", *(f"{table.pass_hat[i]:.3f}" for i in cols)]]
    if known.pass_hat:
        rows.append([f"  {100 * known.confidence:g}% CI", *(_pair(known.pass_hat[i]) for i in cols)])
    rows.append(["pass@k", *(f"{table.pass_at[i]:.3f}" for i in cols)])
    if known.pass_at:
        rows.append([f"  {100 * known.confidence:g}% CI", *(_pair(known.pass_at[i]) for i in cols)])
    return Table(["k", *(str(table.k[i]) for i in cols)], rows, [""] * len(rows))


def _pair(interval: tuple[float, float]) -> str:
    return f"{interval[0]:.2f}–{interval[1]:.2f}"


def shown_k(n: int) -> list[int]:
    """The columns (indexes of k = 1 … n) a table shows: every k up to 12 runs; beyond, k = 1–5, 10, 20, 50, 100,
    200, 500 below n, and n (a thousand columns would be 7,000 characters a line; the JSON report has every k)."""
    if n <= 12:
        return list(range(n))
    return [k - 1 for k in (1, 2, 3, 4, 5, 10, 20, 50, 100, 200, 500) if k < n] + [n - 1]


def pass_k_caption(report: RunReport) -> str:
    """What the pass^k table is over: ``50 cases × 4 runs``."""
    table = pass_k(report.gates)
    if table is None:
        return ""
    some = "; some k shown, the JSON report has each" if len(shown_k(len(table.k))) < len(table.k) else ""
    return f"{table.cases[0]} case{'s' if table.cases[0] != 1 else ''} × {table.k[-1]} runs{some}"


def gate_summary(report: RunReport) -> str:
    """``3/5 passed, 1 failed, 1 not run; early stop saved 12 of 40 runs (30%)``."""
    counts = {v: sum(1 for g in report.gates if g.verdict == v) for v in ("passed", "failed", "incomplete", "skipped", "not run")}
    text = f"{counts['passed']}/{len(report.gates)} passed" + "".join(f", {n} {v}" for v, n in counts.items() if v != "passed" and n)
    none = sum(1 for g in report.gates if g.vacuous)
    if none:
        text += f" ({none} with no passing run: min_pass_rate 0)"
    saved = runs_saved(report.gates)
    if saved:
        planned = sum(g.planned for g in report.gates)
        text += f"; early stop saved {saved} of {planned} runs ({percent(saved / planned)})"
    return text


def matrix_table(report: RunReport) -> Table | None:
    """Case × connector side by side: verdict, pass rate, tokens and cost of the agent under test, median latency."""
    if not report.matrix:
        return None
    cells: dict[CaseKey, Gate] = {g.key: g for g in report.gates}
    cases = list(dict.fromkeys((g.file, g.id) for g in report.gates))
    rows, verdicts = [], []
    for file, case_id in cases:
        row = [case_id]
        worst = "passed"
        for conn in report.matrix:
            g = cells.get(CaseKey(file=file, id=case_id, connector=conn))
            row.append(matrix_cell(g))
            if g is not None and g.verdict == "failed":
                worst = "failed"
        rows.append(row)
        verdicts.append(worst)
    totals_row = ["total"] + [matrix_total([g for g in report.gates if g.connector == conn]) for conn in report.matrix]
    rows.append(totals_row)
    verdicts.append("")
    return Table(["case", *report.matrix], rows, verdicts)


def matrix_cell(g: Gate | None) -> str:
    if g is None or not g.runs:
        return g.verdict.upper() if g is not None else "—"
    return f"{g.verdict.upper()} {percent(g.pass_rate)} · {g.tokens:,} tok · {money(g.cost)} · {ms(g.median_ms)}"


def matrix_total(gates: list[Gate]) -> str:
    passed = sum(1 for g in gates if g.verdict == "passed")
    tokens = sum(g.tokens for g in gates)
    priced = [g.cost for g in gates if g.cost is not None]
    return f"{passed}/{len(gates)} passed · {tokens:,} tok · {money(sum(priced) if priced else None)}"


def cost_lines(report: RunReport) -> list[str]:
    """``$0.0123 in total: agent $0.01 (2,000 tokens), simulator …`` and the same by connector."""
    t = totals(report.results, report.generation)
    if t.cost is None:  # no connector has pricing: the token counts are shown elsewhere
        return []
    by_role = ", ".join(f"{role} {money(cost)} ({usage.total_tokens:,} tokens{counted(usage)})" for role, (usage, cost) in t.by_role.items())
    by_conn = ", ".join(f"{conn} {money(cost)} ({usage.total_tokens:,} tokens{counted(usage)})" for conn, (usage, cost) in t.by_connector.items())
    every = sum((usage for usage, _ in t.by_role.values()), Usage())
    lines = [f"{money(t.cost)} in total{counted(every)} — by role: {by_role}", f"by connector: {by_conn}"]
    if t.unpriced_tokens:
        lines.append(f"{t.unpriced_tokens:,} tokens went through connectors with no pricing (not in the cost)")
    return lines


def aligned(table: Table) -> list[str]:
    """A table as lines of space-aligned columns (for the console)."""
    widths = [max(len(r[i]) for r in [table.headers, *table.rows]) for i in range(len(table.headers))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [table.headers, *table.rows]]


def tag_table(report: RunReport) -> Table | None:
    """One row per tag (in the order tags first appear): its cases, how many passed (by their gate), the rate."""
    if not any(r.tags for r in report.results):
        return None
    verdicts: dict[CaseKey, bool] = {}
    tags: dict[str, dict[CaseKey, None]] = {}  # each tag's cases, in order, each once (a dict: a list's `in` was quadratic)
    gated = {g.key: g.verdict == "passed" for g in report.gates}
    for r in report.results:
        key = r.key
        verdicts[key] = gated.get(key, verdicts.get(key, True) and r.ok)
        for tag in r.tags:
            tags.setdefault(tag, {})[key] = None
    if not tags:
        return None
    rows, marks = [], []
    for tag, keys in tags.items():
        passed = sum(1 for k in keys if verdicts[k])
        rows.append([tag, str(len(keys)), str(passed), str(len(keys) - passed), percent(passed / len(keys))])
        marks.append("passed" if passed == len(keys) else "failed")
    return Table(["tag", "cases", "passed", "not passed", "pass rate"], rows, marks)


def evidence_lines(report: RunReport) -> list[str]:
    """What a model matrix says beyond its table: each connector's pass rate with its interval, and each connector
    compared with the first as a paired experiment."""
    known = evidence.of(report)
    lines = [f"{name}: {words.estimate(e, known.confidence)}" for name, e in known.by_connector]
    for paired in known.matrix:
        said = words.lines(paired)
        lines.append(f"{paired.new} vs {paired.base}: {said[0]}")
        lines += [f"  {line}" for line in said[1:]]
    return lines
