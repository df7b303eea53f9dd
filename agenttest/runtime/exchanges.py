"""The model calls of a case as they happen (``--calls``). The connector boundary (``connectors/recorded.py``)
opens a ``Pending`` for each call — who asks, for what, the request — and the layers under it add what they
learn: the time queued and the retries (the throttle), the first streamed byte (the connector), a replay (the
cassettes). Only references are kept while the case runs; once its result says it keeps them (``--calls
failed`` keeps a failure's), ``log_of`` makes them its CallLog: each body as the connector sent it, attachments
summarised, the messages and tool lists a conversation repeats stored once."""

from __future__ import annotations

import contextvars
import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agenttest.errors import CallError
from agenttest.model import Answer, CallLog, Completion, Exchange, Retry
from agenttest.model.parameters import request_options
from agenttest.runtime.trace import Trace, current_role


@dataclass(slots=True, kw_only=True)
class Pending:
    """One model call while it runs (mutable: the layers under the boundary fill it in)."""

    role: str
    connector: str
    request: Any  # the ChatRequest
    source: Any  # the connector that makes the body (``request_body``) and knows its endpoint (``endpoint``)
    turn: int = 0
    served: str = ""
    started: float = field(default_factory=time.perf_counter)
    queued: float = 0.0  # seconds
    first_byte: float | None = None  # perf_counter time
    retries: list[Retry] = field(default_factory=list)
    completion: Completion | None = None
    error: str = ""
    replayed: bool = False
    ended: float = 0.0


current_exchange: contextvars.ContextVar[Pending | None] = contextvars.ContextVar("agenttest_exchange", default=None)
current_purpose: contextvars.ContextVar[str] = contextvars.ContextVar("agenttest_purpose", default="")


@contextmanager
def serving(purpose: str) -> Iterator[None]:
    """The model calls made inside serve ``purpose`` ("assertion 2", "checkpoint looks-up"): reports show them there.
    Inside another purpose, it is said within it: "turn 3" then "assertion 1" is "turn 3 assertion 1"."""
    outer = current_purpose.get()
    token = current_purpose.set(f"{outer} {purpose}" if outer else purpose)
    try:
        yield
    finally:
        current_purpose.reset(token)


async def served(purpose: str, awaitable: Any) -> Any:
    """``await awaitable`` with its model calls serving ``purpose`` (for calls gathered concurrently)."""
    with serving(purpose):
        return await awaitable


def begin(trace: Trace, connector: str, request: Any, source: Any) -> Pending:
    """A call of the current role through ``connector`` begins: kept in the case's trace, in the order calls begin."""
    pending = Pending(role=current_role.get(), connector=connector, request=request, source=source, turn=trace.turn, served=current_purpose.get())
    trace.exchanges.append(pending)
    return pending


def queued(seconds: float) -> None:
    """The current call waited ``seconds`` for a slot (the throttle's queue, its rpm spacing)."""
    pending = current_exchange.get()
    if pending is not None:
        pending.queued += seconds


def retried(kind: str, error: str, status: int = 0, waited: float = 0.0) -> None:
    """An attempt of the current call failed and is tried again after ``waited`` seconds."""
    pending = current_exchange.get()
    if pending is not None:
        pending.retries.append(Retry(kind=kind, error=error, status=status, waited_ms=round(waited * 1000, 1)))


def first_byte() -> None:
    """The first chunk of the current call's streamed answer arrived (the last attempt's is kept)."""
    pending = current_exchange.get()
    if pending is not None:
        pending.first_byte = time.perf_counter()


def replayed() -> None:
    """The current call was answered from a cassette."""
    pending = current_exchange.get()
    if pending is not None:
        pending.replayed = True


def ended(pending: Pending, completion: Completion | None, exc: BaseException | None = None) -> None:
    """The call came back with ``completion``, or raised ``exc`` (a failure, or the case stopped while it ran)."""
    pending.ended = time.perf_counter()
    pending.completion = completion
    if exc is not None:
        pending.error = str(exc) if _is_failure(exc) else f"no answer: the call was cancelled ({type(exc).__name__}: the case's deadline or a stop)"


def _is_failure(exc: BaseException) -> bool:
    return isinstance(exc, CallError)


# -- a case's calls made into its CallLog ---------------------------------------------------------------------------


def generated_calls(generation: Trace, keep: str, results: Sequence[Any]) -> CallLog | None:
    """The generators' calls (made while the cases were loaded), kept as a result's would be: ``all``, or ``failed``
    when a generated case did not pass (where the cases came from explains them)."""
    if not generation.exchanges or keep == "none":
        return None
    if keep == "failed" and all(r.status in ("passed", "skipped") for r in results):
        return None
    return log_of(generation.exchanges)


def log_of(pending: Sequence[Pending]) -> CallLog:
    """The CallLog of a case's calls: each body as sent, each distinct message and tool list once."""
    table = _Table()
    calls = tuple(_exchange(p, table) for p in pending)
    return CallLog(messages=tuple(table.messages), tools=tuple(table.tools), exchanges=calls)


