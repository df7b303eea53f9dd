"""``--executor ray``: the workers are Ray actors on the cluster ``--ray-address`` / ``RAY_ADDRESS``
names, or a local Ray started for the run when neither is given (``raycluster.py``: on loopback, in a folder of
its own). A local Ray, and a cluster joined by its address whose every node is on this machine, read the app where
it is; a cluster with a node elsewhere gets the app folder as the actors' working directory (Ray's runtime
environment). Each actor resolves the same plan from the
cases and configuration the controller sends, starts its own MCP servers, imports the SDKs and makes the
clients of its connectors before it says it is ready, and runs the units the controller sends it in batches,
its results taken back in batches (``RayWorker``).

An actor takes seconds to start (a Ray worker process that imports Ray, then agent-test): when the run joins a
cluster by its address, the actors are created as the run opens (``Actors.begin``), while the controller loads
and resolves the cases, and get the cases once they are resolved (a local Ray is started only once the cases
are: a run whose cases do not load never starts one).

A ping every half second that goes unanswered for ``SILENCE`` seconds (15), or an actor that dies, is a lost
worker (``controller.py`` decides what that means for its cases).

Connector limits are shared by dividing them: each of N actors gets 1/N of a connector's
``max_concurrency`` and ``rpm`` (the controller's scheduler already holds ``--parallel`` for the run)."""

from __future__ import annotations

import asyncio
import os
import pickle
from typing import Any

from agenttest.agents.caller import Caller
from agenttest.config import RunConfig
from agenttest.errors import AgentTestError
from agenttest.model import CaseResult, Plan
from agenttest.runner import raycluster, raydeaths
from agenttest.runner.rayactor import ActorWorker, numbering
from agenttest.runner.capture import internal_error
from agenttest.runner.controller import StartFailed, WorkerLost
from agenttest.runner.scheduling import Unit
from agenttest.runner.local.wire import SILENCE as LOCAL_SILENCE, absorb, seconds

HEARTBEAT = 0.5
RIDE = 3  # turns of the loop the next call for results waits for the units that the results settled make room for
CONNECT, START = 60.0, 300.0  # seconds to join a cluster by its address, to start a local Ray
# an actor call crosses Ray's scheduler (and maybe a network): a ping gets longer to come back than a local worker's beat
SILENCE = seconds("AGENTTEST_RAY_SILENCE", max(15.0, LOCAL_SILENCE))


