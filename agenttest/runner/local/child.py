"""A local worker's own side: forked from the controller, it starts its MCP servers, runs the units the
controller sends on its own event loop, beats every ``HEARTBEAT`` and sends each result back; it never returns
into the controller's code (``os._exit``)."""

from __future__ import annotations

import asyncio
import collections
import os
from os import _exit
import signal
import socket
from collections.abc import Callable
from typing import Any

from agenttest.agents.caller import Caller
from agenttest.errors import Problem
from agenttest.model import CaseResult, Plan
from agenttest.resolution import planning
from agenttest.runner import containment, processes, slots
from agenttest.runner.local.wire import EAGER, HEARTBEAT, STOP_GRACE, Channel, tapes_of
from agenttest.runner.capture import internal_error
from agenttest.runner.case import run_case
from agenttest.runner.scheduling import Unit, units
from agenttest.runtime import fdcapture, usercalls


async def prepare(plan: Plan, caller: Caller) -> list[Problem]:
    """In a worker: start the MCP servers and check the mocks and faults that name their tools (as
    resolution does in-process); the problems found."""
    return await planning.mcp_tools(list(plan.cases), caller.catalog, plan.agent)


def child(sock: socket.socket, parent: int, inherited: list[int], plan: Plan, caller: Caller, limit: int | None = None) -> None:
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
        containment.in_worker()  # what its tools leave behind (a double fork, setsid) stays under it, and dies with it
        fdcapture.forked(caller.catalog.secrets.redact)  # fds 1 and 2 its own pipes: a tool's os.write is its case's
        asyncio.events._set_running_loop(None)  # the controller's loop, frozen in this copy, is never touched
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with usercalls.capturing():  # what user code prints goes to its case, as in the controller
            loop.run_until_complete(serve(sock, plan, caller, limit))
        fdcapture.stop()  # the last lines written outside any case are shown
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
    said = False
    while True:
        channel.send(("beat",))
        if not said and (warning := fdcapture.warning()):  # for the controller's console and report
            channel.send(("note", warning))
            said = True
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
        failed = CaseResult(key=result.key, status="error", name=result.name, input=result.input, error=f"the result could not be sent: {message}",
                            traceback=tb, run=result.run, index=result.index, line=result.line)
        channel.send(("result", unit.index, failed, {}, caller.catalog.secrets.state(), False, started))
