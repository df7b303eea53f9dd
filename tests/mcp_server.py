"""A real MCP server written with the ``mcp`` SDK, for the tests: ``python tests/mcp_server.py`` serves it
on stdio; ``HttpServer`` serves it on 127.0.0.1 over streamable HTTP (``/mcp``) and SSE (``/sse``), with an
optional required ``Authorization`` header.

On start it appends its pid to ``$MCP_PID_FILE`` when that is set, so tests can count starts and check
that no process outlives a run; ``--slow-start`` never gets ready and starts a child (whose pid it adds)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from typing import Any

import anyio

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

RATES = {"EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "USD": 1.0}

app = MCPServer("calc", log_level="WARNING")


@app.tool()
def convert(amount: float, currency: str) -> dict[str, Any]:
    """Convert an amount in a currency to USD."""
    if currency not in RATES:
        raise ToolError(f"unknown currency {currency!r}")
    return {"usd": round(amount * RATES[currency], 2), "rate": RATES[currency]}


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "")


@app.tool()
async def nap(seconds: float) -> str:
    """Sleep, then answer (``$MCP_NAP_FILE``, when set, says that the nap began)."""
    if os.environ.get("MCP_NAP_FILE"):
        with open(os.environ["MCP_NAP_FILE"], "a") as fh:
            fh.write("napping\n")
    await anyio.sleep(seconds)
    return "awake"


if os.environ.get("MCP_CRASH_TOOL"):  # a tool that ends the server, for the tests of a server that dies mid-run
    @app.tool()
    def crash() -> str:
        """End this server's process at once."""
        os._exit(9)


class HttpServer:
    """Serve ``app`` over streamable HTTP and SSE on 127.0.0.1 in a thread (``url``, ``sse_url``)."""

    def __init__(self, token: str | None = None):
        import uvicorn
        from starlette.applications import Starlette

        self.token = token
        self.seen: list[str] = []  # Authorization headers received
        http = app.streamable_http_app()
        inner = Starlette(routes=[*app.sse_app().routes, *http.routes], lifespan=http.router.lifespan_context)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(self._guard(inner), log_level="error", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def _guard(self, inner: Any) -> Any:
        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                auth = dict(scope["headers"]).get(b"authorization", b"").decode()
                self.seen.append(auth)
                if self.token is not None and auth != self.token:
                    await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                    await send({"type": "http.response.body", "body": b"unauthorized"})
                    return
            await inner(scope, receive, send)

        return guarded

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    @property
    def sse_url(self) -> str:
        return self.base + "/sse"

    def __enter__(self) -> HttpServer:
        self._thread.start()
        while not self._server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(10)


if __name__ == "__main__":
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "a") as fh:
            fh.write(f"{os.getpid()}\n")
    if "--slow-start" in sys.argv:  # a server still starting, with a child of its own (for shutdown tests)
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(os.environ["MCP_PID_FILE"], "a") as fh:
            fh.write(f"{child.pid}\n")
        time.sleep(120)
    if "--fail" in sys.argv:
        license = os.environ.get("CALC_LICENSE")
        sys.stderr.write(f"calc: cannot start: license {license!r} was refused\n" if license else "calc: cannot start: CALC_LICENSE is not set\n")
        sys.exit(3)
    app.run()
