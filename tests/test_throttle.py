"""Load on an endpoint (FORMATS §13): the adaptive limit, rpm spacing, Retry-After, retry budgets and
endpoints marked down — as a unit, and through the real SDK against a loopback server that answers 429
beyond K requests in flight."""

from __future__ import annotations

import asyncio
import socket

import pytest

from agenttest.connectors import ChatRequest, ConnectorSpec, create
from agenttest.connectors.throttle import Limits, Throttle, Traffic, limits_for
from agenttest.errors import AgentTestError, CallError
from helpers import Answer

KEY = "sk-live-DO-NOT-LEAK-123456"


def spec(server_host: str, **options) -> ConnectorSpec:
    return ConnectorSpec("fake", "openai", {"model": "m1", "host": server_host, "key": KEY, **options})


def ask(conn, text: str):
    return conn.complete(ChatRequest([{"role": "user", "content": text}]))


async def once(conn, text: str):
    """One call; the connector's clients closed after it, in its loop."""
    try:
        return await ask(conn, text)
    finally:
        close = getattr(conn, "aclose", None)  # a plug-in connector may have none
        if close is not None:
            await close()


async def many(conn, n: int, prefix: str = "case"):
    """n calls at once; the connector's clients closed after them, in the loop that made them (as a run does)."""
    try:
        return await asyncio.gather(*(ask(conn, f"{prefix} {i}") for i in range(n)), return_exceptions=True)
    finally:
        await conn.aclose()


# ---- the throttle alone ------------------------------------------------------------------------


def test_halves_on_a_429_once_per_epoch_then_grows_back_one_per_success():
    async def go():
        t = Throttle("x", Limits(ceiling=8))
        epochs = [await t.acquire() for _ in range(8)]
        assert t.in_flight == 8 and t.limit == 8
        t.rate_limited(epochs[0])
        assert t.limit == 4 and t.recover_to == 7
        t.rate_limited(epochs[1])  # sent before the decrease: not halved again, but one fewer of them was accepted
        assert t.limit == 4 and t.recover_to == 6
        for _ in range(8):
            t.release()
        for expected in (5, 6):  # back to the last good level, one per success
            t.succeeded()
            assert t.limit == expected
        for _ in range(3 * 6 - 1):  # past it: one per three windows of successes
            t.succeeded()
        assert t.limit == 6
        t.succeeded()
        assert t.limit == 7
        for _ in range(3 * 7):
            t.succeeded()
        assert t.limit == 8
        for _ in range(50):
            t.succeeded()
        assert t.limit == 8  # never above the ceiling
        assert t.load().lowest_limit == 4 and t.load().rate_limited == 2

    asyncio.run(go())


def test_a_burst_that_meets_a_limit_settles_at_what_was_accepted_in_one_wave():
    """20 sent at once to an endpoint that takes 4: 16 are refused. The first 429 halves; each further one of
    that burst says one fewer was accepted — the limit is 4 at once, not after more waves of 429s."""
    async def go():
        t = Throttle("x", Limits(ceiling=20))
        epochs = [await t.acquire() for _ in range(20)]
        for e in epochs[4:]:
            t.rate_limited(e)
            t.release()
        assert (t.limit, t.recover_to) == (4, 4) and t.load().lowest_limit == 4
        for _ in epochs[:4]:
            t.release()
            t.succeeded()
        assert t.limit == 4  # the level that worked; probing past it is slow

    asyncio.run(go())


def test_a_probe_that_meets_a_429_steps_back_by_one_and_a_429_after_it_halves():
    async def go():
        t = Throttle("x", Limits(ceiling=20))
        epochs = [await t.acquire() for _ in range(10)]
        t.rate_limited(epochs[-1])  # 10 in flight were too many
        assert (t.limit, t.recover_to) == (5, 9)
        for _ in range(10):
            t.release()
        for _ in range(4 + 3 * 9):  # back to 9, then one window set of successes past it: a probe to 10
            t.succeeded()
        assert (t.limit, t.recover_to) == (10, 10)
        probe = await t.acquire()
        t.rate_limited(probe)  # the probe was one too many: back to the last good level
        assert (t.limit, t.recover_to) == (9, 9) and t.load().lowest_limit == 5
        again = await t.acquire()
        t.rate_limited(again)  # at a level the endpoint took before: it takes less now, so halve
        assert t.limit == 1  # min(limit 9, in flight 2) // 2

    asyncio.run(go())


