"""How a Ray actor died. Ray says the same of every death ("… the worker crashed unexpectedly due to SIGSEGV or
another unexpected error"), so an actor leaves its own last words: ``os._exit(n)`` in user code says ``exit code
n`` in Ray's key-value store before the process ends (on any cluster), and a fatal signal is written by
``faulthandler`` to a file in the local Ray's folder (a Ray the run started: the file is on this machine). A
death without last words is said as Ray knows it."""

from __future__ import annotations

import faulthandler
import os
from typing import Any

NAMESPACE = "agenttest"
# what faulthandler writes for each fatal signal it catches
SIGNALS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS", "Floating-point exception": "SIGFPE",
           "Floating point exception": "SIGFPE", "Illegal instruction": "SIGILL"}
_kept: list[Any] = []  # the file faulthandler writes to, kept open for the actor's life


def _key(token: str) -> bytes:
    return f"death:{token}".encode()


def install(token: str, folder: str | None) -> None:
    """In the actor: leave last words on ``os._exit`` and on a fatal signal."""
    from ray.experimental import internal_kv

    real = os._exit

    def exit_with_words(status: int = 0) -> None:
        try:
            internal_kv._internal_kv_put(_key(token), f"exit code {status}".encode(), overwrite=True, namespace=NAMESPACE)
        finally:
            real(status)

    os._exit = exit_with_words  # type: ignore[assignment]
    if folder is not None and os.path.isdir(folder):
        try:
            out = open(os.path.join(folder, f"death-{token}"), "w")  # noqa: SIM115 — open for the actor's life
        except OSError:
            return
        _kept.append(out)
        faulthandler.enable(file=out, all_threads=False)


def read(token: str, folder: str | None) -> str | None:
    """In the controller, once the actor is gone: its last words as a lost worker's reason (``exit code 0``,
    ``signal SIGSEGV``), or None."""
    try:
        from ray.experimental import internal_kv

        said = internal_kv._internal_kv_get(_key(token), namespace=NAMESPACE)
        if said:
            internal_kv._internal_kv_del(_key(token), namespace=NAMESPACE)
            return str(said.decode("utf-8", "replace"))
    except Exception:  # noqa: BLE001 — Ray gone, or a version without the store: no words from there
        pass
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, f"death-{token}"), encoding="utf-8", errors="replace") as f:
            text = f.read(4096)
    except OSError:
        return None
    return next((f"signal {name}" for words, name in SIGNALS.items() if f"Fatal Python error: {words}" in text), None)


def said_by_ray(exc: BaseException) -> str:
    """A death with no last words, as Ray knows it (it cannot tell a crash from a signal or an exit)."""
    text = str(exc)
    if "OutOfMemoryError" in type(exc).__name__ or "low on memory" in text:
        return "killed by Ray: the node ran low on memory"
    if "ray.kill" in text:
        return "the Ray actor was killed (ray.kill)"
    return "the Ray actor's process ended (Ray does not say how: a crash, a signal, an exit or the OOM killer)"
