"""The ``openai`` connector: any OpenAI-compatible chat-completions endpoint through the official SDK.

One ``complete`` is one attempt (the SDK's own retries are off, so that 429s are seen): 429, 5xx,
timeouts and connection failures raise ``Retryable`` and the throttle retries them (``throttle.py``).
Only chat-completions parameters reach the request body (``parameters.py``)."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from typing import Any
from urllib.parse import urlparse

from agenttest.errors import AgentTestError, CallError, InputError, Problem, typo_of
from agenttest.app.yaofiles import jsonc_location
from agenttest.model import Completion, ToolCall, Usage
from agenttest.model.parameters import CHAT_PARAMETERS, not_sent, request_options
from agenttest.runtime import exchanges
from agenttest.runtime.trace import note
from agenttest.speed.records import replace
from agenttest.util.secrets import redact
from agenttest.util.text import shorten
from agenttest.connectors import dialects, early, tokens
from agenttest.connectors.base import ChatRequest, ConnectorSpec, Retryable, register
from agenttest.connectors.httpfailures import connection_failure, disguised, retry_after, tls_failure

# read by agent-test, never sent
_OWN = {"model", "host", "base_url", "proxy", "key", "api_key", "stream", "max_retries", "rate_limit_retries", "timeout",
        "organization", "headers", "max_concurrency", "rpm", "tool_content", "stream_tools"}
# Yao's descriptions of the model (and costs, §8): never sent
_DESCRIPTIVE = {"capabilities", "thinking", "pricing", "protocols", "label", "description"}
_RETRIED = {408, 409, 429}  # and every 5xx
NO_USAGE = Usage(source="unknown")  # a response without usage (told apart by identity)
MAX_ERROR_TEXT = 1000  # characters of a server's error text kept (redacted first, then cut)
MAX_ARGUMENT_DEPTH = 64  # tool-call arguments nested deeper are refused, not parsed on
# On httpx (the fallback transport), one SDK client (one connection pool) per SHARD calls in flight:
# httpcore's pool scans all of its connections, with a socket check each, on every request and response,
# so at --parallel 500 one pool costs ~0.6 ms of CPU per call more than sixteen (bench/RESULTS.md).
# aiohttp's pool does not scan: one client serves any width.
SHARD = 32


class _Prepared:
    """What the SDK's first request needs and computes on the critical path, made on another thread while
    the SDK imports (~0.8 s of the main thread's time): the verifying TLS context its aiohttp transport builds
    (the CA bundle parsed by OpenSSL, ~45 ms, the GIL released) and the platform its headers name (which runs
    ``uname -p`` in a subprocess, ~15 ms). Started when the first openai connector is made; waited for before
    a client is made and before a worker forks (``Catalog.import_sdks``), so a worker inherits both."""

    def __init__(self) -> None:
        self.context: Any = None
        self.thread = threading.Thread(target=self._run, name="agenttest-prepare", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import platform

        try:
            platform.platform()  # cached by the platform module, as is the os-release file below
            platform.freedesktop_os_release()
        except Exception:  # noqa: BLE001 — the SDK asks again and copes with whatever it finds
            pass
        try:
            self.context = verifying_context()
        except Exception:  # noqa: BLE001 — the SDK builds its own, and reports what is wrong with it
            self.context = None

    def wait(self) -> Any:
        self.thread.join()
        return self.context


_PREPARED: _Prepared | None = None


def prepare() -> None:
    """Start the preparation (once per process)."""
    global _PREPARED
    if _PREPARED is None:
        _PREPARED = _Prepared()


def prepared_context() -> Any:
    """The TLS context prepared in the background (None: let the SDK make its own)."""
    return _PREPARED.wait() if _PREPARED is not None else None


def verifying_context() -> Any:
    """The TLS context the SDK's transport makes by default on Linux (httpcore2's ``default_ssl_context``):
    certificates verified against ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else OpenSSL's compiled-in
    bundle, else the usual distribution paths. None elsewhere (macOS and Windows use the system's trust
    store through ``truststore``): the SDK then makes its own."""
    import ssl

    if not sys.platform.startswith("linux"):
        return None
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if capath and not cafile and not any(re.fullmatch(r"[0-9a-fA-F]{8}\.\d", f) for f in os.listdir(capath)):
        capath = None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, _CA_FILES), None)
    if cafile or capath:
        context.load_verify_locations(cafile, capath)
    return context


_CA_FILES = ("/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/cert.pem",
             "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/ca-bundle.pem")


_LEAN: dict[tuple[type, str], type] = {}
_MEMO = 64  # URL texts kept per client (a run sends to one or two)


def lean(base: type, method: str) -> type:
    """``base`` (the SDK's client, or httpx2's under it) with its URL merge — ``method``: the SDK's
    ``_prepare_url``, httpx2's ``_merge_url`` — kept per URL text. Each request parses its URL twice (the
    SDK merges its base URL, then gives httpx2 the text to parse and merge again): ~10% of a call's CPU on
    the same URL every time. The merged URL is immutable; one is kept for as long as the client's base URL
    is the one it was made with. A client without ``method`` (another SDK version) is used as it is."""
    merge = getattr(base, method, None)
    if merge is None:
        return base
    made = _LEAN.get((base, method))
    if made is None:
        def merged(self: Any, url: Any) -> Any:
            if type(url) is not str:
                return merge(self, url)
            memo = self.__dict__.setdefault("_agenttest_urls", {})
            at = self.base_url
            kept = memo.get(url)
            if kept is not None and kept[0] is at:
                return kept[1]
            value = merge(self, url)
            if len(memo) >= _MEMO:
                memo.clear()
            memo[url] = (at, value)
            return value

        merged.__doc__ = merge.__doc__
        made = _LEAN[(base, method)] = type(base.__name__, (base,), {method: merged, "__module__": __name__})
    return made


def http_client(timeout: float) -> Any | None:
    """The SDK's aiohttp transport (``openai[aiohttp]``: ~0.7× the CPU per call of its default httpx
    one, bench/RESULTS.md), or None for the SDK's default httpx client when aiohttp is not installed.
    ``AGENTTEST_HTTP=httpx`` chooses httpx (to compare, or to work around a transport problem)."""
    if os.environ.get("AGENTTEST_HTTP", "").strip().lower() == "httpx":  # config.check_environment: httpx or aiohttp
        return None
    try:
        from openai import DefaultAioHttpClient

        context = prepared_context()
        return lean(DefaultAioHttpClient, "_merge_url")(timeout=timeout, **({"verify": context} if context is not None else {}))
    except (ImportError, RuntimeError):  # an SDK without it, or the aiohttp extra not installed
        return None


def post_options(client: Any) -> dict[str, Any]:
    """What ``client.post`` is given as ``options``: each request option the SDK would fill from its field's
    default (pydantic's ``model_construct`` resolves a default per field per call, deep-copying the dicts:
    ~35% of the options' making), given as that very default — dicts copied per call by ``fresh_options``.
    And, where this client never sends an idempotency key (no header for it: OpenAI's), a key, so that the
    SDK does not draw a random UUID for every request to drop it. An SDK without these is given nothing."""
    try:
        from openai._models import FinalRequestOptions
        from openai._types import RequestOptions

        fields, accepted = FinalRequestOptions.model_fields, RequestOptions.__annotations__
    except (ImportError, AttributeError):
        return {}
    out = {name: f.default for name, f in fields.items()
           if name in accepted and name != "idempotency_key" and f.default_factory is None and not f.is_required()}
    if "idempotency_key" in fields and "idempotency_key" in accepted and getattr(client, "_idempotency_header", "") is None:
        out["idempotency_key"] = "agenttest-not-sent"
    return out


def fresh_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with each dict in it copied (the SDK may keep what it is given on the request's options)."""
    return {k: dict(v) if type(v) is dict else v for k, v in options.items()}


def _misread(spec: ConnectorSpec, key: str) -> Problem | None:
    """The problem with an unknown option that is near a field the connector reads (``base_ulr``, ``hots``,
    ``api_kye``, ``header``) or holds a URL (``endpoint``, ``api_base``): unread, the call would go to the default
    endpoint, or without its key or headers. None for anything else (a parameter that is not sent: a warning)."""
    value = spec.options.get(key)
    typo = typo_of(key, _OWN | _DESCRIPTIVE)
    url = isinstance(value, str) and value.strip().lower().startswith(("http://", "https://"))
    if typo is None and not url:
        return None
    where = jsonc_location(spec.path, ("options", key)) if spec.path else None
    hint = (f"did you mean '{typo}'?" if typo else "the API base is 'host', 'base_url' or 'proxy'")
    endpoint = typo in ("host", "base_url", "proxy") or (typo is None and url)
    unread = "; the call would go to the default endpoint (api.openai.com), with the key" if endpoint else ""
    return Problem(f"connector {spec.id}: '{key}' is not a field of an openai connector (unknown options are not read{unread})",
                   where, hint)


def normalize_base_url(url: str) -> str:
    """``host``, ``base_url`` or ``proxy``, with or without ``/v1``: a bare host gets ``/v1``."""
    url = url.rstrip("/")
    if urlparse(url).path in ("", "/"):
        url += "/v1"
    return url


class OpenAIConnector:
    local = False

    def __init__(self, spec: ConnectorSpec):
        self.spec = spec
        opts = spec.options
        self.model = opts.get("model")
        if not self.model:
            raise AgentTestError(f"connector {spec.id}: 'options.model' is missing")
        base = opts.get("base_url") or opts.get("host") or opts.get("proxy")
        self.base_url = normalize_base_url(str(base)) if base else None
        self.key = str(opts.get("key") or opts.get("api_key") or "not-needed")
        self.stream = bool(opts.get("stream", False))
        self.stream_tools = bool(opts.get("stream_tools", True))  # false: a request that offers tools is never streamed
        self.tool_content, self.tool_content_given = dialects.tool_content_of(opts, spec.id, spec.path)
        timeout = opts.get("timeout", 600)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            where = f"connector {spec.id}" + (f" ({spec.path})" if spec.path else "")
            raise AgentTestError(f"{where}: 'timeout' must be a number of seconds > 0, not {timeout!r}")  # was a crash (exit 3)
        self.request_timeout = float(timeout)
        self.headers = opts.get("headers") or None
        self.organization = opts.get("organization") or None
        capabilities = opts.get("capabilities")
        self.send_tools = not (isinstance(capabilities, dict) and capabilities.get("tool_calls") is False)
        self.defaults = {k: v for k, v in opts.items() if k in CHAT_PARAMETERS}
        unknown = [k for k in opts if k not in _OWN and k not in _DESCRIPTIVE and k not in CHAT_PARAMETERS]
        misread = [p for p in (_misread(spec, k) for k in unknown) if p]
        if misread:  # a misspelt endpoint or key: the call would go elsewhere (api.openai.com, with the key)
            raise InputError(misread)
        self.warnings = [not_sent(unknown, f"connector {spec.id}" + (f" ({spec.path})" if spec.path else ""))] if unknown else []
        self.where = _host(self.base_url)
        self._clients: list[Any] = []
        self._options: list[dict[str, Any]] = []  # each client's post_options
        self._in_flight = self._peak = self._turn = 0
        self._shard = SHARD  # calls in flight per client; unbounded once the first client is on aiohttp
        self._early: early.Early | None = None  # its requests while the SDK imports (``early_possible``)
        self._early_checked = False
        # The SDK's import takes 0.7–1 s (``openai.types`` builds every API model with pydantic); made in a case, it
        # was the first case's latency, and its deadline's. A run imports it before its first case
        # (``Catalog.import_sdks``, then ``start``); --list and --dry-run, which make the connectors to check them
        # but send nothing, never do.

    def _client(self) -> int:
        """The index of the SDK client to use (in ``_clients``, its ``post_options`` in ``_options``), made on
        first use inside the run's event loop (its connection pool lives there): on httpx one per SHARD calls
        ever in flight at once, taken in turn (so each keeps its connections alive)."""
        self._peak = max(self._peak, self._in_flight + 1)
        while len(self._clients) * self._shard < self._peak:
            prepare()  # the TLS context and platform facts, on another thread while the SDK imports (once per process)
            from openai import AsyncOpenAI

            # aiohttp refuses credentials in the URL next to the key's Authorization header: httpx then
            transport = http_client(self.request_timeout) if "@" not in urlparse(self.base_url or "").netloc else None
            if transport is not None:
                self._shard = 1 << 30
            self._clients.append(lean(AsyncOpenAI, "_prepare_url")(api_key=self.key, base_url=self.base_url, max_retries=0, timeout=self.request_timeout,
                                             default_headers=self.headers, organization=self.organization, http_client=transport))
            self._options.append(post_options(self._clients[-1]))
        self._turn = (self._turn + 1) % len(self._clients)
        return self._turn

    def early_possible(self) -> bool:
        """Whether this connector's requests may leave before the SDK has imported, exactly as the SDK sends them
        (``early.py``); decided once. A connector that streams every request never does."""
        if not self._early_checked:
            self._early_checked = True
            prepare()  # the TLS context its client will be given: the early requests are verified with the same
            why = "it streams" if self.stream else early.why_not(self.base_url, self.headers, self.organization, self.request_timeout)
            if why is None and self.base_url is not None:
                headers = early.request_headers(self.base_url, self.key, self.headers, self.organization, self.request_timeout)
                self._early = early.Early(self.base_url + "/chat/completions", headers, self.request_timeout, prepared_context)
        return self._early is not None

    def start(self) -> None:
        """The first SDK client (and the SDK's import) before the run, outside any case's deadline — or, when
        the first requests can leave before the SDK has imported (``early_possible``), nothing: the first
        request starts the SDK's import on a thread beside the run."""
        if not self._clients and not (self.early_possible() and not early.IMPORTER.done()):
            self._client()

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        """The request body as plain JSON: the connector's parameters, then the agent's and the case's."""
        params = {**self.defaults, **request_options(request.options)}
        params.pop("stream", None)
        extra = {**_dict(self.defaults.get("extra_body")), **_dict(params.pop("extra_body", None))}
        body: dict[str, Any] = {"model": self.model, **params, **extra}
        body["messages"] = dialects.shaped(request.messages, self.tool_content)
        if request.tools and self.send_tools:
            body["tools"] = [{"type": "function", "function": t} for t in request.tools]
        else:  # without tools, OpenAI rejects these
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)
            body.pop("tools", None)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The body this connector sends for ``request`` (``--calls`` shows it; the key is never in it)."""
        return self._body(request, self.streams(request))

    def endpoint(self) -> str:
        """Where requests go: the chat-completions URL, without the credentials a URL may carry."""
        base = str(self._clients[0].base_url) if self._clients else self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        parsed = urlparse(base.rstrip("/"))
        netloc = parsed.netloc.rpartition("@")[2]
        return parsed._replace(netloc=netloc, query="", fragment="").geturl() + "/chat/completions"

    def streams(self, request: ChatRequest) -> bool:
        """Whether this request is sent as a stream."""
        return bool(request.options.get("stream", self.stream)) and (self.stream_tools or not request.tools)

    async def complete(self, request: ChatRequest) -> Completion:
        stream = self.streams(request)
        if not early.IMPORTER.done():
            if not stream and self._early is not None and self._early.usable():
                completion = await self._sent_early(request)
                if completion is not None:
                    return completion
            await early.IMPORTER.wait()  # the SDK is imported on its thread, not here: the event loop runs on
        import openai

        # client.post is the SDK's own request path (auth, errors, status codes) without create()'s
        # per-call TypedDict transform (~1 ms of CPU a call: the body here is already plain JSON); and
        # cast_to=object gives the parsed JSON as dicts, not a pydantic ChatCompletion built only to be
        # read once. See bench/RESULTS.md.
        turn = self._client()
        client, options = self._clients[turn], fresh_options(self._options[turn])
        self._in_flight += 1
        try:
            if stream:
                chunks = await client.post("/chat/completions", cast_to=object, body=self._body(request, True), options=options,  # type: ignore[arg-type]
                                           stream=True, stream_cls=openai.AsyncStream[object])
                completion = await self._streamed(chunks)
            else:
                response = await client.post("/chat/completions", cast_to=object, body=self._body(request, False), options=options)  # type: ignore[arg-type]
                completion = self._completion(response)
            if completion.usage is NO_USAGE:  # the endpoint did not count: estimated, or said to be unknown
                completion = replace(completion, usage=tokens.estimate(request.messages, request.tools, completion.content, completion.tool_calls))
            return completion
        except openai.APIStatusError as exc:
            failure = self._status_failure(exc)
            if not self._null_refused(exc, request):
                raise failure from None
        except openai.APITimeoutError as exc:
            if not disguised(exc):
                raise Retryable(f"model request to {self.where} timed out", "timeout", self.where) from None
            raise self._connection_failure(exc) from None
        except openai.APIConnectionError as exc:
            raise self._connection_failure(exc) from None
        except openai.OpenAIError as exc:
            raise CallError(self._text(f"model error from {self.where}: {exc}")) from None
        except RecursionError:
            raise CallError(f"invalid response from {self.where}: JSON nested too deeply") from None
        except ValueError as exc:  # a body that is not valid JSON
            raise CallError(self._text(f"invalid response from {self.where}: {type(exc).__name__}: {exc}")) from None
        except (AttributeError, TypeError, IndexError, KeyError) as exc:  # a server that bends the protocol
            raise CallError(self._text(f"unexpected response from {self.where}: {type(exc).__name__}: {exc}")) from None
        finally:
            self._in_flight -= 1
        return await self._with_empty_content(request, failure)

    async def _sent_early(self, request: ChatRequest) -> Completion | None:
        """The request sent as the SDK would send it, before the SDK has imported (``early.py``): its completion,
        or None for the SDK to send it (said in --calls when the endpoint saw it twice)."""
        assert self._early is not None
        answer = await self._early.send(self._body(request, False))
        if isinstance(answer, early.Handed):
            if answer.sent:
                exchanges.retried("early", self._text(f"{answer.why}: sent again through the SDK"), answer.status)
            return None
        try:
            completion = self._completion(answer)
        except RecursionError:
            raise CallError(f"invalid response from {self.where}: JSON nested too deeply") from None
        except (AttributeError, TypeError, IndexError, KeyError) as exc:  # a server that bends the protocol
            raise CallError(self._text(f"unexpected response from {self.where}: {type(exc).__name__}: {exc}")) from None
        if completion.usage is NO_USAGE:
            completion = replace(completion, usage=tokens.estimate(request.messages, request.tools, completion.content, completion.tool_calls))
        return completion

    def _null_refused(self, exc: Any, request: ChatRequest) -> bool:
        """Whether a failure may be the server refusing ``content: null`` beside tool calls (llama-cpp-python's
        500), worth one more attempt with ``""`` — unless the connector said how it wants the content."""
        status = int(exc.status_code)
        return (not self.tool_content_given and self.tool_content is dialects.NULL and (status in (400, 422) or status >= 500)
                and status != 503 and dialects.has_null_tool_content(request.messages))

    async def _with_empty_content(self, request: ChatRequest, failure: CallError) -> Completion:
        """The request again with ``content: ""`` beside tool calls; if that is taken, so is every later one
        (said once per case that meets it); if not, the first failure stands."""
        self.tool_content = dialects.EMPTY
        exchanges.retried("dialect", f"{failure} (sent again with \"content\": \"\" beside tool_calls)", getattr(failure, "status", 0) or 0)
        try:
            completion = await self.complete(request)
        except CallError:
            if not self.tool_content_given:
                self.tool_content = dialects.NULL
            raise failure from None
        note(dialects.FELL_BACK.format(where=self.where, status=getattr(failure, "status", "") or "an error", name=self.spec.id))
        return completion

    def _connection_failure(self, exc: BaseException) -> CallError:
        tls = tls_failure(exc)
        if tls is not None:  # not retried: it fails the same way every time
            return CallError(self._text(f"cannot connect to {self.where}: {tls}"))
        kind, why = connection_failure(exc)
        verb = "cannot reach" if kind == "unreachable" else "connection to"
        return Retryable(self._text(f"{verb} {self.where}{'' if kind == 'unreachable' else ' failed'}: {why}"), kind, self.where)  # type: ignore[arg-type]

    def _status_failure(self, exc: Any) -> CallError:
        status = int(exc.status_code)
        text = self._text(f"model error {status} from {self.where}: {_message(exc)}")
        if dialects.deterministic(status, text):  # the request did not validate: every attempt gets this answer
            failure = CallError(text + " (not retried: the server says the request is invalid)")
            failure.status = status  # type: ignore[attr-defined]
            return failure
        if status in _RETRIED or status >= 500:
            headers = getattr(getattr(exc, "response", None), "headers", None)
            return Retryable(text, "rate_limit" if status == 429 else "server", self.where, retry_after(headers), status)
        return CallError(text)

    def _completion(self, response: Any) -> Completion:
        if isinstance(response, str):  # not labelled JSON: parsed if it is JSON all the same, as the SDK would
            response = self._json_text(response)
        if not isinstance(response, dict):
            raise CallError(self._text(f"unexpected response from {self.where}: a JSON {type(response).__name__}, not an object"))
        choices = response.get("choices")
        if not choices:
            raise CallError(f"model error from {self.where}: the response has no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise CallError(self._text(f"unexpected response from {self.where}: choices[0].message is {shorten(repr(message), 80)}"))
        calls = tuple(
            ToolCall(name=c["function"].get("name"), arguments=self._arguments(c["function"].get("arguments")), id=c.get("id") or f"call_{i}")
            for i, c in enumerate(message.get("tool_calls") or ())
            if isinstance(c, dict) and c.get("function") is not None
        )
        return Completion(message.get("content") or "", calls, self._usage(response.get("usage")), response.get("model") or "",
                          str(choices[0].get("finish_reason") or ""))

    def _json_text(self, text: str) -> Any:
        if text.lstrip()[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                pass
        raise CallError(self._text(f"invalid response from {self.where}: {_what_text(text)}"))

    async def _streamed(self, stream: Any) -> Completion:
        kind = stream.response.headers.get("content-type", "")
        if "event-stream" not in kind:
            body = (await stream.response.aread()).decode("utf-8", "replace")
            raise CallError(self._text(f"asked for a stream, but {self.where} answered with {kind or 'no content type'} "
                                       f"({_what_text(body)}); set \"stream\": false on the connector if it does not stream"))
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage, model, finished = NO_USAGE, "", ""
        first = True
        async for chunk in stream:  # each a dict (AsyncStream[object]): no pydantic model per chunk
            if first:
                exchanges.first_byte()
                first = False
            model = chunk.get("model") or model
            if chunk.get("usage"):
                usage = self._usage(chunk["usage"])
            for choice in chunk.get("choices") or ():
                finished = str(choice.get("finish_reason") or "") or finished
                delta = choice.get("delta")
                if delta is None:
                    continue
                if delta.get("content"):
                    content.append(delta["content"])
                for tc in delta.get("tool_calls") or ():
                    slot = calls.setdefault(tc.get("index"), {"id": "", "name": "", "arguments": ""})
                    if tc.get("id"):
                        slot["id"] = tc["id"]
                    function = tc.get("function")
                    if function is not None:
                        slot["name"] += function.get("name") or ""
                        slot["arguments"] += function.get("arguments") or ""
        if not finished:  # cut: retried once (the throttle says, if it happens again, what may cut it)
            got = sum(len(c) for c in content)
            raise Retryable(f"the stream from {self.where} ended without a finish_reason (cut off after {got} characters)", "cut", self.where)
        tool_calls = tuple(
            ToolCall(name=c["name"], arguments=self._arguments(c["arguments"]), id=c["id"] or f"call_{i}") for i, c in sorted(calls.items())
        )
        return Completion("".join(content), tool_calls, usage, model, finished)

    def _arguments(self, text: Any) -> Any:
        if not text:
            return {}
        if isinstance(text, str):
            try:
                value = json.loads(text)
            except RecursionError:
                raise CallError(f"tool-call arguments from {self.where} are nested too deeply") from None
            except ValueError:
                return text  # kept raw: the tool loop reports it as invalid arguments
        else:
            value = text  # some OpenAI-compatible servers send the arguments as an object
        if _depth(value) > MAX_ARGUMENT_DEPTH:
            raise CallError(f"tool-call arguments from {self.where} are nested more than {MAX_ARGUMENT_DEPTH} deep")
        return value

    def _usage(self, u: Any) -> Usage:
        """The endpoint's counts; NO_USAGE when it sent none (they are then estimated, or unknown)."""
        if not isinstance(u, dict):  # none, or not an object: no counts to take
            return NO_USAGE
        counts = []
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = u.get(name)
            if value is None:
                value = 0
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 or value > 1e15:
                raise CallError(self._text(f"invalid response from {self.where}: usage.{name} is {value!r}, not a number of tokens"))
            counts.append(int(value))
        details = u.get("prompt_tokens_details")  # of the prompt tokens, those served from the endpoint's cache
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if isinstance(cached, bool) or not isinstance(cached, (int, float)) or cached != cached or not 0 <= cached <= counts[0]:
            cached = 0
        return Usage(counts[0], counts[1], counts[2], int(cached))

    async def aclose(self) -> None:
        """Close the clients while the run's loop still runs."""
        clients, self._clients, self._options = self._clients, [], []
        if self._early is not None:
            await self._early.aclose()
        for client in clients:
            await client.close()

    def _text(self, text: str) -> str:
        """An error text with every secret hidden, then cut (cutting first could keep a key's prefix)."""
        return shorten(redact(text, [self.key, *self.spec.secrets]), MAX_ERROR_TEXT)

    def __repr__(self) -> str:
        return f"OpenAIConnector({self.spec.id!r}, model={self.model!r}, endpoint={self.where!r})"


def _host(base_url: str | None) -> str:
    """The endpoint as ``host[:port]``: never the URL's userinfo (it may hold a password)."""
    if not base_url:
        return "api.openai.com"
    parsed = urlparse(base_url)
    try:
        port = parsed.port
    except ValueError:
        port = None
    host = parsed.hostname or "?"
    return f"{host}:{port}" if port else host


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _depth(value: Any, limit: int = MAX_ARGUMENT_DEPTH + 1) -> int:
    """How deep containers nest in ``value`` (counting stops past ``limit``), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)) and level < limit:
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _what_text(body: str) -> str:
    """A short description of a body that should have been JSON or a stream."""
    stripped = body.lstrip()
    if stripped[:1] in "<" and re.match(r"<(!doctype|html|head|body)", stripped, re.IGNORECASE):
        title = _TITLE.search(body)
        return f"an HTML page{f' titled {title.group(1).strip()!r}' if title else ''}: is the API base right? It usually ends in /v1"
    if stripped[:1] in "{[":
        return "a plain JSON body"
    return f"text {shorten(body, 120)!r}" if stripped else "an empty body"


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    if isinstance(body, str) and body.lstrip()[:1] == "<":
        return _what_text(body)
    return str(getattr(exc, "message", exc))


register("openai")(OpenAIConnector)
