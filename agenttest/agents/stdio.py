"""Stdio MCP servers as processes: the process group the SDK gives each server (killed whole at the end, so
no grandchild outlives the run), and the SDK's log of what a server prints that is not the protocol."""

from __future__ import annotations

import logging
import os
import signal


def children() -> set[int]:
    """This process's child pids (Linux ``/proc``; empty elsewhere, where the SDK's own tree kill is all)."""
    found: set[int] = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as fh:
                found.update(int(p) for p in fh.read().split())
    except OSError:
        pass
    return found


def leads_group(pid: int) -> bool:
    """Whether ``pid`` leads its own process group (as the SDK starts every stdio server)."""
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie — ended, not yet reaped — does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return not os.path.isdir("/proc/self")  # no /proc entry where /proc exists: gone


def kill(groups: set[int]) -> None:
    """SIGKILL every process left in these groups."""
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:  # the group is gone already
            pass


class _NoServerOutput(logging.Filter):
    """The SDK logs a stdio server's non-protocol stdout lines with the line itself (in the parse error): a
    server printing a token before the protocol would get it shown. Said without the line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "JSONRPC" in str(record.msg):
            record.msg, record.args, record.exc_info, record.exc_text = (
                "mcp: a stdio server wrote a line that is not JSON-RPC to stdout; ignored (not shown: it may hold a secret)",
                (), None, None)
        return True


def quiet_stdout_noise() -> None:
    """Install the filter on the SDK's stdio logger (once)."""
    logger = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, _NoServerOutput) for f in logger.filters):
        logger.addFilter(_NoServerOutput())
