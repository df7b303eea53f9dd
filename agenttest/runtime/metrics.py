"""A case's metrics (seed format C's ``metrics.*``): figures computed from its journal of tool calls — calls,
errors, policy violations, whether the last call succeeded — and the counters its tools keep (``ctx.count``)
or declare (``METRICS`` in the tools module)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agenttest.model import ToolCall

BUILT_IN = ("calls", "errors", "violations", "last_call_succeeded")


def succeeded(call: ToolCall) -> bool:
    """The call ran and answered: no error, no injected fault, no policy refusal."""
    return call.error is None and call.fault is None and not call.violation


def metrics(calls: Sequence[ToolCall], counters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every metric of a case so far: the counters, then the built-in figures (a counter cannot hide one)."""
    return {**(counters or {}), "calls": len(calls), "errors": sum(1 for c in calls if not succeeded(c)),
            "violations": sum(1 for c in calls if c.violation), "last_call_succeeded": bool(calls) and succeeded(calls[-1])}
