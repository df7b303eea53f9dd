"""The one identity of a case on a connector: its file, its id (a variant's included: ``id[v1,v2]``) and the
connector its results carry. The plan makes it once per case × connector; every unit, result and gate of that
case refers to the same object, and every stage keys on it (pytest's nodeid) instead of rebuilding it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CaseKey:
    """A case on a connector; equal keys are one gate. A result's run number is on the result."""

    file: str = ""  # the case file ("" for a message or generated cases read back without one)
    id: str = ""
    connector: str = ""  # the label its results carry: the matrix's, -c, the case's or the agent's own

    def __str__(self) -> str:
        return self.id + (f" [{self.connector}]" if self.connector else "")
