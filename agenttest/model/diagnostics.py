"""Warnings as values: what a stage has to say beside its result (an unknown key ignored, a short secret, a
worker's note) — returned by the stage and added up by the session, each said once, in order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostics:
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, *groups: Iterable[str]) -> Diagnostics:
        """The warnings of every group, in order, each once (an empty text is none)."""
        return cls(tuple(dict.fromkeys(w for group in groups for w in group if w)))

    def __add__(self, other: Iterable[str]) -> Diagnostics:
        return Diagnostics.of(self.warnings, other)

    def __iter__(self) -> Iterator[str]:
        return iter(self.warnings)

    def __bool__(self) -> bool:
        return bool(self.warnings)
