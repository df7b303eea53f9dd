"""``rescore:REPORT.json`` (``agent-test rescore``, FORMATS §19): a recorded run's outputs judged again with today's
assertions and labels, without any agent call. The cases of today's case files (those the report names, or
``?cases=a.jsonl,b.jsonl``) that the report has become judge-only cases holding each recorded run's output and tool
calls; run as usual, they give a report that compares, paired, with the recorded one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl

from agenttest.app.folders import App
from agenttest.errors import Problem
from agenttest.inputs.documents import Loaded
from agenttest.inputs.reading import load_file
from agenttest.inputs.sources.base import LoadEnv, counted
from agenttest.model import Case, CaseResult, Given, RunReport
from agenttest.plugins import SOURCES

PREFIX = "rescore:"


@dataclass(frozen=True)
class Rescored:
    """``rescore:REPORT.json[?cases=a.jsonl,b.jsonl]``: the report's outputs, judged by today's cases."""

    report: str
    cases: tuple[str, ...] = ()  # the case files; none given: the ones the report's results name
    needs_agent = False

    @property
    def text(self) -> str:
        return PREFIX + self.report

    @property
    def path(self) -> str | None:
        """The first case file: the app root is found above it."""
        return next(iter(self.files()), None)

    def files(self) -> list[str]:
        if self.cases:
            return list(self.cases)
        from agenttest.reporting.codec import read

        return list(dict.fromkeys(r.file for r in read(self.report).results if r.file))

    def describe(self, count: int) -> str:
        return f"the outputs of {self.report}, judged again ({counted(count)})"

    def report_folder(self) -> str | None:
        return os.path.dirname(os.path.abspath(self.report))

    def agent_hint(self, app: App) -> str | None:
        return None

    async def load(self, env: LoadEnv) -> Loaded:
        return await asyncio.to_thread(self._load, env)

    def _load(self, env: LoadEnv) -> Loaded:
        from agenttest.reporting.codec import read

        recorded = read(self.report)
        loaded = Loaded()
        files = self.files()
        for path in files:
            if not os.path.isfile(path):
                loaded.problems.append(Problem(f"{self.report} names the case file {path}, which is not here",
                                               hint="give today's case files: agent-test rescore REPORT.json -i CASES"))
                continue
            loaded.extend(load_file(path, env.default_simulator, env.policy))
        if loaded.problems:
            return loaded
        return rescored(loaded, recorded, self.report)


def rescored(loaded: Loaded, recorded: RunReport, name: str) -> Loaded:
    """Today's cases that the recorded run ran, each holding its recorded runs' outputs (per connector, in a matrix)."""
    runs: dict[tuple[str, str], list[CaseResult]] = {}
    for r in recorded.results:
        if r.status != "skipped":
            runs.setdefault((r.file, r.id), []).append(r)
    by_id: dict[str, list[list[CaseResult]]] = {}
    for (_, case_id), found in runs.items():
        by_id.setdefault(case_id, []).append(found)
    out = Loaded(warnings=list(loaded.warnings))
    seen: set[tuple[str, str]] = set()
    parts: set[str] = set()
    for case in loaded.cases:
        ran = runs.get((case.file, case.id)) or _only(by_id.get(case.id))  # the same file, or the one case of that id
        if ran is None:
            continue
        seen.add((ran[0].file, case.id))
        parts |= _left_out(case)
        out.cases.append(_judged(case, ran))
    gone = [key for key in runs if key not in seen]
    if gone:
        shown = ", ".join(case_id for _, case_id in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        out.warnings.append(f"{len(gone)} case(s) of {name} are no longer in the case files and were not rescored: {shown}")
    for part in sorted(parts):
        out.warnings.append(f"rescore judges a conversation's final output with its final assertions: {part} are not judged again")
    return out


def _only(groups: list[list[CaseResult]] | None) -> list[CaseResult] | None:
    return groups[0] if groups is not None and len(groups) == 1 else None


def _left_out(case: Case) -> set[str]:
    return {what for what, there in (("its checkpoints", case.checkpoints), ("its turns' checks", [t for t in case.turns if t.assertions]))
            if there}


def _judged(case: Case, found: Sequence[CaseResult]) -> Case:
    """``case`` as a judge-only case of its recorded runs (each connector's, in run order)."""
    by_connector: dict[str, list[CaseResult]] = {}
    for r in sorted(found, key=lambda r: r.run):
        by_connector.setdefault(r.connector, []).append(r)
    first = by_connector[next(iter(by_connector))][0]
    given = Given(output=first.output, tool_calls=first.tool_calls,
                  recorded=tuple((conn, tuple((r.output, r.tool_calls) for r in rs)) for conn, rs in by_connector.items()))
    return replace(case, given=given, runs=max(len(rs) for rs in by_connector.values()), simulator=None, checkpoints=(), turns=(),
                   mocks=(), faults=(), world=None, before=None, after=None, script=None)


def source(rest: str) -> Rescored:
    report, _, query = rest.partition("?")
    cases = dict(parse_qsl(query, keep_blank_values=True)).get("cases", "")
    return Rescored(report, tuple(c for c in cases.split(",") if c))


SOURCES.add(PREFIX, source)
