"""Local worker processes (``--workers N``): forked from the controller once the run is resolved, so a
worker starts in milliseconds with the app, cases and connectors already loaded. Each runs in its own
process group, starts its own MCP servers, and talks to the controller over a socket pair in
length-prefixed pickled frames (the two ends are one program, forked: nothing else reads them).

A worker sends a heartbeat every half second from its event loop; one that is silent for ``SILENCE``
seconds (user code holding the GIL, a C call that never returns) is killed, as is one that exits."""

from __future__ import annotations

import asyncio
import collections
import copyreg
import dataclasses
import io
import operator
import os
from os import _exit
import pickle
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

from agenttest import model
from agenttest.agents.caller import Caller
from agenttest.connectors.cassettes import Cassettes, cassette_name
from agenttest.errors import Problem
from agenttest.model import Case, CaseResult, Plan
from agenttest.resolution import planning
from agenttest.runner import processes, slots
from agenttest.runner.controller import StartFailed, WorkerLost
from agenttest.runtime import usercalls
from agenttest.speed import records
from agenttest.runner.scheduling import AFTER_GRACE, Unit, internal_error, run_case, units

HEARTBEAT = 0.5
EAGER = 4  # a worker's results go out at least this often (frames), not only when its loop turns
SILENCE = float(os.environ.get("AGENTTEST_WORKER_SILENCE") or 4.0)  # seconds without a word before a worker is lost
STOP_GRACE = AFTER_GRACE + 1.0  # a stopping worker's After hooks and MCP servers get this long


async def prepare(plan: Plan, caller: Caller) -> list[Problem]:
    """In a worker: start the MCP servers and check the mocks and faults that name their tools (as
    resolution does in-process); the problems found."""
    return await planning.mcp_tools(list(plan.cases), caller.catalog, plan.agent)


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


def _positional(cls: type) -> bool:
    fields = dataclasses.fields(cls)
    return bool(fields) and all(f.init and not f.kw_only for f in fields)


# the fields whose text repeats from one result to the next (a status, a role, a connector's or a model's name,
# an assertion's type and what it checked; a case's id and file, which its case holds interned): rebuilt as
# one shared object each (``records.builder``), not one copy per result
_LABELS: dict[type, tuple[str, ...]] = {
    model.CaseResult: ("id", "status", "file", "connector", "skip_reason"),
    model.AssertionResult: ("type", "message", "expected", "checked"),
    model.Spend: ("role", "connector"),
    model.ModelCall: ("role", "connector", "model"),
    model.ToolCall: ("name", "server", "location"),
    model.CheckpointResult: ("id", "description", "tool"),
    model.WorldChange: ("path", "op"),
}
_BUILT = {cls: records.builder(cls, _LABELS.get(cls, ())) for cls in sorted(vars(model).values(), key=lambda c: getattr(c, "__qualname__", ""))
          if isinstance(cls, type) and dataclasses.is_dataclass(cls) and _positional(cls)}  # in the same order in both processes


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
_BUILDERS = [_SHARED[cls](_BUILT[cls]) if cls in _SHARED else _BUILT[cls] for cls in _CLASSES]  # type: ignore[arg-type,index]
_REDUCERS = {cls: _dataclass_reducer(cls, tag) for tag, cls in enumerate(_CLASSES)}
_INPUT = [f.name for f in dataclasses.fields(CaseResult)].index("input")


def _result_reducer() -> Callable[[CaseResult], Any]:
    """CaseResult's reducer: a result whose input is the thread's ``left`` (``_pickled``'s ``without_input``, the same
    object) is sent without it — a
    result's input is its case's: the controller puts back its own case's. Less to pickle on both ends, and 100,000
    results no longer hold 100,000 copies of their cases' histories."""
    values = _REDUCERS[CaseResult]

    def reduce(obj: CaseResult) -> Any:
        made, (tag, fields) = values(obj)
        left = getattr(_KEPT, "left", None)
        if left is not None and fields[_INPUT] is left:
            return made, (tag, fields[:_INPUT] + (None,) + fields[_INPUT + 1:])
        return made, (tag, fields)
    return reduce


