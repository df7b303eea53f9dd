"""Connectors: how agents reach models. A connector is anything with ``async complete(request)``;
types are registered by name — ``openai``, ``mock`` and plug-ins, all the same way."""

from __future__ import annotations

from agenttest import plugins
from agenttest.errors import AgentTestError, did_you_mean
from agenttest.speed import collector
from agenttest.connectors.base import ChatRequest, Connector, ConnectorSpec, Factory, Retryable, factory, register, type_names

__all__ = ["ChatRequest", "Connector", "ConnectorSpec", "Factory", "Retryable", "create", "register"]


def create(spec: ConnectorSpec) -> Connector:
    """A connector of the spec's type (built-in types load on first use)."""
    with collector.importing():  # the first of a type may import its SDK (openai: ~55,000 objects, no garbage)
        plugins.builtins()
        make = factory(spec.type)
        if make is None:
            hint = did_you_mean(spec.type, type_names()) or f"known types: {', '.join(type_names())}"
            raise AgentTestError(f"connector {spec.id}: unknown type '{spec.type}'", hint=hint)
        return make(spec)