class Actors:
    """Connects to Ray once and launches one actor per worker slot."""

    def __init__(self, config: RunConfig, caller: Caller):
        self.config = config
        self.plan: Plan | None = None  # set by the pool once resolved
        self.caller = caller
        self.cluster: raycluster.Cluster | None = None
        self.actor_class: Any = None
        self._connecting = asyncio.Lock()
        self._failed: AgentTestError | None = None  # joining Ray failed: every slot says so at once
        self._early: dict[int, asyncio.Task[tuple[Any, str]]] = {}  # slot → its actor, created as the run opened (``begin``)
        self._leaving: asyncio.Future[None] | None = None  # leaving Ray, on a thread (``aclose``)

    def _address(self) -> str | None:
        return self.config.ray_address or os.environ.get("RAY_ADDRESS") or None

    def _connect(self) -> None:
        """Join the cluster, or start a local Ray (``raycluster.join``), once."""
        import ray

        if self.actor_class is not None:
            return
        self.cluster = raycluster.join(self.config, self.caller.catalog.app.root)
        self.actor_class = ray.remote(num_cpus=1, max_restarts=0)(ActorWorker)

    def begin(self, size: int) -> None:
        """Join the cluster named by its address and create ``size`` actors now, in the background: they start
        (their processes, Ray's imports and ours) while the controller loads and resolves the cases. What goes wrong
        is said when the pool starts, as it would have been then."""
        if self._address() is None or self._early:
            return
        loop = asyncio.get_running_loop()
        self._early = {slot: loop.create_task(self._create()) for slot in range(size)}

    async def _join(self) -> None:
        async with self._connecting:  # off the loop: starting a local Ray takes seconds, and Ctrl-C must still work
            if self._failed is not None:
                raise self._failed
            try:
                # Ray keeps trying an address that does not answer, for minutes: a run waits so long for none
                await asyncio.wait_for(asyncio.to_thread(self._connect), CONNECT if self._address() else START)
            except TimeoutError:
                where = f"at {self._address()}" if self._address() else "(a local Ray)"
                self._failed = AgentTestError(f"--executor ray: no answer from Ray {where} within "
                                              f"{CONNECT if self._address() else START:g} s",
                                              hint="check RAY_ADDRESS / --ray-address, or unset both to start a local Ray")
                raise self._failed from None
            except AgentTestError as exc:
                self._failed = exc
                raise

    async def _create(self) -> tuple[Any, str]:
        """A new actor (its process starting) and the token its last words are found by (raydeaths)."""
        await self._join()
        assert self.cluster is not None
        root = "" if self.cluster.shipped else self.caller.catalog.app.root
        seen = None if self.cluster.shipped else raycluster.app_identity(root)  # the actor checks it reads this folder
        moved = self.cluster.address is not None and not self.cluster.shipped  # joined, read in place: works in the app as if shipped
        token = os.urandom(8).hex()
        try:
            setup = (self.config, self.caller.identity, root, max(1, self.config.workers), token, self.cluster.folder, seen, moved)
            actor = self.actor_class.remote(pickle.dumps(setup, pickle.HIGHEST_PROTOCOL))
        except Exception as exc:  # noqa: BLE001 — Ray refused the actor
            raise StartFailed([], f"Ray did not create the actor: {_first_line(exc)}") from None
        return actor, token

    async def __call__(self, slot: int) -> RayWorker:
        assert self.plan is not None
        early = self._early.pop(slot, None)
        actor, token = await (early if early is not None else self._create())
        assert self.cluster is not None
        worker = RayWorker(actor, self.caller.catalog, token, self.cluster.folder)
        cases = list(self.plan.cases)  # data only: each actor resolves its own hooks and connectors
        try:
            kind, value = await asyncio.wait_for(_ref(actor.ready.remote(cases, self.plan.agent, numbering())), max(60.0, SILENCE))
        except Exception as exc:  # noqa: BLE001 — Ray's own errors: the actor could not start
            await worker.stop()
            raise StartFailed([], f"the Ray actor did not start: {_first_line(exc)}") from None
        if kind == "problems":
            await worker.stop()
            raise StartFailed(value)
        worker.warnings = value
        worker.watch()
        return worker

    async def aclose(self) -> None:
        """End the actors begun but never handed out, and leave Ray. The pool closes twice — at the end of the run,
        then as the session closes: the first close starts leaving on a thread (~0.3 s: the report is decided and
        written meanwhile), the last waits for it. A close that is the only one is waited for by the event loop's
        end (``asyncio.run`` joins its threads)."""
        early, self._early = list(self._early.values()), {}
        for task in early:  # created as the run opened, never handed out (the cases did not load, or Ctrl-C): ended here
            try:
                actor, _ = await task
            except BaseException:  # noqa: BLE001 — it was not created: nothing of it to end
                continue
            _kill(actor)
        cluster, self.cluster = self.cluster, None  # left once
        if cluster is not None:
            self._leaving = asyncio.ensure_future(asyncio.to_thread(raycluster.leave, cluster))
        elif self._leaving is not None:
            leaving, self._leaving = self._leaving, None
            await leaving


def _kill(actor: Any) -> None:
    import ray

    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 — already gone
        pass


