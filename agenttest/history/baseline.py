"""``--baseline REPORT``: an earlier report, read and checked before the run starts, that the run is
compared with after its summary (the exit code then follows regressions, not every failure)."""

from __future__ import annotations

from agenttest.history.comparison import Comparison, compare
from agenttest.reporting.codec import read
from agenttest.model import RunReport


class Baseline:
    def __init__(self, path: str):
        self.path = path
        self.report = read(path)

    def compare(self, report: RunReport, alpha: float = 0.05) -> Comparison:
        return compare(self.report, report, self.path, report.output_file, alpha)
