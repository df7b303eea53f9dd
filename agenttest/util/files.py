"""Files agent-test writes (reports, dry-run cases, ``--lf`` memory): checked before the run, written
atomically (the whole old file or the whole new one, never half), and default names that never
overwrite an earlier report."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from datetime import datetime

from agenttest.errors import AgentTestError

# A lone surrogate that reached a writer anyway is written as its escape (``\ud83d``), never a failed write:
# inside a JSON string that is the same JSON escape, so the file stays valid and reads back.
WRITE_ERRORS = "backslashreplace"


def write_atomic(path: str, content: str | Iterable[str]) -> None:
    """Write to a temporary file beside ``path``, then rename over it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".agent-test-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=WRITE_ERRORS) as fh:
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


def prepare(path: str, flag: str = "-o") -> None:
    """Before anything runs: the target's folder exists (created if missing) and can be written to."""
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        raise AgentTestError(f"{flag} {path}: is a folder; give a file name", hint="e.g. -o reports/run.json")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        _probe(folder)
    except OSError as exc:
        blocker = _file_in_the_way(folder)
        if blocker is not None:
            raise AgentTestError(f"{flag} {path}: {blocker} is a file, so no folder can be made there",
                                 hint="give a path whose folders are folders, e.g. -o reports/run.json") from None
        raise AgentTestError(f"{flag} {path}: cannot write there: {exc.strerror or exc}", hint="choose a folder you can write to") from None


def _file_in_the_way(folder: str) -> str | None:
    """The nearest part of ``folder``'s path that exists and is a file, if any."""
    while folder and not os.path.exists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return folder if os.path.isfile(folder) else None


REPORTS = "reports"  # the folder of the app root where reports go when no -o is given


def default_report(folder: str, cwd: str | None = None) -> str:
    """``output-YYYYMMDDHHMMSS.json`` in ``folder`` (made if missing), reserved at once so that a second run in
    the same second gets ``output-YYYYMMDDHHMMSS-2.json`` instead of overwriting the first one's report."""
    stamp = datetime.now().strftime("%Y%m%d%H%M%S")
    try:
        os.makedirs(folder or ".", exist_ok=True)
        for n in range(1, 10_000):
            path = os.path.join(folder or ".", f"output-{stamp}{'' if n == 1 else f'-{n}'}.json")
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                return _relative(path, cwd)
            except FileExistsError:
                continue
    except OSError as exc:  # a read-only app (or reports/ folder): said before anything runs, like an -o there
        raise _unwritable(folder, exc, cwd) from None
    raise AgentTestError(f"cannot find a free report name in {folder}")


def check_report_folder(folder: str, cwd: str | None = None) -> None:
    """What ``default_report`` would say, without making the folder or a report (``--dry-run``, ``--list``):
    a probe file is made and removed in the folder, or in the nearest folder above it that exists."""
    near = folder or "."
    while not os.path.exists(near) and os.path.dirname(near) != near:
        near = os.path.dirname(near)
    try:
        _probe(near)
    except OSError as exc:
        raise _unwritable(folder, exc, cwd) from None


def _probe(folder: str) -> None:
    """Raise OSError unless a file can be made in ``folder`` (a file made and removed: permissions, read-only
    mounts and root's capabilities all answer, which ``os.access`` does not)."""
    fd, probe = tempfile.mkstemp(prefix=".agent-test-probe-", dir=folder)
    os.close(fd)
    os.unlink(probe)


def _unwritable(folder: str, exc: OSError, cwd: str | None) -> AgentTestError:
    blocker = _file_in_the_way(folder)
    why = f"{blocker} is a file" if blocker else (exc.strerror or str(exc))
    return AgentTestError(f"cannot write the run's report in {_relative(folder, cwd) or '.'}/: {why}",
                          hint="pass -o FILE somewhere you can write, e.g. -o /tmp/run.json")


def rescue(content: Iterable[str], name: str) -> str:
    """When a report cannot be written where asked after the run, keep it in a temporary file."""
    fd, tmp = tempfile.mkstemp(prefix="agent-test-report-", suffix=os.path.splitext(name)[1])
    with os.fdopen(fd, "w", encoding="utf-8", errors=WRITE_ERRORS) as fh:
        fh.writelines(content)
    return tmp


def _relative(path: str, cwd: str | None = None) -> str:
    """A path below the current folder (``cwd``) as a relative one (as the user would write it), others as they are."""
    if not os.path.isabs(path):
        return path
    shorter = os.path.relpath(path, cwd)
    return path if shorter.startswith("..") else shorter
