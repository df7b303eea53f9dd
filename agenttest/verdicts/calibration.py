"""Judges measured against people (FORMATS §19): every verdict an ``agent`` or ``pairwise`` assertion's judge gave,
grouped by judge (validator × connector), against the labels the case files carry — agreement with its Wilson
interval, Cohen's κ, TPR, TNR, precision, the confusion matrix, the disagreements — with the judge's own noise
(the flip rate over ``judge_runs``, the swap consistency of pairwise judgements) and its gate."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agenttest.model import AssertionResult, Calibration, CaseResult, Disagreement, Estimate, Judged
from agenttest.stats import agreement, intervals
from agenttest.util.text import as_text

Thresholds = tuple[float | None, float | None]  # (min_agreement, min_kappa)
SHOWN = 50  # disagreements a judge's record keeps (the report's results hold every verdict)


@dataclass(kw_only=True)
class _Tally:
    pairs: list[tuple[bool, bool]] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    unusable: int = 0
    judgements: int = 0
    repeated: int = 0
    flipped: int = 0
    pairwise: int = 0
    consistent: int = 0
    least: list[float | None] = field(default_factory=lambda: [None, None])  # the strictest thresholds the cases set


def judgements(r: CaseResult) -> Iterator[AssertionResult]:
    """Every judged assertion of a result: its own, its scripted turns', its checkpoints' verdicts."""
    for a in r.assertions:
        if a.judged is not None:
            yield a
    for t in r.turns:
        for a in t.assertions:
            if a.judged is not None:
                yield a
    for c in r.checkpoints:
        if c.verdict is not None and c.verdict.judged is not None:
            yield c.verdict


def calibrations(results: Iterable[CaseResult], confidence: float, flags: Thresholds = (None, None)) -> tuple[Calibration, ...]:
    """Each judge's calibration, in the order judges first judged; a gate's thresholds are the strictest its labelled
    cases set (``judge:``), else the flags (``--judge-min-agreement``, ``--judge-min-kappa``)."""
    by: dict[tuple[str, str], _Tally] = {}
    plain: set[int] = set()  # the ids of assertion tuples with no judge (a suite's results share them: checked once)
    for r in results:
        if not r.turns and not r.checkpoints:
            checks = r.assertions
            if id(checks) in plain:
                continue
            if all(a.judged is None for a in checks):
                plain.add(id(checks))  # the results hold the tuple while this runs: its id is not reused
                continue
        for a in judgements(r):
            judged = a.judged
            assert judged is not None
            _count(by.setdefault((judged.validator, judged.connector), _Tally()), r, a, judged)
    return tuple(_calibration(key, tally, confidence, flags) for key, tally in by.items())


def _count(tally: _Tally, r: CaseResult, a: AssertionResult, judged: Judged) -> None:
    if judged.verdict is not None:
        tally.judgements += 1
    if len(judged.votes) > 1:
        tally.repeated += 1
        tally.flipped += len({v for v in judged.votes if v is not None}) > 1
    if judged.consistent is not None:
        tally.pairwise += 1
        tally.consistent += judged.consistent
    if judged.label is None:
        return
    for i, value in enumerate((judged.min_agreement, judged.min_kappa)):
        if value is not None:
            held = tally.least[i]
            tally.least[i] = value if held is None else max(held, value)
    if judged.verdict is None:
        tally.unusable += 1
        return
    tally.pairs.append((judged.label, judged.verdict))
    if judged.label != judged.verdict and len(tally.disagreements) < SHOWN:
        tally.disagreements.append(Disagreement(id=r.id, file=r.file, connector=r.connector, run=r.run, criterion=_text(a.expected),
                                                label=judged.label, verdict=judged.verdict, reason=_text(a.actual) or a.message))


def _text(value: Any) -> str:
    return "" if value is None else as_text(value)


def _calibration(key: tuple[str, str], tally: _Tally, confidence: float, flags: Thresholds) -> Calibration:
    counts = agreement.agreement(tally.pairs)
    rate = counts.agreement
    interval = intervals.wilson(counts.agreed, counts.labelled, confidence)
    labelled = counts.labelled + tally.unusable > 0
    least = (tally.least[0] if tally.least[0] is not None else flags[0], tally.least[1] if tally.least[1] is not None else flags[1])
    return Calibration(
        validator=key[0], connector=key[1], tp=counts.tp, fn=counts.fn, fp=counts.fp, tn=counts.tn, unusable=tally.unusable,
        agreement=Estimate(rate=rate, low=interval[0], high=interval[1], cases=counts.labelled, runs=counts.labelled, method="wilson")
        if rate is not None and interval is not None else None,
        kappa=counts.kappa, tpr=counts.tpr, tnr=counts.tnr, precision=counts.precision, disagreements=tuple(tally.disagreements),
        judgements=tally.judgements, repeated=tally.repeated, flipped=tally.flipped, pairwise=tally.pairwise, consistent=tally.consistent,
        min_agreement=least[0] if labelled else None, min_kappa=least[1] if labelled else None,  # a judge nobody labelled is not gated
    )
