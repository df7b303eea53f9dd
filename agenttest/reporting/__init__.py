"""Report files: the format follows the extension (built-ins and plug-ins alike), written atomically."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

from ..errors import AgentTestError
from ..model import RunReport
from ..secrets import Secrets
from .formats import Render, register, registered, renderer

__all__ = ["Render", "check_path", "extensions", "register", "render", "write", "write_atomic"]


def extensions() -> list[str]:
    from . import html, jsonfile, junit, markdown  # noqa: F401  the built-ins register themselves

    return registered()


def check_path(path: str) -> None:
    """A usage error, before anything runs, for an -o whose format is unknown or folder is missing."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in extensions():
        raise AgentTestError(f"-o {path}: unknown report format '{ext or '(none)'}'", hint=f"use one of {', '.join(extensions())}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise AgentTestError(f"-o {path}: folder {folder} does not exist")


def render(report: RunReport, path: str, secrets: Secrets | Iterable[str] = ()) -> Iterable[str]:
    """The report in the format of ``path``'s extension, as chunks of text with secrets redacted."""
    extensions()
    make = renderer(os.path.splitext(path)[1].lower())
    assert make is not None, path  # checked by check_path before the run
    out = make(report)
    chunks = [out] if isinstance(out, str) else out
    hide = secrets if isinstance(secrets, Secrets) else Secrets(secrets)
    return (hide.redact(chunk) for chunk in chunks) if hide else chunks


def write_atomic(path: str, content: str | Iterable[str]) -> None:
    """Write to a temporary file beside ``path``, then rename over it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".agent-test-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines([content] if isinstance(content, str) else content)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report gets the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write(report: RunReport, path: str, secrets: Secrets | Iterable[str] = ()) -> None:
    write_atomic(path, render(report, path, secrets))
