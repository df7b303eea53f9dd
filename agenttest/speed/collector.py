"""CPython's cyclic garbage collector, at start-up and in a run.

Start-up — importing agenttest, click and the SDKs — makes ~80,000 long-lived objects and no garbage, yet
the collector scanned them again and again: ~60 passes, 33–38 ms before the first request of a one-case
run (bench/RESULTS.md). So those imports run inside ``importing``: the collector off, then as it was.

In a process of agenttest's own — the command, ``claim``ed by ``agenttest.speed.install`` (``cli.entry``), or a
Ray actor's, which Ray starts for the actor and ends with it (``runner/ray.py``) —
a block that imported something ends by freezing what it made (never scanned again), and ``run_begins`` sets
thresholds for a run of many small objects. ``paused`` keeps the collector off while a report is read back.
A library caller's, pytest's or a CliRunner's collector is never touched beyond a block."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator

RUN_THRESHOLDS = (20_000, 20, 20)  # CPython's default is (700, 10, 10)
_ours = False  # set by ``claim``: only then do ``importing`` freeze and ``run_begins`` set thresholds


def claim() -> None:
    """The process is agenttest's own (the ``agent-test`` command, a Ray actor's process)."""
    global _ours
    _ours = True


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """No collection inside the block; after it, the collector as it was before. In a claimed process, what
    the block made is frozen if it imported a module."""
    collecting, modules = gc.isenabled(), len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if _ours and len(sys.modules) > modules:  # it imported: what it made is never scanned again (moved to
            gc.freeze()  # the permanent generation, not traversed); a block that imported nothing freezes nothing
        if collecting:
            gc.enable()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No collection inside the block, then the collector as it was: for a block that makes objects by the million
    and no cycle — a report read back (its parsed JSON and frozen results), where the collector's passes over
    what the block made were ~40% of the time at 30,000 results (bench/readback.py). Any caller's process."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def run_begins() -> None:
    """In a process of our own: freeze what start-up made, and collect at the run's thresholds."""
    if _ours:
        gc.freeze()
        gc.set_threshold(*RUN_THRESHOLDS)
