"""Errors: user errors know their exit code, location and remedy (only cli.py prints them); run-time
failures inside a case are ``CallError``s, which become that case's result."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    INTERNAL = 3
    INTERRUPTED = 130
    TERMINATED = 143


@dataclass(frozen=True, slots=True)
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
    code: str | None = None  # a seed format's error code (B's envelope: code, message, hint, location)

    def __str__(self) -> str:
        said = f"{self.code}: {self.message}" if self.code else self.message
        text = f"{self.location}: {said}" if self.location else said
        return f"{text}; {self.hint}" if self.hint else text

    def at(self, location: Location | None) -> Problem:
        """The same problem, placed at ``location`` when it has no place of its own."""
        return self if self.location is not None or location is None else Problem(self.message, location, self.hint, self.code)

    def as_dict(self) -> dict[str, object]:
        """The envelope ``--json`` writes: code, message, hint and location (file, line, column)."""
        where = self.location
        return {"code": self.code, "message": self.message, "hint": self.hint, "file": where.file if where else None,
                "line": where.line if where else None, "column": where.column if where else None}


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

    def redacted(self, hide: Callable[[str], str]) -> AgentTestError:
        """This error with ``hide`` (secrets → ``***``) applied to every message, hint and file name, before it
        is printed or sent as the ``--json`` error event."""
        self.problems = [_hidden(p, hide) for p in self.problems]
        return self


def _hidden(problem: Problem, hide: Callable[[str], str]) -> Problem:
    where = problem.location
    if where is not None:
        where = Location(hide(where.file), where.line, where.column)
    return Problem(hide(problem.message), where, hide(problem.hint) if problem.hint else problem.hint, problem.code)


class InputError(AgentTestError):
    """Several problems found while loading and resolving input, reported together."""

    def __init__(self, problems: Iterable[Problem]):
        problems = list(dict.fromkeys(problems))
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


class Interrupted(AgentTestError):
    """Ctrl-C or SIGTERM before any case ran (while MCP servers started, say): exit 130 or 143, no report."""

    def __init__(self, terminated: bool):
        super().__init__(f"{'terminated' if terminated else 'interrupted'} before any case ran")
        self.exit_code = ExitCode.TERMINATED if terminated else ExitCode.INTERRUPTED


class InternalError(AgentTestError):
    """A bug in agent-test outside any case: exit 3, with the traceback and a plea for a bug report."""

    exit_code = ExitCode.INTERNAL

    def __init__(self, message: str, traceback: str):
        super().__init__(message)
        self.traceback = traceback

    @classmethod
    def of(cls, exc: BaseException) -> InternalError:
        import traceback

        return cls(f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc)))

    def redacted(self, hide: Callable[[str], str]) -> InternalError:
        super().redacted(hide)
        self.traceback = hide(self.traceback)
        return self

    def format_message(self) -> str:
        return (f"internal error: {self.problems[0].message}\n{self.traceback.rstrip()}\n"
                "This is a bug in agent-test; please report it with the traceback above.")


class CallError(Exception):
    """A call at run time failed — a model, an agent, a tool, a hook, user code; the case becomes ``error``."""

    def __init__(self, message: str, traceback: str | None = None, cause: str | None = None, location: str = ""):
        super().__init__(message)
        self.traceback = traceback
        self.cause = cause or message  # the exception alone, ``ValueError: bad amount`` (what a model is told)
        self.location = location  # ``tools.py:12``: where in the user's code it was raised
        self.denied = ""  # the reason, when user code refused by policy (PolicyDenied)


class PolicyDenied(Exception):
    """Raised by a tool (``ctx.deny(reason)``) that refuses a request on the grounds of the case's policy: the call
    is an error result saying why, counted as a policy violation."""


class CallLimit(CallError):
    """The agent under test was stopped before a model call its budget does not allow (``budget.model_calls``)."""


AgentError = CallError  # the name of round 1, kept for plug-ins that raise it


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice most like ``word``, if any is close."""
    matches = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A ``did you mean 'x'?`` hint for a misspelt name, or None."""
    match = closest(word, choices)
    return f"did you mean '{match}'?" if match else None


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with adjacent transpositions (``asert``/``assert`` 1, ``tpye``/``type`` 1)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def typo_of(word: str, known: Iterable[str]) -> str | None:
    """The known name ``word`` is almost surely a misspelling of (a small edit distance), or None."""
    limit = 1 if len(word) <= 5 else 2
    best = min(((edit_distance(word.lower(), k.lower()), k) for k in known if k != word), default=None)
    if best is None or best[0] > limit:
        return None
    return best[1]
