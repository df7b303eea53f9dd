"""What a connector is: its spec (from a ``.conn.yao`` file), the request it answers, the protocol, the
failures it may raise for the throttle to retry, and the registry of connector types by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agenttest.errors import CallError
from agenttest.plugins import CONNECTORS
from agenttest.model import Completion, Message
from agenttest.speed.records import hot

FailureKind = Literal["rate_limit", "server", "timeout", "connection", "unreachable", "cut"]  # cut: a stream ended without a finish_reason


@dataclass(frozen=True)
class ConnectorSpec:
    id: str
    type: str
    options: dict[str, Any] = field(repr=False, default_factory=dict)  # may hold the key: never shown
    path: str | None = None
    secrets: tuple[str, ...] = field(repr=False, default=())  # the $ENV values substituted into it


@dataclass(frozen=True)
class ChatRequest:
    messages: Sequence[Message]
    tools: Sequence[dict[str, Any]] = ()
    options: dict[str, Any] = field(default_factory=dict)
    agent_dir: str = ""  # the calling agent's folder (the mock reads its rules there)


class Retryable(CallError):
    """One attempt failed in a way that another attempt may not: ``rate_limit`` (429), ``server`` (5xx),
    ``timeout``, ``connection`` (reset, dropped) or ``unreachable`` (refused, DNS). Connectors raise it for
    a single attempt; the throttle (``throttle.py``) retries with backoff and adapts the load."""

    def __init__(self, message: str, kind: FailureKind, where: str = "", retry_after: float | None = None, status: int = 0):
        super().__init__(message)
        self.kind = kind
        self.where = where  # the endpoint, as host:port
        self.retry_after = retry_after  # seconds the server asked to wait (Retry-After), if it said
        self.status = status


class Connector(Protocol):
    """``complete`` answers one request (one attempt: raise ``Retryable`` for what may be retried, CallError
    for the rest). Optional: ``prepare(agent_dir)`` checks at load time what the connector needs for an
    agent (the mock: its rules file); ``start()`` makes what every call needs (network clients, their
    imports) before the first case starts; ``aclose()`` releases network clients; ``warnings``, a list of
    load-time warnings."""

    spec: ConnectorSpec

    async def complete(self, request: ChatRequest) -> Completion: ...


Factory = Callable[[ConnectorSpec], Connector]
def register(type_name: str) -> Callable[[Factory], Factory]:
    """``@register("mytype")`` on a factory: connector files of that ``type`` are made by it."""
    return CONNECTORS.register(type_name)


def factory(type_name: str) -> Factory | None:
    return CONNECTORS.get(type_name)


def type_names() -> list[str]:
    return CONNECTORS.names()


hot(ChatRequest)  # one per model call
