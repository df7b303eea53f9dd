"""What the controller and a local worker say to each other: length-prefixed pickled frames over a socket pair
(``Channel``), our frozen result classes sent as a class number and their field values and rebuilt without
``__init__`` (the repeated labels and values as one object each), the timing of heartbeats and stops, and the
cassettes a worker recorded."""

from __future__ import annotations

import asyncio
import copyreg
import dataclasses
import io
import operator
import os
import pickle
import socket
import threading
from collections.abc import Callable
from typing import Any

from agenttest import model
from agenttest.agents.caller import Caller
from agenttest.connectors.cassettes import Cassettes, cassette_name
from agenttest.model import Case, CaseResult
from agenttest.runner.case import AFTER_GRACE
from agenttest.speed import records


HEARTBEAT = 0.5


EAGER = 4  # a worker's results go out at least this often (frames), not only when its loop turns


def seconds(name: str, default: float) -> float:
    """A number of seconds from the environment (``config.check_environment`` says what is wrong with one)."""
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


SILENCE = seconds("AGENTTEST_WORKER_SILENCE", 4.0)  # seconds without a word before a worker is lost


STOP_GRACE = AFTER_GRACE + 1.0  # a stopping worker's After hooks and MCP servers get this long


def _made(tag: int, values: tuple[Any, ...]) -> Any:
    """What a result's objects are rebuilt by in the controller: the class numbered ``tag`` from its field values
    (``records.builder``: no ``__init__``). One global a message for pickle to name, not one per class."""
    return _BUILDERS[tag](values)


def _dataclass_reducer(cls: type, tag: int) -> Any:
    """A frozen dataclass with slots pickles through dataclasses' own ``__getstate__``/``__setstate__``, which
    call ``fields()`` each time (a result is a dozen such objects), and is rebuilt by its ``__init__``: sent
    instead as its number and its values (read with a C ``attrgetter``), rebuilt by ``_made``."""
    names = [f.name for f in dataclasses.fields(cls)]
    get = operator.attrgetter(*names)
    if len(names) == 1:
        return lambda obj: (_made, (tag, (get(obj),)))
    return lambda obj: (_made, (tag, get(obj)))


# the fields whose text repeats from one result to the next (a status, a role, a connector's or a model's name,
# an assertion's type and what it checked; a case's id and file, which its case holds interned): rebuilt as
# one shared object each (``records.builder``), not one copy per result
_LABELS: dict[type, tuple[str, ...]] = {
    model.CaseResult: ("status", "skip_reason"),
    model.CaseKey: ("file", "id", "connector"),
    model.AssertionResult: ("type", "message", "expected", "checked"),
    model.Spend: ("role", "connector"),
    model.ModelCall: ("role", "connector", "model"),
    model.ToolCall: ("name", "server", "location"),
    model.CheckpointResult: ("id", "description", "tool"),
    model.WorldChange: ("path", "op"),
}


_BUILT = {cls: records.builder(cls, _LABELS.get(cls, ())) for cls in sorted(vars(model).values(), key=lambda c: getattr(c, "__qualname__", ""))
          if isinstance(cls, type) and dataclasses.is_dataclass(cls)}  # in the same order in both processes


_HELD: set[int] = set()  # the ids of the objects the builders below keep for good (an id kept alive is never reused)


def _one_per_value(build: Callable[[tuple[Any, ...]], Any], most: int = 4096,
                   plain: Callable[[tuple[Any, ...]], bool] | None = None) -> Callable[[tuple[Any, ...]], Any]:
    """``build`` for an immutable value type that results repeat (a ``Usage``: a case's, then its spend's; an
    assertion's verdict; a spend): one object per distinct value, for the first ``most`` distinct values (then
    built each time). ``plain(values)``: whether these values may be looked up at all (equal is not alike when
    1 == 1.0 == True: a score or a cost that JSON writes differently is built, not shared)."""
    made: dict[tuple[Any, ...], Any] = {}

    def one(values: tuple[Any, ...]) -> Any:
        if plain is not None and not plain(values):
            return build(values)
        try:
            obj = made.get(values)
        except TypeError:  # a value that cannot be a key (what a connector of the user's counted)
            return build(values)
        if obj is None:
            obj = build(values)
            if len(made) < most:
                made[values] = obj
                _HELD.add(id(obj))
        return obj
    return one