_REDUCERS[CaseResult] = _result_reducer()
_TABLE = {**copyreg.dispatch_table, **_REDUCERS}
_KEPT = threading.local()  # a thread's pickler and its buffer, kept (a Pickler made per message was a third of pickling a result)


def _pickled(message: tuple[Any, ...], without_input: Any = None) -> bytes:
    # ours over whatever copyreg knows (re.Pattern, and what user code registers there): the table, and the picklers
    # that hold it, are made again only when copyreg's has changed
    global _TABLE
    if len(_TABLE) != len(_REDUCERS) + len(copyreg.dispatch_table) or any(_TABLE.get(k) is not v for k, v in copyreg.dispatch_table.items()):
        _TABLE = {**copyreg.dispatch_table, **_REDUCERS}
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
        data = _pickled(message, without_input)
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


class LocalWorker:
    """The controller's handle on one worker process."""

    def __init__(self, pid: int, channel: Channel, caller: Caller, fleet: Local, limit: int | None = None):
        self.pid = pid
        self.channel = channel
        self.fleet = fleet
        self.cassettes = caller.catalog.cassettes
        self.secrets = caller.catalog.secrets
        self.lender = slots.Lender(caller.catalog.traffic, channel.send)
        self.traffic = caller.catalog.traffic
        self.pending: dict[int, asyncio.Future[CaseResult]] = {}
        self.limit = limit  # units it runs at once, the rest held in order (None: it runs whatever it is sent)
        self.held: collections.deque[int] = collections.deque()
        self.began: dict[int, float] = {}  # the units running, as far as the controller knows, and since when
        self.begun: dict[int, Callable[[], None]] = {}  # held units: what to call when they start
        self.units: dict[int, Unit] = {}  # each unit sent, by its index: its case's input is put back into its result
        self.acks: dict[int, asyncio.Future[None]] = {}  # cases told to stop (Ctrl-C): their After hooks ran
        self.late: dict[int, CaseResult] = {}  # cases told to stop that finished anyway (their After hook, in its grace)
        self.crossed: dict[int, CaseResult | None] = {}  # cases that ended as their task was being stopped, before it said so
        self.lost: str | None = None
        self.stopping = False
        self.serving = False  # ready, and reading what the controller sends
        self.known: dict[int, int] = {}  # what ran under the worker once it was ready (its MCP servers)
        self.warnings: list[str] = []
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[list[str]] = loop.create_future()
        self.heard = loop.time()
        self.reader = loop.create_task(self._read())
        self.watcher = loop.create_task(self._watch())

    @property
    def in_flight(self) -> int:
        return len(self.pending)

    def alive(self) -> bool:
        return self.lost is None and not self.stopping

    async def run(self, unit: Unit, begun: Callable[[], None] | None = None) -> CaseResult:
        """``unit``'s result; ``begun`` is called when it starts (at once, or when the worker starts it in the
        place of a unit that ended, if it is held)."""
        if self.lost is not None:
            raise WorkerLost(self.lost)
        loop = asyncio.get_running_loop()
        index = unit.index
        fut = self.pending[index] = loop.create_future()
        self.units[index] = unit
        if self.limit is None or len(self.began) + len(self.held) < self.limit:  # a held one may have begun unsaid
            self.began[index] = loop.time()
            if begun is not None:  # after the results already taken in are handled (their tasks wake first)
                loop.call_soon(begun)
            self.channel.send(("run", index), at_once=True)  # the worker may have nothing else to do
        else:  # the worker holds it until one of its units ends (or starts it at once if one has: "began")
            self.held.append(index)
            if begun is not None:
                self.begun[index] = begun
            self.channel.send(("hold", index), at_once=True)
        try:
            return await fut
        except WorkerLost as gone:
            since = self.began.get(index)
            raise WorkerLost(gone.reason, loop.time() - since if since is not None else 0.0) from None
        except asyncio.CancelledError:
            if index in self.crossed:  # its end crossed the stop: the worker has nothing left to stop (no ack would come)
                ended = self.crossed.pop(index)
                if ended is not None:
                    return ended
                raise
            if self.lost is None:  # Ctrl-C: the worker stops the case and runs its After hook
                ack = self.acks[unit.index] = asyncio.get_running_loop().create_future()
                self.channel.send(("cancel", unit.index))
                await asyncio.wait({ack}, timeout=STOP_GRACE)
                late = self.late.pop(index, None)
                if late is not None:  # it had finished, and its After hook did within its grace: a result, not a case cut short
                    return late
            raise
        finally:
            self.pending.pop(index, None)
            self.units.pop(index, None)
            self.crossed.pop(index, None)
            self._ended(index, None)

    async def _read(self) -> None:
        reason: str | None = None
        loop = asyncio.get_running_loop()
        try:
            while (message := await self.channel.recv()) is not None:
                self.heard = loop.time()
                self._handle(message)
        except Exception as exc:  # noqa: BLE001 — a message we cannot read: the worker cannot be trusted
            reason = internal_error(exc)[0]
        self._lose(reason)

    async def _watch(self) -> None:
        """A worker silent for SILENCE seconds (its event loop cannot run: the GIL is held) is lost."""
        loop = asyncio.get_running_loop()
        while self.lost is None:
            await asyncio.sleep(HEARTBEAT)
            if loop.time() - self.heard > SILENCE:
                self._lose(f"no answer for {SILENCE:g} s")

    def _handle(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "result":
            _, index, result, tapes, secrets, left_out, started = message
            unit = self.units.get(index)
            if unit is not None:  # a result just unpickled (no one else holds it) takes the controller's own objects
                case = unit.item.case
                if left_out:  # its case's input (FORMATS §15)
                    object.__setattr__(result, "input", case.input)
                if result.index == unit.index:  # and its index and line: one int each, not two, in 100,000 results
                    object.__setattr__(result, "index", unit.index)
                if result.line == case.location.line:
                    object.__setattr__(result, "line", case.location.line)
            absorb(self.cassettes, tapes)
            self.secrets.learn(secrets)  # connectors made in the worker: their keys are hidden here too
            self._settle(index, result)
            self._ended(index, started)  # after: the start of the next is said after this result
        elif kind == "note":  # for the console and the report's warnings (a hook cut short by the stop)
            self.traffic.notify(message[1])
        elif kind == "cancelled":
            self._settle(message[1], None)
            self._ended(message[1], message[2])
        elif kind == "began":  # a held unit the worker started at once: one of its units had ended meanwhile
            self._ended(None, message[1])
        elif kind == "ready":
            self.known = processes.tree(self.pid)
            self.serving = True
            if not self.ready.done():
                self.ready.set_result(message[1])
        elif kind == "problems" and not self.ready.done():
            self.ready.set_exception(StartFailed(message[1]))
        elif kind in ("acquire", "withdraw", "release", "succeeded", "rate_limited", "failed", "count"):
            self.lender.handle(message)

    def _ended(self, index: int | None, started: int | None) -> None:
        """Unit ``index`` ended (or was given up); ``started``: the held unit the worker started in its place."""
        if index is not None:
            self.began.pop(index, None)
            self.begun.pop(index, None)
            if index in self.held:
                self.held.remove(index)
        if started is not None and started in self.held:
            self.held.remove(started)
            self.began[started] = asyncio.get_running_loop().time()
            begun = self.begun.pop(started, None)
            if begun is not None:  # after the ended unit's result is taken in (its task wakes first)
                asyncio.get_running_loop().call_soon(begun)

    def _settle(self, index: int, result: CaseResult | None) -> None:
        fut = self.pending.get(index)
        if result is not None and fut is not None and not fut.done():
            fut.set_result(result)
        elif result is not None and index in self.acks:  # told to stop, it finished anyway (run takes it)
            self.late[index] = result
        elif fut is not None and fut.done() and index not in self.acks:  # its task is stopping and has not yet told
            self.crossed[index] = result  # the worker: it must not wait for an answer to a stop that will not come
        ack = self.acks.pop(index, None)
        if ack is not None and not ack.done():
            ack.set_result(None)

    def _lose(self, reason: str | None) -> None:
        """Kill the worker and everything under it; what it held learns why."""
        if self.lost is not None:
            return
        under = {**self.known, **processes.tree(self.pid)}  # before the kill: MCP servers are in sessions of their own
        processes.kill_group(self.pid)
        processes.kill_tree(under)
        status = processes.reap(self.pid)
        self.lost = reason or processes.describe(status)
        self.channel.close()
        self.lender.close()
        self.fleet.live.pop(self.pid, None)
        if not self.ready.done():
            self.ready.set_exception(StartFailed([], f"it ended while starting ({self.lost})"))
        waiting: list[asyncio.Future[Any]] = [*self.pending.values(), *self.acks.values()]
        for fut in waiting:
            if not fut.done():
                fut.set_exception(WorkerLost(self.lost))
        retrieved: list[asyncio.Future[Any]] = [self.ready, *self.acks.values()]
        for fut in retrieved:
            if fut.done() and not fut.cancelled():
                fut.exception()  # retrieved: nobody may be waiting for these any more

    async def stop(self) -> None:
        """Ask the worker to finish (its MCP servers stop), then kill whatever is left under it."""
        if self.lost is None and self.serving:  # one still starting its servers is not listening: killed
            self.stopping = True
            self.channel.send(("stop",))
            try:
                await asyncio.wait_for(asyncio.shield(self.reader), STOP_GRACE)
            except TimeoutError:
                pass
        self._lose("stopped")
        self.reader.cancel()
        self.watcher.cancel()


class Local:
    """Launches local workers by forking this process (once ``plan`` is resolved)."""

    lookahead = 1  # a worker can hold a unit ahead (Pool.start)

    def __init__(self, caller: Caller):
        self.caller = caller
        self.plan: Plan | None = None
        self.limit: int | None = None  # units a worker runs at once when it holds one ahead
        self.live: dict[int, LocalWorker] = {}
        self._warmed = False

    async def __call__(self, slot: int) -> LocalWorker:
        assert self.plan is not None
        if not self._warmed:
            self.caller.catalog.import_sdks()
            self._warmed = True
        ours, theirs = socket.socketpair()
        inherited = [w.channel.fileno() for w in self.live.values()]
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the child would write the parent's buffered text again
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            ours.close()
            _child(theirs, parent, inherited, self.plan, self.caller, self.limit if slot >= 0 else None)
        theirs.close()
        worker = self.live[pid] = LocalWorker(pid, await Channel.open(ours), self.caller, self, self.limit if slot >= 0 else None)
        try:
            warnings = await worker.ready
        except BaseException:
            await worker.stop()
            raise
        worker.warnings = warnings
        return worker

    async def aclose(self) -> None:
        """Nothing to end beyond the workers themselves."""


def _child(sock: socket.socket, parent: int, inherited: list[int], plan: Plan, caller: Caller, limit: int | None = None) -> None:
    """The worker process, from the fork to ``os._exit``: it never returns into the controller's code."""
    code = 70
    try:
        os.setpgid(0, 0)  # Ctrl-C at the terminal reaches the controller only; it stops the workers
        processes.die_with(parent)
        for fd in inherited:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            signal.set_wakeup_fd(-1)
        except ValueError:  # not the main thread
            pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        asyncio.events._set_running_loop(None)  # the controller's loop, frozen in this copy, is never touched
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with usercalls.capturing():  # what user code prints goes to its case, as in the controller
            loop.run_until_complete(serve(sock, plan, caller, limit))
        code = 0
    finally:
        _exit(code)  # bound at import: a global hook's os._exit guard (usercalls.no_exit) is never this


async def serve(sock: socket.socket, plan: Plan, caller: Caller, limit: int | None = None) -> None:
    """A worker's life: start the MCP servers, then run the units the controller sends until it says stop.
    ``limit``: the units it runs at once when the controller sends one more to hold ("hold"): a held unit
    starts the moment a running one ends (that one's result says which started), or at once if one ended
    before it came ("began")."""
    loop = asyncio.get_running_loop()
    caller.loop = loop
    channel = await Channel.open(sock)
    remotes = slots.borrow(caller.catalog.traffic, channel.send)  # before the connectors are made again
    caller.catalog.traffic.listen(lambda text: channel.send(("note", text), at_once=True))  # said by the controller
    caller.catalog.forked()
    caller.catalog.warm()
    beat = loop.create_task(_beat(channel))  # from the start: MCP servers may take a while
    before = len(caller.catalog.warnings)
    problems = await prepare(plan, caller)
    if problems:
        channel.send(("problems", problems))
        beat.cancel()
        await _close(channel, caller)
        return
    channel.send(("ready", caller.catalog.warnings[before:]))
    by_index = {u.index: u for u in units(plan)}
    tasks: dict[int, asyncio.Task[None]] = {}
    held: collections.deque[Unit] = collections.deque()
    active = 0  # units running and not yet ending (a task that has sent its result may not have finished yet)

    def start(unit: Unit) -> None:
        nonlocal active
        active += 1
        tasks[unit.index] = task = loop.create_task(_one(unit, plan, caller, channel, tasks, next_up, limit))
        task.add_done_callback(lambda _, i=unit.index: tasks.pop(i, None))  # type: ignore[misc]

    def next_up(replace: bool = True) -> int | None:
        """A running unit is ending (each says so once): the held unit next in line starts in its place —
        unless it was stopped (``replace`` False: Ctrl-C or SIGTERM; the held ones are stopped too, unstarted)."""
        nonlocal active
        active -= 1
        if not held or not replace:
            return None
        unit = held.popleft()
        start(unit)
        return unit.index

    try:
        while (message := await channel.recv()) is not None and message[0] != "stop":
            kind = message[0]
            if kind == "run":
                start(by_index[message[1]])
            elif kind == "hold":  # until one of the units running here ends — unless one has since it was sent
                unit = by_index[message[1]]
                if limit is not None and active >= limit:
                    held.append(unit)
                else:
                    start(unit)
                    channel.send(("began", unit.index), at_once=True)
            elif kind == "cancel" and message[1] in tasks:
                tasks[message[1]].cancel()
            elif kind == "cancel" and any(u.index == message[1] for u in held):
                held.remove(by_index[message[1]])
                channel.send(("cancelled", message[1], None), at_once=True)
            elif kind == "granted":
                _, name, rid, epoch, refusal = message
                remotes[name].answered(rid, epoch, refusal)
    finally:
        held.clear()  # nothing starts while the rest stop
        for task in list(tasks.values()):
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        beat.cancel()
        await _close(channel, caller)


async def _close(channel: Channel, caller: Caller) -> None:
    try:
        await asyncio.wait_for(caller.catalog.aclose(), STOP_GRACE)
    except Exception:  # noqa: BLE001 — the controller kills what did not stop
        pass
    channel._flush()
    try:
        await channel.writer.drain()
    except ConnectionError:
        pass


async def _beat(channel: Channel) -> None:
    while True:
        channel.send(("beat",))
        await asyncio.sleep(HEARTBEAT)


async def _one(unit: Unit, plan: Plan, caller: Caller, channel: Channel, running: dict[int, Any],
               next_up: Callable[..., int | None], limit: int | None = None) -> None:
    try:
        result = await run_case(unit.item, unit.run, unit.index, plan, caller)
    except asyncio.CancelledError:
        channel.send(("cancelled", unit.index, next_up(False)))
        return
    except BaseException:
        next_up()
        raise
    case_input = unit.item.case.input
    left_out = case_input is not None and result.input is case_input
    task = asyncio.current_task()
    started = next_up(task is None or not task.cancelling())  # stopped, though it finished: no held case starts
    try:
        # the last case running here, or a held one started among a few: the worker may soon have nothing to run
        # until the controller, waiting for this result, sends the next case. With more running, the result goes
        # out with the others of this turn of the loop (every EAGER): a write a result woke the controller each time
        urgent = len(running) <= 1 or (started is not None and (limit or 0) <= EAGER)
        channel.send(("result", unit.index, result, tapes_of(unit.item.case, caller), caller.catalog.secrets.state(), left_out, started),
                     now=True, at_once=urgent, without_input=case_input if left_out else None)
    except Exception as exc:  # noqa: BLE001 — e.g. user data in the result that cannot be pickled
        message, tb = internal_error(exc)
        failed = CaseResult(result.id, "error", result.name, result.input, error=f"the result could not be sent: {message}",
                            traceback=tb, run=result.run, index=result.index, file=result.file, line=result.line,
                            connector=result.connector)
        channel.send(("result", unit.index, failed, {}, caller.catalog.secrets.state(), False, started))


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