def test_each_probe_refused_in_a_row_doubles_the_wait_before_the_next_and_a_level_that_holds_resets_it():
    """An endpoint whose limit holds still refuses every probe: probing less and less often costs fewer 429s
    (and fewer calls waiting out a Retry-After — near the end of a run, the run's end)."""
    def successes_to_next_probe(t: Throttle) -> int:
        n, level = 0, t.limit
        while t.limit == level:
            t.succeeded()
            n += 1
        return n

    async def go():
        t = Throttle("x", Limits(ceiling=20))
        epochs = [await t.acquire() for _ in range(5)]
        t.rate_limited(epochs[-1])  # 5 in flight were too many: back to 2, growing to 4
        for _ in range(5):
            t.release()
        assert successes_to_next_probe(t) == 1 and successes_to_next_probe(t) == 1 and t.limit == 4
        waits = []
        for _ in range(6):  # the endpoint takes 4, always: each probe to 5 is refused
            waits.append(successes_to_next_probe(t))
            assert t.limit == 5
            t.rate_limited(await t.acquire())
            t.release()
            assert t.limit == 4
        assert waits == [3 * 4, 6 * 4, 12 * 4, 24 * 4, 48 * 4, 48 * 4]  # doubled, up to a most
        assert successes_to_next_probe(t) == 48 * 4
        assert successes_to_next_probe(t) == 3 * 5  # the probed level (5) held that long: the usual pace again
        t.rate_limited(await t.acquire())  # a 429 at 6
        t.release()
        assert successes_to_next_probe(t) == 6 * 5  # refused: doubled from the usual pace
        t.rate_limited(await t.acquire())
        t.release()
        assert successes_to_next_probe(t) == 12 * 5
        t.rate_limited(await t.acquire())  # the probe to 6 refused: back to 5, the next probe 24 windows away
        t.release()
        assert (t.limit, t._windows) == (5, 24)
        epochs = [await t.acquire() for _ in range(5)]
        t.rate_limited(epochs[-1])  # at the level that held: the endpoint takes less now — halved, the pace reset
        for _ in range(5):
            t.release()
        assert (t.limit, t.recover_to) == (2, 4)
        assert successes_to_next_probe(t) == 1 and successes_to_next_probe(t) == 1
        assert successes_to_next_probe(t) == 3 * 4

    asyncio.run(go())


def test_waiters_get_slots_in_order_and_a_429_holds_new_ones_back():
    async def go():
        t = Throttle("x", Limits(ceiling=2))
        first, second = await t.acquire(), await t.acquire()
        order: list[int] = []

        async def wait(i: int) -> None:
            await t.acquire()
            order.append(i)

        waiters = [asyncio.create_task(wait(i)) for i in range(3)]
        await asyncio.sleep(0)
        assert order == [] and t.in_flight == 2
        t.rate_limited(first)  # limit 1: a freed slot goes to nobody while one is still in flight
        t.release()
        await asyncio.sleep(0)
        assert order == []
        t.release()
        await asyncio.sleep(0)
        assert order == [0]
        waiters[2].cancel()  # a waiter that gives up leaves the queue without taking a slot
        t.release()
        t.succeeded()
        await asyncio.sleep(0)
        assert order == [0, 1] and t.in_flight == 1
        await asyncio.gather(*waiters, return_exceptions=True)
        assert second == first

    asyncio.run(go())


def sleeps(monkeypatch) -> list[float]:
    """The seconds each ``asyncio.sleep`` of the throttle is asked for, slept all the same: what it waits, counted."""
    from agenttest.connectors import throttle

    asked: list[float] = []
    real = asyncio.sleep

    def sleep(delay, *args, **kwargs):
        asked.append(delay)
        return real(delay, *args, **kwargs)

    monkeypatch.setattr(throttle.asyncio, "sleep", sleep)
    return asked


def test_rpm_spaces_the_starts(monkeypatch):
    waits = sleeps(monkeypatch)

    async def go():
        t = Throttle("x", Limits(ceiling=10, rpm=600))  # one start every 0.1 s
        for _ in range(4):
            await t.acquire()

    asyncio.run(go())
    # the first at once, each other one waited for its turn: 0.1 s after the one before (less what it took to come)
    assert len(waits) == 3 and all(0 < w <= 0.1 for w in waits), waits


