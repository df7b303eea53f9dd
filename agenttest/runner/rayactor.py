"""The Ray actor (``ActorWorker``): one worker's plan, caller and MCP servers, in the actor's event loop, on a
process Ray starts for it alone and ends with it. This module imports nothing of agenttest's at first: Ray imports it
to make the actor, whose ``__init__`` turns on the speed machinery before the rest is imported (``speed.install``:
the compiled dataclass methods, the collector), as the command does before its own imports."""

from __future__ import annotations

import asyncio
import os
import pickle
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenttest.agents.caller import Caller
    from agenttest.config import RunConfig
    from agenttest.model import Case, Plan
    from agenttest.runner.scheduling import Unit


def _node() -> str:
    """The address of the Ray node this actor runs on."""
    import ray

    try:
        return str(ray.util.get_node_ip_address())
    except Exception:  # noqa: BLE001 — said without it
        return "(its address unknown)"


def numbering() -> str:
    """What the class numbers of ``wire.pickled`` stand for in this agent-test (each class and its fields): an actor
    whose agent-test numbers them otherwise (another version on the cluster) pickles its results the plain way."""
    import dataclasses
    import hashlib

    from agenttest.runner.local import wire

    named = [(c.__module__, c.__qualname__, [f.name for f in dataclasses.fields(c)]) for c in wire.REDUCERS]
    return hashlib.sha256(repr(named).encode()).hexdigest()


class ActorWorker:
    """The actor: one worker's plan, caller and MCP servers, in the actor's event loop."""

    def __init__(self, setup: bytes):
        """``setup``: the pickled ``(config, identity, root, size, token, folder, seen, moved)``, read once the speed
        machinery is on (Ray would read arguments before ``__init__``, importing agenttest's model on the way)."""
        from agenttest import speed

        speed.install()  # Ray starts a process for the actor and ends it with the actor: it is ours, as the command's
        from agenttest.runner import raydeaths

        config, identity, root, size, token, folder, seen, moved = pickle.loads(setup)
        self.config: RunConfig = config
        self.seen: tuple[int, int] | None = seen  # the app folder read in place, as the controller sees it (``raycluster.app_identity``)
        self.moved: bool = moved  # to work in the app folder, as an actor does whose app was shipped as its working directory
        self.token: str = token
        self.folder: str | None = folder  # a local Ray's own folder, on this machine: where a fatal signal is written
        self.identity = identity
        self.root: str = root or os.getcwd()  # "": the app folder was shipped as the working directory
        self.size: int = size
        self.caller: Caller | None = None
        self.plan: Plan | None = None
        self.units: dict[int, Unit] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}  # the units running, by index
        self.finished: list[bytes] = []  # results not yet taken, each pickled (``take``)
        self.landed = asyncio.Event()
        self.closing = False
        self.numbered = False  # results pickled as a local worker's (``wire.pickled``), else the plain way
        self.said = False
        if self.token:
            raydeaths.install(self.token, self.folder)  # os._exit and fatal signals say what they were
        # what ``ready`` needs, imported while the controller still loads and resolves the cases
        from agenttest.agents import catalog  # noqa: F401
        from agenttest.resolution import planning  # noqa: F401
        from agenttest.runner import case  # noqa: F401

    async def ready(self, cases: list[Case], agent: str, classes: str = "") -> tuple[str, Any]:
        """Resolve the plan here (hooks are functions of this process), start the MCP servers, import the SDKs and
        make the connectors' clients (a case's deadline never counts them, as in a local worker)."""
        from agenttest.agents.caller import Caller
        from agenttest.agents.catalog import Catalog
        from agenttest.app.folders import App
        from agenttest.config import RAY_SHIP
        from agenttest.connectors.cassettes import Cassettes
        from agenttest.connectors.throttle import Traffic
        from agenttest.errors import AgentTestError, Problem
        from agenttest.resolution import planning
        from agenttest.runner import raycluster, slots
        from agenttest.runner.scheduling import units
        from agenttest.runtime import fdcapture, usercalls
        from agenttest.speed import collector
        from agenttest.util.secrets import Secrets

        if not raycluster.sees(self.root, self.seen):  # a node on this machine with a filesystem of its own
            return "problems", [Problem(f"--executor ray: the actor on Ray node {_node()} does not see the app folder {self.root} "
                                        "(a node in a container of its own?)",
                                        hint=f"set {RAY_SHIP}=1 to ship the app folder to the cluster as its actors' working directory")]
        if self.moved:
            os.chdir(self.root)
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
        collector.run_begins()  # what start-up made is never scanned again; the run's thresholds (as a local worker's)
        self.numbered = classes == numbering()  # the controller's agent-test numbers the result classes as this one does
        return "ready", catalog.warnings

    async def ping(self) -> bool:
        return True

    async def start(self, indices: list[int]) -> None:
        """Start these units, each in a task of its own; their results are for ``take``."""
        loop = asyncio.get_running_loop()
        for index in indices:
            self.tasks[index] = loop.create_task(self._one(index))

    async def cancel(self, index: int) -> None:
        """The controller gave this unit up (Ctrl-C): its case is cancelled, its After hook runs here."""
        task = self.tasks.get(index)
        if task is not None:
            task.cancel()

    async def take(self, indices: list[int] | None = None) -> list[bytes]:
        """Start ``indices`` (as ``start`` does), then every result finished since the last call (waiting for one if
        there is none; none once stopping)."""
        if indices:
            await self.start(indices)
        while not self.finished and not self.closing:
            self.landed.clear()
            await self.landed.wait()
        out, self.finished = self.finished, []
        return out

    def _pickled(self, message: tuple[Any, ...], without_input: Any) -> bytes:
        from agenttest.runner.local.wire import pickled

        return pickled(message, without_input) if self.numbered else pickle.dumps(message, pickle.HIGHEST_PROTOCOL)

    async def _one(self, index: int) -> None:
        from agenttest.model import CaseResult
        from agenttest.runner.capture import internal_error
        from agenttest.runner.case import run_case
        from agenttest.runner.controller import lost
        from agenttest.runner.local.wire import tapes_of
        from agenttest.runtime import fdcapture

        assert self.caller is not None and self.plan is not None
        unit = self.units[index]
        try:
            result = await run_case(unit.item, unit.run, unit.index, self.plan, self.caller)
        except asyncio.CancelledError:  # given up by the controller: no result to send
            return
        except Exception as exc:  # noqa: BLE001 — a bug of ours: the case's error, not a unit that never ends
            result = lost(unit, "error", internal_error(exc)[0])
        finally:
            self.tasks.pop(index, None)
        note = None if self.said else fdcapture.warning()  # output outside any case: said once, by the controller
        self.said = self.said or note is not None
        case_input = unit.item.case.input
        left_out = self.numbered and case_input is not None and result.input is case_input
        secrets = self.caller.catalog.secrets.state()
        try:
            data = self._pickled((index, result, tapes_of(unit.item.case, self.caller), secrets, note, left_out), case_input if left_out else None)
        except Exception as exc:  # noqa: BLE001 — e.g. user data in the result that cannot be pickled
            message, tb = internal_error(exc)
            failed = CaseResult(key=result.key, status="error", name=result.name, input=result.input, error=f"the result could not be sent: {message}",
                                traceback=tb, run=result.run, index=result.index, line=result.line)
            data = self._pickled((index, failed, {}, secrets, note, False), None)
        self.finished.append(data)
        self.landed.set()

    async def stop(self) -> None:
        self.closing = True  # the controller's call for results ends (a call left waiting would end in an error)
        self.landed.set()
        if self.caller is not None:
            await self.caller.catalog.aclose()
