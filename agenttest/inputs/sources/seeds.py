"""What the sources of the seed formats share (FORMATS §18): a file read strictly, converted into agent-test's own
file, and built into cases whose places — for any later problem — are found in the file as written."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from agenttest.errors import InputError, Location, Problem
from agenttest.inputs import suites
from agenttest.inputs.building import build_cases
from agenttest.inputs.documents import Loaded
from agenttest.inputs.formats.strict import Checker, Read, Translated, read_json, sniff
from agenttest.inputs.sources.base import LoadEnv, OneFile, counted


@dataclass(frozen=True, kw_only=True)
class Format:
    """A seed format as its source reads it: its name, whether parsed JSON has its shape, its checks, its conversion
    (to ``{"suite"?, "cases"}``), and where a place of a converted case (``index``; -1 the suite) was written."""

    name: str
    keys: tuple[str, ...]  # keys its files always have (a cheap look before parsing)
    recognises: Callable[[Any], bool]
    check: Callable[[Any], Checker]
    convert: Callable[[Any], dict[str, Any]]
    original: Callable[[int, tuple[Any, ...]], tuple[Any, ...]]
    shape: str  # what its files look like, for a file forced with the prefix that does not
    original_listed: Callable[[int, tuple[Any, ...]], tuple[Any, ...]] | None = None  # ``original`` for a file that is a list


@dataclass(frozen=True)
class SeedFile(OneFile):
    """A file in a seed format, given with ``-i`` (recognised by its shape, or forced with its prefix)."""

    format: ClassVar[Format]

    def describe(self, count: int) -> str:
        return f"{self.path} ({self.format.name}, {counted(count)})"

    async def load(self, env: LoadEnv) -> Loaded:
        return await asyncio.to_thread(load, self.format, self.path, env)

    @classmethod
    def convert(cls, path: str) -> dict[str, Any]:
        """The native document of the file (``{"suite"?, "cases"}``: ``agent-test convert``); its problems (exit 2,
        located) when it is not what its document says."""
        _, native, problems = read(cls.format, path)
        if native is None:
            raise InputError(problems)
        return native

    @classmethod
    def recognises(cls, path: str) -> bool:
        """Whether a ``.json`` file has this format's shape."""
        data = sniff(path, cls.format.keys)
        return data is not None and cls.format.recognises(data)


def read(fmt: Format, path: str) -> tuple[Read, dict[str, Any] | None, list[Problem]]:
    """The file read, checked and converted (None and the problems when it is not what its document says)."""
    got = read_json(path)
    if got.problems or got.doc is None:
        return got, None, list(got.problems)
    if not fmt.recognises(got.data):
        return got, None, [Problem(f"not a {fmt.name} file: {fmt.shape}", Location(path, 1, 1), "give a case file without the prefix")]
    checked = fmt.check(got.data)
    if checked.found:
        return got, None, checked.problems(got.doc)
    return got, fmt.convert(got.data), []


def load(fmt: Format, path: str, env: LoadEnv) -> Loaded:
    """The file's cases (and its suite): each converted case built as a case of agent-test's own file is."""
    got, native, problems = read(fmt, path)
    if native is None:
        return Loaded(problems=problems)
    assert got.doc is not None
    text = got.doc.text
    original = fmt.original_listed if fmt.original_listed is not None and isinstance(got.data, list) else fmt.original
    docs = [Translated(raw=raw, source=path, text=text, origin=functools.partial(original, i)) for i, raw in enumerate(native["cases"])]
    loaded = Loaded()
    loaded.cases = build_cases(docs, os.path.dirname(os.path.abspath(path)), env.default_simulator, loaded, env.policy)
    if "suite" in native:
        suite = Translated(raw={"suite": native["suite"]}, source=path, text=text, origin=functools.partial(fmt.original, -1))
        loaded.cases = suites.attach(suite, loaded)
    return loaded
