"""Local worker processes (``--workers N``): forked from the controller once the run is resolved, so a
worker starts in milliseconds with the app, cases and connectors already loaded. Each runs in its own
process group, starts its own MCP servers, and talks to the controller over a socket pair in
length-prefixed pickled frames (``wire``; the two ends are one program, forked: nothing else reads them).

A worker sends a heartbeat every half second from its event loop; one that is silent for ``SILENCE``
seconds (user code holding the GIL, a C call that never returns) is killed, as is one that exits."""

from __future__ import annotations

import asyncio
import collections
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

from agenttest.agents.caller import Caller
from agenttest.model import CaseResult, Plan
from agenttest.runner import processes, slots
from agenttest.runner.controller import StartFailed, WorkerLost
from agenttest.runner.local.child import child
from agenttest.runner.local.wire import HEARTBEAT, SILENCE, STOP_GRACE, Channel, absorb
from agenttest.runner.capture import internal_error
from agenttest.runner.scheduling import Unit


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
                if result.key == unit.item.key:  # the plan's own key, not a copy per result
                    object.__setattr__(result, "key", unit.item.key)
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
            child(theirs, parent, inherited, self.plan, self.caller, self.limit if slot >= 0 else None)
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
