"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol, for the tests.

Plain and streamed (SSE) responses, tool calls, error statuses with retry headers, latency, usage.
What it answers is decided by a ``responder(request_json) -> Answer`` the caller sets; it records
every request (and, in ``wire``, each as it came: request line, headers in order, body bytes), counts them and
tracks the peak number in flight.

Hostile and strict modes: ``strict = True`` answers 400 ``Unrecognized request argument supplied: …``
for any top-level request key OpenAI does not know, as OpenAI does; ``limit(k)`` answers 429 with
``Retry-After`` to every request beyond ``k`` in flight; an Answer can send a raw body of any content
type, a stream without ``finish_reason`` or ``[DONE]``, or a ``usage`` that is not numbers.

Dialect quirks of real servers (llama-cpp-python's, issue 51), each off until set: ``no_stream_usage`` (streams
carry no usage, whatever ``stream_options`` asks), ``null_content_500`` (a 500 for ``content: null`` beside
``tool_calls``), ``one_at_a_time`` (requests are served one after another, as one model serves them),
``interrupt_streams`` (with ``one_at_a_time``: a request waiting for the model ends the stream in progress
without a ``finish_reason``), ``finishes_abandoned`` (an answer being made is made to its end when its client
has gone; one whose client left while it waited is skipped).
``disconnected`` counts the requests whose client closed the connection before the answer was sent (``left()``
waits for them): a test that a call was interrupted, not waited out, gives it a delay no run waits for and
checks that the client left — never how long the run took (the machine may be loaded)."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from collections.abc import Callable


@dataclass
class Answer:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name", "arguments": {...} or str}]
    status: int = 200
    error: str = ""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = (10, 5)  # None: no usage in the response
    cached: int = 0  # of the prompt tokens, served from the cache (usage.prompt_tokens_details.cached_tokens)
    raw: str | None = None  # a raw body, sent as is (for malformed responses)
    content_type: str = "application/json"  # of a raw body
    usage_raw: Any = None  # a ``usage`` object sent as is (e.g. with strings for numbers)
    finish: bool = True  # a stream ends with a finish_reason
    finish_reason: str = ""  # which (default: stop, or tool_calls); "length" for a reply cut at max_tokens
    done: bool = True  # a stream ends with ``data: [DONE]``
    model: str | None = None  # the model the response says answered (default: the one asked for)
    hang_up: bool = False  # close the connection without answering (a reset mid-request)
    call_ids: list[str] | None = None  # the tool calls' ids (default call_0, call_1, …), as an endpoint makes them up


# what OpenAI's chat completions accept at the top level of a request; anything else is a 400
OPENAI_KEYS = {
    "model", "messages", "tools", "stream", "stream_options", "temperature", "top_p", "max_tokens", "max_completion_tokens",
    "stop", "seed", "response_format", "tool_choice", "parallel_tool_calls", "reasoning_effort", "presence_penalty",
    "frequency_penalty", "logit_bias", "user", "n", "logprobs", "top_logprobs", "modalities", "audio", "prediction",
    "store", "metadata", "service_tier", "web_search_options", "functions", "function_call", "verbosity",
}


