"""What a case file says, as data: a Case with its assertions, checkpoints, simulator, mocks, faults and budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from agenttest.errors import Location
from agenttest.model.calls import ToolCall
from agenttest.model.kinds import BuiltinMode, FaultKind, Message, OutputFrom
from agenttest.model.scenario import Scenario


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
    """Who plays the user: a simulator agent (``use``), or a script of user messages said in order."""

    use: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    script: tuple[str, ...] | None = None  # an offline simulator (FORMATS §14)
    hide_checkpoints: bool = False  # send the simulator no checkpoint ids or descriptions


@dataclass(frozen=True)
class ScriptedTurn:
    """One turn of a scripted conversation (FORMATS §14): the user's input and the checks on the reply."""

    messages: tuple[Message, ...]
    input: Any  # as written (or the chosen variant's)
    assertions: tuple[AssertionSpec, ...] = ()
    id: str = ""
    selection: dict[str, Any] | None = None  # a structured choice among the options the previous turn published


@dataclass(frozen=True, kw_only=True)
class SuiteSpec:
    """A case file's suite (``{"suite": {...}, "cases": [...]}``; seed format A's suite): its name, metadata and
    the checks run over all its selected cases once the run ends (FORMATS §18)."""

    id: str
    file: str
    name: str = ""
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    assertions: tuple[AssertionSpec, ...] = ()
    location: Location | None = None
    locator: Locator | None = field(default=None, repr=False, compare=False)

    def locate(self, path: Sequence[Any] = ()) -> Location | None:
        """Where ``path`` inside the suite was written (``("assertions", 0, "use")``)."""
        return self.locator(path) if self.locator is not None else self.location


@dataclass(frozen=True)
class Given:
    """A judge-only case's output (FORMATS §19), given instead of calling the agent: its tool calls and the
    conversation before it; for ``rescore``, each recorded run's output and tool calls (per connector, item k − 1)."""

    output: Any
    tool_calls: tuple[ToolCall, ...] = ()
    history: tuple[Message, ...] = ()
    recorded: tuple[tuple[str, tuple[tuple[Any, tuple[ToolCall, ...]], ...]], ...] = ()  # rescore: per connector, each run's

    def of_run(self, run: int, connector: str = "") -> tuple[Any, tuple[ToolCall, ...]]:
        """Run ``run``'s output and tool calls on ``connector`` (a rescored case's own; a written case's one output)."""
        runs = next((r for c, r in self.recorded if c == connector), self.recorded[0][1] if self.recorded else ())
        if runs:
            return runs[min(max(run, 1), len(runs)) - 1]
        return self.output, self.tool_calls


@dataclass(frozen=True, kw_only=True)
class Mock:
    """A mocked tool (FORMATS §11): answers calls of ``tool`` whose arguments match ``match`` instead of the tool."""

    tool: str
    match: dict[str, Any] | None = None  # a subset of the arguments; "regex:" strings are patterns
    returns: Any = None
    error: str | None = None
    delay: float = 0.0
    times: int | None = None  # uses; None: unlimited


@dataclass(frozen=True, kw_only=True)
class Fault:
    """A fault injected into calls of ``tool`` (a name or ``*``): at the given call numbers, at a rate, or always."""

    tool: str
    kind: FaultKind
    at: tuple[int, ...] = ()
    rate: float | None = None
    message: str | None = None
    seed: int | None = None  # draws from this seed alone (a scenario's meta.seed), not --seed, the case and the run


class Locator(Protocol):
    """Finds ``file:line:column`` of a place inside a case (computed only when there is a problem)."""

    def __call__(self, path: Sequence[Any] = (), key: bool = False, line: int | None = None) -> Location: ...  # line: the case's