class _Table:
    """The distinct messages and tool lists of a case's calls, by their canonical JSON."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.tools: list[Any] = []
        self._messages: dict[str, int] = {}
        self._tools: dict[str, int] = {}
        self._seen: dict[int, tuple[Any, int]] = {}  # id(message) → (the message, its index): a history's dicts recur

    def message(self, m: Any) -> int:
        known = self._seen.get(id(m))
        if known is not None and known[0] is m:
            return known[1]
        shown = summarised(m)
        key = _canonical(shown)
        at = self._messages.get(key)
        if at is None:
            at = self._messages[key] = len(self.messages)
            self.messages.append(shown)
        self._seen[id(m)] = (m, at)
        return at

    def tool_list(self, tools: Any) -> int:
        key = _canonical(tools)
        at = self._tools.get(key)
        if at is None:
            at = self._tools[key] = len(self.tools)
            self.tools.append(tools)
        return at


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _exchange(p: Pending, table: _Table) -> Exchange:
    body = body_of(p.source, p.request)
    messages = tuple(table.message(m) for m in body.pop("messages", None) or ())
    tools = body.pop("tools", None)
    ended_at = p.ended or time.perf_counter()
    return Exchange(
        role=p.role, connector=p.connector, url=_endpoint(p.source), turn=p.turn, served=p.served, messages=messages,
        tools=table.tool_list(tools) if tools else -1, parameters=body, response=_answer(p.completion) if p.completion is not None else None,
        error=p.error or ("" if p.completion is not None or p.ended else "no answer: the case ended while the call ran"),
        replayed=p.replayed, queued_ms=round(p.queued * 1000, 1),
        first_byte_ms=round((p.first_byte - p.started) * 1000, 1) if p.first_byte is not None else None,
        duration_ms=round((ended_at - p.started) * 1000, 1), retries=tuple(p.retries),
    )


def body_of(source: Any, request: Any) -> dict[str, Any]:
    """The body ``source`` sends for ``request`` (its ``request_body``), or the chat-completions body a connector
    without an endpoint of its own (the mock) stands for: its model, the parameters, the messages and the tools."""
    made = getattr(source, "request_body", None)
    if made is not None:
        return dict(made(request))
    spec = getattr(source, "spec", None)
    options = getattr(spec, "options", None) or {}
    body: dict[str, Any] = {"model": str(options.get("model") or getattr(spec, "type", "") or "model")}
    body.update(request_options({**options, **(request.options or {})}))
    body["messages"] = list(request.messages)
    if request.tools:
        body["tools"] = [{"type": "function", "function": t} for t in request.tools]
    return body


def _endpoint(source: Any) -> str:
    endpoint = getattr(source, "endpoint", None)
    return str(endpoint()) if callable(endpoint) else ""


def _answer(c: Completion) -> Answer:
    calls = tuple({"id": t.id, "name": t.name, "arguments": t.arguments} for t in c.tool_calls)
    return Answer(content=c.content, tool_calls=calls, finish_reason=c.finish_reason, model=c.model, usage=c.usage)


# -- attachments: summarised, never inlined ------------------------------------------------------------------------


def summarised(message: Any) -> Any:
    """``message`` with each attachment's data (a data URL, base64 audio) replaced by what it was: its type, size
    and a short hash. Nothing of the data is kept, so nothing of a secret in it could be (a cut would keep a piece)."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") in _DATA for p in content):
        return message
    return {**message, "content": [_part(p) for p in content]}


_DATA = ("image_url", "input_audio", "file")


def _part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind == "image_url" and isinstance(part.get("image_url"), dict):
        url = part["image_url"].get("url")
        if isinstance(url, str) and url.startswith("data:"):
            return {**part, "image_url": {**part["image_url"], "url": _about(url)}}
    elif kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        audio = part["input_audio"]
        if isinstance(audio.get("data"), str):
            return {**part, "input_audio": {**audio, "data": _about(audio["data"], f"audio/{audio.get('format') or 'wav'}")}}
    elif kind == "file" and isinstance(part.get("file"), dict):
        data = part["file"].get("file_data")
        if isinstance(data, str):
            return {**part, "file": {**part["file"], "file_data": _about(data)}}
    return part


def _about(data: str, kind: str = "") -> str:
    """``[attachment image/png, 12,345 bytes, sha256 1a2b3c4d5e6f]`` for a data URL (or bare base64 of ``kind``)."""
    if data.startswith("data:"):
        head, _, payload = data.partition(",")
        kind = head[5:].split(";")[0] or "data"
    else:
        payload = data
    size = len(payload) * 3 // 4 - payload[-2:].count("=")
    digest = hashlib.sha256(payload.encode("ascii", "replace")).hexdigest()[:12]
    return f"[attachment {kind or 'data'}, {size:,} bytes, sha256 {digest}: summarised, not inlined]"
