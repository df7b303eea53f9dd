"""Suite checks (FORMATS §18; seed format A's suite assertions): once scheduling ends, each suite a case file
declares is judged over its selected cases — ``check`` reads ``{summary, status}``, a custom evaluator also
receives every case (incomplete ones too) — on each connector of a model matrix. A failed one fails the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenttest.agents.caller import Caller
from agenttest.assertions import Observation, evaluate_all
from agenttest.model import CaseResult, Gate, Plan, SuiteResult, SuiteSpec
from agenttest.verdicts import gates as gating

STATUSES = {"passed": "passed", "failed": "failed", "skipped": "skipped", "error": "errors", "timeout": "timeouts"}


async def judge(plan: Plan, results: Sequence[CaseResult], gates: Sequence[Gate], caller: Caller) -> tuple[SuiteResult, ...]:
    """Every declared suite's checks, over the results of its cases (per connector in a matrix)."""
    suites: dict[int, SuiteSpec] = {}
    members: dict[int, set[tuple[str, str]]] = {}
    for case in plan.cases:
        if case.suite is not None:
            suites.setdefault(id(case.suite), case.suite)
            members.setdefault(id(case.suite), set()).add((case.file, case.id))
    out = []
    for key, suite in suites.items():
        for connector in plan.matrix or ("",):
            mine = [r for r in results if (r.file, r.id) in members[key] and (not connector or r.connector == connector)]
            verdicts = [g for g in gates if (g.file, g.id) in members[key] and (not connector or g.connector == connector)]
            planned = [c for c in plan.cases if (c.file, c.id) in members[key]]
            subject = {**subject_of(mine, verdicts), "cases": cases_of(planned, mine)}
            checks = await evaluate_all(suite.assertions, Observation(output=None, judge=caller, suite=subject))
            out.append(SuiteResult(id=suite.id, file=suite.file, name=suite.name, connector=connector, assertions=checks,
                                   metadata=suite.metadata or None))
    return tuple(out)


def subject_of(results: Sequence[CaseResult], gates: Sequence[Gate]) -> dict[str, Any]:
    """``{summary, status}``: the counts of the suite's results, and ``passed`` when every case's gate passed (or it
    was skipped), else ``failed``."""
    summary: dict[str, Any] = {"total": len(results), **dict.fromkeys(STATUSES.values(), 0)}
    for r in results:
        summary[STATUSES[r.status]] += 1
    ran = summary["total"] - summary["skipped"]
    summary["pass_rate"] = round(100.0 * summary["passed"] / ran, 1) if ran else 0.0
    summary["cases"] = len(gates)
    status = "passed" if all(g.verdict in ("passed", "skipped") for g in gates) and gates else "failed"
    return {"summary": summary, "status": status}


def cases_of(planned: Sequence[Any], results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """Every selected case as an evaluator receives it: each run's result — its id, status, variants and repetition
    index (from 0), metadata and reasons — and the cases that never ran as ``not run``."""
    out = []
    ran = set()
    for r in results:
        ran.add((r.file, r.id))
        out.append({"id": r.id, "name": r.name, "status": r.status, "variants": list(r.variants), "repetition": r.run - 1,
                    "connector": r.connector, "tags": list(r.tags), "metadata": r.metadata or {}, "output": r.output,
                    "reasons": r.reasons, "turns": [{"turn": t.turn, "id": t.id, "input": t.input, "output": t.output} for t in r.turns]})
    for case in planned:
        if (case.file, case.id) not in ran:
            out.append({"id": case.id, "name": case.name, "status": "not run", "variants": list(case.variants), "repetition": None,
                        "connector": "", "tags": list(case.tags), "metadata": case.metadata or {}, "output": None, "reasons": [],
                        "turns": []})
    return out


def gates_of(plan: Plan, results: Sequence[CaseResult], tallies: Any, saved: Any) -> tuple[Gate, ...]:
    """The gates of what ran, as the report will make them."""
    return gating.compute(results, tallies or gating.policies(plan), saved)