@dataclass(frozen=True, slots=True, kw_only=True)
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
    end: str = "checkpoints"  # how a dynamic conversation ends: "checkpoints" (Yao's rule) or "simulator"
    end_tools: tuple[str, ...] = ()  # tools whose call ends a dynamic conversation (after their result)
    turns: tuple[ScriptedTurn, ...] = ()  # a scripted conversation's turns
    variants: tuple[str, ...] = ()  # the variant ids this case of a product was built with
    given: Given | None = None  # a judge-only case: the output its assertions judge, no agent call (FORMATS §19)
    judge: tuple[float | None, float | None] | None = None  # the judge gate it sets: (min_agreement, min_kappa)
    output_from: OutputFrom | None = None  # what its assertions see (None: as its agent's package.yao says)
    scenario: Scenario | None = None  # a scenario's world: tools, turns, clock, budgets (FORMATS §18, seed format B)
    policy: dict[str, Any] | None = None  # allowed_tools (enforced), write_policy, the app's own keys (ctx.policy)
    suite: Any = None  # the suite its file declares (SuiteSpec): checks over all its cases once the run ends
    locator: Locator | None = field(default=None, repr=False, compare=False)

    @property
    def input(self) -> Any:
        """The input as written (for reports and previews)."""
        return self.raw.get("input")

    @property
    def mode(self) -> BuiltinMode:
        """The built-in mode the case's fields make it (a plug-in mode may claim it: ``modes.name_of``)."""
        if self.given is not None:
            return "judged"
        if self.script is not None:
            return "script"
        if self.scenario is not None:
            return "scenario"
        if self.turns:
            return "scripted"
        return "dynamic" if self.checkpoints or self.simulator is not None else "standard"

    @property
    def dynamic(self) -> bool:
        return self.mode == "dynamic"

    @property
    def checks_nothing(self) -> bool:
        """Whether it passes whenever the agent answers (Yao's rule for a case with no checks): no assertion, no
        ``expected``, no required checkpoint, no turn's assertion. A script test checks itself, a scenario (seed format
        B) has its own budgets and checks; a literal message (``-i "hello"``) is a look at the reply, not a test. (A
        budget checks too: ``ResolvedCase`` knows it.)"""
        if (self.assertions or self.has_expected or self.script is not None or self.scenario is not None
                or self.location.file == "<message>"):
            return False
        return not any(cp.required for cp in self.checkpoints) and not any(t.assertions for t in self.turns)

    @property
    def external_writes(self) -> bool:
        """Its policy says it may create or change external records (``write_policy: external``)."""
        return self.policy is not None and self.policy.get("write_policy") == "external"

    def locate(self, path: Sequence[Any] = (), key: bool = False) -> Location:
        """Where ``path`` inside this case was written; the case's own location when unknown."""
        return self.locator(path, key, self.location.line) if self.locator is not None else self.location


@dataclass(frozen=True, kw_only=True)
class Budget:
    """Limits on what one run of a case may spend (FORMATS §8); None: no limit on that figure."""

    tokens: int | None = None  # the agent under test's tokens
    cost: float | None = None  # USD, the agent under test's calls
    tool_calls: int | None = None
    turns: int | None = None
    duration: float | None = None  # seconds
    model_calls: int | None = None  # the agent under test's model calls in one conversation

    def over(self, base: Budget | None) -> Budget:
        """This budget's limits, the ones it leaves open taken from ``base`` (the case over --budget)."""
        if base is None:
            return self
        return Budget(**{f.name: mine if mine is not None else theirs for f, mine, theirs in zip(fields(self), astuple_shallow(self), astuple_shallow(base))})

    def limits(self) -> dict[str, Any]:
        """The limits that are set, by name."""
        return {name: value for name, value in zip(("tokens", "cost", "tool_calls", "turns", "duration", "model_calls"), astuple_shallow(self))
                if value is not None}


def astuple_shallow(value: Any) -> tuple[Any, ...]:
    """A dataclass's field values in order, not copied (``dataclasses.astuple`` deep-copies)."""
    return tuple(getattr(value, f.name) for f in fields(value))