@pytest.mark.parametrize("options, parallel, ceiling", [({}, 7, 7), ({"max_concurrency": 3}, 7, 3), ({"max_concurrency": 30}, 7, 7)])
def test_the_ceiling_is_parallel_or_max_concurrency_whichever_is_lower(options, parallel, ceiling):
    assert limits_for(spec("http://h", **options), parallel).ceiling == ceiling


@pytest.mark.parametrize("options, message", [
    ({"max_concurrency": 0}, "'max_concurrency' must be an integer ≥ 1, not 0"),
    ({"rpm": "fast"}, "'rpm' must be a number ≥ 0.001, not 'fast'"),
    ({"max_retries": -1}, "'max_retries' must be an integer ≥ 0, not -1"),
    ({"max_concurrency": 2.5}, "'max_concurrency' must be an integer"),
])
def test_bad_limits_are_usage_errors(options, message):
    with pytest.raises(AgentTestError, match=message):
        limits_for(spec("http://h", **options), 4)


# ---- through the SDK against the loopback server -----------------------------------------------


def test_429_beyond_k_in_flight_every_call_passes_and_the_load_converges_to_k(server):
    server.limit(4, "0.2")  # Retry-After: 0.2 (seconds)
    server.responder = lambda req: Answer("ok", delay=0.05)
    traffic = Traffic(parallel=20)
    conn = traffic.wrap(create(spec(server.host)))
    results = asyncio.run(many(conn, 80))
    assert all(not isinstance(r, BaseException) and r.content == "ok" for r in results), [r for r in results if isinstance(r, BaseException)][:3]
    requests = list(server.requests)
    rejected = [r for r in requests if r["rejected"]]
    load = traffic.load()[0]
    assert rejected and load.rate_limited == len(rejected) == load.absorbed  # every 429 absorbed
    assert load.lowest_limit <= 4 < 20 and load.requests == len(requests)
    tail = requests[len(requests) * 2 // 3:]
    assert max(r["in_flight"] for r in tail) <= 4 + 2  # the load settled at about K
    # Retry-After is respected: a rejected message comes back no sooner than 0.2 s later
    by_text: dict[str, list[dict]] = {}
    for r in requests:
        by_text.setdefault(r["body"]["messages"][-1]["content"], []).append(r)
    for sent in by_text.values():
        for before, after in zip(sent, sent[1:]):
            assert before["rejected"] and after["at"] - before["at"] >= 0.19


def test_retry_after_in_whole_seconds_and_in_ms_are_honoured(server, monkeypatch):
    for header, value, wait in (("retry-after", "1", 1.0), ("retry-after-ms", "300", 0.3)):
        server.reset()
        calls = []

        def responder(req, header=header, value=value, calls=calls):
            calls.append(req)
            return Answer(status=429, error="slow down", headers={header: value}) if len(calls) == 1 else Answer("ok")

        server.responder = responder
        waits = sleeps(monkeypatch)
        assert asyncio.run(once(Traffic(2).wrap(create(spec(server.host))), "hi")).content == "ok"
        assert waits == [wait] and len(calls) == 2, waits  # the header's wait, once, then the call again


def test_a_rate_limit_the_budget_cannot_absorb_is_the_calls_error(server):
    server.responder = lambda req: Answer(status=429, error="quota exceeded", headers={"retry-after-ms": "10"})
    conn = Traffic(2).wrap(create(spec(server.host, rate_limit_retries=2)))
    with pytest.raises(CallError, match=r"model error 429 .*quota exceeded \(still rate limited after 2 retries; try a lower --parallel"):
        asyncio.run(once(conn, "hi"))
    assert len(server.requests) == 3


def test_max_concurrency_bounds_what_parallel_would_send(server):
    server.responder = lambda req: Answer("ok", delay=0.05)
    conn = Traffic(parallel=10).wrap(create(spec(server.host, max_concurrency=2)))
    results = asyncio.run(many(conn, 10))
    assert all(r.content == "ok" for r in results)
    assert server.peak_in_flight == 2


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_is_marked_down_after_three_failures_in_a_row(monkeypatch):
    port = closed_port()
    traffic = Traffic(parallel=1)
    heard: list[str] = []
    traffic.listen(heard.append)
    conn = traffic.wrap(create(spec(f"http://127.0.0.1:{port}", max_retries=5)))
    waits = sleeps(monkeypatch)
    with pytest.raises(CallError, match=f"^endpoint unreachable: 127.0.0.1:{port}$"):
        asyncio.run(once(conn, "first"))  # attempts 1–3 fail, refused: the third marks it down
    for i in range(5):  # the rest fail at once
        with pytest.raises(CallError, match=f"^endpoint unreachable: 127.0.0.1:{port}$"):
            asyncio.run(once(conn, f"then {i}"))
    assert len(waits) == 2 and all(w > 0 for w in waits), waits  # backoff before attempts 2 and 3; then down: no retry (counted, not timed)
    assert len(heard) == 1 and "connection refused" in heard[0] and "3 connection attempts in a row" in heard[0]
    assert traffic.load()[0].unreachable and traffic.warnings() == heard


def test_a_success_resets_the_count_of_failures(server):
    t = Throttle("x", Limits(ceiling=1))
    from agenttest.connectors.base import Retryable

    refused = Retryable("cannot reach h: connection refused", "unreachable", "h")
    assert not t.failed(refused) and not t.failed(refused)
    t.succeeded()
    assert not t.failed(refused) and not t.failed(refused) and t.failed(refused)
    assert t.down == "h"


class Flaky:
    """A plug-in connector that says it was rate limited twice, then answers."""

    def __init__(self):
        self.spec = ConnectorSpec("flaky", "flaky", {"max_retries": 0})
        self.calls = 0

    async def complete(self, request):
        from agenttest.connectors.base import Retryable
        from agenttest.model import Completion

        self.calls += 1
        if self.calls <= 2:
            raise Retryable("busy", "rate_limit", "flaky:1", retry_after=0.01, status=429)
        return Completion("ok")


def test_a_plug_in_connector_gets_the_same_retries_and_a_local_one_is_left_alone():
    traffic = Traffic(parallel=3)
    inner = Flaky()
    conn = traffic.wrap(inner)
    assert asyncio.run(once(conn, "hi")).content == "ok" and inner.calls == 3
    assert traffic.load()[0].absorbed == 2
    mock = create(ConnectorSpec("mock", "mock", {}))
    assert traffic.wrap(mock) is mock and len(traffic.throttles) == 1


def test_try_acquire_grants_a_free_slot_at_once_and_nothing_when_full_or_spaced():
    """The controller's fast path for a worker's request (runner/slots.py): no task when a slot is free."""
    t = Throttle("x", Limits(ceiling=2))
    assert t.try_acquire() == 0 and t.try_acquire() == 0 and t.in_flight == 2 and t.stats["requests"] == 2
    assert t.try_acquire() is None and t.in_flight == 2  # full: the request queues instead
    t.release()
    assert t.try_acquire() == 0 and t.peak == 2
    assert Throttle("y", Limits(ceiling=2, rpm=60)).try_acquire() is None  # spacing needs the async path


def test_the_limit_over_the_run_and_the_concurrency_found():
    """The timeline starts at the first request, has a point per change, is thinned evenly past its bound (the first
    and the latest kept); the concurrency found is the level the limit held longest, not where it ended."""
    now = [100.0]
    t = Throttle("x", Limits(ceiling=8))
    t._clock = lambda: now[0]
    assert t.load().found == 8 and t.load().timeline == ()  # no request yet
    epochs = [t.try_acquire() for _ in range(8)]
    now[0] += 0.5
    t.rate_limited(epochs[0])  # 8 → 4, at 0.5 s
    for _ in range(8):
        t.release()
    now[0] += 10.0  # ten seconds at 4
    t.succeeded()  # 4 → 5 (growing back towards 7)
    now[0] += 1.0
    load = t.load()
    assert load.timeline == ((0.0, 8), (0.5, 4), (10.5, 5)) and load.found == 4 and load.limit == 5
    from agenttest.connectors import throttle as module

    for i in range(3 * module.TIMELINE_POINTS):  # many changes: thinned, never longer than the bound (and the latest)
        now[0] += 0.01
        t.limit = 1 + i % 2
        t._moved()
    points = t.load().timeline
    assert len(points) <= module.TIMELINE_POINTS + 1 and points[0] == (0.0, 8) and points[-1][1] == t.limit
    assert [p[0] for p in points] == sorted(p[0] for p in points) and t.load().found == 4
