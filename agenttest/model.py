"""Frozen dataclasses that flow through the pipeline: Case → Reply/Turn → AssertionResult → CaseResult → RunReport."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, Literal, Protocol

from .errors import Location

Status = Literal["passed", "failed", "error", "timeout", "skipped"]
Mode = Literal["standard", "dynamic", "script"]
Role = Literal["agent", "simulator", "validator", "generator"]
FaultKind = Literal["error", "timeout", "malformed", "empty"]
Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AssertionSpec:
    """One assertion as written, with its normalized fields."""

    type: str
    params: dict[str, Any]
    location: Location | None = None
    path: tuple[Any, ...] = ()  # where in its case: ("assert", 0), ("checkpoints", 2, "assert")


@dataclass(frozen=True)
class Checkpoint:
    id: str
    assertion: AssertionSpec
    description: str = ""
    after: tuple[str, ...] = ()
    required: bool = True


@dataclass(frozen=True)
class SimulatorSpec:
    use: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mock:
    """A mocked tool (FORMATS §11): answers calls of ``tool`` whose arguments match ``match`` instead of the tool."""

    tool: str
    match: dict[str, Any] | None = None  # a subset of the arguments; "regex:" strings are patterns
    returns: Any = None
    error: str | None = None
    delay: float = 0.0
    times: int | None = None  # uses; None: unlimited


@dataclass(frozen=True)
class Fault:
    """A fault injected into calls of ``tool`` (a name or ``*``): at the given call numbers, at a rate, or always."""

    tool: str
    kind: FaultKind
    at: tuple[int, ...] = ()
    rate: float | None = None
    message: str | None = None


class Locator(Protocol):
    """Finds ``file:line:column`` of a place inside a case (computed only when there is a problem)."""

    def __call__(self, path: Sequence[Any] = (), key: bool = False) -> Location: ...


@dataclass(frozen=True, slots=True)
class Case:
    """A test case as the file says, normalized; ``raw`` is what was written."""

    id: str
    messages: tuple[Message, ...]
    raw: dict[str, Any]
    location: Location
    base_dir: str
    file: str = ""  # the case file (or source) it came from
    name: str = ""
    description: str = ""
    assertions: tuple[AssertionSpec, ...] = ()
    expected: Any = None
    has_expected: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    user: str | None = None
    team: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    skip: bool = False
    skip_reason: str = ""
    timeout: float | None = None
    before: str | None = None
    after: str | None = None
    simulator: SimulatorSpec | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    max_turns: int = 20
    tags: tuple[str, ...] = ()
    world: dict[str, Any] | None = None  # the initial state of the case's tool world
    mocks: tuple[Mock, ...] = ()
    faults: tuple[Fault, ...] = ()
    runs: int | None = None  # repetitions of this case (else --runs)
    min_pass_rate: float | None = None  # its gate (else --min-pass-rate)
    budget: Budget | None = None
    script: Any = None  # a script test's function (script tests only)
    locator: Locator | None = field(default=None, repr=False, compare=False)

    @property
    def input(self) -> Any:
        """The input as written (for reports and previews)."""
        return self.raw.get("input")

    @property
    def mode(self) -> Mode:
        if self.script is not None:
            return "script"
        return "dynamic" if self.checkpoints else "standard"

    @property
    def dynamic(self) -> bool:
        return self.mode == "dynamic"

    def locate(self, path: Sequence[Any] = (), key: bool = False) -> Location:
        """Where ``path`` inside this case was written; the case's own location when unknown."""
        return self.locator(path, key) if self.locator is not None else self.location


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0  # of the prompt tokens, those the endpoint served from its cache (priced apart)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        out = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "total_tokens": self.total_tokens}
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens
        return out


@dataclass(frozen=True)
class Budget:
    """Limits on what one run of a case may spend (FORMATS §8); None: no limit on that figure."""

    tokens: int | None = None  # the agent under test's tokens
    cost: float | None = None  # USD, the agent under test's calls
    tool_calls: int | None = None
    turns: int | None = None
    duration: float | None = None  # seconds

    def over(self, base: Budget | None) -> Budget:
        """This budget's limits, the ones it leaves open taken from ``base`` (the case over --budget)."""
        if base is None:
            return self
        return Budget(*(mine if mine is not None else theirs for mine, theirs in zip(astuple_shallow(self), astuple_shallow(base))))


def astuple_shallow(value: Any) -> tuple[Any, ...]:
    """A dataclass's field values in order, not copied (``dataclasses.astuple`` deep-copies)."""
    return tuple(getattr(value, f.name) for f in fields(value))


