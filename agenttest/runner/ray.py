"""``--executor ray``: the workers are Ray actors on the cluster ``--ray-address`` / ``RAY_ADDRESS``
names, or a local Ray started for the run when neither is given (``raycluster.py``: on loopback, in a folder of
its own). A cluster joined by its address gets the app folder as the actors' working directory (Ray's runtime
environment), a local Ray reads it where it is; each actor resolves the same plan from the
cases and configuration the controller sends, starts its own MCP servers, imports the SDKs and makes the
clients of its connectors before it says it is ready, and answers one call per unit with its result.

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
from typing import Any

from agenttest.agents.caller import Caller
from agenttest.config import RunConfig
from agenttest.errors import AgentTestError
from agenttest.model import Case, CaseResult, Plan
from agenttest.runner import raycluster, raydeaths
from agenttest.runner.controller import StartFailed, WorkerLost
from agenttest.runner.scheduling import Unit
from agenttest.runner.local.wire import SILENCE as LOCAL_SILENCE, absorb, seconds

HEARTBEAT = 0.5
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
        token = os.urandom(8).hex()
        try:
            actor = self.actor_class.remote(self.config, self.caller.identity, root, max(1, self.config.workers), token, self.cluster.folder)
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
            kind, value = await asyncio.wait_for(_ref(actor.ready.remote(cases, self.plan.agent)), max(60.0, SILENCE))
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
        early, self._early = list(self._early.values()), {}
        for task in early:  # created as the run opened, never handed out (the cases did not load, or Ctrl-C): ended here
            try:
                actor, _ = await task
            except BaseException:  # noqa: BLE001 — it was not created: nothing of it to end
                continue
            _kill(actor)
        cluster, self.cluster = self.cluster, None  # left once (the pool closes twice)
        if cluster is not None:
            await asyncio.to_thread(raycluster.leave, cluster)


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
    """The controller's handle on one actor."""

    def __init__(self, actor: Any, catalog: Any, token: str = "", folder: str | None = None):
        self.actor = actor
        self.token = token
        self.folder = folder
        self.cassettes = catalog.cassettes
        self.secrets = catalog.secrets
        self.traffic = catalog.traffic
        self.warnings: list[str] = []
        self.lost: str | None = None
        self.pending = 0
        self._watch: asyncio.Task[None] | None = None
        self._why: asyncio.Future[str] | None = None
        self._refs: set[Any] = set()

    @property
    def in_flight(self) -> int:
        return self.pending

    def alive(self) -> bool:
        return self.lost is None

    def watch(self) -> None:
        self._watch = asyncio.get_running_loop().create_task(self._heartbeats())

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

    async def _death(self, exc: BaseException) -> str:
        """Why the actor is gone: its last words, else what Ray says (found once: the ping and the unit's call
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
        if self.lost is not None:
            return
        self.lost = reason
        _kill(self.actor)

    async def run(self, unit: Unit) -> CaseResult:
        import ray

        if self.lost is not None:
            raise WorkerLost(self.lost)
        ref = self.actor.run.remote(unit.index)
        began = asyncio.get_running_loop().time()  # the unit's own time: not the seconds a fresh actor took to start
        self.pending += 1
        try:
            result, tapes, secrets, note = await ref
            absorb(self.cassettes, tapes)
            self.secrets.learn(secrets)
            if note:
                self.traffic.notify(note)
        except asyncio.CancelledError:
            ray.cancel(ref)  # the actor's case is cancelled: its After hook runs there
            raise
        except Exception as exc:  # noqa: BLE001 — the actor died, or was killed as silent
            reason = await self._death(exc)
            self._lose(reason)
            raise WorkerLost(self.lost or reason, ran=asyncio.get_running_loop().time() - began) from None
        finally:
            self.pending -= 1
        return result

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.lost is None:
            try:
                await asyncio.wait_for(_ref(self.actor.stop.remote()), 5.0)
            except Exception:  # noqa: BLE001 — killed below whatever happened
                pass
        self._lose("stopped")


class ActorWorker:
    """The actor: one worker's plan, caller and MCP servers, in the actor's event loop."""

    def __init__(self, config: RunConfig, identity: Any, root: str, size: int, token: str = "", folder: str | None = None):
        self.config = config
        self.token = token
        self.folder = folder  # a local Ray's own folder, on this machine: where a fatal signal is written
        self.identity = identity
        self.root = root or os.getcwd()  # "": the app folder was shipped as the working directory
        self.size = size
        self.caller: Caller | None = None
        self.plan: Plan | None = None
        self.units: dict[int, Unit] = {}
        self.said = False
        if self.token:
            raydeaths.install(self.token, self.folder)  # os._exit and fatal signals say what they were
        # what ``ready`` needs, imported while the controller still loads and resolves the cases
        from agenttest.agents import catalog  # noqa: F401
        from agenttest.resolution import planning  # noqa: F401
        from agenttest.runner import case  # noqa: F401

    async def ready(self, cases: list[Case], agent: str) -> tuple[str, Any]:
        """Resolve the plan here (hooks are functions of this process), start the MCP servers, import the SDKs and
        make the connectors' clients (a case's deadline never counts them, as in a local worker)."""
        from agenttest.agents.catalog import Catalog
        from agenttest.app.folders import App
        from agenttest.connectors.cassettes import Cassettes
        from agenttest.connectors.throttle import Traffic
        from agenttest.resolution import planning
        from agenttest.runner import slots
        from agenttest.runner.scheduling import units
        from agenttest.runtime import fdcapture, usercalls
        from agenttest.util.secrets import Secrets

        fdcapture.start()  # for the actor's life: what user code writes below Python goes to its case too
        usercalls.capturing().__enter__()  # for the actor's life: what user code prints goes to its case
        config, secrets = self.config, Secrets()
        traffic = Traffic(config.parallel)
        slots.share(traffic, self.size)
        try:
            catalog = Catalog(App(self.root), secrets, strict=config.strict, cassettes=Cassettes.for_run(self.root, config, secrets),
                              traffic=traffic, recorded=config.calls != "none")
            self.caller = caller = Caller(catalog, self.identity)
            caller.loop = asyncio.get_running_loop()
            self.plan, _ = await planning.build(cases, catalog, agent, config)
        except AgentTestError as exc:
            return "problems", exc.problems
        fdcapture.redact_with(secrets.redact)
        catalog.import_sdks()
        catalog.warm()
        self.units = {u.index: u for u in units(self.plan)}
        return "ready", catalog.warnings

    async def ping(self) -> bool:
        return True

    async def run(self, index: int) -> tuple[CaseResult, dict[str, Any], Any, str | None]:
        from agenttest.runner.case import run_case
        from agenttest.runner.local.wire import tapes_of
        from agenttest.runtime import fdcapture

        assert self.caller is not None and self.plan is not None
        unit = self.units[index]
        result = await run_case(unit.item, unit.run, unit.index, self.plan, self.caller)
        note = None if self.said else fdcapture.warning()  # output outside any case: said once, by the controller
        self.said = self.said or note is not None
        return result, tapes_of(unit.item.case, self.caller), self.caller.catalog.secrets.state(), note

    async def stop(self) -> None:
        if self.caller is not None:
            await self.caller.catalog.aclose()
