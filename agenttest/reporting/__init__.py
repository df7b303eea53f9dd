"""Report files: the format follows the extension (built-ins and plug-ins alike), written atomically."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator

from agenttest.errors import AgentTestError, did_you_mean
from agenttest.model import RunReport
from agenttest.util.files import WRITE_ERRORS, prepare, rescue, write_atomic
from agenttest.util.secrets import Secrets
from agenttest.reporting.formats import Render, register, registered, renderer
from agenttest.reporting.jsonfile import Spool, json_chunks, to_json

__all__ = ["Copy", "Render", "Spool", "check_path", "extensions", "register", "render", "write", "write_atomic"]


def extensions() -> list[str]:
    return registered()


def check_path(path: str) -> None:
    """Before anything runs: a usage error for an -o whose format is unknown or that cannot be written;
    a missing folder is created."""
    ext = os.path.splitext(path)[1].lower()
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


LEVEL = 3  # zlib's level for the history's copy of a report


class Copy:
    """What a report's writing wrote, kept compressed (zlib) as the chunks go by: the run's history keeps
    the JSON report's text without encoding the report a second time. At zlib's level 3, not its default 6:
    a 14 MB report of 10,000 results compresses in 0.04 s, not 0.11 s, into 196 KB, not 172 KB."""

    def __init__(self) -> None:
        self.data: bytes | None = None  # once the whole text went by
        self._start()

    def _start(self) -> None:
        self._zip = zlib.compressobj(LEVEL)
        self._parts: list[bytes] = []

    def tee(self, chunks: Iterable[str]) -> Iterator[str]:
        self._start()  # a second attempt (the rescue) starts over
        for chunk in chunks:
            self._parts.append(self._zip.compress(chunk.encode("utf-8", WRITE_ERRORS)))
            yield chunk
        self.data = b"".join([*self._parts, self._zip.flush()])


def write(report: RunReport, path: str, secrets: Secrets | Iterable[str] = (), copy: Copy | None = None,
          spool: Spool | None = None) -> str | None:
    """Write the report to ``path``; if that fails after the run, keep it in a temporary file and return
    that file's path (the run's work is never lost). ``copy`` keeps what was written."""
    def rendered() -> Iterable[str]:
        chunks = render(report, path, secrets, spool)
        return copy.tee(chunks) if copy is not None else chunks

    try:
        write_atomic(path, rendered())
        return None
    except OSError:
        return rescue(rendered(), path)
