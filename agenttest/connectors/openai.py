"""The ``openai`` connector: any OpenAI-compatible chat-completions endpoint through the official SDK."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

from ..errors import AgentTestError, CallError
from ..model import Completion, ToolCall, Usage
from ..secrets import redact
from .base import ChatRequest, ConnectorSpec, register

_OWN = {"model", "host", "base_url", "key", "api_key", "stream", "max_retries", "timeout", "organization", "headers",
        "pricing"}  # pricing gives costs (agenttest/costs.py); it is never sent


def normalize_base_url(url: str) -> str:
    """``host`` or ``base_url``, with or without ``/v1``: a bare host gets ``/v1``."""
    url = url.rstrip("/")
    if urlparse(url).path in ("", "/"):
        url += "/v1"
    return url


class OpenAIConnector:
    def __init__(self, spec: ConnectorSpec):
        self.spec = spec
        opts = spec.options
        self.model = opts.get("model")
        if not self.model:
            raise AgentTestError(f"connector {spec.id}: 'options.model' is missing")
        base = opts.get("base_url") or opts.get("host")
        self.base_url = normalize_base_url(base) if base else None
        self.key = str(opts.get("key") or opts.get("api_key") or "not-needed")
        self.stream = bool(opts.get("stream", False))
        self.max_retries = int(opts.get("max_retries", 3))
        self.request_timeout = float(opts.get("timeout", 600))
        self.headers = opts.get("headers") or None
        self.organization = opts.get("organization") or None
        self.defaults = {k: v for k, v in opts.items() if k not in _OWN}
        self._client_: Any = None

    def _client(self) -> Any:
        """The SDK client, made on first use inside the run's event loop (its connection pool lives there)."""
        if self._client_ is None:
            from openai import AsyncOpenAI

            self._client_ = AsyncOpenAI(
                api_key=self.key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.request_timeout,
                default_headers=self.headers,
                organization=self.organization,
            )
        return self._client_

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        """The request body as plain JSON: connector options, then the agent's and the case's."""
        body: dict[str, Any] = {**self.defaults, **request.options}
        body.pop("stream", None)
        body.setdefault("model", self.model)
        body["messages"] = list(request.messages)
        if request.tools:
            body["tools"] = [{"type": "function", "function": t} for t in request.tools]
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def complete(self, request: ChatRequest) -> Completion:
        import openai

        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        stream = bool(request.options.get("stream", self.stream))
        # client.post is the SDK's own request path (auth, retries, errors, parsing into ChatCompletion)
        # without create()'s per-call TypedDict transform, which costs ~1 ms of CPU per call: the body
        # here is already plain JSON. See bench/RESULTS.md.
        try:
            client = self._client()
            if stream:
                chunks = await client.post("/chat/completions", cast_to=ChatCompletion, body=self._body(request, True),
                                           stream=True, stream_cls=openai.AsyncStream[ChatCompletionChunk])
                return await self._streamed(chunks)
            response = await client.post("/chat/completions", cast_to=ChatCompletion, body=self._body(request, False))
        except openai.APIStatusError as exc:
            raise CallError(self._redact(f"model error {exc.status_code} from {self._where()}: {_message(exc)}")) from None
        except openai.APITimeoutError:
            raise CallError(f"model request to {self._where()} timed out") from None
        except openai.APIConnectionError as exc:
            raise CallError(self._redact(f"cannot reach {self._where()}: {exc.__cause__ or exc}")) from None
        except openai.OpenAIError as exc:
            raise CallError(self._redact(f"model error from {self._where()}: {exc}")) from None
        except ValueError as exc:  # a body that is not valid JSON
            raise CallError(self._redact(f"invalid response from {self._where()}: {type(exc).__name__}: {exc}")) from None
        except (AttributeError, TypeError, IndexError) as exc:  # a stream that bends the protocol
            raise CallError(f"unexpected response from {self._where()}: {type(exc).__name__}: {exc}") from None
        try:
            return self._completion(response)
        except (AttributeError, TypeError, IndexError) as exc:  # a server that bends the protocol
            raise CallError(f"unexpected response from {self._where()}: {type(exc).__name__}: {exc}") from None

    def _completion(self, response: Any) -> Completion:
        if not response.choices:
            raise CallError(f"model error from {self._where()}: the response has no choices")
        message = response.choices[0].message
        calls = tuple(
            ToolCall(c.function.name, _arguments(c.function.arguments), c.id or f"call_{i}")
            for i, c in enumerate(message.tool_calls or ())
            if getattr(c, "function", None) is not None
        )
        return Completion(message.content or "", calls, _usage(response.usage), response.model or "")

    async def _streamed(self, stream: Any) -> Completion:
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage, model = Usage(), ""
        async for chunk in stream:
            model = chunk.model or model
            if chunk.usage:
                usage = _usage(chunk.usage)
            for choice in chunk.choices or ():
                delta = choice.delta
                if delta is None:
                    continue
                if delta.content:
                    content.append(delta.content)
                for tc in delta.tool_calls or ():
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
        tool_calls = tuple(
            ToolCall(c["name"], _arguments(c["arguments"]), c["id"] or f"call_{i}") for i, c in sorted(calls.items())
        )
        return Completion("".join(content), tool_calls, usage, model)

    async def aclose(self) -> None:
        """Close the client while the run's loop still runs."""
        client, self._client_ = self._client_, None
        if client is not None:
            await client.close()

    def _where(self) -> str:
        return urlparse(self.base_url).netloc if self.base_url else "api.openai.com"

    def _redact(self, text: str) -> str:
        return redact(text, [self.key, *self.spec.secrets])

    def __repr__(self) -> str:
        return f"OpenAIConnector({self.spec.id!r}, model={self.model!r}, base_url={self.base_url!r})"


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))


def _arguments(text: Any) -> Any:
    if not text:
        return {}
    if not isinstance(text, str):
        return text  # some OpenAI-compatible servers send the arguments as an object
    try:
        return json.loads(text)
    except ValueError:
        return text  # kept raw: the tool loop reports it as invalid arguments


def _usage(u: Any) -> Usage:
    if u is None:
        return Usage()
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0 if details is not None else 0
    return Usage(u.prompt_tokens or 0, u.completion_tokens or 0, u.total_tokens or 0, cached)


register("openai")(OpenAIConnector)
