"""What a model was sent and answered (``--calls``): each model call of a case as its connector made it — the
request body as sent, the response as received, timing and retries — with the messages and tool lists the calls
of a conversation repeat stored once in the case's ``CallLog`` and referenced by number."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agenttest.model.calls import Usage

Keep = Literal["none", "failed", "all"]  # --calls: which results keep their model calls
KEEP = ("none", "failed", "all")


@dataclass(frozen=True, kw_only=True, slots=True)
class Retry:
    """One attempt of a model call that failed and was tried again: why, and how long agent-test waited."""

    kind: str  # rate_limit, server, timeout, connection, unreachable, cut (a stream without its end), dialect, early (sent again through the SDK)
    error: str = ""
    status: int = 0  # the HTTP status, when there was one
    waited_ms: float = 0.0  # before the next attempt (a backoff, or the Retry-After the server asked for)


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """The response as received: the model's text and tool calls (their arguments as the model wrote them), why it
    stopped, which model the endpoint says answered, and the usage — counted by the endpoint, estimated, or unknown."""

    content: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()  # {"id", "name", "arguments"}
    finish_reason: str = ""  # "length": cut at its token limit
    model: str = ""
    usage: Usage = Usage()


@dataclass(frozen=True, kw_only=True, slots=True)
class Exchange:
    """One model call: who made it for what, where it went, the request body as sent (its messages and tools as
    numbers into the case's ``CallLog``, every other key in ``parameters``), and what came back."""

    role: str  # agent, simulator, validator (a judge), generator
    connector: str
    url: str = ""  # the endpoint it was sent to, without credentials ("" for a connector without one: the mock)
    turn: int = 0  # the conversation's turn (0: not in a conversation)
    served: str = ""  # what a judge's call served: "assertion 2", "turn 3 assertion 1", "checkpoint looks-up"
    messages: tuple[int, ...] = ()  # indexes into CallLog.messages, in order
    tools: int = -1  # index into CallLog.tools (-1: none offered)
    parameters: dict[str, Any] = field(default_factory=dict)  # every other key of the body: model, temperature, stream, …
    response: Answer | None = None  # None: no answer (the error says why)
    error: str = ""
    replayed: bool = False  # answered from a cassette (--replay), not by the endpoint
    queued_ms: float = 0.0  # waiting for a slot under the connector's limits
    first_byte_ms: float | None = None  # to the first streamed chunk (None: not streamed, or none came)
    duration_ms: float = 0.0  # the whole call, queue and retries included
    retries: tuple[Retry, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class CallLog:
    """The model calls of one case run, in the order they began: each distinct message and tool list once, the calls
    referring to them by number."""

    messages: tuple[Any, ...] = ()  # attachments summarised, not inlined
    tools: tuple[Any, ...] = ()  # each a list of tool schemas as sent
    exchanges: tuple[Exchange, ...] = ()

    def request(self, call: Exchange) -> dict[str, Any]:
        """The body of ``call`` as it was sent (attachments summarised)."""
        body = dict(call.parameters)
        body["messages"] = [self.messages[i] for i in call.messages]
        if call.tools >= 0:
            body["tools"] = self.tools[call.tools]
        return body


def keeps(keep: str, status: str) -> bool:
    """Whether a result of ``status`` keeps its model calls under ``--calls keep``."""
    return keep == "all" or (keep == "failed" and status not in ("passed", "skipped"))
