"""What running gives: assertion, checkpoint and case results, gates over runs, and the run's report."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal, NamedTuple

from agenttest.model.calls import EndpointLoad, ModelCall, Spend, ToolCall, Usage
from agenttest.model.evidence import Evidence, Judged
from agenttest.model.exchanges import CallLog
from agenttest.model.keys import CaseKey
from agenttest.model.kinds import Role, Status
from agenttest.model.scenario import ScenarioRecord
from agenttest.util.spool import is_spooled


@dataclass(frozen=True, slots=True, kw_only=True)
class AssertionResult:
    type: str
    passed: bool
    message: str = ""
    expected: Any = None
    actual: Any = None
    score: float | None = None
    details: dict[str, Any] | None = None
    error: bool = False  # the assertion could not be evaluated at all (e.g. the judge was unreachable)
    traceback: str = ""  # when evaluating it raised
    checked: str = ""  # what it checked, as written: ``path=$.orders.A1.status value="shipped"``
    severity: str = ""  # "minor": its failure never fails the case
    weight: float | None = None  # its share of the case's weighted score
    label: str = ""  # the assertion's own id, as written
    description: str = ""  # the acceptance criterion it stands for, as written (seed A's label, C's name)
    judged: Judged | None = None  # an agent or pairwise assertion: who judged, a person's label, every vote (FORMATS §19)
    negated: bool = False  # a ``negate: true`` assertion: ``expected`` is what the output must NOT be

    @property
    def name(self) -> str:
        """How reports name it: its description and id as written (``Exactly one refund``, ``selection-recorded``,
        ``The choice is recorded [selection-recorded]``), else its type."""
        if self.description and self.label:
            return f"{self.description} [{self.label}]"
        return self.description or self.label or self.type

    @property
    def named(self) -> bool:
        """It was given an id or a description."""
        return bool(self.label or self.description)

    @property
    def said(self) -> str:
        """Its failure as reasons give it: ``selection-recorded: no item of checkpoint.facts matches …`` when named."""
        return f"{self.name}: {self.message}" if self.named else self.message


def minor(result: AssertionResult) -> bool:
    """A ``severity: minor`` assertion that failed: said in every report, never the case's failure."""
    return not result.passed and result.severity == "minor" and not result.error


