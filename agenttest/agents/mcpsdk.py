"""The ``mcp`` SDK, whichever major the environment has: 2.x (``mcp.Client``, over ``httpx2``) or 1.x from 1.10
on (``mcp.ClientSession``, over ``httpx``) — so that installing agent-test never upgrades the SDK a user's servers
are written for. One small surface over both: the transports, a session that lists tools page by page and
calls one, and results read from either's field names (2.x writes ``input_schema``, 1.x ``inputSchema``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Any

OLDEST = (1, 10)  # the first 1.x whose client has everything used here (list_tools' cursor, structured results)


class Unusable(Exception):
    """The environment's mcp cannot serve as agent-test's client; the message says what it has."""


@cache
def major() -> int:
    """2 or 1: the SDK's major (raises Unusable for none, or a 1.x older than OLDEST)."""
    try:
        from mcp import Client  # noqa: F401

        return 2
    except ImportError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        from mcp import ClientSession  # noqa: F401

        found = version("mcp")
    except (ImportError, PackageNotFoundError):
        raise Unusable("no usable mcp") from None
    if _numbers(found) < OLDEST:
        raise Unusable(f"mcp {found}")
    return 1


def _numbers(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def http_module() -> Any:
    """The HTTP client package the SDK's transports take: ``httpx2`` for 2.x, ``httpx`` for 1.x."""
    if major() == 2:
        import httpx2

        return httpx2
    import httpx

    return httpx


def stdio(command: str, arguments: list[str], env: dict[str, str], cwd: str | None, errlog: Any) -> Any:
    """The stdio transport: the server started as ``command arguments`` (the SDK's default environment plus ``env``)."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    return stdio_client(StdioServerParameters(command=command, args=arguments, env=env, cwd=cwd), errlog=errlog)


def sse(url: str, headers: dict[str, str] | None, client: Callable[..., Any]) -> Any:
    """The SSE transport; ``client(headers=, timeout=, auth=)`` makes its HTTP client."""
    from mcp.client.sse import sse_client

    return sse_client(url, headers=headers, httpx_client_factory=client)


def streamable_http(url: str, headers: dict[str, str] | None, client: Callable[..., Any]) -> Any:
    """The streamable-HTTP transport over an HTTP client made by ``client``."""
    if major() == 2:
        return _streamable_2(url, client(headers))
    from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined, unused-ignore]  # 1.x only: the factory form every 1.x has

    return streamablehttp_client(url, headers=headers, httpx_client_factory=client)


@asynccontextmanager
async def _streamable_2(url: str, http: Any) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client

    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


@dataclass(frozen=True)
class Listed:
    """One page of a server's tools, as (name, description, input schema), and the cursor of the next."""

    tools: list[tuple[str, str, dict[str, Any]]]
    next_cursor: str | None


@dataclass(frozen=True)
class Called:
    """A tool call's result: its content blocks, its structured content, whether the tool reported an error."""

    content: list[Any]
    structured: Any
    is_error: bool


class Session:
    """An open session on either major: ``list_tools`` and ``call_tool``."""

    def __init__(self, client: Any):
        self._client = client

    async def list_tools(self, cursor: str | None) -> Listed:
        page = await self._client.list_tools(cursor=cursor)
        tools = [(t.name, t.description or "", dict(_field(t, "input_schema", "inputSchema") or {"type": "object", "properties": {}}))
                 for t in page.tools]
        return Listed(tools, _field(page, "next_cursor", "nextCursor"))

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Called:
        result = await self._client.call_tool(name, arguments)
        return Called(list(result.content or []), _field(result, "structured_content", "structuredContent"),
                      bool(_field(result, "is_error", "isError")))


def _field(obj: Any, snake: str, camel: str) -> Any:
    """A field by 2.x's name or 1.x's."""
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, None)


@asynccontextmanager
async def session(transport: Any, read_timeout: float | None) -> AsyncIterator[Session]:
    """A session over ``transport`` (one of the above), initialized; closed, with its transport, on exit."""
    if major() == 2:
        from mcp import Client

        async with Client(transport, read_timeout_seconds=read_timeout, cache=None) as client:
            yield Session(client)
        return
    from mcp import ClientSession

    async with transport as streams:
        wait = timedelta(seconds=read_timeout) if read_timeout else None
        async with ClientSession(streams[0], streams[1], read_timeout_seconds=wait) as client:  # type: ignore[arg-type, unused-ignore]  # 1.x: a timedelta
            await client.initialize()
            yield Session(client)
