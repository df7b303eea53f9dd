"""Output to a reader that may leave: ``agent-test … | head -3`` closes the pipe after three lines; the run
goes on (its report is still written, its exit code still says the verdict) and says nothing more."""

from __future__ import annotations

import os
from typing import Any, TextIO


class PipeSafe:
    """A text stream whose writes stop, silently, once the reader has closed the pipe."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        """The reader left: what is still buffered goes to /dev/null, so that exiting does not complain either."""
        self.closed_by_reader = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # not a real file (a test's buffer): nothing to redirect
            pass

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, … of the stream inside
        return getattr(self.stream, name)
