"""What calling a model and running tools gives: usage, tool calls, completions, replies, and the ctx user code sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

from agenttest.errors import PolicyDenied
from agenttest.model.kinds import FaultKind, Message, OutputFrom, UsageSource


_WORSE = {"endpoint": 0, "estimated": 1, "unknown": 2}


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0  # of the prompt tokens, those the endpoint served from its cache (priced apart)
    # who counted: the endpoint; agent-test with a tokenizer (the endpoint sent no usage); nobody (some
    # call's usage is not known: its tokens are not in the counts, and no token or cost budget can pass on them)
    source: UsageSource = "endpoint"

    def __add__(self, other: Usage) -> Usage:
        source = self.source if self.source == other.source or _WORSE[self.source] > _WORSE[other.source] else other.source
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_tokens + other.cached_tokens,
            source,
        )

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "total_tokens": self.total_tokens}
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens
        if self.source != "endpoint":
            out["source"] = self.source
        return out


@dataclass(frozen=True, slots=True)
class Spend:
    """What one role's model calls through one connector cost within a case run."""

    role: str  # agent, simulator, validator, generator
    connector: str
    usage: Usage = Usage()
    calls: int = 0
    cost: float | None = None  # USD; None when the connector has no pricing


@dataclass(frozen=True, slots=True, kw_only=True)
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
    location: str = ""  # where the tool raised, in the user's code: ``tools.py:12``
    traceback: str = ""  # the user's frames of that exception
    vt: str = ""  # a scenario's virtual time when the call started (ISO)
    violation: str = ""  # a policy refused the call (the tool did not run), or the tool denied it by policy: why

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
        if self.location:
            out["location"] = self.location
        if self.traceback:
            out["traceback"] = self.traceback
        if self.vt:
            out["vt"] = self.vt
        if self.violation:
            out["violation"] = self.violation
        return out


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer of a model: text and/or tool calls."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str = ""
    finish_reason: str = ""  # as the endpoint said: "stop", "tool_calls", "length" (cut at its token limit), …


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call made while a case ran: who asked, through which connector, and which model the
    endpoint says answered (it may differ from the one asked for)."""

    role: str
    connector: str
    model: str = ""
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
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
    found: int = 0  # the concurrency the limit held longest: what the endpoint was found to take
    timeline: tuple[tuple[float, int], ...] = ()  # (seconds from the first request, the limit from then on)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """What an agent answered to one conversation, tool loop included."""

    text: str
    messages: tuple[Message, ...] = ()  # assistant and tool messages to append to the history
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    data: Any = None  # the Next hook's data, when it returned some
    has_data: bool = False
    model_calls: int = 0
    output_from: OutputFrom = "text"  # "tool_result": the agent's answer is its tool call (package.yao or the case says so)
    truncated: bool = False  # the last model call stopped at its token limit (finish_reason "length")

    @property
    def tool_output(self) -> bool:
        """Whether the output is a tool's result: declared so, no Next-hook data, and a tool call that succeeded."""
        return self.output_from == "tool_result" and not self.has_data and any(c.error is None for c in self.tool_calls)
    published: dict[str, Any] | None = None  # what the Next hook published beside its data: interaction, facts, status

    @property
    def output(self) -> Any:
        """What assertions see: Next-hook data, else the agent's final reply text (FORMATS §4, round 4: an empty
        reply is an empty output). Only an agent whose answer is a tool call (``output_from: "tool_result"``)
        has its first successful tool result as the output."""
        if self.has_data:
            return self.data
        if self.output_from == "tool_result":
            for call in self.tool_calls:
                if call.error is None:
                    return call.result
        return self.text


@dataclass(frozen=True)
class Limits:
    """What bounds one agent reply inside a conversation: the model calls it may still make (None: no
    limit), and the tools whose call ends the reply after their result (a dynamic case's ``end_tools``)."""

    model_calls: int | None = None
    end_tools: frozenset[str] = frozenset()
    tool_rounds: int | None = None  # rounds of tool calls allowed beyond the agent's own max_tool_rounds (a scenario's max_steps)


@dataclass(frozen=True, kw_only=True)
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
    policy: dict[str, Any] = field(default_factory=dict)  # the case's policy: allowed_tools, write_policy, the app's own keys
    metrics: dict[str, Any] = field(default_factory=dict)  # counters tools keep (ctx.count): the ``metric`` assertion reads them

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def count(self, name: str, by: float = 1) -> None:
        """Add ``by`` to the counter ``name`` (``ctx.count("refund_count")``, ``ctx.count("refunded_cents", 8000)``)."""
        if not isinstance(name, str) or not name:
            raise ValueError("ctx.count needs a counter name")
        if isinstance(by, bool) or not isinstance(by, (int, float)):
            raise ValueError(f"ctx.count({name!r}, by): by must be a number, not {type(by).__name__}")
        self.metrics[name] = self.metrics.get(name, 0) + by

    def deny(self, reason: str) -> NoReturn:
        """Refuse what a tool was asked on the grounds of the case's policy: the call is an error result that says
        ``reason`` and counts as a policy violation (``metrics.violations``)."""
        raise PolicyDenied(reason)

    def agent(self, agent_id: str) -> Any:
        """A handle to call an agent from a hook or script test: ``ctx.agent("expense").stream(messages)``."""
        if self.caller is None:
            raise RuntimeError("this context cannot call agents")
        return self.caller.handle(agent_id, self)
