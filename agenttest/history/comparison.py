"""Two runs compared case by case (FORMATS §10): regressed, fixed, flaky, still failing, changed, new,
removed — with the assertions and checkpoints whose outcome changed. Pure: reports in, a Comparison out."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agenttest.errors import ExitCode
from agenttest.verdicts import paired as pairing
from agenttest.model import Calibration, CaseResult, Paired, RunReport
from agenttest.connectors.requestdiff import excerpts
from agenttest.util.text import as_text

# the order classes are listed in; the first ones need a reader's attention
KINDS = ("regressed", "fixed", "still failing", "new", "not run", "removed", "flaky", "changed", "unchanged")
BAD = ("failed", "error", "timeout")
UNTESTED = ("error", "timeout")  # the run could not test the case: never "as in the baseline"


@dataclass(frozen=True)
class Change:
    """One thing about a case that differs between the runs: an assertion, a checkpoint, the output…"""

    what: str  # "assertion 2 (contains)", "checkpoint confirm", "output", "tool calls", "reason"
    before: str
    after: str


@dataclass(frozen=True, kw_only=True)
class CaseDiff:
    id: str
    file: str
    kind: str  # one of KINDS
    before: str  # the case's verdict in the base run ("" when new)
    after: str  # in the new run ("" when removed)
    runs_before: str = ""  # "2/3 runs passed" when a case ran several times
    runs_after: str = ""
    changes: tuple[Change, ...] = ()
    reason: str = ""  # why it does not pass now (or did not before, when removed)
    connector: str = ""  # in a comparison of two model matrices: the connector the case ran on

    @property
    def label(self) -> str:
        return f"{self.id} on {self.connector}" if self.connector else self.id


@dataclass(frozen=True, kw_only=True)
class Comparison:
    base: str
    new: str
    cases: tuple[CaseDiff, ...]
    paired: Paired | None = None  # the cases both runs ran, compared as a paired experiment (FORMATS §19)
    notes: tuple[str, ...] = ()  # what differs between the runs besides their cases: the connectors, the models
    worst: Paired | None = None  # the paired test again, each removed case counted as failing every run now
    judges: tuple[tuple[Calibration | None, Calibration | None], ...] = ()  # each labelled judge before and after

    def of(self, kind: str) -> list[CaseDiff]:
        return [c for c in self.cases if c.kind == kind]

    def counts(self) -> dict[str, int]:
        return {k: len(self.of(k)) for k in KINDS}

    @property
    def regressions(self) -> int:
        return len(self.of("regressed"))

    @property
    def not_run(self) -> int:
        """Cases of the base run that the new run was to run but did not (Ctrl-C, SIGTERM, --fail-fast)."""
        return len(self.of("not run"))

    @property
    def errored(self) -> list[CaseDiff]:
        """Cases the new run could not test (error, timeout): a baseline never greens them, whatever they were there."""
        return [c for c in self.cases if c.after in UNTESTED]

    @property
    def vanished(self) -> list[CaseDiff]:
        """Cases of the baseline the new run no longer has (not those a cut-short run did not reach: ``not run``)."""
        return self.of("removed")

    def regressed(self, mode: str = "significant") -> bool:
        """Whether the new run regressed: by default a significant regression of the suite or of a case (the
        paired test, Fisher's per case after Holm); ``any``: a case passed in the base run and not in the new."""
        if mode == "any":
            return bool(self.regressions)
        return self.paired is not None and self.paired.regression

    def hidden(self, mode: str = "significant") -> bool:
        """Whether the removed cases could hide a regression: counted as failing every run now, the comparison
        regresses (``any``: a removed case passed in the baseline)."""
        if self.regressed(mode):
            return False
        if mode == "any":
            return any(c.before == "passed" for c in self.vanished)
        return self.worst is not None and self.worst.regression

    def gate(self, mode: str = "significant") -> ExitCode:
        """The exit code of a run gated on its baseline (FORMATS §10): 1 when it regressed (``regressed``); a new
        case does not pass (it has nothing to be compared with: its own verdict counts); a case errored or timed
        out (the run could not test it); no case ran in both runs (nothing was compared); a case of the baseline
        was not run because the run was cut short; or the removed cases could hide a regression (``hidden``)."""
        bad_new = [c for c in self.of("new") if c.after in BAD]
        failed = self.regressed(mode) or bad_new or self.not_run or self.errored or self.paired is None or self.hidden(mode)
        return ExitCode.FAILED if failed else ExitCode.OK


@dataclass(frozen=True)
class Verdict:
    """A case's verdict over its runs: the gate (every run that ran passed), and how many passed."""

    status: str
    passed: int
    ran: int
    reason: str

    @property
    def flaky(self) -> bool:
        return self.status == "passed" and self.passed < self.ran

    def runs(self) -> str:
        return f"{self.passed}/{self.ran} runs passed" if self.ran > 1 else ""


def verdict(runs: list[CaseResult], min_pass_rate: float = 1.0) -> Verdict:
    ran = [r for r in runs if r.status != "skipped"]
    if not ran:
        return Verdict("skipped", 0, 0, runs[0].skip_reason if runs else "")
    passed = sum(1 for r in ran if r.status == "passed")
    first_bad = next((r for r in ran if r.status != "passed"), None)
    reason = first_bad.reasons[0] if first_bad is not None else ""
    if passed / len(ran) >= min_pass_rate:
        return Verdict("passed", passed, len(ran), reason)
    assert first_bad is not None
    return Verdict(first_bad.status, passed, len(ran), reason)


Key = tuple[str, str, str]  # (file, or "" when ids are unique; case id; connector, or "" outside a model matrix)


def _grouped(report: RunReport, by_connector: bool) -> dict[Key, list[CaseResult]]:
    """Results by case (× connector when either run was a model matrix), in report order; keyed by file
    too when ids repeat across files."""
    files: dict[str, set[str]] = {}
    for r in report.results:
        files.setdefault(r.id, set()).add(r.file)
    unique = all(len(f) == 1 for f in files.values())
    out: dict[Key, list[CaseResult]] = {}
    for r in report.results:
        out.setdefault(("" if unique else r.file, r.id, r.connector if by_connector else ""), []).append(r)
    return out


def _keys(base: dict[Key, Any], new: dict[Key, Any]) -> tuple[dict[Key, Any], dict[Key, Any]]:
    """Match the two reports' keys: when one keys by file and the other does not, key both by id alone."""
    if any(k[0] for k in base) != any(k[0] for k in new):
        def by_id(d: dict[Key, Any]) -> dict[Key, Any]:
            out: dict[Key, Any] = {}
            for k, v in d.items():
                out.setdefault(("", k[1], k[2]), []).extend(v)
            return out
        return by_id(base), by_id(new)
    return base, new


def _state(flags: list[bool], passed_text: str, failed_text: str) -> str:
    if not flags:
        return "—"
    if all(flags):
        return passed_text
    if not any(flags):
        return failed_text
    return f"{passed_text} in {sum(flags)}/{len(flags)} runs"


def _assertions(base: list[CaseResult], new: list[CaseResult]) -> list[Change]:
    out = []
    count = max([len(r.assertions) for r in base + new] or [0])
    for i in range(count):
        def state(runs: list[CaseResult], i: int = i) -> tuple[str, str]:
            found = [r.assertions[i] for r in runs if i < len(r.assertions)]
            failed = next((a for a in found if not a.passed), None)
            kind = found[0].type if found else ""
            return kind, _state([a.passed for a in found], "passed", "failed" + (f": {failed.message}" if failed and failed.message else ""))
        (kind_a, a), (kind_b, b) = state(base), state(new)
        if (kind_a, a) != (kind_b, b):
            out.append(Change(f"assertion {i + 1} ({kind_b or kind_a})", a, b))
    return out


def _checkpoints(base: list[CaseResult], new: list[CaseResult]) -> list[Change]:
    out = []
    ids = list(dict.fromkeys(c.id for r in base + new for c in r.checkpoints))
    for cid in ids:
        def state(runs: list[CaseResult], cid: str = cid) -> str:
            found = [c for r in runs for c in r.checkpoints if c.id == cid]
            turns = sorted({c.reached_at_turn for c in found if c.reached and c.reached_at_turn is not None})
            reached = "reached" + (f" at turn {', '.join(map(str, turns))}" if turns else "")
            return _state([c.reached for c in found], reached, "not reached")
        a, b = state(base), state(new)
        if a != b:
            out.append(Change(f"checkpoint {cid}", a, b))
    return out


def _calls(runs: list[CaseResult]) -> list[list[tuple[str, str]]]:
    return [[(c.name, json.dumps(c.arguments, sort_keys=True, default=str)) for c in r.tool_calls] for r in runs]


def _call_text(runs: list[CaseResult]) -> str:
    calls = _calls(runs[:1])[0] if runs else []
    return ", ".join(f"{name}({args if len(args) <= 60 else args[:59] + '…'})" for name, args in calls) or "(none)"


def _behaviour(base: list[CaseResult], new: list[CaseResult]) -> list[Change]:
    """What the agent did differently: its outputs and its tool calls (names and arguments). Compared as the
    distinct things said and done, so running a case 5 times instead of once, saying the same, is no change."""
    out = []
    before, after = [as_text(r.output) for r in base], [as_text(r.output) for r in new]
    if set(before) != set(after):
        a, b = excerpts(before[0] if before else "", next((t for t in after if t not in before), after[0] if after else ""), 60)
        out.append(Change("output", a, b))
    if {tuple(c) for c in _calls(base)} != {tuple(c) for c in _calls(new)}:
        out.append(Change("tool calls", _call_text(base), _call_text(new)))
    return out


def _kind(a: Verdict, b: Verdict, changes: list[Change]) -> str:
    if a.status == "passed" and b.status in BAD:
        return "regressed"
    if a.status in BAD and b.status == "passed":
        return "fixed"
    if a.status == b.status == "passed" and (a.flaky or b.flaky):
        return "flaky"
    if a.status in BAD and b.status in BAD:
        return "still failing"
    return "changed" if changes or a.status != b.status else "unchanged"


def _one(key: Key, base: list[CaseResult] | None, new: list[CaseResult] | None, rates: tuple[float, float],
         unrun: set[tuple[str, str]] = frozenset(), outcomes: list[pairing.Outcome] | None = None) -> CaseDiff:  # type: ignore[assignment]
    runs = new or base or []
    case_id, file, connector = runs[0].id, runs[0].file, key[2]
    if base is None or new is None:
        v = verdict(runs, rates[1] if new else rates[0])
        kind = "new" if new else "not run" if (case_id, connector) in unrun else "removed"
        return CaseDiff(id=case_id, file=file, kind=kind, before="" if new else v.status, after=v.status if new else "", runs_before="" if new else v.runs(),
                        runs_after=v.runs() if new else "", reason=v.reason, connector=connector)
    a, b = verdict(base, rates[0]), verdict(new, rates[1])
    if outcomes is not None and a.ran and b.ran:
        outcomes.append(pairing.Outcome(case_id, file, connector, (a.passed, a.ran), (b.passed, b.ran)))
    changes = _assertions(base, new) + _checkpoints(base, new) + _behaviour(base, new)
    if a.reason != b.reason and a.status in BAD and b.status in BAD:  # failing either way, for another reason
        changes.append(Change("reason", a.reason or "—", b.reason or "—"))
    return CaseDiff(id=case_id, file=file, kind=_kind(a, b, changes), before=a.status, after=b.status, runs_before=a.runs(), runs_after=b.runs(), changes=tuple(changes), reason=b.reason or a.reason,
                    connector=connector)


def compare(base: RunReport, new: RunReport, base_name: str = "", new_name: str = "", alpha: float = 0.05) -> Comparison:
    """Every case of either report, classified; listed by kind (KINDS order), then in the new report's order; the
    cases both ran compared as a paired experiment at ``alpha``."""
    by_connector = bool(base.matrix) or bool(new.matrix)  # a matrix is compared connector by connector, never as runs
    old_cases, new_cases = _keys(_grouped(base, by_connector), _grouped(new, by_connector))
    keys: Iterable[Key] = list(new_cases) + [k for k in old_cases if k not in new_cases]
    # planned in the new run but never run (Ctrl-C, SIGTERM, --fail-fast): its gate is there with no run — a
    # report read back keeps its gates only when it shows them, and then every case a cut-short run lacks is
    # taken for not run (never for removed, which would let a gate pass on what was not compared)
    unrun = {(g.id, g.connector if by_connector else "") for g in new.gates if not g.runs and not g.skipped}
    if (new.interrupted or new.stopped_early) and not new.gates:
        unrun = {(k[1], k[2]) for k in old_cases if k not in new_cases}
    outcomes: list[pairing.Outcome] = []
    diffs = [_one(k, old_cases.get(k), new_cases.get(k), (_min_rate(base, old_cases.get(k)), _min_rate(new, new_cases.get(k))), unrun,
                  outcomes) for k in keys]
    diffs.sort(key=lambda d: KINDS.index(d.kind))
    names = base_name or base.output_file, new_name or new.output_file
    worst = pairing.compare(outcomes + gone, *names, alpha) if (gone := _gone(diffs, old_cases, base)) else None
    return Comparison(base=names[0], new=names[1], cases=tuple(diffs), paired=pairing.compare(outcomes, *names, alpha), notes=setups(base, new),
                      worst=worst, judges=judges(base, new))


def judges(base: RunReport, new: RunReport) -> tuple[tuple[Calibration | None, Calibration | None], ...]:
    """Each judge (validator × connector) that either run measured against labels, before and after: a rescore with
    new labels or a new judge compares agreement and κ, not only pass rates."""
    from agenttest.verdicts import evidence

    def labelled(report: RunReport) -> dict[tuple[str, str], Calibration]:
        return {(c.validator, c.connector): c for c in evidence.of(report).judges if c.labelled}

    before, after = labelled(base), labelled(new)
    return tuple((before.get(k), after.get(k)) for k in dict.fromkeys([*after, *before]))


def _gone(diffs: list[CaseDiff], cases: dict[Key, list[CaseResult]], base: RunReport) -> list[pairing.Outcome]:
    """The removed cases as if they had failed every run now (what they could hide, at worst)."""
    removed = {(d.file, d.id, d.connector) for d in diffs if d.kind == "removed"}
    out = []
    for key, runs in cases.items():
        if (runs[0].file, runs[0].id, key[2]) in removed and (v := verdict(runs, _min_rate(base, runs))).ran:
            out.append(pairing.Outcome(runs[0].id, runs[0].file, key[2], (v.passed, v.ran), (0, v.ran)))
    return out


def setup(report: RunReport) -> tuple[str, str]:
    """What a run's agent ran on: its connectors (a matrix's in order), and the models its endpoints said answered."""
    connectors = list(report.matrix) or sorted({r.connector for r in report.results if r.connector}) or [report.connector]
    models = sorted({c.model for r in report.results for c in r.model_calls if c.role == "agent" and c.model})
    return ", ".join(c for c in connectors if c), ", ".join(models)


def setups(base: RunReport, new: RunReport) -> tuple[str, ...]:
    """What a reader of the comparison must know first: the two runs did not use the same connectors or models,
    so a case that changed may have changed with them (said only when both reports say theirs)."""
    (conn_a, model_a), (conn_b, model_b) = setup(base), setup(new)
    notes = []
    if conn_a and conn_b and conn_a != conn_b:
        notes.append(f"the runs used different connectors: {conn_a} (base), {conn_b} (new)")
    if model_a and model_b and model_a != model_b:
        notes.append(f"the runs used different models: {model_a} (base), {model_b} (new)")
    return tuple(notes)


def _min_rate(report: RunReport, runs: list[CaseResult] | None) -> float:
    """A case's gate in a run: its own (the report's gates), else --min-pass-rate, else every run must pass."""
    if runs:
        for g in report.gates:
            if g.key == runs[0].key:
                return g.min_pass_rate
    value = report.options.get("min_pass_rate", 1.0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 1.0
