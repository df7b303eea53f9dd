"""``--lf``: the cases that did not pass in the previous run of the same inputs, kept in
``<app root>/.agent-test/lastfailed.json`` (one entry per set of inputs, so suites do not mix)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agenttest.model import CaseResult, Gate
from agenttest.util.files import write_atomic
from agenttest.util.secrets import Secrets

FOLDER = ".agent-test"


def key(inputs: Sequence[str]) -> str:
    """The same inputs, however they are spelled on the command line, give the same key."""
    norm = sorted(os.path.abspath(i) if os.path.exists(i) else i for i in inputs)
    return hashlib.sha256("\n".join(norm).encode()).hexdigest()[:16]


def _path(root: str) -> str:
    return os.path.join(root, FOLDER, "lastfailed.json")


def _read(root: str) -> tuple[dict[str, list[list[str]]], str | None]:
    """The memory of earlier runs, and a warning when the file is there but not one agent-test wrote (corrupt,
    nested past the parser, wrong shapes): then it is ignored, never the end of the run."""
    path = _path(root)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        return {}, f"{path} cannot be read ({why}); ignored, so --lf runs every case (it is rewritten after this run)"
    kept = {k: v for k, v in data.items() if _pairs(v)} if isinstance(data, dict) else {}
    if not isinstance(data, dict) or len(kept) != len(data):
        return kept, f"{path} is not as agent-test writes it; what is not was ignored (it is rewritten after this run)"
    return kept, None


def _pairs(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, list) and len(x) in (2, 3) and all(isinstance(y, str) for y in x) for x in value)


def _digest(file: str, case_id: str) -> str:
    return "sha256:" + hashlib.sha256(f"{file}\0{case_id}".encode("utf-8", "surrogatepass")).hexdigest()


def _entry(file: str, case_id: str, secrets: Secrets | None) -> list[str]:
    """How a case is remembered: ``[file, id]``; a case whose file or id holds a secret (a generator that echoed
    the key) as ``[file, id]`` hidden, then the SHA-256 of the two as they are — what is matched."""
    if not secrets:
        return [file, case_id]
    shown = [secrets.redact(file), secrets.redact(case_id)]
    return shown if shown == [file, case_id] else [*shown, _digest(file, case_id)]


@dataclass(frozen=True)
class Remembered:
    """The cases that did not pass last time: ``(file, id) in remembered`` (on the ids as they are)."""

    pairs: frozenset[tuple[str, str]] = frozenset()
    digests: frozenset[str] = frozenset()

    def __contains__(self, key: object) -> bool:
        if key in self.pairs:
            return True
        return bool(self.digests) and isinstance(key, tuple) and _digest(*key) in self.digests

    def __len__(self) -> int:
        return len(self.pairs) + len(self.digests)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.pairs)


def _remembered(entries: list[list[str]]) -> Remembered:
    return Remembered(frozenset((e[0], e[1]) for e in entries if len(e) == 2), frozenset(e[2] for e in entries if len(e) == 3))


def load(root: str, inputs: Sequence[str], warnings: list[str] | None = None) -> Remembered:
    """The cases that did not pass last time; none when there was no last time. A file that is not as
    agent-test writes it adds a warning to ``warnings`` and counts as no last time."""
    data, problem = _read(root)
    if problem and warnings is not None:
        warnings.append(problem)
    return _remembered(data.get(key(inputs), []))


def save(root: str, inputs: Sequence[str], results: Iterable[CaseResult], gates: Iterable[Gate] = (), secrets: Secrets | None = None) -> None:
    """Remember which cases did not pass — with gates, those whose gate failed (a flaky case within its
    gate passed). As pytest does, a run that selected only some cases (``-k``, ``--run``, ``--lf``, or
    one cut short) updates only those: the failures of cases it did not run are kept. A case whose file or
    id holds one of ``secrets`` is written with the secret hidden, and found again by its digest. Best
    effort: a read-only app folder only loses the memory."""
    results = results if isinstance(results, Sequence) else tuple(results)  # a streamed run's stay on disk
    gates = gates if isinstance(gates, Sequence) else tuple(gates)
    path = _path(root)
    data = _read(root)[0]
    entries = data.get(key(inputs), [])
    before = _remembered(entries)
    # only the remembered failures are looked up among what ran: not a set of 100,000 cases that passed
    if gates:
        ran = {k for g in gates if g.runs and (k := (g.file, g.id)) in before}
        failed = {(g.file, g.id) for g in gates if g.verdict == "failed"}
    else:
        ran = {k for r in results if r.status != "skipped" and (k := (r.file, r.id)) in before}
        failed = {(r.file, r.id) for r in results if not r.ok}
    gone = {k for k in ran if k in before.pairs} | {_digest(*k) for k in ran}
    kept = [e for e in entries if (e[2] if len(e) == 3 else (e[0], e[1])) not in gone]
    data[key(inputs)] = sorted(kept + [_entry(f, i, secrets) for f, i in failed])
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass
