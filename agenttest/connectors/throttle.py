"""Load on an endpoint (FORMATS §13): every call of a network connector goes through its ``Throttle`` —
an adaptive concurrency limit (halved on a 429, grown back by one per success, never above ``--parallel``
or the connector's ``max_concurrency``), ``rpm`` spacing, retries with backoff that honour ``Retry-After``,
and the endpoint marked down after three connection failures in a row."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agenttest.errors import AgentTestError, CallError
from agenttest.model import Completion, EndpointLoad
from agenttest.runtime import exchanges
from agenttest.runtime.trace import deadline_paused
from agenttest.connectors.base import ChatRequest, Connector, ConnectorSpec, Retryable

DOWN_AFTER = 3  # connection failures in a row that mark an endpoint down
MAX_WAIT = 60.0  # a longer Retry-After is cut to this
BASE_DELAY, MAX_DELAY = 0.5, 8.0  # exponential backoff when the server does not say how long
UNBOUNDED = 1000  # the ceiling when no --parallel is known (a Catalog used as a library): the CLI's own maximum
PROBE_WINDOWS = 3  # past the last good level, grow by one per this many windows of successes (bench/RESULTS.md)
MOST_PROBE_WINDOWS = 48  # each probe refused at the same level doubles the windows before the next, up to this
TIMELINE_POINTS = 256  # the limit's changes kept for the report; past this, every other one is dropped


@dataclass(frozen=True)
class Limits:
    """What bounds one connector's load: from its spec and the run's ``--parallel``."""

    ceiling: int  # the most calls in flight: --parallel, or the connector's max_concurrency if lower
    rpm: float | None = None  # requests per minute, spaced evenly
    max_retries: int = 3  # for 5xx, timeouts and connection failures
    rate_limit_retries: int = 10  # for 429s (they are also slowed by the adaptive limit)
    bounded: bool = False  # the connector sets max_concurrency: the endpoint serves that many at once, no more


def limits_for(spec: ConnectorSpec, parallel: int | None) -> Limits:
    """The limits a connector file asks for under ``--parallel``; a bad value is a usage error naming it."""
    parallel = parallel or UNBOUNDED
    opts = spec.options

    def number(key: str, default: Any, minimum: float, kind: type = int) -> Any:
        value = opts.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)) \
                or not math.isfinite(value) or value < minimum:
            where = f"connector {spec.id}" + (f" ({spec.path})" if spec.path else "")
            raise AgentTestError(f"{where}: '{key}' must be {'an integer' if kind is int else 'a number'} ≥ {minimum:g}, not {value!r}")
        return kind(value)

    most = number("max_concurrency", None, 1)
    return Limits(min(parallel, most) if most else parallel, number("rpm", None, 0.001, float),
                  number("max_retries", 3, 0), number("rate_limit_retries", 10, 0), bounded=bool(most))


class Throttle:
    """One endpoint's load: who may send now, how fast, and how it has held up."""

    def __init__(self, name: str, limits: Limits, notify: Callable[[str], None] = lambda text: None):
        self.name = name
        self.limits = limits
        self.notify = notify
        self.limit = limits.ceiling
        self.recover_to = limits.ceiling  # grow back one per success up to here; beyond, one per PROBE_WINDOWS windows
        self.in_flight = 0
        self.epoch = 0  # bumped on each decrease: 429s of calls sent before it do not halve again
        self.down: str | None = None  # "host: why", once marked down
        self._probe = 0
        self._probing = False  # the limit is one past the last level the endpoint took
        self._windows = PROBE_WINDOWS  # windows of successes before the next probe
        self._failures_in_a_row = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._next_start = 0.0
        self.stats = {"requests": 0, "rate_limited": 0, "absorbed": 0, "retries": 0, "overloaded": 0}
        self.lowest = self.limit
        self.peak = 0
        self._clock: Callable[[], float] = time.monotonic
        self._began: float | None = None  # the first request
        self._shown = self.limit  # the limit as the timeline last said it
        self._since = 0.0  # when the limit became _shown (seconds from the first request)
        self._held: dict[int, float] = {}  # seconds the limit spent at each level
        self.timeline: list[tuple[float, int]] = []  # (seconds from the first request, the limit from then on)

    async def acquire(self) -> int:
        """Wait for a slot (and the ``rpm`` spacing); returns the epoch the call was sent in."""
        if self.down:
            raise CallError(f"endpoint unreachable: {self.down}")
        if self.in_flight >= self.limit or self._waiters:
            with deadline_paused():
                await self._queue()
        else:
            self.in_flight += 1
        if self.limits.rpm:
            await self._space()
        self.peak = max(self.peak, self.in_flight)
        self.stats["requests"] += 1
        if self._began is None:
            self._start()
        return self.epoch

    def try_acquire(self) -> int | None:
        """A slot now if one is free and nothing waits or spaces requests (the epoch), else None."""
        if self.down or self.limits.rpm or self._waiters or self.in_flight >= self.limit:
            return None
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.stats["requests"] += 1
        if self._began is None:
            self._start()
        return self.epoch

    def _start(self) -> None:
        self._began = self._clock()
        self._shown = self.limit
        self.timeline.append((0.0, self.limit))

    def _moved(self) -> None:
        """The limit may have changed: the timeline and the time spent at each level follow it."""
        if self.limit == self._shown or self._began is None:
            return
        now = self._clock() - self._began
        self._held[self._shown] = self._held.get(self._shown, 0.0) + now - self._since
        self._shown, self._since = self.limit, now
        self.timeline.append((round(now, 3), self.limit))
        if len(self.timeline) > TIMELINE_POINTS:  # thinned evenly, the first and the latest kept
            self.timeline = self.timeline[:-1:2] + self.timeline[-1:]

    def found(self) -> int:
        """The concurrency the run settled at: the level the limit held longest (the ceiling before any request)."""
        if self._began is None:
            return self.limit
        held = dict(self._held)
        held[self._shown] = held.get(self._shown, 0.0) + self._clock() - self._began - self._since
        return max(held, key=lambda level: (held[level], level))

    async def _queue(self) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted a slot, then cancelled: hand it on
                self.release()
            raise
        finally:
            if not fut.done():
                self._waiters.remove(fut)

    async def _space(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self._next_start)
        self._next_start = start + 60.0 / self.limits.rpm  # type: ignore[operator]
        if start > now:
            try:
                with deadline_paused():
                    await asyncio.sleep(start - now)
            except asyncio.CancelledError:
                self.release()
                raise

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)

    def succeeded(self) -> None:
        """A call came back: grow back by one, or past the last good level by one per PROBE_WINDOWS windows
        of successes (probing slowly keeps the limit near what the endpoint takes; a probe that meets a 429
        steps back by one instead of halving, so settling costs no dip in throughput). Each probe refused in a
        row doubles the windows before the next (an endpoint whose limit holds still is asked less and less
        often: fewer 429s, fewer calls waiting out a Retry-After); a probed level that holds resets them."""
        self._failures_in_a_row = 0
        if self.limit < self.recover_to:
            self.limit += 1
        else:
            self._probe += 1
            if self._probing and self._probe >= PROBE_WINDOWS * self.limit:  # the level probed held: it is good
                self._windows = PROBE_WINDOWS
            if self._probe >= self._windows * self.limit and self.limit < self.limits.ceiling:
                self.limit, self._probe, self._probing = self.limit + 1, 0, True
                self.recover_to = self.limit
        self._moved()
        self._wake()

    def rate_limited(self, epoch: int) -> None:
        """A 429 for a call sent in ``epoch`` (call before ``release``): halve, once per epoch. Each further 429
        of a call sent before that decrease lowers the level to grow back to by one (one fewer of those calls
        was accepted): a burst of 20 that meets a limit of 4 settles at 4 at once, not after waves of 429s."""
        self.stats["rate_limited"] += 1
        self._failures_in_a_row = 0
        self._lowered(epoch)
        self._moved()

    def _lowered(self, epoch: int) -> None:
        """The limit and the level to grow back to after a 429 for a call sent in ``epoch``."""
        if epoch != self.epoch:  # sent before the last decrease: that decrease already answered it
            if epoch == self.epoch - 1 and self.recover_to > 1:
                self.recover_to -= 1
                self.limit = min(self.limit, self.recover_to)
                self.lowest = min(self.lowest, self.limit)
            return
        if self._probing:  # one step past the last good level was one too many: back to it, not halved
            self.limit = self.recover_to = max(1, self.limit - 1)
            self.epoch, self._probe, self._probing = self.epoch + 1, 0, False
            self._windows = min(MOST_PROBE_WINDOWS, 2 * self._windows)
            return
        level = min(self.limit, self.in_flight)
        self.recover_to = max(1, level - 1)  # at most this many were accepted
        self.limit = max(1, level // 2)
        self.lowest = min(self.lowest, self.limit)
        self.epoch += 1
        self._probe = 0
        self._windows = PROBE_WINDOWS  # the endpoint takes less than it did: find its level again at the usual pace

    def failed(self, exc: Retryable) -> bool:
        """Any other failed attempt; True when it marked the endpoint down."""
        if exc.status == 503:
            self.stats["overloaded"] += 1
        if exc.kind != "unreachable":
            self._failures_in_a_row = 0
            return False
        self._failures_in_a_row += 1
        if self._failures_in_a_row >= DOWN_AFTER and not self.down:
            self.down = exc.where or self.name
            self.notify(f"connector {self.name}: endpoint unreachable: {self.down} ({DOWN_AFTER} connection attempts in a row "
                        f"failed: {exc}); the remaining cases that use it fail at once")
            for fut in list(self._waiters):  # the queued calls learn it now
                if not fut.done():
                    fut.set_exception(CallError(f"endpoint unreachable: {self.down}"))
            self._waiters.clear()
        return self.down is not None

    def load(self) -> EndpointLoad:
        s = self.stats
        return EndpointLoad(connector=self.name, requests=s["requests"], rate_limited=s["rate_limited"], absorbed=s["absorbed"], retries=s["retries"], overloaded=s["overloaded"],
                            limit=self.limit, lowest_limit=self.lowest, peak_in_flight=self.peak, unreachable=self.down is not None,
                            found=self.found(), timeline=tuple(self.timeline))


def backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt`` when the server did not say: 0.5, 1, 2, … 8, with jitter."""
    return min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1)) * (1 + random.random() / 4)


class Throttled:
    """A connector whose calls go through a Throttle and are retried as each failure allows."""

    def __init__(self, inner: Connector, throttle: Throttle, parallel: int):
        self.inner = inner
        self.spec: ConnectorSpec = inner.spec
        self.throttle = throttle
        self.parallel = parallel

    def __getattr__(self, name: str) -> Any:  # prepare, aclose, warnings, … of the connector inside
        return getattr(self.inner, name)

    async def complete(self, request: ChatRequest) -> Completion:
        throttle, limits = self.throttle, self.throttle.limits
        limited = failures = cuts = 0
        drains = limits.bounded and not _streams(self.inner, request)
        recording = exchanges.current_exchange.get() is not None  # --calls: the time queued and each retry are said
        while True:
            if recording:
                asked = time.perf_counter()
                epoch = await throttle.acquire()
                exchanges.queued(time.perf_counter() - asked)
            else:
                epoch = await throttle.acquire()
            held = [False]  # set when a cancelled call goes on in the background, holding its slot
            try:
                completion = await (self._drained(request, held) if drains else self.inner.complete(request))
            except asyncio.CancelledError:
                if not held[0]:
                    throttle.release()
                raise
            except Retryable as exc:
                failure = exc
                if exc.kind == "rate_limit":
                    throttle.rate_limited(epoch)
                down = exc.kind != "rate_limit" and throttle.failed(exc)
                throttle.release()
            except BaseException:
                throttle.release()
                raise
            else:
                throttle.release()
                throttle.succeeded()
                return completion
            if failure.kind == "rate_limit":
                limited += 1
                if limited > limits.rate_limit_retries:
                    raise CallError(f"{failure} (still rate limited after {limits.rate_limit_retries} retries; "
                                    f"try a lower --parallel, or set rpm/max_concurrency on the connector)") from None
                throttle.stats["absorbed"] += 1
                wait = min(failure.retry_after if failure.retry_after is not None else backoff(limited), MAX_WAIT)
                if recording:
                    exchanges.retried(failure.kind, str(failure), failure.status, wait)
                with deadline_paused():  # waiting out a rate limit is not the agent's time
                    await asyncio.sleep(wait)
                continue
            if down:
                raise CallError(f"endpoint unreachable: {throttle.down}") from None
            if failure.kind == "cut":  # a stream cut short: once more, then what may have cut it
                cuts += 1
                if cuts > 1:
                    raise CallError(f"{failure}, again when retried{self._cut_hint()}") from None
                throttle.stats["retries"] += 1
                if recording:
                    exchanges.retried(failure.kind, str(failure), failure.status)
                continue
            failures += 1
            if failures > limits.max_retries:
                raise CallError(self._final(failure, failures - 1)) from None
            throttle.stats["retries"] += 1
            wait = min(failure.retry_after if failure.retry_after is not None else backoff(failures), MAX_WAIT)
            if recording:
                exchanges.retried(failure.kind, str(failure), failure.status, wait)
            await asyncio.sleep(wait)

    async def _drained(self, request: ChatRequest, held: list[bool]) -> Completion:
        """The call in a task of its own. Cancelled (the case's deadline, Ctrl-C), it goes on to its end in the
        background and keeps its slot until then: an endpoint that serves ``max_concurrency`` requests at a time
        (llama-cpp-python: one) goes on generating a non-streaming answer nobody waits for, and the next call would
        wait behind it at the server, its own deadline running — it waits in the throttle's queue instead, where
        its deadline stands still (a streamed call is closed at once instead: the server stops at its next token)."""
        task = asyncio.ensure_future(self.inner.complete(request))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                held[0] = True
                task.add_done_callback(self._drain_done)
            raise

    def _drain_done(self, task: asyncio.Future[Completion]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved: nobody waits for this answer
        self.throttle.release()

    def _cut_hint(self) -> str:
        """Why streams may be cut: a server that serves one request at a time ends the stream in progress when
        another arrives (llama-cpp-python does) — unless this connector already sends one at a time."""
        if self.throttle.limits.ceiling <= 1:
            return ""
        return (f"; a server that serves one request at a time (llama-cpp-python) ends a stream when another request arrives: "
                f"lower --parallel (it is {self.parallel}) or set \"max_concurrency\": 1 on connector {self.spec.id}")

    def _final(self, failure: Retryable, retries: int) -> str:
        text = str(failure) + (f" (after {retries} {'retry' if retries == 1 else 'retries'})" if retries else "")
        if failure.status == 503:
            text += f"; the endpoint is overloaded: try a lower --parallel (it is {self.parallel}) or set max_concurrency on the connector"
        return text


def _streams(connector: Any, request: ChatRequest) -> bool:
    """Whether the connector sends this request as a stream (one that cannot tell is taken as not)."""
    streams = getattr(connector, "streams", None)
    return bool(streams(request)) if callable(streams) else False


class Traffic:
    """The run's throttles, one per network connector, and who hears about endpoints going down."""

    def __init__(self, parallel: int | None = None):
        self.parallel = parallel
        self.throttles: dict[str, Throttle] = {}
        self.notices: list[str] = []
        self._listeners: list[Callable[[str], None]] = []

    def wrap(self, connector: Connector) -> Connector:
        """The connector with its calls throttled and retried; local connectors (the mock) as they are."""
        if getattr(connector, "local", False):
            return connector
        spec = connector.spec
        throttle = Throttle(spec.id, limits_for(spec, self.parallel), self.notify)
        self.throttles[spec.id] = throttle
        return Throttled(connector, throttle, self.parallel or UNBOUNDED)

    def listen(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def notify(self, text: str) -> None:
        self.notices.append(text)
        for listener in self._listeners:
            listener(text)

    def load(self) -> tuple[EndpointLoad, ...]:
        return tuple(t.load() for t in self.throttles.values() if t.stats["requests"] or t.down)

    def warnings(self) -> list[str]:
        """What the report should say about the load: endpoints down, 503 storms."""
        out = list(self.notices)
        for t in self.throttles.values():
            if t.stats["overloaded"] >= DOWN_AFTER:
                out.append(f"connector {t.name}: {t.stats['overloaded']} responses were 503 (overloaded); "
                           f"a lower --parallel (it was {self.parallel}) or max_concurrency on the connector may help")
        return out
