"""Gates (FORMATS §8): a case's verdict over its runs — passed when ``pass_rate >= min_pass_rate`` — the
figures behind it (pass^k, pass@k, durations, tokens, cost, Yao's stability class), and when an early stop
may end its runs because no remaining run can change the verdict."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agenttest.accounting.costs import total
from agenttest.model import CaseKey, CaseResult, Gate, PassK, Plan
from agenttest.model.results import by_key, settled
from agenttest.util.spool import Spooled


@dataclass(frozen=True, slots=True)
class Policy:
    """What a case's gate is held to: its planned runs and its minimum pass rate."""

    planned: int
    min_pass_rate: float


def policies(plan: Plan) -> dict[CaseKey, Policy]:
    """Every scheduled case × connector of a plan and its gate (one Policy for each gate there is: most
    cases share the run's)."""
    made: dict[tuple[int, float], Policy] = {}
    out: dict[CaseKey, Policy] = {}
    for item in plan.items:
        held = (item.runs, item.min_pass_rate)
        policy = made.get(held)
        if policy is None:
            policy = made[held] = Policy(*held)
        out[item.key] = policy
    return out


@dataclass(slots=True)
class Tally:
    """Runs of one case × connector so far, while the run goes on (for --early-stop and --fail-fast)."""

    policy: Policy
    passed: int = 0
    failed: int = 0
    landed: int = 0  # skipped runs too

    def add(self, result: CaseResult) -> None:
        self.landed += 1
        if result.status == "passed":
            self.passed += 1
        elif result.status != "skipped":
            self.failed += 1

    @property
    def outcome(self) -> bool | None:
        return settled(self.passed, self.failed, self.policy.planned, self.policy.min_pass_rate)

    # a Tally is its Policy where a gate is made: the run's tallies are its policies, not a second dict of 100,000
    @property
    def planned(self) -> int:
        return self.policy.planned

    @property
    def min_pass_rate(self) -> float:
        return self.policy.min_pass_rate


def gate(key: CaseKey, runs: Sequence[CaseResult], policy: Policy | Tally, saved: int = 0) -> Gate:
    """One case × connector's gate from its results."""
    if len(runs) == 1 and runs[0].status != "skipped":  # one run that ran, most gates: its own figures, no lists
        r = runs[0]
        took = round(r.duration_ms, 1)
        own = total(s for s in r.spend if s.role == "agent")
        return Gate(key=key, planned=policy.planned, runs=1, passed=int(r.status == "passed"),
                    min_pass_rate=policy.min_pass_rate, skipped=0, saved=saved, mean_ms=took, median_ms=took, min_ms=took,
                    max_ms=took, std_ms=0.0, tokens=r.usage.total_tokens, cost=own, total_cost=total(r.spend))
    ran = [r for r in runs if r.status != "skipped"]
    durations = [r.duration_ms for r in ran] or [0.0]
    if len(durations) == 1:  # one run, the common case: every figure is its duration (what the statistics give)
        mean = median = durations[0]
        std = 0.0
    else:
        mean, median = statistics.fmean(durations), statistics.median(durations)
        # in floats: statistics.pstdev is exact, through Fractions (~10 per gate), for a figure shown to 0.1 ms
        std = math.sqrt(sum((d - mean) ** 2 for d in durations) / len(durations))
    agent = [s for r in ran for s in r.spend if s.role == "agent"]
    every = total(s for r in ran for s in r.spend)
    return Gate(
        key=key, planned=policy.planned, runs=len(ran),
        passed=sum(1 for r in ran if r.status == "passed"), min_pass_rate=policy.min_pass_rate,
        skipped=len(runs) - len(ran), saved=saved,
        mean_ms=round(mean, 1), median_ms=round(median, 1), min_ms=round(min(durations), 1),
        max_ms=round(max(durations), 1), std_ms=round(std, 1),
        tokens=sum(r.usage.total_tokens for r in ran), cost=total(agent), total_cost=every,
    )


def streamed(plan: Plan, results: Iterable[CaseResult], saved: Mapping[CaseKey, int]) -> Spooled[Gate]:
    """A streamed run's gates, spooled: its items read once more beside its results (both in the plan's order)."""
    out: Spooled[Gate] = Spooled()
    landed = iter(results)
    ahead = next(landed, None)
    shared: dict[tuple[int, float], Policy] = {}
    for item in plan.items:
        runs = []
        while ahead is not None and ahead.key == item.key:
            runs.append(ahead)
            ahead = next(landed, None)
        held = (item.runs, item.min_pass_rate)
        out.append(gate(item.key, runs, shared.get(held) or shared.setdefault(held, Policy(*held)), saved.get(item.key, 0)))
    while ahead is not None:  # results the items read again did not reach (the file changed since it ran): gated by
        key, runs = ahead.key, []  # their own runs, as any result without a plan (``compute``), never dropped
        while ahead is not None and ahead.key == key:
            runs.append(ahead)
            ahead = next(landed, None)
        out.append(gate(key, runs, Policy(len(runs), 1.0), saved.get(key, 0)))
    return out


def compute(results: Sequence[CaseResult], planned: Mapping[CaseKey, Policy | Tally],
            saved: Mapping[CaseKey, int] | None = None) -> tuple[Gate, ...]:
    """The gates of a run in input order: every case × connector with results or a plan (not run: no runs)."""
    saved = saved or {}
    return tuple(gate(key, runs, planned.get(key) or Policy(len(runs), 1.0), saved.get(key, 0)) for key, runs in by_key(results, planned))


def pass_k(gates: Iterable[Gate]) -> PassK | None:
    """The suite's pass^k and pass@k for k = 1 … the fewest runs a case that ran had (every case counts for every
    k: a case stopped early is not left out of the larger k, which would flatter them); None below two runs."""
    ran = [g for g in gates if g.runs]
    most = min((g.runs for g in ran), default=0)
    if most < 2:
        return None
    hats = [g.pass_hat for g in ran]  # each gate's tuple made once, not once per k (that was cubic in the runs)
    ats = [g.pass_at for g in ran]
    ks = range(1, most + 1)
    return PassK(tuple(ks), tuple(statistics.fmean(h[k - 1] for h in hats) for k in ks),
                 tuple(statistics.fmean(a[k - 1] for a in ats) for k in ks), (len(ran),) * most)


def shown(gates: Iterable[Gate], matrix: Iterable[str] = ()) -> bool:
    """Whether reports show the gates: a case ran (or was to run) more than once, has a gate below 1, or
    a model matrix ran; otherwise each case's one result says it all."""
    return bool(tuple(matrix)) or any(g.planned > 1 or g.min_pass_rate < 1 for g in gates)


def failed(gates: Iterable[Gate]) -> list[Gate]:
    return [g for g in gates if g.verdict == "failed"]


def runs_saved(gates: Iterable[Gate]) -> int:
    return sum(g.saved for g in gates)
