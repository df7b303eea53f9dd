"""Speed machinery behind one door: ``install()``, which the ``agent-test`` command's entry point
(``cli.entry``) calls before it imports the run's modules, and so does a Ray actor in the process Ray starts for it
alone (``runner/rayactor.py``); nothing else does. A program that imports
agenttest (pytest, a library caller) gets none of it: the standard library's dataclasses, the collector as
it was, the constructors ``dataclasses`` wrote.

What it turns on: the compiled methods of agenttest's dataclasses kept beside its bytecode
(``classcache``: ~40 ms of every start-up on Python 3.11), the garbage collector's handling of a process
of our own (``collector``: start-up's objects frozen, the run's thresholds), a faster ``__init__`` for the
classes made by the million (``records.fast``), and the history recorded in a forked copy of the process
(``installed()``, read by the session). ``records.replace`` and ``records.builder`` are plain functions
any caller may use: they change nothing outside the objects they make. bench/RESULTS.md has the figures."""

from __future__ import annotations

import os

_installed = False


def install() -> None:
    """Turn on the speed machinery in this process (once); call it before agenttest's other modules import."""
    global _installed
    if _installed:
        return
    _installed = True
    from agenttest.speed import collector  # here: ``from agenttest.speed import collector`` imports only it

    collector.claim()
    with collector.importing():  # the kept code read: thousands of code objects, no garbage
        from agenttest.speed import classcache, records

        classcache.install(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        records.install()


def installed() -> bool:
    """Whether this process is the command's own (``install`` ran): only there may a run fork copies of it."""
    return _installed
