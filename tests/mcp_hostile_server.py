"""A stdio MCP server (the ``mcp`` SDK) that behaves as careless servers do, for tests/test_hostile_mcp.py:
``--chatty`` prints a token on stdout before speaking the protocol; ``--slow N`` takes N seconds to start;
its ``spawn`` tool starts a grandchild that would sleep for two minutes (its pid goes to ``$MCP_PID_FILE``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

if __name__ == "__main__" and os.environ.get("MCP_PID_FILE"):
    with open(os.environ["MCP_PID_FILE"], "a") as fh:
        fh.write(f"{os.getpid()}\n")
if "--chatty" in sys.argv:
    print("SESSION_TOKEN=tok-LEAKED-0123456789 (debug: starting up)", flush=True)
if "--slow" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--slow") + 1]))

from mcp.server.mcpserver import MCPServer  # noqa: E402

app = MCPServer("edges", log_level="WARNING")


@app.tool()
def spawn() -> int:
    """Start a grandchild process that outlives this call."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.environ["MCP_PID_FILE"], "a") as fh:
        fh.write(f"{child.pid}\n")
    return child.pid


@app.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "")


if __name__ == "__main__":
    app.run()
