"""The evidence behind a decision (FORMATS §19), as data every format renders: a rate with its interval and
sample size, two runs compared case by case (the paired test, the difference, what this size can detect), and
a judge measured against people's labels. Computed by ``verdicts.evidence`` and ``verdicts.paired``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Interval = tuple[float, float]


@dataclass(frozen=True, kw_only=True, slots=True)
class Estimate:
    """A rate (0–1) and its interval at the run's confidence, with what it stands on: ``cases`` cases and ``runs``
    runs in all. ``method``: "wilson" (one case's runs) or "bootstrap" (over cases)."""

    rate: float
    low: float
    high: float
    cases: int
    runs: int
    method: Literal["wilson", "bootstrap"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Mover:
    """A case whose pass rate moved between two runs by more than its runs' noise: Fisher's exact test on its
    runs, significant after Holm's correction over every case compared."""

    id: str
    file: str = ""
    connector: str = ""
    before: tuple[int, int]  # (passed, runs) in the base run
    after: tuple[int, int]  # in the new run
    p: float  # Fisher's exact p-value, two-sided
    adjusted: float  # Holm-adjusted

    @property
    def worse(self) -> bool:
        return self.after[0] * self.before[1] < self.before[0] * self.after[1]


@dataclass(frozen=True, kw_only=True)
class Paired:
    """Two runs compared over the cases both have (paired by file, id and connector): the mean per-case pass rates,
    their difference with its interval (at 1 − alpha), the paired test's p-value — McNemar's exact test with one
    run per case, the exact sign-flip test with several — and what a comparison of this size can detect."""

    base: str  # what the runs are: report paths, run numbers, or connectors of a matrix
    new: str
    cases: int  # paired cases
    base_runs: int  # runs per case (the most any paired case had) in each run
    new_runs: int
    fewest_runs: int  # the fewest runs a paired case had in either
    base_rate: float  # the mean over paired cases of each case's pass rate
    new_rate: float
    difference: float  # new_rate − base_rate
    low: float  # the difference's interval (paired bootstrap over cases)
    high: float
    p: float
    alpha: float
    test: Literal["mcnemar", "sign-flip"]
    worse: int  # cases whose pass rate went down
    better: int  # … went up
    mdd: float  # the minimum detectable difference at 80% power (0–1)
    noise: float  # σ₀²: a case's difference's variance when nothing changed
    spread: float  # the mean one-run variance p(1 − p) of a case
    runs_needed: tuple[tuple[float, int | None], ...] = ()  # (a difference, the runs per case that detect it; None: > 1,000)
    moved: tuple[Mover, ...] = ()  # cases that moved, significant after Holm
    tested: int = 0  # cases with a per-case test (their runs could show a move)
    case_floor: float = 1.0  # the smallest p-value a case's runs allow (3 runs each: 0.10)

    @property
    def significant(self) -> bool:
        return self.p < self.alpha

    @property
    def verdict(self) -> Literal["worse", "better", "no difference"]:
        if not self.significant or self.difference == 0:
            return "no difference"
        return "worse" if self.difference < 0 else "better"

    @property
    def regression(self) -> bool:
        """A significant regression of the suite, or of a case."""
        return self.verdict == "worse" or any(m.worse for m in self.moved)


@dataclass(frozen=True, kw_only=True, slots=True)
class Judged:
    """How a judge (a validator agent on a connector) reached an ``agent`` or ``pairwise`` assertion's verdict:
    its verdict on the criterion (before ``negate``; None when it gave none), a person's label, every vote of
    ``judge_runs``, and for a pairwise judgement whether both orders agreed."""

    validator: str
    connector: str = ""
    verdict: bool | None = None
    label: bool | None = None
    votes: tuple[bool | None, ...] = ()  # each ask's verdict, when asked more than once
    consistent: bool | None = None  # pairwise: the same choice in both orders (None: not pairwise)
    min_agreement: float | None = None  # the judge gate its case sets (``judge:``), carried to the calibration
    min_kappa: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Disagreement:
    """A labelled verdict the judge got wrong: where, on which criterion, and the judge's reason."""

    id: str
    file: str = ""
    connector: str = ""  # the agent under test's, in a matrix
    run: int = 1
    criterion: str = ""
    label: bool
    verdict: bool
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """One judge (validator × connector) against people's labels: the confusion matrix, agreement with its
    interval, Cohen's κ, TPR, TNR, precision, the disagreements; its flip rate over repeated asks and its swap
    consistency over pairwise judgements; and its gate (``judge: {min_agreement, min_kappa}``) when one is set."""

    validator: str
    connector: str
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0
    unusable: int = 0  # labelled judgements it gave no verdict for (an error, an unusable reply, an inconclusive pair)
    agreement: Estimate | None = None
    kappa: float | None = None
    tpr: float | None = None
    tnr: float | None = None
    precision: float | None = None
    disagreements: tuple[Disagreement, ...] = ()
    judgements: int = 0  # every verdict it gave in the run, labelled or not
    repeated: int = 0  # judgements asked more than once (judge_runs)
    flipped: int = 0  # … whose votes were not unanimous
    pairwise: int = 0  # pairwise judgements
    consistent: int = 0  # … with the same choice in both orders
    min_agreement: float | None = None
    min_kappa: float | None = None

    @property
    def labelled(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    @property
    def flip_rate(self) -> float | None:
        return self.flipped / self.repeated if self.repeated else None

    @property
    def swap_consistency(self) -> float | None:
        return self.consistent / self.pairwise if self.pairwise else None

    @property
    def gated(self) -> bool:
        return self.min_agreement is not None or self.min_kappa is not None

    @property
    def shortfalls(self) -> tuple[str, ...]:
        """Why the judge's gate fails: each threshold it is below (an unknown κ or no label is below any)."""
        out = []
        rate = self.agreement.rate if self.agreement is not None else None
        if self.min_agreement is not None and (rate is None or rate < self.min_agreement - 1e-12):
            out.append("agreement")
        if self.min_kappa is not None and (self.kappa is None or self.kappa < self.min_kappa - 1e-12):
            out.append("kappa")
        return tuple(out)


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """A run's evidence beside its verdicts: the suite's pass rate with its bootstrap interval (and each
    connector's in a matrix), the intervals of pass^k and pass@k for k = 1 … N, the connectors of a matrix compared
    with the first, and every judge's calibration."""

    confidence: float
    pass_rate: Estimate | None = None
    by_connector: tuple[tuple[str, Estimate], ...] = ()
    pass_hat: tuple[Interval, ...] = ()  # item k − 1; () when no case ran twice
    pass_at: tuple[Interval, ...] = ()
    pass_k_by_connector: tuple[tuple[str, tuple[Interval, ...], tuple[Interval, ...]], ...] = ()
    matrix: tuple[Paired, ...] = ()
    judges: tuple[Calibration, ...] = ()

    @property
    def judge_gate_failed(self) -> tuple[Calibration, ...]:
        return tuple(j for j in self.judges if j.gated and j.shortfalls)
