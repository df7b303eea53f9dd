"""What a connector is: its spec (from a ``.conn.yao`` file), the request it answers, the protocol,
and the registry of connector types by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..model import Completion, Message


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


class Connector(Protocol):
    """``complete`` answers one request. Optional: ``prepare(agent_dir)`` checks at load time what the
    connector needs for an agent (the mock: its rules file); ``aclose()`` releases network clients."""

    spec: ConnectorSpec

    async def complete(self, request: ChatRequest) -> Completion: ...


Factory = Callable[[ConnectorSpec], Connector]
_REGISTRY: dict[str, Factory] = {}


def register(type_name: str) -> Callable[[Factory], Factory]:
    def decorate(factory: Factory) -> Factory:
        _REGISTRY[type_name] = factory
        return factory

    return decorate


def factory(type_name: str) -> Factory | None:
    return _REGISTRY.get(type_name)


def type_names() -> list[str]:
    return sorted(_REGISTRY)
