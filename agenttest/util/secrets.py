"""Secrets: the values substituted from ``$ENV`` into connectors (API keys, tokens), hidden wherever
text is shown or written — console, reports, error messages."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable
from typing import Any

MIN_LENGTH = 8  # shorter values would turn ordinary words, paths and ids into ***


class Secrets:
    """A growing set of secret values (connectors resolved during the run add theirs) and redaction."""

    def __init__(self, values: Iterable[str] = ()):
        self._values: set[str] = set()
        self._short: set[str] = set()  # names of variables too short to redact, said once
        self._lock = threading.Lock()
        self._ordered: list[str] = []
        for value in values:
            self.add(value)

    def add(self, value: str, name: str = "") -> None:
        """Remember ``value`` (from the variable ``name``) as a secret to hide."""
        if not value:
            return
        with self._lock:
            if len(value) < MIN_LENGTH:
                if name:
                    self._short.add(name)
                return
            if value not in self._values:
                self._values.add(value)
                # longest first: a key that contains another is hidden whole
                self._ordered = sorted(self._values, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        for secret in self._ordered:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def scrub(self, value: Any) -> Any:
        """``value`` — a string, a container, a frozen dataclass such as a CaseResult — with every secret
        replaced, before anything shortens it for display (a cut could otherwise keep part of a key)."""
        return _scrub(value, self.redact) if self._ordered else value

    def short_names(self) -> list[str]:
        """Variables whose values were too short to be hidden (a warning says so once)."""
        return sorted(self._short)

    def state(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What a worker learned (values, short variables' names), for the controller to ``learn``."""
        with self._lock:
            return tuple(self._ordered), tuple(sorted(self._short))

    def learn(self, state: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
        values, short = state
        for value in values:
            self.add(value)
        with self._lock:
            self._short.update(short)

    def __bool__(self) -> bool:
        return bool(self._ordered)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._ordered))


def redact(text: str, secrets: Iterable[str]) -> str:
    """Hide each of ``secrets`` in ``text`` (for callers holding plain values)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret and len(secret) >= MIN_LENGTH:
            text = text.replace(secret, "***")
    return text


def _scrub(value: Any, redact: Callable[[str], str]) -> Any:
    """Keys, set members and bytes too: a key held anywhere in tool data is hidden before it is shown. What
    holds no secret is returned as it is (the same object): a report is not copied to be searched."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        items = [(_scrub(k, redact), _scrub(v, redact)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_scrub(v, redact) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value).decode("utf-8", "surrogateescape")
        hidden = redact(text)
        return value if hidden == text else type(value)(hidden.encode("utf-8", "surrogateescape"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.init:
                before = getattr(value, f.name)
                after = _scrub(before, redact)
                if after is not before:
                    changes[f.name] = after
        return dataclasses.replace(value, **changes) if changes else value
    return value