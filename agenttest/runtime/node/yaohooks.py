"""Yao's agent hooks in TypeScript (``src/index.ts``: ``Create``, ``Next``) as agent-test's create and
next hooks, with Yao's rules for what they return (FORMATS §5): Create may return ``messages`` and
``connector``; its ``metadata`` is merged into ``ctx.metadata``, so a Create that returns the ``ctx``
it was given (YaoApp's hooks-test) works as in Yao; anything else it returns is ignored, as Yao does."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agenttest.errors import CallError
from agenttest.model import Context
from agenttest.runtime.node import JsFunction, load, source_beside

Hook = Callable[..., Any]


def index_hooks(src: str) -> tuple[Hook | None, Hook | None]:
    """(create, next) from ``src/index.ts`` (or ``.js``) when there is no ``src/index.py``."""
    path = source_beside(os.path.join(src, "index.py"))
    if path is None:
        return None, None
    runtime, names = load(path, f"hooks in {os.path.basename(path)}")
    create = _create(JsFunction(runtime, path, "Create")) if "Create" in names else None
    return create, JsFunction(runtime, path, "Next") if "Next" in names else None


def _create(js: JsFunction) -> Hook:
    def create(ctx: Context, messages: list[dict[str, Any]]) -> Any:
        return created(ctx, js(ctx, messages, dict(ctx.options)))

    return create


def created(ctx: Context, returned: Any) -> dict[str, Any] | None:
    """What a Yao Create returned, as agent-test's create hook result."""
    if returned is None:
        return None
    if not isinstance(returned, dict):
        raise CallError(f"hook Create returned {type(returned).__name__}; return null or an object with 'messages' and/or 'connector'")
    metadata = returned.get("metadata")
    if isinstance(metadata, dict) and metadata is not ctx.metadata:
        ctx.metadata.update(metadata)
    return {k: returned[k] for k in ("messages", "connector") if returned.get(k)}
