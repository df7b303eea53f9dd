"""The connector boundary where model calls are recorded (``--calls``): the outermost wrapper of every connector
the catalog makes — outside the cassettes and the throttle, so that a replayed call, a queued one and its
retries are one call each, whatever the connector (the mock, openai, a plug-in's). Each call a case makes is
kept in its trace (``runtime/exchanges.py``); with ``--calls none`` no connector is wrapped."""

from __future__ import annotations

from typing import Any

from agenttest.connectors.base import ChatRequest, Connector
from agenttest.model import Completion
from agenttest.runtime import exchanges
from agenttest.runtime.trace import current_trace


class Recorded:
    """``inner`` (the connector as the run calls it) with each call recorded; ``source`` is the connector inside
    every wrapper, which knows the body it sends and its endpoint."""

    def __init__(self, inner: Connector, source: Connector):
        self.inner = inner
        self.spec = inner.spec
        self.source = source

    def __getattr__(self, name: str) -> Any:  # prepare, start, aclose, warnings, … of the connector inside
        return getattr(self.inner, name)

    async def complete(self, request: ChatRequest) -> Completion:
        trace = current_trace.get()
        if trace is None:  # outside any case and outside generation (a library caller's own call)
            return await self.inner.complete(request)
        pending = exchanges.begin(trace, self.spec.id, request, self.source)
        token = exchanges.current_exchange.set(pending)
        try:
            completion = await self.inner.complete(request)
        except BaseException as exc:
            exchanges.ended(pending, None, exc)
            raise
        finally:
            exchanges.current_exchange.reset(token)
        exchanges.ended(pending, completion)
        return completion
