"""Report files: the format follows the extension (built-ins and plug-ins alike), written atomically."""

from __future__ import annotations

import os
from collections.abc import Iterable

from agenttest.errors import AgentTestError, did_you_mean
from agenttest.model import RunReport
from agenttest.util.files import prepare, rescue, write_atomic
from agenttest.util.secrets import Secrets
from agenttest.reporting.formats import Render, register, renderer, report_formats
from agenttest.reporting.jsonfile import Spool, json_chunks, to_json

__all__ = ["Render", "Spool", "check_path", "extensions", "register", "render", "write", "write_atomic"]


def extensions() -> list[str]:
    """The report formats, sorted (as -o's messages list them)."""
    return sorted(report_formats())


def check_path(path: str) -> None:
    """Before anything runs: a usage error for an -o whose format is unknown or that cannot be written;
    a missing folder is created."""
    ext = os.path.splitext(path)[1].lower()
    if not ext and (os.path.isdir(path) or path.endswith(("/", os.sep))):
        prepare(path)  # says it is a folder
    if ext not in extensions():
        known = ", ".join(extensions())
        typo = did_you_mean(ext, extensions()) if ext else None
        raise AgentTestError(f"-o {path}: unknown report format '{ext or '(none)'}'",
                             hint=f"{typo} (formats: {known})" if typo else f"use one of {known}")
    prepare(path)


def render(report: RunReport, path: str, secrets: Secrets | Iterable[str] = (), spool: Spool | None = None) -> Iterable[str]:
    """The report in the format of ``path``'s extension, as chunks of text with secrets redacted: first in the
    report's values (dict keys and bytes in tool data included), since escaping for the format (Markdown's
    ``\\_``, HTML's entities) would hide a key from a search in the text; then in the text, for what a
    format composed. ``spool``: the results the JSON writer already wrote during the run."""
    extensions()
    make = renderer(os.path.splitext(path)[1].lower())
    assert make is not None, path  # checked by check_path before the run
    hide = secrets if isinstance(secrets, Secrets) else Secrets(secrets)
    scrubbed = hide.scrub(report)
    out = json_chunks(scrubbed, spool) if spool is not None and make is to_json else make(scrubbed)
    chunks = [out] if isinstance(out, str) else out
    return (hide.redact(chunk) for chunk in chunks) if hide else chunks


def write(report: RunReport, path: str, secrets: Secrets | Iterable[str] = (), spool: Spool | None = None) -> str | None:
    """Write the report to ``path``; if that fails after the run, keep it in a temporary file and return
    that file's path (the run's work is never lost)."""
    try:
        write_atomic(path, render(report, path, secrets, spool))
        return None
    except OSError:
        return rescue(render(report, path, secrets, spool), path)
