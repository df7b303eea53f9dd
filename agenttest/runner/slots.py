"""Limits for the whole run: each connector's throttle lives in the controller; a worker's calls ask it
for a slot and tell it how each attempt went (FORMATS §13, §15).

In a worker, ``Remote`` stands in for a connector's ``Throttle`` (the same five methods ``Throttled``
calls); in the controller, ``Lender`` answers those messages from the run's ``Traffic`` and takes back
the slots of a worker that is lost."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agenttest.connectors.base import Retryable
from agenttest.connectors.throttle import Limits, Throttle, Throttled, Traffic
from agenttest.errors import CallError
from agenttest.runtime.trace import deadline_paused

Send = Callable[[tuple[Any, ...]], None]


class _Counts(dict):  # type: ignore[type-arg]
    """The counts ``Throttled`` adds to its throttle's stats (absorbed, retries), passed on to the controller."""

    def __init__(self, name: str, send: Send):
        super().__init__(requests=0, rate_limited=0, absorbed=0, retries=0, overloaded=0)
        self.name = name
        self.send = send

    def __setitem__(self, key: str, value: int) -> None:
        delta = value - self.get(key, 0)
        super().__setitem__(key, value)
        self.send(("count", self.name, key, delta))


class Remote:
    """A worker's view of one connector's throttle in the controller."""

    def __init__(self, name: str, limits: Limits, send: Send):
        self.name = name
        self.limits = limits
        self.send = send
        self.down: str | None = None
        self.stats = _Counts(name, send)
        self._asked: dict[int, asyncio.Future[int]] = {}
        self._ids = itertools.count()

    async def acquire(self) -> int:
        if self.down:
            raise CallError(f"endpoint unreachable: {self.down}")
        rid = next(self._ids)
        fut = self._asked[rid] = asyncio.get_running_loop().create_future()
        self.send(("acquire", rid, self.name, self.limits))
        try:
            with deadline_paused():  # a slot the controller holds back is queue time, not the agent's
                return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()
            else:
                self.send(("withdraw", rid, self.name))
            raise
        finally:
            self._asked.pop(rid, None)

    def answered(self, rid: int, epoch: int | None, refusal: str) -> None:
        fut = self._asked.get(rid)
        if fut is None or fut.done():
            if epoch is not None:  # granted after the call gave up: hand it back
                self.release()
            return
        if epoch is None:
            self.down = refusal
            fut.set_exception(CallError(f"endpoint unreachable: {refusal}"))
        else:
            fut.set_result(epoch)

    def release(self) -> None:
        self.send(("release", self.name))

    def succeeded(self) -> None:
        self.send(("succeeded", self.name))

    def rate_limited(self, epoch: int) -> None:
        self.send(("rate_limited", self.name, epoch))

    def failed(self, exc: Retryable) -> bool:
        self.send(("failed", self.name, str(exc), exc.kind, exc.where, exc.status))
        return self.down is not None


def borrow(traffic: Traffic, send: Send) -> dict[str, Remote]:
    """In a worker: every throttled connector made from now on asks the controller for its slots."""
    remotes: dict[str, Remote] = {}
    wrap = traffic.wrap

    def wrapped(connector: Any) -> Any:
        made = wrap(connector)
        if isinstance(made, Throttled):
            local = made.throttle
            made.throttle = remotes.setdefault(local.name, Remote(local.name, local.limits, send))  # type: ignore[assignment]
        return made

    traffic.wrap = wrapped  # type: ignore[method-assign]
    return remotes


def share(traffic: Traffic, size: int) -> None:
    """In one of ``size`` workers that cannot ask the controller (Ray actors): each connector's
    ``max_concurrency`` and ``rpm`` divided among them."""
    wrap = traffic.wrap

    def wrapped(connector: Any) -> Any:
        made = wrap(connector)
        if isinstance(made, Throttled):
            limits = made.throttle.limits
            made.throttle.limits = replace(limits, ceiling=max(1, math.ceil(limits.ceiling / size)),
                                           rpm=limits.rpm / size if limits.rpm else None)
            made.throttle.limit = made.throttle.recover_to = made.throttle.lowest = made.throttle.limits.ceiling
        return made

    traffic.wrap = wrapped  # type: ignore[method-assign]


class Lender:
    """In the controller: one worker's requests for slots, answered from the run's throttles."""

    def __init__(self, traffic: Traffic, send: Send):
        self.traffic = traffic
        self.send = send
        self.held: dict[str, int] = {}  # slots this worker holds, per connector
        self.waiting: dict[int, asyncio.Task[None]] = {}

    def throttle(self, name: str, limits: Limits) -> Throttle:
        if name not in self.traffic.throttles:
            self.traffic.throttles[name] = Throttle(name, limits, self.traffic.notify)
        return self.traffic.throttles[name]

    def handle(self, message: tuple[Any, ...]) -> None:
        kind, *rest = message
        if kind == "acquire":
            rid, name, limits = rest
            throttle = self.throttle(name, limits)
            epoch = throttle.try_acquire()
            if epoch is not None:  # a free slot: granted at once, with no task in between
                self.held[name] = self.held.get(name, 0) + 1
                self.send(("granted", name, rid, epoch, ""))
            else:
                self.waiting[rid] = asyncio.create_task(self._grant(rid, throttle))
            return
        if kind == "withdraw":
            task = self.waiting.pop(rest[0], None)
            if task is not None:
                task.cancel()
            return
        throttle = self.traffic.throttles[rest[0]]
        if kind == "count":
            throttle.stats[rest[1]] += rest[2]
        elif kind == "release":
            self.held[throttle.name] -= 1
            throttle.release()
        elif kind == "succeeded":
            throttle.succeeded()
        elif kind == "rate_limited":
            throttle.rate_limited(rest[1])
        elif kind == "failed":
            text, failure, where, status = rest[1:]
            throttle.failed(Retryable(text, failure, where, status=status))

    async def _grant(self, rid: int, throttle: Throttle) -> None:
        try:
            epoch = await throttle.acquire()
        except CallError:
            self.send(("granted", throttle.name, rid, None, throttle.down or throttle.name))
            return
        finally:
            self.waiting.pop(rid, None)
        self.held[throttle.name] = self.held.get(throttle.name, 0) + 1
        self.send(("granted", throttle.name, rid, epoch, ""))

    def close(self) -> None:
        """The worker is gone: its queued requests are dropped and the slots it held given back."""
        for task in list(self.waiting.values()):
            task.cancel()
        for name, count in self.held.items():
            for _ in range(count):
                self.traffic.throttles[name].release()
        self.held.clear()