def last_user(request: dict[str, Any]) -> str:
    for m in reversed(request.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def echo(request: dict[str, Any]) -> Answer:
    return Answer(f"echo: {last_user(request)}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Without TCP_NODELAY, Nagle and delayed ACK add ~40 ms to keep-alive requests.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with owner.lock:  # the request as it came: its line, its headers (names as sent, in order), its body's bytes
            owner.wire.append((self.requestline, list(self.headers.items()), raw))
        body = json.loads(raw or b"{}")
        if owner.one_at_a_time:
            with owner.lock:
                owner.waiting += 1  # a stream in progress sees it (interrupt_streams)
            with owner.serving:  # one model: one request at a time
                with owner.lock:
                    owner.waiting -= 1
                self._post(owner, body)
            return
        self._post(owner, body)

    def _interrupted(self) -> bool:
        """Whether another request waits for the model while this stream is under way (``stream_gap`` seconds)."""
        owner = self.server.owner
        ends = time.monotonic() + owner.stream_gap
        while time.monotonic() < ends:
            if owner.waiting:
                return True
            time.sleep(0.01)
        return False

    def _gone(self) -> bool:
        """Whether the client closed the connection (it reads as at its end)."""
        import select

        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    def _generate(self, owner: OpenAIServer, delay: float) -> bool:
        """Spend ``delay`` seconds "generating"; False when the client left meanwhile (then nothing is sent).
        With ``finishes_abandoned``, a client that left is noticed only before and after, as llama-cpp-python
        notices it (a non-streaming generation, once started, runs to its end)."""
        if owner.finishes_abandoned:
            gone = self._gone()
            if not gone:
                time.sleep(delay)
            if gone or self._gone():
                with owner.lock:
                    owner.disconnected += 1
                return False
            return True
        ends = time.monotonic() + delay
        while time.monotonic() < ends:
            if self._gone():
                with owner.lock:
                    owner.disconnected += 1
                return False
            time.sleep(min(0.02, max(0.0, ends - time.monotonic())))
        return True

    def _post(self, owner: OpenAIServer, body: dict[str, Any]) -> None:
        with owner.lock:
            generation = owner.generation  # requests left over from an earlier test do not count
            owner.in_flight += 1
            owner.peak_in_flight = max(owner.peak_in_flight, owner.in_flight)
            over = owner.max_in_flight is not None and owner.in_flight > owner.max_in_flight
            owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": body, "at": time.monotonic(),
                                   "in_flight": owner.in_flight, "rejected": over})
        try:
            if not self.path.endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            unknown = sorted(set(body) - OPENAI_KEYS) if owner.strict else []
            if unknown:
                self._json(400, {"error": {"message": f"Unrecognized request argument supplied: {', '.join(unknown)}",
                                           "type": "invalid_request_error", "param": None, "code": None}})
                return
            if over:
                self._json(429, {"error": {"message": "Rate limit reached: too many requests in flight", "type": "requests",
                                           "code": "rate_limit_exceeded"}}, owner.retry_headers)
                return
            if owner.null_content_500 and any(m.get("role") == "assistant" and m.get("tool_calls") and m.get("content", "") is None
                                                 for m in body.get("messages", [])):
                self._json(500, {"error": {"message": "1 validation error: messages.2.content: Input should be a valid string",
                                           "type": "internal_server_error"}})
                return
            answer = owner.responder(body)
            if answer.delay and not self._generate(owner, answer.delay):
                return
            if answer.hang_up:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if answer.raw is not None:
                self._send(answer.status, answer.raw.encode(), answer.content_type, answer.headers)
            elif answer.status != 200:
                self._json(answer.status, {"error": {"message": answer.error or "error", "type": "server_error", "code": answer.status}}, answer.headers)
            elif body.get("stream"):
                self._stream(body, answer)
            else:
                self._json(200, _completion(body, answer), answer.headers)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with owner.lock:
                if generation == owner.generation:
                    owner.in_flight -= 1

    def _send(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _stream(self, body: dict[str, Any], answer: Answer) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        model = answer.model or body.get("model", "fake-model")

        def event(delta: dict[str, Any], finish: str | None = None, usage: Any = None, choices: bool = True) -> None:
            chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
            if usage is not None:
                chunk["usage"] = usage
            self._chunk(f"data: {json.dumps(chunk)}\n\n")

        event({"role": "assistant", "content": ""})
        text = answer.content
        for i in range(0, len(text), 7):
            event({"content": text[i : i + 7]})
        for n, call in enumerate(answer.tool_calls):
            args = _args(call)
            half = len(args) // 2
            event({"tool_calls": [{"index": n, "id": _call_id(answer, n), "type": "function", "function": {"name": call["name"], "arguments": args[:half]}}]})
            event({"tool_calls": [{"index": n, "function": {"arguments": args[half:]}}]})
        if self.server.owner.interrupt_streams and self._interrupted():
            self._chunk("data: [DONE]\n\n")  # as llama-cpp-python ends a stream when another request waits
            self.wfile.write(b"0\r\n\r\n")
            return
        if answer.finish:
            event({}, answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage") and not self.server.owner.no_stream_usage and answer.usage is not None:
            event({}, usage=_usage(answer), choices=False)
        if answer.done:
            self._chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _call_id(answer: Answer, i: int) -> str:
    return answer.call_ids[i] if answer.call_ids else f"call_{i}"


def _args(call: dict[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)


def _usage(answer: Answer) -> Any:
    if answer.usage_raw is not None:
        return answer.usage_raw
    p, c = answer.usage
    out: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
    if answer.cached:
        out["prompt_tokens_details"] = {"cached_tokens": answer.cached}
    return out


def _completion(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content or (None if answer.tool_calls else "")}
    if answer.tool_calls:
        message["tool_calls"] = [
            {"id": _call_id(answer, i), "type": "function", "function": {"name": c["name"], "arguments": _args(c)}}
            for i, c in enumerate(answer.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": answer.model or body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")}],
        **({"usage": _usage(answer)} if answer.usage is not None or answer.usage_raw is not None else {}),
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    owner: OpenAIServer


class OpenAIServer:
    """Start with ``start()`` (or as a context manager); ``url`` is the API base ending in /v1."""

    def __init__(self, responder: Callable[[dict[str, Any]], Answer] = echo, port: int = 0, tls: tuple[str, str] | None = None):
        """``tls``: (certificate file, key file) to serve HTTPS instead of HTTP."""
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.wire: list[tuple[str, list[tuple[str, str]], bytes]] = []  # each POST as it came (request line, headers, body)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.generation = 0
        self.strict = False
        self.max_in_flight: int | None = None
        self.retry_headers: dict[str, str] = {}
        self.no_stream_usage = self.null_content_500 = self.one_at_a_time = self.interrupt_streams = False
        self.finishes_abandoned = False
        self.stream_gap = 0.3  # with interrupt_streams: how long a stream waits before it finishes (a request arriving meanwhile cuts it)
        self.serving = threading.Lock()
        self.waiting = 0  # requests waiting for the model (one_at_a_time)
        self.disconnected = 0
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.owner = self
        self.scheme = "http"
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def host(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.host + "/v1"

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        """Forget what earlier tests did: requests, the peak in flight, the responder."""
        with self.lock:
            self.requests.clear()
            self.wire.clear()
            self.generation += 1
            self.in_flight = 0
            self.peak_in_flight = 0
            self.responder = echo
            self.strict = False
            self.max_in_flight = None
            self.retry_headers = {}
            self.no_stream_usage = self.null_content_500 = self.one_at_a_time = self.interrupt_streams = False
            self.finishes_abandoned = False
            self.stream_gap = 0.3
            self.disconnected = 0

    def limit(self, k: int, retry_after: str = "1", header: str = "retry-after") -> None:
        """Answer 429 (with ``header: retry_after``) to every request beyond ``k`` in flight."""
        self.max_in_flight = k
        self.retry_headers = {header: retry_after}

    def left(self, n: int = 1, within: float = 60.0) -> int:
        """The requests whose client closed the connection before the answer, once ``n`` of them were seen (or
        ``within`` seconds passed): the client stopped waiting, it did not wait the answer out. The server notices
        a close within ~20 ms, maybe after the client's run has ended."""
        ends = time.monotonic() + within
        while self.disconnected < n and time.monotonic() < ends:
            time.sleep(0.02)
        return self.disconnected

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


if __name__ == "__main__":  # python tests/openai_server.py [port]: serve the echo responder
    import sys

    with OpenAIServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else 8765) as srv:
        print(srv.url, flush=True)
        threading.Event().wait()