@dataclass(frozen=True)
class Spend:
    """What one role's model calls through one connector cost within a case run."""

    role: str  # agent, simulator, validator, generator
    connector: str
    usage: Usage = Usage()
    calls: int = 0
    cost: float | None = None  # USD; None when the connector has no pricing


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asked for and what running it gave."""

    name: str
    arguments: Any
    id: str = ""
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    server: str | None = None  # the MCP server the tool belongs to
    mocked: bool = False  # a case's mock answered instead of the tool
    fault: FaultKind | None = None  # the fault injected instead of running the tool

    def as_dict(self) -> dict[str, Any]:
        """The call as hooks, script tests and reports see it."""
        out = {"name": self.name, "arguments": self.arguments, "result": self.result, "duration_ms": round(self.duration_ms, 1)}
        if self.id:
            out["id"] = self.id
        if self.error is not None:
            out["error"] = self.error
        if self.server is not None:
            out["server"] = self.server
        if self.mocked:
            out["mocked"] = True
        if self.fault is not None:
            out["fault"] = self.fault
        return out


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer of a model: text and/or tool calls."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str = ""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call made while a case ran: who asked, through which connector, and which model the
    endpoint says answered (it may differ from the one asked for)."""

    role: str
    connector: str
    model: str = ""
    duration_ms: float = 0.0


@dataclass(frozen=True)
class EndpointLoad:
    """How one connector held up under the run's load (FORMATS §13)."""

    connector: str
    requests: int = 0  # attempts sent
    rate_limited: int = 0  # 429 responses
    absorbed: int = 0  # of those, retried rather than ending a case
    retries: int = 0  # other failed attempts that were retried (5xx, timeouts, connection errors)
    overloaded: int = 0  # 503 responses
    limit: int = 0  # the adaptive concurrency limit at the end
    lowest_limit: int = 0
    peak_in_flight: int = 0
    unreachable: bool = False  # marked down after consecutive connection failures


@dataclass(frozen=True)
class Reply:
    """What an agent answered to one conversation, tool loop included."""

    text: str
    messages: tuple[Message, ...] = ()  # assistant and tool messages to append to the history
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    data: Any = None  # the Next hook's data, when it returned some
    has_data: bool = False
    model_calls: int = 0

    @property
    def output(self) -> Any:
        """What assertions see: Next-hook data, else the text, else the first tool result."""
        if self.has_data:
            return self.data
        if self.text:
            return self.text
        for call in self.tool_calls:
            if call.error is None:
                return call.result
        return self.text


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Turn:
    turn: int
    input: Any
    output: Any
    tool_calls: tuple[ToolCall, ...] = ()
    checkpoints: tuple[str, ...] = ()
    duration_ms: float = 0.0
    simulator_reasoning: str = ""
    attachments: tuple[str, ...] = ()  # names of the files the user message attached

@dataclass(frozen=True)
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


@dataclass(frozen=True)
class WorldChange:
    """One difference between the initial and the final world, at a JSONPath such as ``$.expenses[1]``."""

    path: str
    op: Literal["added", "removed", "changed"]
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class WorldRecord:
    """A case's tool world: as the agent found it, as it left it, and the difference."""

    initial: Any
    final: Any
    changes: tuple[WorldChange, ...] = ()


@dataclass(frozen=True, slots=True)
class CaseResult:
    id: str
    status: Status
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
    file: str = ""
    line: int = 0  # the case's line in its file (0: unknown)
    traceback: str = ""  # an exception's traceback (user code, or agent-test's own bug)
    stdout: str = ""  # what user code printed while this case ran
    stderr: str = ""
    skip_reason: str = ""
    description: str = ""  # the case's, as written
    tags: tuple[str, ...] = ()
    world: WorldRecord | None = None  # a case with a world, or whose tools changed it
    connector: str = ""  # the connector of the agent under test in a model matrix (-c a,b)
    spend: tuple[Spend, ...] = ()  # tokens and cost by role and connector
    model_calls: tuple[ModelCall, ...] = ()

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
        lines += self.assertion_errors
        return list(dict.fromkeys(lines)) or [self.status]

    @property
    def assertion_errors(self) -> list[str]:
        """The message of every assertion that did not hold."""
        return [a.message for a in self.assertions if not a.passed]


@dataclass(frozen=True)
class Stability:
    id: str
    runs: int
    passed: int
    pass_rate: float
    avg_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    classification: str
    connector: str = ""  # in a model matrix


