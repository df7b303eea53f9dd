"""Report files: the format follows the extension (built-ins and plug-ins alike), written atomically."""

from __future__ import annotations

import os
from collections.abc import Iterable

from agenttest.errors import AgentTestError
from agenttest.model import RunReport
from agenttest.util.files import prepare, rescue, write_atomic
from agenttest.util.secrets import Secrets
from agenttest.reporting.formats import Render, register, registered, renderer

__all__ = ["Render", "check_path", "extensions", "register", "render", "write", "write_atomic"]


def extensions() -> list[str]:
    return registered()


def check_path(path: str) -> None:
    """Before anything runs: a usage error for an -o whose format is unknown or that cannot be written;
    a missing folder is created."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in extensions():
        raise AgentTestError(f"-o {path}: unknown report format '{ext or '(none)'}'", hint=f"use one of {', '.join(extensions())}")
    prepare(path)


def render(report: RunReport, path: str, secrets: Secrets | Iterable[str] = ()) -> Iterable[str]:
    """The report in the format of ``path``'s extension, as chunks of text with secrets redacted: first in the
    report's values (dict keys and bytes in tool data included), since escaping for the format (Markdown's
    ``\\_``, HTML's entities) would hide a key from a search in the text; then in the text, for what a
    format composed."""
    extensions()
    make = renderer(os.path.splitext(path)[1].lower())
    assert make is not None, path  # checked by check_path before the run
    hide = secrets if isinstance(secrets, Secrets) else Secrets(secrets)
    out = make(hide.scrub(report))
    chunks = [out] if isinstance(out, str) else out
    return (hide.redact(chunk) for chunk in chunks) if hide else chunks


def write(report: RunReport, path: str, secrets: Secrets | Iterable[str] = ()) -> str | None:
    """Write the report to ``path``; if that fails after the run, keep it in a temporary file and return
    that file's path (the run's work is never lost)."""
    try:
        write_atomic(path, render(report, path, secrets))
        return None
    except OSError:
        return rescue(render(report, path, secrets), path)