def blocks(result: AssertionResult) -> bool:
    """An assertion that did not hold and fails its case (a minor one does not)."""
    return not result.passed and not minor(result)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    turn: int
    input: Any
    output: Any
    tool_calls: tuple[ToolCall, ...] = ()
    checkpoints: tuple[str, ...] = ()
    duration_ms: float = 0.0
    simulator_reasoning: str = ""
    attachments: tuple[str, ...] = ()  # names of the files the user message attached
    assertions: tuple[AssertionResult, ...] = ()  # a scripted turn's own checks
    id: str = ""  # a scripted turn's id, as written
    ended: str = ""  # why the conversation ended after this turn: "goal achieved", "end tool NAME", …
    error: str = ""  # the turn that failed (the agent's error, a checkpoint that could not be evaluated): why
    truncated: bool = False  # the agent's reply was cut at its token limit (finish_reason "length")

    @property
    def label(self) -> str:
        """``turn 2`` or, for a scripted turn with an id, ``turn 2 (confirm)``."""
        return f"turn {self.turn}" + (f" ({self.id})" if self.id else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointResult:
    id: str
    reached: bool
    required: bool
    reached_at_turn: int | None = None
    description: str = ""
    message: str = ""
    tool: str | None = None
    verdict: AssertionResult | None = None

    @property
    def passed(self) -> bool:
        return self.reached


@dataclass(frozen=True, slots=True)
class WorldChange:
    """One difference between the initial and the final world, at a JSONPath such as ``$.expenses[1]``."""

    path: str
    op: Literal["added", "removed", "changed"]
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class WorldRecord:
    """A case's tool world: as the agent found it, as it left it, and the difference (with --report-world
    changes, the difference only: ``initial`` and ``final`` are None)."""

    initial: Any = None
    final: Any = None
    changes: tuple[WorldChange, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    status: Status
    key: CaseKey = CaseKey()  # the case on its connector: the plan's own object, which the runner gives the result a mode made
    name: str = ""
    input: Any = None
    output: Any = None
    duration_ms: float = 0.0
    error: str = ""
    assertions: tuple[AssertionResult, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    turns: tuple[Turn, ...] = ()
    checkpoints: tuple[CheckpointResult, ...] = ()
    dynamic: bool = False
    run: int = 1
    warnings: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()
    index: int = 0  # position in the input, for ordering
    line: int = 0  # the case's line in its file (0: unknown)
    traceback: str = ""  # an exception's traceback (user code, or agent-test's own bug)
    stdout: str = ""  # what user code printed while this case ran
    stderr: str = ""
    skip_reason: str = ""
    description: str = ""  # the case's, as written
    tags: tuple[str, ...] = ()
    world: WorldRecord | None = None  # a case with a world, or whose tools changed it
    spend: tuple[Spend, ...] = ()  # tokens and cost by role and connector
    model_calls: tuple[ModelCall, ...] = ()
    simulator: dict[str, Any] | None = None  # a dynamic case's simulator as the viewer shows it: use, persona, goal
    scripted: bool = False  # a scripted conversation (FORMATS §14): ``turns`` hold each turn's checks
    variants: tuple[str, ...] = ()  # the variant ids of a case of a product
    not_run_turns: int = 0  # a scripted conversation stopped early: its turns that did not run
    output_from: str = ""  # "tool_result" when the output is a tool's result (the agent's answer is its tool call)
    error_by: str = ""  # an error that is a worker agent's fault, not the agent's: "validator" or "simulator"
    truncated: bool = False  # the agent's (last) reply was cut at its token limit (finish_reason "length")
    score: float | None = None  # the weighted score of its assertions (0–1), when any carries a weight
    scenario: ScenarioRecord | None = None  # a scenario's run (FORMATS §18)
    calls: CallLog | None = None  # every model call of the run as sent and answered (--calls keeps them)
    checked_nothing: bool = False  # its case checks nothing but that the agent answers (Case.checks_nothing)
    metadata: dict[str, Any] | None = None  # the case's, as written (kept, never interpreted)

    @property
    def id(self) -> str:
        return self.key.id

    @property
    def file(self) -> str:
        return self.key.file

    @property
    def connector(self) -> str:
        """The connector of the agent under test its key carries ("" outside a model matrix, unless -c or the case named one)."""
        return self.key.connector

    @property
    def conversation(self) -> bool:
        """Whether the result is a conversation shown turn by turn (dynamic or scripted)."""
        return self.dynamic or self.scripted

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "skipped")

    @property
    def reasons(self) -> list[str]:
        """Why it did not pass, one line each (for a skipped case, why it was skipped)."""
        if self.status == "skipped":
            return [self.skip_reason] if self.skip_reason else []
        if self.status == "passed":
            return []
        lines = [self.error] if self.error else []
        lines += [a for a in self.assertion_errors if not (self.error and self.error.endswith(a))]  # said once
        return list(dict.fromkeys(lines)) or [self.status]

    @property
    def assertion_errors(self) -> list[str]:
        """The message of every assertion that did not hold (a scripted turn's named by its turn)."""
        turns = [f"{t.label}: {a.said}" for t in self.turns for a in t.assertions if blocks(a)]
        return turns + [a.said for a in self.assertions if blocks(a)]

    @property
    def minor_failures(self) -> list[str]:
        """The message of every ``severity: minor`` assertion that did not hold (they never fail the case)."""
        return [a.said for t in self.turns for a in t.assertions if minor(a)] + [a.said for a in self.assertions if minor(a)]


@dataclass(frozen=True, kw_only=True)
class SuiteResult:
    """A suite's checks over its selected cases once the run ended (FORMATS §18): a failed one fails the run."""

    id: str
    file: str = ""
    name: str = ""
    connector: str = ""  # in a model matrix, the suite is judged per connector
    assertions: tuple[AssertionResult, ...] = ()
    metadata: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return all(a.passed for a in self.assertions)

    @property
    def failures(self) -> list[str]:
        """Each check that did not hold, named: ``unique-orders: …``."""
        return [f"{a.name}: {a.message}" for a in self.assertions if not a.passed]


def digits_shown(share: float, digits: int, most: int = 4) -> int:
    """The decimals ``share`` takes in percent, from ``digits``: more (up to ``most``) when fewer would show a share
    short of all as 100 or one above none as 0 — 29,990 of 30,000 is 99.97, never 100.0. The console, the viewer's
    cards and the reports' figures all take their digits here."""
    while digits < most and ((round(100 * share, digits) >= 100 and share < 1 - 1e-9) or (round(100 * share, digits) <= 0 and share > 1e-9)):
        digits += 1
    return digits


def percent_of(part: int, whole: int) -> float:
    """``100 × part / whole`` to one decimal (Yao's figure), or the digits it takes not to read 100 (or 0) when it is
    not (``digits_shown``); 0 when ``whole`` is 0."""
    if not whole:
        return 0.0
    share = part / whole
    return round(100 * share, digits_shown(share, 1, 8))


def classify(pass_rate: float) -> str:
    """Yao's stability class of a pass rate in percent, and ``failing`` for a case that failed every run: the
    same verdict every time, but a class that read "stable" beside a FAILED verdict said the opposite."""
    if pass_rate >= 100:
        return "stable"
    if pass_rate <= 0:
        return "failing"
    if pass_rate >= 80:
        return "mostly_stable"
    if pass_rate >= 50:
        return "unstable"
    return "highly_unstable"


def needed(planned: int, min_pass_rate: float) -> int:
    """Passes out of ``planned`` runs that the gate needs."""
    return max(0, math.ceil(planned * min_pass_rate - 1e-9))


def settled(passed: int, failed: int, planned: int, min_pass_rate: float) -> bool | None:
    """The gate's outcome if no remaining run can change it — True passed, False failed — else None.

    With the default gate (1.0) one failure settles it; with 0.8 of 10, three failures or eight passes."""
    need = needed(planned, min_pass_rate)
    if passed >= need:
        return True
    if planned - failed < need:
        return False
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class Gate:
    """The verdict of one case (on one connector of a matrix) over its runs (FORMATS §8): passed when
    ``pass_rate >= min_pass_rate``. Skipped runs count nowhere; errors and timeouts count as not passed."""

    key: CaseKey
    planned: int = 1  # runs scheduled
    runs: int = 0  # runs that ran and were not skipped
    passed: int = 0
    min_pass_rate: float = 1.0
    skipped: int = 0
    saved: int = 0  # runs --early-stop did not start because the verdict was settled
    mean_ms: float = 0.0
    median_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0
    std_ms: float = 0.0
    tokens: int = 0  # the agent under test's, over the runs
    cost: float | None = None  # the agent under test's, USD; None when nothing was priced
    total_cost: float | None = None  # every role's (simulator and validators too)

    @property
    def id(self) -> str:
        return self.key.id

    @property
    def file(self) -> str:
        return self.key.file

    @property
    def connector(self) -> str:
        return self.key.connector

    @property
    def pass_rate(self) -> float:
        """Passed runs over runs that ran (0–1); 0 when none ran."""
        return self.passed / self.runs if self.runs else 0.0

    @property
    def vacuous(self) -> bool:
        """Passed with no run passing: a gate of 0 (reports say so; it is not a green)."""
        return self.runs > 0 and not self.passed and self.verdict == "passed"

    @property
    def verdict(self) -> Literal["passed", "failed", "skipped", "not run", "incomplete"]:
        """``incomplete``: some planned runs neither ran nor were saved by an early stop (Ctrl-C, SIGTERM,
        ``--fail-fast``), and those could still have changed the verdict — 1 of 2 runs passed, at a gate of 1."""
        if not self.runs:
            return "skipped" if self.skipped else "not run"
        if self.runs + self.skipped + self.saved < self.planned:
            outcome = settled(self.passed, self.runs - self.passed, self.planned, self.min_pass_rate)
            return "incomplete" if outcome is None else "passed" if outcome else "failed"
        return "passed" if self.pass_rate >= self.min_pass_rate - 1e-9 else "failed"

    @property
    def percent(self) -> float:
        """The pass rate in percent, to one decimal (Yao's stability figure; more when one would read 100 or 0 and
        it is not); 0 when none ran."""
        return percent_of(self.passed, self.runs)

    @property
    def classification(self) -> str:
        """Yao's stability class of the runs that ran."""
        return classify(100.0 * self.passed / self.runs if self.runs else 0.0)

    @property
    def pass_hat(self) -> tuple[float, ...]:
        """pass^k for k = 1 … runs, unbiased: C(c, k) / C(n, k) (the chance that k runs drawn all pass)."""
        return pass_hats(self.runs, self.passed)

    @property
    def pass_at(self) -> tuple[float, ...]:
        """pass@k for k = 1 … runs, unbiased: 1 - C(n - c, k) / C(n, k) (at least one of k runs passes)."""
        return pass_ats(self.runs, self.passed)

    @property
    def pass_hat_k(self) -> bool:
        """pass^k: every run passed."""
        return self.runs > 0 and self.passed == self.runs

    @property
    def pass_at_k(self) -> bool:
        """pass@k: at least one run passed."""
        return self.passed > 0

    @property
    def flaky(self) -> bool:
        """Passed its gate while some of its runs did not pass — the one meaning of "flaky" in every report, the
        viewer, JUnit and ``diff`` (as JUnit's flaky tests: they pass in the end). A case whose gate failed is
        failed, never flaky, however many of its runs passed."""
        return self.passed < self.runs and self.verdict == "passed"


@dataclass(frozen=True)
class PassK:
    """A suite's pass^k and pass@k for k = 1 … N (item k-1): the mean over the cases that ran at least k
    times (``cases[k-1]`` of them) of each case's unbiased estimate — tau-bench's table."""

    k: tuple[int, ...]
    pass_hat: tuple[float, ...]
    pass_at: tuple[float, ...]
    cases: tuple[int, ...]


def pass_hat(n: int, c: int, k: int) -> float:
    """C(c, k) / C(n, k): the chance that k of n runs, c of which passed, drawn without replacement all passed."""
    return pass_hats(n, c)[k - 1] if 0 < k <= n else 0.0


@lru_cache(maxsize=1024)
def pass_hats(n: int, c: int) -> tuple[float, ...]:
    """``pass_hat(n, c, k)`` for k = 1 … n, made once for each (n, c) in O(n) floats: each term is the one before
    times (c - k + 1) / (n - k + 1). (With ``math.comb`` every k was a division of integers of thousands of digits:
    5,000 runs took 11 s, at every access.)"""
    out, rate = [], 1.0
    for k in range(1, n + 1):
        rate = rate * (c - k + 1) / (n - k + 1) if k <= c else 0.0
        out.append(rate)
    return tuple(out)


@lru_cache(maxsize=1024)
def pass_ats(n: int, c: int) -> tuple[float, ...]:
    """pass@k for k = 1 … n: 1 - C(n - c, k) / C(n, k)."""
    return tuple(1 - h for h in pass_hats(n, n - c))


@dataclass(frozen=True, slots=True)
class Player:
    """Who plays a role in a run and on which connector: the agent under test, a simulator, a validator (a judge).
    ``mock``: that connector is of type ``mock`` (canned answers, no model)."""

    role: Role
    agent: str
    connector: str
    mock: bool = False


@dataclass(frozen=True, kw_only=True)
class RunHeader:
    """What the console header and the report say about a run before it starts."""

    agent: str
    connector: str
    simulator: str
    input: str  # the input described: "tests/inputs.jsonl (10 test cases)"
    timeout: float
    total: int  # scheduled results: cases × runs
    runs: int = 1
    parallel: int = 1
    dynamic: bool = False  # every case is dynamic
    mixed: bool = False  # some cases are dynamic, some not
    notes: tuple[tuple[str, str], ...] = ()  # more header lines: ("Replay", "cassettes/ (every role)"), …
    players: tuple[Player, ...] = ()  # each role's agent and connector (simulators and validators when there are any)
    warnings: tuple[str, ...] = ()  # a judge or simulator on a mock under an agent on a model, …


@dataclass(frozen=True, kw_only=True)
class RunReport:
    results: tuple[CaseResult, ...]
    started_at: str
    completed_at: str
    duration_ms: float
    agent_id: str = ""
    agent_path: str = ""
    connector: str = ""
    simulator: str = ""
    input_source: str = ""
    output_file: str = ""
    environment: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    stopped_early: bool = False
    not_run: int = 0
    warnings: tuple[str, ...] = ()
    terminated: bool = False  # stopped by SIGTERM (CI cancel, docker stop) rather than Ctrl-C
    gates: tuple[Gate, ...] = ()  # one per case (× connector): the verdicts that decide the exit code
    matrix: tuple[str, ...] = ()  # the connectors of a model matrix (-c a,b), in order
    generation: tuple[Spend, ...] = ()  # what generating the cases cost (-i agents:…)
    generation_calls: CallLog | None = None  # what the generators were sent and answered (--calls)
    load: tuple[EndpointLoad, ...] = ()  # per connector: requests, 429s absorbed, retries, concurrency
    evidence: Evidence | None = None  # intervals, matrix comparisons, judges (verdicts.evidence.of: made from the results when None)
    players: tuple[Player, ...] = ()  # each role's agent and connector, when a simulator or validator agent takes part
    suites: tuple[SuiteResult, ...] = ()  # the suite checks of the case files that declare a suite

    def count(self, status: str) -> int:
        return self.summary.counts.get(status, 0)

    def groups(self) -> Iterator[Group]:
        """Each case × connector once, in the report's order, with its gate (None in a report without gates: one
        read back from a run that showed none) and its runs — made as they are taken (a report's results beside
        its gates are sliced as they lie: no dict of 100,000 keys, nothing held)."""
        if is_spooled(self.results):  # a streamed run's: results and gates on disk, both in the plan's order
            return _alongside(self.results, self.gates)
        gates = {g.key: g for g in self.gates}
        return (Group(key, gates.get(key), runs) for key, runs in by_key(self.results, gates))

    @cached_property
    def repeated(self) -> bool:
        """Whether its cases ran (or were to run) more than once — ``--runs``, a case's own ``runs``, a result's run
        number: reports then number each result's run and show Yao's stability figures. Kept: a report asked it
        once per row was quadratic (8 s for 10,000 rows)."""
        runs = self.options.get("runs", 1)
        return (isinstance(runs, int) and runs > 1) or any(g.planned > 1 for g in self.gates) or any(r.run > 1 for r in self.results)

    @property
    def stability(self) -> tuple[Gate, ...]:
        """Yao's stability figures of a repeated run: the gate of each case (× connector) that ran, in order."""
        return tuple(g for g in self.gates if g.runs) if self.repeated else ()

    @cached_property
    def checked_nothing(self) -> list[str]:
        """The ids of the cases that ran and check nothing but that the agent answers (each case × connector once, in
        input order): they passed on an answer alone (or failed under --strict)."""
        keys = dict.fromkeys((r.file, r.id, r.connector) for r in self.results if r.checked_nothing and r.status != "skipped")
        return [case_id for _, case_id, _ in keys]

    @cached_property
    def files(self) -> frozenset[str]:
        """The case files its results came from (ids are unique per file only)."""
        return frozenset(r.file for r in self.results)

    @cached_property
    def summary(self) -> Summary:
        counts: dict[str, int] = {}
        usage = Usage()
        for r in self.results:
            counts[r.status] = counts.get(r.status, 0) + 1
            usage += r.usage
        return Summary(total=len(self.results) + self.not_run, counts=counts, usage=usage, not_run=self.not_run)


@dataclass(frozen=True, kw_only=True)
class Ran:
    """What running a plan did, as deciding its verdicts needs it: the results that landed, when it started and
    how long it took, each gate's tally (planned runs and minimum rate) and the runs ``--early-stop`` saved, and how
    it ended."""

    results: Sequence[CaseResult]
    started_at: float  # seconds since the epoch
    duration_ms: float
    tallies: Mapping[CaseKey, Any]  # each case × connector's policy: its planned runs and minimum pass rate
    saved: Mapping[CaseKey, int]
    interrupted: bool = False
    terminated: bool = False  # by SIGTERM
    stopped_early: bool = False  # --fail-fast
    not_run: int = 0
    suites: tuple[SuiteResult, ...] = ()  # the suite checks, judged once the cases ran (FORMATS §18)


class Group(NamedTuple):
    """A case × connector of a report: its key, its gate, its runs in order."""

    key: CaseKey
    gate: Gate | None
    runs: Sequence[CaseResult]


def _alongside(results: Iterable[CaseResult], gates: Iterable[Gate]) -> Iterator[Group]:
    """Each gate with the results of its case × connector that follow one another (a streamed run's: read once)."""
    landed = iter(results)
    ahead = next(landed, None)
    for gate in gates:
        runs = []
        while ahead is not None and ahead.key == gate.key:
            runs.append(ahead)
            ahead = next(landed, None)
        yield Group(gate.key, gate, runs)


def by_key(results: Sequence[CaseResult], keys: Iterable[CaseKey]) -> Iterator[tuple[CaseKey, Sequence[CaseResult]]]:
    """Each of ``keys`` with its results (none: an empty slice), in the order of ``keys``, then any key of the
    results not among them. Results that hold each key's runs together in that order (a report's, beside its
    gates) are sliced as they lie: no dict of every key."""
    keys = list(keys)
    i, n = 0, len(results)
    for key in keys:
        while i < n and (results[i].key is key or results[i].key == key):
            i += 1
    if i == n:
        i = 0
        for key in keys:
            start = i
            while i < n and (results[i].key is key or results[i].key == key):
                i += 1
            yield key, results[start:i]
        return
    grouped: dict[CaseKey, list[CaseResult]] = {key: [] for key in keys}
    for r in results:
        grouped.setdefault(r.key, []).append(r)
    yield from grouped.items()


@dataclass(frozen=True)
class Summary:
    """Counts over a report's results."""

    total: int  # selected: the results, and what --fail-fast or Ctrl-C left unrun
    counts: dict[str, int]
    usage: Usage
    not_run: int = 0

    @property
    def passed(self) -> int:
        return self.counts.get("passed", 0)

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0)

    @property
    def errors(self) -> int:
        return self.counts.get("error", 0)

    @property
    def timeouts(self) -> int:
        return self.counts.get("timeout", 0)

    @property
    def skipped(self) -> int:
        return self.counts.get("skipped", 0)

    @property
    def pass_rate(self) -> float:
        """Percent of the cases that ran (skipped ones left out) that passed; 0 when none ran (an interrupted
        run that finished nothing did not pass 100%)."""
        ran = self.total - self.not_run - self.skipped
        return percent_of(self.passed, ran) if ran else (100.0 if self.skipped and not self.not_run else 0.0)


# a result run again on a fresh worker after its first worker was lost while it ran carries this warning
# (the crash is never hidden, whatever the second run gave)
LOST_ONCE = "its worker was lost while it ran"