async def _ref(ref: Any) -> Any:
    return await ref


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class RayWorker:
    """The controller's handle on one actor. Units go out in batches (those sent in one turn of the event loop, in
    one call) and results come back in batches (``take``: every result the actor has finished since the last),
    each pickled by the actor as a local worker's is (``wire.pickled``: fewer bytes, less work on both ends), not
    one Ray call and one Ray object per unit."""

    def __init__(self, actor: Any, catalog: Any, token: str = "", folder: str | None = None):
        self.actor = actor
        self.token = token
        self.folder = folder
        self.cassettes = catalog.cassettes
        self.secrets = catalog.secrets
        self.traffic = catalog.traffic
        self.warnings: list[str] = []
        self.lost: str | None = None
        self.pending: dict[int, tuple[asyncio.Future[CaseResult], Unit, float]] = {}  # index → its result, unit, when sent
        self._outbox: list[int] = []  # units to send at the end of this turn of the loop
        self._riding = False  # results just settled: the units they make room for go with the next call for results
        self._watch: list[asyncio.Task[None]] = []
        self._why: asyncio.Future[str] | None = None
        self._calls: set[asyncio.Task[None]] = set()  # batches and cancels sent, until the actor has taken them

    @property
    def in_flight(self) -> int:
        return len(self.pending)

    def alive(self) -> bool:
        return self.lost is None

    def watch(self) -> None:
        loop = asyncio.get_running_loop()
        self._watch = [loop.create_task(self._heartbeats()), loop.create_task(self._take())]

    async def _heartbeats(self) -> None:
        silence = SILENCE
        while self.lost is None:
            try:
                await asyncio.wait_for(_ref(self.actor.ping.remote()), silence)
            except TimeoutError:
                self._lose(f"no answer for {silence:g} s")
                return
            except Exception as exc:  # noqa: BLE001 — the actor died
                self._lose(await self._death(exc))
                return
            await asyncio.sleep(HEARTBEAT)

    async def _take(self) -> None:
        """The results, as the actor finishes them: each settles its unit (one given up meanwhile is dropped). The
        units those results make room for, started by the scheduler in the next turns of the loop, go to the actor
        with the next call for results (``_riding``), not in a call of their own: one call where there were two."""
        indices: list[int] = []
        while self.lost is None:
            try:
                batch = await _ref(self.actor.take.remote(indices))
            except Exception as exc:  # noqa: BLE001 — the actor died, or was killed as silent
                self._lose(await self._death(exc))
                return
            try:
                for data in batch:
                    self._settle(*pickle.loads(data))
            except Exception as exc:  # noqa: BLE001 — a result we cannot read: the actor cannot be trusted
                self._lose(internal_error(exc)[0])
                return
            self._riding = True
            try:
                for _ in range(RIDE):  # the units' futures settled → the scheduler's tasks → the units they start, here
                    await asyncio.sleep(0)
            finally:
                self._riding = False
            indices, self._outbox = self._outbox, []

    def _settle(self, index: int, result: CaseResult, tapes: dict[str, Any], secrets: Any, note: str | None, left_out: bool) -> None:
        absorb(self.cassettes, tapes)
        self.secrets.learn(secrets)  # connectors made in the actor: their keys are hidden here too
        if note:
            self.traffic.notify(note)
        entry = self.pending.pop(index, None)
        if entry is None:  # given up meanwhile (Ctrl-C)
            return
        fut, unit, _ = entry
        if left_out:  # its case's input: the controller's own (``wire.pickled`` sent the result without it)
            object.__setattr__(result, "input", unit.item.case.input)
        if not fut.done():
            fut.set_result(result)

    async def _death(self, exc: BaseException) -> str:
        """Why the actor is gone: its last words, else what Ray says (found once: the ping and the results' call
        both see the death)."""
        if self.lost is not None:
            return self.lost
        if self._why is None:
            self._why = asyncio.ensure_future(self._find_why(exc))
        return await asyncio.shield(self._why)

    async def _find_why(self, exc: BaseException) -> str:
        words = await asyncio.to_thread(raydeaths.read, self.token, self.folder) if self.token else None
        return words or raydeaths.said_by_ray(exc)

    def _lose(self, reason: str) -> None:
        """The actor is killed; every unit it held is lost with it (each told how long it had been there)."""
        if self.lost is not None:
            return
        self.lost = reason
        _kill(self.actor)
        now = asyncio.get_running_loop().time()
        held, self.pending = self.pending, {}
        for fut, _, sent in held.values():
            if not fut.done():
                fut.set_exception(WorkerLost(reason, ran=now - sent))

    def _call(self, ref: Any) -> None:
        """A call whose answer nobody needs (its failure is the actor's death, which ``_take`` sees): awaited all
        the same, or Ray says the error of an unread answer on the console."""
        task = asyncio.get_running_loop().create_task(_quietly(ref))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    def _send(self) -> None:
        if self._riding:  # a call for results is about to go: the outbox goes with it
            return
        indices, self._outbox = self._outbox, []
        if indices and self.lost is None:
            self._call(self.actor.start.remote(indices))

    async def run(self, unit: Unit) -> CaseResult:
        if self.lost is not None:
            raise WorkerLost(self.lost)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[CaseResult] = loop.create_future()
        self.pending[unit.index] = (fut, unit, loop.time())  # the unit's own time: not the seconds a fresh actor took to start
        if not self._outbox:
            loop.call_soon(self._send)
        self._outbox.append(unit.index)
        try:
            return await fut
        except asyncio.CancelledError:
            if self.pending.pop(unit.index, None) is not None and self.lost is None:
                if unit.index in self._outbox:  # not sent yet
                    self._outbox.remove(unit.index)
                else:
                    self._call(self.actor.cancel.remote(unit.index))  # the actor's case is cancelled: its After hook runs there
            raise

    async def stop(self) -> None:
        for task in self._watch:
            task.cancel()
        if self.lost is None:
            try:
                await asyncio.wait_for(_ref(self.actor.stop.remote()), 5.0)
            except Exception:  # noqa: BLE001 — killed below whatever happened
                pass
        self._lose("stopped")


async def _quietly(ref: Any) -> None:
    try:
        await ref
    except Exception:  # noqa: BLE001 — the actor's death, said by the results' call
        pass
