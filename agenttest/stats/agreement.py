"""A judge against people's labels: the confusion matrix of its verdicts on labelled outputs, and the figures
read from it — agreement, Cohen's κ (agreement beyond what two raters with these base rates reach by chance),
the true-positive and true-negative rates and precision ("passed" is the positive class)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Agreement:
    """Counts of (label, verdict): tp labelled pass judged pass, fn labelled pass judged fail, fp labelled fail
    judged pass, tn labelled fail judged fail. A figure whose denominator is 0 is None (not a number)."""

    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0

    @property
    def labelled(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    @property
    def agreed(self) -> int:
        return self.tp + self.tn

    @property
    def agreement(self) -> float | None:
        """(tp + tn) / n."""
        return self.agreed / self.labelled if self.labelled else None

    @property
    def chance(self) -> float | None:
        """pₑ = (labelled pass · judged pass + labelled fail · judged fail) / n²: agreement by chance alone."""
        n = self.labelled
        if not n:
            return None
        return ((self.tp + self.fn) * (self.tp + self.fp) + (self.fp + self.tn) * (self.fn + self.tn)) / (n * n)

    @property
    def kappa(self) -> float | None:
        """Cohen's κ = (pₒ − pₑ) / (1 − pₑ); None when pₑ = 1 (the labels and the verdicts are all one class:
        agreement beyond chance cannot be told)."""
        po, pe = self.agreement, self.chance
        if po is None or pe is None or pe >= 1:
            return None
        return (po - pe) / (1 - pe)

    @property
    def tpr(self) -> float | None:
        """tp / (tp + fn): of the outputs people passed, the share the judge passed (sensitivity)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def tnr(self) -> float | None:
        """tn / (tn + fp): of the outputs people failed, the share the judge failed (specificity)."""
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def precision(self) -> float | None:
        """tp / (tp + fp): of the outputs the judge passed, the share people passed."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None


def agreement(pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """The confusion matrix of (label, verdict) pairs."""
    tp = fn = fp = tn = 0
    for label, verdict in pairs:
        if label:
            tp, fn = (tp + 1, fn) if verdict else (tp, fn + 1)
        else:
            fp, tn = (fp + 1, tn) if verdict else (fp, tn + 1)
    return Agreement(tp=tp, fn=fn, fp=fp, tn=tn)
