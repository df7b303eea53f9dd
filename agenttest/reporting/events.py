"""``--json``: the run as a stream of NDJSON events on stdout (FORMATS §13), for programs that drive
agent-test — ``start``, one ``result`` per result as it finishes, ``warning``, and a closing ``summary``
(or ``error`` when the run could not start). docs/events.md is the interface."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from agenttest.errors import Problem
from agenttest.model import CaseResult, RunHeader, RunReport
from agenttest.reporting.codec import result_dict, summary_dict
from agenttest.util.secrets import Secrets

SCHEMA_VERSION = 1


class EventStream:
    """Writes one JSON object per line and flushes it, so a reader sees each event as it happens."""

    def __init__(self, out: TextIO, secrets: Secrets | None = None):
        self.out = out
        self.secrets = secrets if secrets is not None else Secrets()

    def emit(self, event: str, **fields: Any) -> None:
        """One event, its secrets hidden in its values (before JSON escapes them) and again in the line."""
        self._write(event, self.secrets.scrub(fields))

    def _write(self, event: str, fields: dict[str, Any]) -> None:
        line = json.dumps({"event": event, **fields}, ensure_ascii=False, default=str)
        self.out.write(self.secrets.redact(line) + "\n")
        self.out.flush()

    def start(self, header: RunHeader, started_at: str, warnings: list[str]) -> None:
        from agenttest.version import __version__

        self.emit("start", schema_version=SCHEMA_VERSION, version=__version__, started_at=started_at, agent=header.agent,
                  connector=header.connector, simulator=header.simulator, input=header.input, total=header.total,
                  runs=header.runs, parallel=header.parallel, timeout=header.timeout, warnings=warnings)

    def result(self, result: CaseResult) -> None:
        """A result as shown (``Watch`` hid its secrets)."""
        self._write("result", result_dict(result))

    def warning(self, message: str) -> None:
        self.emit("warning", message=message)

    def summary(self, report: RunReport, exit_code: int) -> None:
        if report.gates:  # a case's verdict is its gate: a flaky case within its gate did not fail
            failed = [g.id for g in report.gates if g.verdict == "failed"]
        else:
            failed = [r.id for r in report.results if r.status in ("failed", "error", "timeout")]
        self.emit("summary", **summary_dict(report), failed_ids=list(dict.fromkeys(failed)), exit_code=int(exit_code),
                  output_file=report.output_file or None, warnings=list(report.warnings))

    def error(self, message: str, exit_code: int, problems: Sequence[Problem] | None = None) -> None:
        """The run could not start or ended on an error of agent-test itself (exit 2 or 3); ``problems`` each as
        its envelope (code, message, hint, file, line, column) when they carry codes (a seed format's file)."""
        extra: dict[str, Any] = {}
        if problems and any(p.code for p in problems):
            extra["problems"] = [p.as_dict() for p in problems]
        self.emit("error", message=message, exit_code=int(exit_code), **extra)