def _result_builder(build: Callable[[tuple[Any, ...]], Any], most: int = 4096) -> Callable[[tuple[Any, ...]], Any]:
    """``build`` for a CaseResult whose output text and tuples of assertions, spends and model calls are one
    object per distinct value (100,000 results of one agent repeat them): a text up to 512 characters (a
    mock's or a cassette's reply; a model's long answers are seldom alike, and the memo outlives the run in
    a library caller's process), a tuple whose every item is one the builders keep (looked up by those
    items' ids, so that 1 and 1.0 never meet)."""
    names = [f.name for f in dataclasses.fields(CaseResult)]
    at = [names.index(n) for n in ("output", "assertions", "spend", "model_calls")]
    memos: list[dict[Any, Any]] = [{} for _ in at]  # each field its own: 4,096 distinct outputs leave the tuples shared
    held = _HELD

    def one(values: tuple[Any, ...]) -> Any:
        changed = None
        for i, made in zip(at, memos):
            x = values[i]
            kind = type(x)
            if kind is str and len(x) <= 512:
                key: Any = x
            elif kind is tuple and x and all(id(item) in held for item in x):
                key = (_BY_ID, *map(id, x))
            else:
                continue
            got = made.get(key)
            if got is None:
                if len(made) >= most:
                    continue
                made[key] = got = x
            if got is not x:
                changed = changed or list(values)
                changed[i] = got
        return build(values if changed is None else tuple(changed))
    return one


_BY_ID = object()  # marks a key of items' ids (no text equals it)


_TEXT = (str, type(None))


def _plain_verdict(values: tuple[Any, ...]) -> bool:
    """An AssertionResult with no score, no details and only text (or nothing) as expected and actual."""
    return values[5] is None and values[6] is None and type(values[3]) in _TEXT and type(values[4]) in _TEXT


_SHARED: dict[type, Callable[[Callable[[tuple[Any, ...]], Any]], Callable[[tuple[Any, ...]], Any]]] = {
    model.Usage: _one_per_value,
    model.AssertionResult: lambda build: _one_per_value(build, plain=_plain_verdict),
    model.Spend: lambda build: _one_per_value(build, plain=lambda v: v[4] is None or type(v[4]) is float),
    model.ModelCall: lambda build: _one_per_value(build, plain=lambda v: type(v[3]) is float),
    model.CaseResult: _result_builder,
}


_CLASSES = [cls for cls, build in _BUILT.items() if build is not None]


_BUILDERS: list[Callable[[tuple[Any, ...]], Any]] = [_SHARED[cls](_BUILT[cls]) if cls in _SHARED else _BUILT[cls]  # type: ignore[arg-type,index,misc]
                                                      for cls in _CLASSES]


REDUCERS = {cls: _dataclass_reducer(cls, tag) for tag, cls in enumerate(_CLASSES)}


_INPUT = [f.name for f in dataclasses.fields(CaseResult)].index("input")


def _result_reducer() -> Callable[[CaseResult], Any]:
    """CaseResult's reducer: a result whose input is the thread's ``left`` (``pickled``'s ``without_input``, the same
    object) is sent without it — a
    result's input is its case's: the controller puts back its own case's. Less to pickle on both ends, and 100,000
    results no longer hold 100,000 copies of their cases' histories."""
    values = REDUCERS[CaseResult]

    def reduce(obj: CaseResult) -> Any:
        made, (tag, fields) = values(obj)
        left = getattr(_KEPT, "left", None)
        if left is not None and fields[_INPUT] is left:
            return made, (tag, fields[:_INPUT] + (None,) + fields[_INPUT + 1:])
        return made, (tag, fields)
    return reduce


REDUCERS[CaseResult] = _result_reducer()


