"""A JSON report of N results written by agent-test's own writer (reporting/jsonfile.py) from results made here —
for the paged viewer's workload past what a run on this machine writes in a bench's time. The results are copies
of two a CLI run made (one passed, one failed), each with its own id and input; one in ``every`` fails."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import overload

from agenttest.model import CaseResult
from agenttest.reporting.codec import read
from agenttest.reporting.jsonfile import json_chunks
from agenttest.util.files import write_atomic


class Made(Sequence[CaseResult]):
    """N results made as they are asked for (a million held at once would be gigabytes)."""

    def __init__(self, n: int, passed: CaseResult, failed: CaseResult, fails: set[int] | int):
        self.n, self.passed, self.failed, self.fails = n, passed, failed, fails

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> CaseResult: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[CaseResult]: ...
    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        if not 0 <= i < self.n:
            raise IndexError(i)
        failing = i in self.fails if isinstance(self.fails, set) else i % self.fails == self.fails // 3
        base = self.failed if failing else self.passed
        return replace(base, key=replace(base.key, id=f"case-{i:07d}"), input=f"Yes, confirm #{i}", index=i)

    def __iter__(self) -> Iterator[CaseResult]:
        return (self[i] for i in range(self.n))


def write(template: str, path: str, n: int, fails: set[int] | int = 20) -> None:
    """``path``: a report like ``template`` (a CLI run's JSON report with a passed and a failed result) with ``n`` results."""
    small = read(template)
    passed = next(r for r in small.results if r.status == "passed")
    failed = next(r for r in small.results if r.status == "failed")
    report = replace(small, results=Made(n, passed, failed, fails))  # type: ignore[arg-type]
    write_atomic(path, json_chunks(report))
