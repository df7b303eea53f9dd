"""The benchmark server: a loopback OpenAI-compatible endpoint on asyncio, in its own process.

It answers ``POST /v1/chat/completions`` after a configurable latency (``asyncio.sleep``, so a
thousand requests in flight cost no threads), with keep-alive and ``TCP_NODELAY`` (without it Nagle
and delayed ACK add ~40 ms to every keep-alive request). ``GET /stats`` returns the request count and
the peak number in flight (and when the first request came and the last answer left); ``POST /config {"latency": s, "jitter": f,
"limit": R, "retry_after": s, "retry_after_ms": ms}`` sets them and resets the counters (the flaky cases' too): with a
``limit``, a request beyond R in flight is answered at once with 429, ``Retry-After`` and, when given,
``retry-after-ms`` (a rate-limited endpoint, as OpenAI's answers: both headers, the finer one first).
Replies follow bench/workloads.py: the agent under test answers by turn, the simulator with JSON.

Run: ``python bench/server.py PORT`` (prints ``ready`` when listening)."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import sys
import time

from workloads import reply_for


class State:
    latency = 0.0
    jitter = 0.0
    limit = 0  # 0: no limit
    retry_after = "1"
    retry_after_ms = ""  # also sent as retry-after-ms when set
    requests = 0
    rejected = 0
    in_flight = 0
    peak = 0
    seen: dict[str, int] = {}  # flaky cases: requests so far per message
    first_at = 0.0  # time.time() of the first chat request since /config
    last_at = 0.0  # time.time() of the last chat answer (a 429 included)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                if line[:15].lower() == "content-length:":
                    length = int(line[15:])
            body = json.loads(await reader.readexactly(length)) if length else {}
            status, extra = b"200 OK", b""
            if path.endswith("/chat/completions"):
                State.requests += 1
                State.first_at = State.first_at or time.time()
                if State.limit and State.in_flight >= State.limit:
                    State.rejected += 1
                    status, extra = b"429 Too Many Requests", b"Retry-After: %s\r\n" % State.retry_after.encode()
                    if State.retry_after_ms:
                        extra += b"retry-after-ms: %s\r\n" % State.retry_after_ms.encode()
                    payload = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
                else:
                    State.in_flight += 1
                    State.peak = max(State.peak, State.in_flight)
                    try:
                        if State.latency:
                            await asyncio.sleep(State.latency * (1 + State.jitter * (2 * random.random() - 1)))
                        payload = completion(body)
                    finally:
                        State.in_flight -= 1
            elif path == "/stats":
                payload = {"requests": State.requests, "peak_in_flight": State.peak, "rejected": State.rejected, "first_at": State.first_at,
                           "last_at": State.last_at}
            elif path == "/config":
                State.latency, State.requests, State.peak, State.rejected, State.first_at = float(body.get("latency", 0)), 0, 0, 0, 0.0
                State.last_at = 0.0
                State.seen = {}
                State.jitter = float(body.get("jitter", 0))
                State.limit, State.retry_after = int(body.get("limit", 0)), str(body.get("retry_after", "1"))
                State.retry_after_ms = str(body.get("retry_after_ms", ""))
                payload = {"ok": True}
            else:
                payload = {"error": {"message": f"no route {path}"}}
            data = json.dumps(payload).encode()
            if path.endswith("/chat/completions"):
                State.last_at = time.time()
            writer.write(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (status, len(data), extra, data))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def completion(body: dict) -> dict:
    content = reply_for(body.get("messages", []), State.seen)
    return {
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": body.get("model", "bench"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


async def main(port: int) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
