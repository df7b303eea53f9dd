"""User-facing errors: each knows its exit code, its location and a remedy; only cli.py prints them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    INTERRUPTED = 130


@dataclass(frozen=True)
class Location:
    """Where something was written: ``file:line:column`` (line and column 1-based, optional)."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the user's input."""

    message: str
    location: Location | None = None
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}; {self.hint}" if self.hint else text


class AgentTestError(Exception):
    """A user error: bad usage or bad input. Exit code 2 unless a subclass says otherwise."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, location: Location | None = None, hint: str | None = None):
        super().__init__(message)
        self.problems: list[Problem] = [Problem(message, location, hint)]

    def format_message(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def __str__(self) -> str:
        return self.format_message()


class InputError(AgentTestError):
    """Several problems found while loading input, reported together."""

    def __init__(self, problems: Iterable[Problem]):
        problems = list(problems)
        super().__init__(problems[0].message if problems else "invalid input")
        self.problems = problems

    def format_message(self) -> str:
        count = len(self.problems)
        lines = [str(p) for p in self.problems]
        if count > 1:
            lines.append(f"{count} problems found; nothing was run")
        return "\n".join(lines)


class HookError(AgentTestError):
    """A global hook (BeforeAll) failed: the run stops before any case."""


class AgentError(Exception):
    """A failure of an agent, connector, tool or hook at run time; becomes a case result."""


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A ``did you mean 'x'?`` hint for a misspelt name, or None."""
    matches = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean '{matches[0]}'?" if matches else None