@dataclass(frozen=True)
class Gate:
    """The verdict of one case (on one connector of a matrix) over its runs (FORMATS §8): passed when
    ``pass_rate >= min_pass_rate``. Skipped runs count nowhere; errors and timeouts count as not passed."""

    id: str
    connector: str = ""
    file: str = ""
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
    def pass_rate(self) -> float:
        """Passed runs over runs that ran (0–1); 0 when none ran."""
        return self.passed / self.runs if self.runs else 0.0

    @property
    def verdict(self) -> Literal["passed", "failed", "skipped", "not run"]:
        if not self.runs:
            return "skipped" if self.skipped else "not run"
        return "passed" if self.pass_rate >= self.min_pass_rate - 1e-9 else "failed"

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
        """Some runs passed and some did not."""
        return 0 < self.passed < self.runs


@dataclass(frozen=True)
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
    dynamic: bool = False


@dataclass(frozen=True)
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
    stability: tuple[Stability, ...] = ()
    interrupted: bool = False
    stopped_early: bool = False
    not_run: int = 0
    warnings: tuple[str, ...] = ()
    terminated: bool = False  # stopped by SIGTERM (CI cancel, docker stop) rather than Ctrl-C
    gates: tuple[Gate, ...] = ()  # one per case (× connector): the verdicts that decide the exit code
    matrix: tuple[str, ...] = ()  # the connectors of a model matrix (-c a,b), in order
    generation: tuple[Spend, ...] = ()  # what generating the cases cost (-i agents:…)
    load: tuple[EndpointLoad, ...] = ()  # per connector: requests, 429s absorbed, retries, concurrency

    def count(self, status: str) -> int:
        return self.summary.counts.get(status, 0)

    @cached_property
    def summary(self) -> Summary:
        counts: dict[str, int] = {}
        usage = Usage()
        for r in self.results:
            counts[r.status] = counts.get(r.status, 0) + 1
            usage += r.usage
        return Summary(len(self.results) + self.not_run, counts, usage, self.not_run)


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
        """Percent of the cases that ran (skipped ones left out) that passed."""
        ran = self.total - self.not_run - self.skipped
        return round(100.0 * self.passed / ran, 1) if ran else 100.0


@dataclass(frozen=True)
class Context:
    """What tools, hooks and scripts receive as ``ctx`` (FORMATS §5)."""

    user_id: str = "test-user"
    team_id: str = "test-team"
    locale: str = "en-us"
    chat_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    authorized: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    test_mode: str = ""
    caller: Any = field(default=None, repr=False, compare=False)  # lets hooks and script tests call agents
    world: dict[str, Any] = field(default_factory=dict)  # the case's tool world: tools read and change it in place
    options: dict[str, Any] = field(default_factory=dict)  # the case's context options (Yao's mode, search, skip, …)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def agent(self, agent_id: str) -> Any:
        """A handle to call an agent from a hook or script test: ``ctx.agent("expense").stream(messages)``."""
        if self.caller is None:
            raise RuntimeError("this context cannot call agents")
        return self.caller.handle(agent_id, self)


@dataclass(frozen=True)
class Plan:
    """A resolved run: the selected cases, the agent under test, and everything the runner calls."""

    cases: tuple[Case, ...]
    agent: str  # the agent under test
    connector: str | None = None  # -c: overrides every case's connector
    runs: int = 1
    parallel: int = 1
    timeout: float = 300.0
    fail_fast: bool = False
    before_all: Any = None  # --before: a resolved hook function
    after_all: Any = None
    hooks: dict[str, Any] = field(default_factory=dict)  # a case's before/after ref → function
    max_attachment: int = 20 * 1024 * 1024  # bytes
    seed: int = 0  # --seed: draws of faults with a rate
    matrix: tuple[str, ...] = ()  # -c a,b: every case runs on each of these connectors
    min_pass_rate: float = 1.0  # the gate of cases that set none
    early_stop: bool = False  # stop a case's runs once its gate is settled
    budget: Budget | None = None  # --budget: limits of cases that set none

    def runs_of(self, case: Case) -> int:
        return case.runs if case.runs is not None else self.runs

    def gate_of(self, case: Case) -> float:
        return case.min_pass_rate if case.min_pass_rate is not None else self.min_pass_rate

    @property
    def connectors(self) -> tuple[str | None, ...]:
        """The connectors every case runs on: the matrix, else the one override (or None: the case's own)."""
        return self.matrix or (self.connector,)

    @property
    def total(self) -> int:
        """Scheduled results: cases × runs × connectors."""
        return sum(self.runs_of(c) for c in self.cases) * len(self.connectors)
