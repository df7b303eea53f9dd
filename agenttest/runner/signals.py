"""Ctrl-C and SIGTERM during a run's resolution and its run: turned into a stop of the task that is running
(``Signals.task``), which the session says or turns into a report of what ran. Its own module: resolving a
preview (``--list``, ``--dry-run``) needs it and none of the runner's machinery."""

from __future__ import annotations

import asyncio
import signal
from typing import Any


class Signals:
    """Ctrl-C and SIGTERM, from the start of the run until its report is written: the first stops the cases
    (After and AfterAll still run); any signal while the report is written lets the write finish."""

    def __init__(self) -> None:
        self.caught: signal.Signals | None = None
        self.task: asyncio.Task[Any] | None = None
        self._installed: list[signal.Signals] = []

    def _stop(self, sig: signal.Signals) -> None:
        if self.caught is None:
            self.caught = sig
        if self.task is not None:
            self.task.cancel()

    def __enter__(self) -> Signals:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._stop, sig)
                self._installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)
