"""Secrets: the credentials of connectors and MCP servers (keys, tokens, passwords: ``app.credentials`` decides),
hidden wherever text is shown or written — console, events, reports, history, cassettes, error messages — whole
and by any piece long enough to matter, however the text was cut. Hiding is for display: ids are matched as
they are."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any
from agenttest.util.spool import is_spooled

MIN_LENGTH = 8  # shorter values would turn ordinary words, paths and ids into ***
PIECE = 12  # a piece of a secret this long is hidden as the secret: text cut anywhere keeps at most 11 of its characters
_GRAM = PIECE // 2  # every PIECE-long piece of a text holds one of the text's _GRAM-long slices that start at multiples of _GRAM
_RUN = b"\x01" * PIECE
_SLICES = re.compile(f".{{{_GRAM}}}", re.DOTALL)


class _Finder:
    """Where the secrets sit in a text: each whole, and every piece of PIECE characters or more of the longer
    ones — what is left of a key that something cut (a message, a preview, a table cell, a file name), or that a
    model or a tool repeated in part. Most text is passed over by one test in C: a piece is a run of PIECE
    characters or more that all occur in the secrets."""

    def __init__(self, values: list[str]):
        self.whole = [v for v in values if len(v) < PIECE]  # longest first
        self.grams: dict[str, list[tuple[str, int]]] = {}  # each _GRAM-long slice of a longer secret → (secret, offset)
        chars: set[str] = set()
        for value in values:
            if len(value) >= PIECE:
                chars.update(value)
                for at in range(len(value) - _GRAM + 1):
                    self.grams.setdefault(value[at:at + _GRAM], []).append((value, at))
        # a byte of the text's UTF-8 → 1 if it may belong to a secret's character: a piece is a run of PIECE ones
        wide = any(ord(c) > 0x7F for c in chars)
        self.table = bytes(1 if (chr(b) in chars if b < 0x80 else wide) else 0 for b in range(256))
        self.runs = re.compile(f"[{''.join(re.escape(c) for c in sorted(chars))}]{{{PIECE},}}") if chars else None
        self.shortest = min(PIECE, *map(len, values))

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of every secret and piece of one in ``text``, unsorted, maybe overlapping."""
        if len(text) < self.shortest:
            return []
        spans: list[tuple[int, int]] = []
        for value in self.whole:
            at = text.find(value)
            while at >= 0:
                spans.append((at, at + len(value)))
                at = text.find(value, at + 1)
        if self.runs is None:
            return spans
        ones = text.encode("utf-8", "surrogatepass").translate(self.table)
        at = ones.find(_RUN)
        if at < 0:
            return spans
        if not text.isascii():  # a byte is not a character: the runs are found in the text itself
            for run in self.runs.finditer(text):
                self._pieces(text, run.start(), run.end(), spans)
            return spans
        while at >= 0:
            end = ones.find(b"\x00", at)
            end = len(ones) if end < 0 else end
            self._pieces(text, at, end, spans)
            at = ones.find(_RUN, end)
        return spans

    def _pieces(self, text: str, lo: int, hi: int, spans: list[tuple[int, int]]) -> None:
        """The pieces inside the run ``text[lo:hi]``: each slice at a multiple of _GRAM that a secret holds is grown
        while the text goes on as that secret does."""
        slices = _SLICES.findall(text, lo, hi)
        if self.grams.keys().isdisjoint(slices):
            return
        done = lo
        for k, gram in enumerate(slices):
            at = lo + k * _GRAM
            if at < done:
                continue
            for value, offset in self.grams.get(gram, ()):
                start, end, i, j = at, at + _GRAM, offset, offset + _GRAM
                while i > 0 and start > lo and text[start - 1] == value[i - 1]:
                    start, i = start - 1, i - 1
                while j < len(value) and end < hi and text[end] == value[j]:
                    end, j = end + 1, j + 1
                if end - start >= PIECE:
                    spans.append((start, end))
                    done = max(done, end - _GRAM + 1)


def _hidden(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (overlapping or touching ones as one) replaced by ``***``."""
    out: list[str] = []
    last = 0
    for start, end in sorted(spans):
        if start > last or not out:
            out.append(text[last:start])
            out.append("***")
        last = max(last, end)
    out.append(text[last:])
    return "".join(out)


class Secrets:
    """A growing set of secret values (connectors resolved during the run add theirs) and redaction.

    Redaction is for what is shown: identity (case ids, files, connector ids) is matched on the values as they
    are, and only the text a run shows or writes goes through here. What ``scrub`` gave is remembered (until a
    new secret is learned), so a result hidden once for the console is not searched again for each report."""

    def __init__(self, values: Iterable[str] = ()):
        self._values: set[str] = set()
        self._short: set[str] = set()  # names of variables too short to redact, said once
        self._lock = threading.Lock()
        self._ordered: list[str] = []
        self._finder: _Finder | None = None
        self._memo: dict[int, tuple[Any, Any]] = {}  # id(value) → (value, value hidden), for the secrets known now
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
                self._finder = _Finder(self._ordered)
                self._memo = {}  # what was hidden before may hold the new one

    def redact(self, text: str) -> str:
        """``text`` with every secret, and every piece of PIECE characters or more of one, replaced by ``***``."""
        finder = self._finder
        if finder is None:
            return text
        spans = finder.spans(text)
        return _hidden(text, spans) if spans else text

    def scrub(self, value: Any) -> Any:
        """``value`` — a string, a container, a frozen dataclass such as a CaseResult or the RunReport — with every
        secret replaced in every string (dict keys, set members and bytes included): what every output of a run
        is made from, before anything escapes it for a format. What holds no secret is returned as it is."""
        if self._finder is None:
            return value
        memo = self._memo
        known = memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        hidden = _scrub(value, self.redact, memo)
        if dataclasses.is_dataclass(value):  # results and reports: the console's result is the report's
            memo[id(value)] = (value, hidden)
            memo[id(hidden)] = (hidden, hidden)
        return hidden

    def scrub_once(self, value: Any) -> Any:
        """``scrub`` that remembers nothing (a streamed run's result: holding each would hold them all)."""
        return value if self._finder is None else _scrub(value, self.redact, {})

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
    """Hide each of ``secrets`` (and its pieces) in ``text``, for callers holding plain values."""
    return Secrets(secrets).redact(text)


_PLAIN = frozenset({int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's fields that __init__ takes, by class


def _fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.init)
    return names


def _scrub(value: Any, redact: Callable[[str], str], memo: dict[int, tuple[Any, Any]]) -> Any:
    """Keys, set members and bytes too: a key held anywhere in tool data is hidden before it is shown. What
    holds no secret is returned as it is (the same object): a report is not copied to be searched."""
    kind = type(value)
    if kind is str:
        return redact(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        items = [(_scrub(k, redact, memo), _scrub(v, redact, memo)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if is_spooled(value):  # a streamed run's results on disk: each hidden as it is read (memo-less: none is held)
        return value.mapped(lambda v: _scrub(v, redact, {}))  # type: ignore[attr-defined]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_scrub(v, redact, memo) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value).decode("utf-8", "surrogateescape")
        hidden = redact(text)
        return value if hidden == text else type(value)(hidden.encode("utf-8", "surrogateescape"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        known = memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        changes = {}
        for name in _fields(kind):
            before = getattr(value, name)
            after = _scrub(before, redact, memo)
            if after is not before:
                changes[name] = after
        return dataclasses.replace(value, **changes) if changes else value
    return value