_TABLE = {**copyreg.dispatch_table, **REDUCERS}


_KEPT = threading.local()  # a thread's pickler and its buffer, kept (a Pickler made per message was a third of pickling a result)


def pickled(message: tuple[Any, ...], without_input: Any = None) -> bytes:
    # ours over whatever copyreg knows (re.Pattern, and what user code registers there): the table, and the picklers
    # that hold it, are made again only when copyreg's has changed
    global _TABLE
    if len(_TABLE) != len(REDUCERS) + len(copyreg.dispatch_table) or any(_TABLE.get(k) is not v for k, v in copyreg.dispatch_table.items()):
        _TABLE = {**copyreg.dispatch_table, **REDUCERS}
    kept = getattr(_KEPT, "pickler", None)
    nested = getattr(_KEPT, "busy", False)  # a dump within a dump (a user's reducer that sends): a pickler of its own
    if kept is None or nested or kept[1].dispatch_table is not _TABLE:
        out = io.BytesIO()
        pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = _TABLE  # type: ignore[assignment]
        if not nested:
            _KEPT.pickler = (out, pickler)
    else:
        out, pickler = kept
        out.seek(0)
        out.truncate()
        pickler.clear_memo()
    before = getattr(_KEPT, "left", None)
    _KEPT.busy, _KEPT.left = True, without_input
    try:
        pickler.dump(message)
        return out.getvalue()
    except BaseException:
        if not nested:
            _KEPT.pickler = None  # in an unknown state: made again
        raise
    finally:
        _KEPT.busy, _KEPT.left = nested, before


class Channel:
    """Messages (tuples) both ways over one stream socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self._out: list[bytes] = []  # frames sent in one turn of the loop go out in one write

    @classmethod
    async def open(cls, sock: socket.socket) -> Channel:
        reader, writer = await asyncio.open_connection(sock=sock, limit=2**24)
        return cls(reader, writer)

    def send(self, message: tuple[Any, ...], now: bool = False, at_once: bool = False, without_input: Any = None) -> None:
        """Frames sent in one turn of the loop go out in one write; ``now`` writes every EAGER frames (a worker's
        results: the controller handles them while the worker runs the next cases, instead of the two taking
        turns); ``at_once`` writes this frame (and any before it) now: the other end is waiting for it. A result
        in the message whose input is ``without_input`` is sent without it (``_result_reducer``)."""
        if self.writer.is_closing():
            return
        data = pickled(message, without_input)
        if not self._out and not at_once:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out += (len(data).to_bytes(4, "big"), data)
        if at_once or (now and len(self._out) >= 2 * EAGER):
            self._flush()

    def _flush(self) -> None:
        out, self._out = self._out, []
        if not self.writer.is_closing():
            self.writer.write(b"".join(out))

    async def recv(self) -> tuple[Any, ...] | None:
        """The next message; None when the other end has closed."""
        try:
            size = int.from_bytes(await self.reader.readexactly(4), "big")
            return pickle.loads(await self.reader.readexactly(size))  # type: ignore[no-any-return]
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    def fileno(self) -> int:
        sock = self.writer.get_extra_info("socket")
        return sock.fileno() if sock is not None else -1

    def close(self) -> None:
        self.writer.close()


def tapes_of(case: Case, caller: Caller) -> dict[str, Any]:
    """What --record kept for this case so far (all its runs run here), for the controller to write."""
    cassettes = caller.catalog.cassettes
    if cassettes is None or not cassettes.record:
        return {}
    name = cassette_name(case, cassettes.root, cassettes.secrets, cassettes.cwd)  # as the tape was named when recorded
    tape = cassettes.tapes.get(name)
    return {name: tape.recorded} if tape is not None and tape.recorded else {}


def absorb(cassettes: Cassettes | None, tapes: dict[str, Any]) -> None:
    """In the controller: what a worker recorded for a case, to be written with the run's cassettes."""
    if cassettes is not None:
        for name, recorded in tapes.items():
            cassettes.tape(name).recorded = recorded
