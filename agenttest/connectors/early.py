"""An openai connector's first requests, sent while the SDK imports (issue 57).

Importing the ``openai`` SDK takes ~0.5 s of CPU (``openai.types``: hundreds of pydantic models), longer than
everything else before a run's first request. A connector whose requests can be sent exactly as the SDK sends
them — the same method, URL, headers (names, values and order) and body bytes, on the SDK's own transport
library (aiohttp) — sends them from here while the SDK imports on a thread beside the run (``Importer``);
once it has imported, every request goes through the SDK as before. ``why_not`` says when a connector's
requests cannot be the SDK's (another SDK version than one compared byte for byte, a proxy, the httpx
transport, headers or environment variables that change what the SDK sends…): such a connector never sends
from here. An early request that meets anything but a 2xx JSON answer (an error status, a redirect, a
cookie, a connection failure or a timeout) is sent again through the SDK, which makes and classifies its
error as always, and the connector sends no more from here. tests/test_early.py compares the two requests
at a loopback server, header by header and byte by byte."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import platform
import re
import sys
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from agenttest.speed import collector

# The SDK versions whose requests tests/test_early.py compared with this module's, header by header and byte by
# byte: with any other, every request goes through the SDK (that test fails until the new one is compared).
VERIFIED = ("3.63.0",)
# What the SDK imports for a run (``Catalog.import_sdks``): the thread imports the same.
SDK_MODULES = ("openai", "openai.types.chat", "openai._vendor.httpx_aiohttp.transport")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name
_VALUE = re.compile(r"[\x20-\x7e]*")  # a header value as the SDK's httpx sends it unchanged: printable ASCII
_PATH = re.compile(r"[A-Za-z0-9._~/-]*")  # a URL path that no library re-encodes
_SET = ("host", "accept-encoding", "connection", "authorization", "accept", "content-type", "user-agent", "x-stainless-lang",
        "x-stainless-package-version", "x-stainless-os", "x-stainless-arch", "x-stainless-runtime", "x-stainless-runtime-version",
        "x-stainless-async", "openai-organization", "openai-project", "x-stainless-retry-count", "x-stainless-read-timeout",
        "content-length", "transfer-encoding", "cookie")  # the headers the SDK and its transport set themselves
_PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "ws_proxy", "wss_proxy")
# The GIL's switch interval while the SDK imports on its thread (Python's default: 5 ms). The event loop beside the
# import waits for the GIL each time it wakes — an answer came, a worker's next case arrived — until the importing
# thread lets go of it, which it is asked to after the switch interval: up to 5 ms at every turn of the loop, for the
# ~0.5 s the import takes; a worker's case takes a turn more than one in the controller's process (its result goes
# out, the next case comes in). Restored once the SDK has imported.
IMPORT_SWITCH = 0.0005


def sdk_version() -> str | None:
    """The installed SDK's version, read from its ``_version.py`` without importing it (None: no SDK)."""
    try:
        spec = importlib.util.find_spec("openai")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            with open(os.path.join(folder, "_version.py"), encoding="utf-8") as fh:
                found = re.search(r'^__version__\s*=\s*"([^"]+)"', fh.read(), re.MULTILINE)
        except OSError:
            continue
        return found.group(1) if found else None
    return None


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def platform_os() -> str | None:
    """``X-Stainless-OS`` as the SDK computes it, for the platforms this module sends from (None elsewhere)."""
    system, name = platform.system().lower(), platform.platform().lower()
    if "iphone" in name or "ipad" in name or "android" in name:
        return None
    if system == "darwin":
        return "MacOS"
    if system == "windows":
        return "Windows"
    if system == "linux":
        try:
            distro = platform.freedesktop_os_release().get("ID", "").lower()
        except OSError:
            distro = ""
        return None if distro in ("freebsd", "openbsd") else "Linux"
    return None


def platform_arch() -> str | None:
    """``X-Stainless-Arch`` as the SDK computes it, for the usual machines (None elsewhere)."""
    return {"x86_64": "x64", "arm64": "arm64", "aarch64": "arm64"}.get(platform.machine().lower())


def why_not(base_url: str | None, headers: Any, organization: Any, timeout: float) -> str | None:
    """Why a connector's requests cannot leave before the SDK has imported (None: they can, exactly as the SDK
    sends them)."""
    version = sdk_version()
    if version not in VERIFIED:
        return f"openai {version or '(not installed)'} is not a version whose requests were compared with the SDK's"
    if os.environ.get("AGENTTEST_HTTP", "").strip().lower() == "httpx" or not _installed("aiohttp"):
        return "the SDK sends on httpx"
    if _installed("brotli") or _installed("brotlicffi") or _installed("zstandard") or _installed("backports.zstd"):
        return "the SDK accepts more content encodings than gzip and deflate"
    found = [k for k in os.environ if k.upper().startswith("OPENAI_") and k.upper() != "OPENAI_API_KEY" or k.lower() in _PROXIES]
    if found:
        return f"the environment sets {found[0]}"
    url = urlsplit(base_url or "")
    if url.scheme not in ("http", "https") or not url.hostname or "@" in url.netloc or url.query or url.fragment:
        return "the endpoint is not a plain http(s) URL"
    if not _PATH.fullmatch(url.path) or not re.fullmatch(r"[a-z0-9.-]+(:[0-9]+)?", url.netloc):
        return "the endpoint's URL would be re-encoded"
    if url.scheme == "https" and not sys.platform.startswith("linux"):  # elsewhere the SDK verifies with the system's store
        return "the SDK makes its own TLS context here"
    if organization is not None and not (isinstance(organization, str) and _VALUE.fullmatch(organization)):
        return "the organization is not plain text"
    if len({str(name).lower() for name in headers or {}}) != len(headers or {}):
        return "two headers differ only in case"
    for name, value in (headers or {}).items():
        if not (isinstance(name, str) and _TOKEN.fullmatch(name) and name.lower() not in _SET and isinstance(value, str) and _VALUE.fullmatch(value)):
            return f"the header {name!r} is one the SDK sets itself, or not plain text"
    if platform_os() is None or platform_arch() is None:
        return "the SDK names this platform in a way not compared"
    if not 0 < timeout < float("inf"):
        return "the timeout is not a number of seconds"
    return None


def request_headers(base_url: str, key: str, headers: dict[str, str] | None, organization: str | None, timeout: float) -> list[tuple[str, str]]:
    """The headers the SDK (``AsyncOpenAI.post`` on its aiohttp transport) sends, in its order, but
    ``content-length`` (one per body)."""
    url = urlsplit(base_url)
    default_port = {"http": 80, "https": 443}[url.scheme]
    host = url.hostname if url.port in (None, default_port) else f"{url.hostname}:{url.port}"
    version = sdk_version()
    said: dict[str, str] = {
        "accept": "application/json", "content-type": "application/json", "user-agent": f"AsyncOpenAI/Python {version}",
        "x-stainless-lang": "python", "x-stainless-package-version": str(version), "x-stainless-os": str(platform_os()),
        "x-stainless-arch": str(platform_arch()), "x-stainless-runtime": platform.python_implementation(),
        "x-stainless-runtime-version": platform.python_version(),
    }
    said.update((k.lower(), v) for k, v in (headers or {}).items())
    said["x-stainless-async"] = "async:asyncio"
    if organization is not None:
        said["openai-organization"] = organization
    return [("host", str(host)), ("accept-encoding", "gzip, deflate"), ("connection", "keep-alive"), ("authorization", f"Bearer {key}"),
            *said.items(), ("x-stainless-retry-count", "0"), ("x-stainless-read-timeout", str(float(timeout)))]


def body_bytes(body: Any) -> bytes | None:
    """The body as the SDK encodes it (``openapi_dumps``); None for one only the SDK can encode (or refuse)."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError):
        return None


class Importer:
    """The SDK imported on a thread beside the run, once per process. No process forks while it imports
    (``os.register_at_fork``): a fork would copy the import locks the thread holds, locked for good."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    def done(self) -> bool:
        """Whether the SDK has imported (by this thread or any other way)."""
        return self._done.is_set() or (self._thread is None and _imported())

    def start(self) -> None:
        """Start the import, unless it is done or under way."""
        if self._thread is None and not self.done():
            self._thread = threading.Thread(target=self._run, name="agenttest-import-openai", daemon=True)
            os.register_at_fork(before=self.join)
            self._thread.start()

    def _run(self) -> None:
        was = sys.getswitchinterval()
        sys.setswitchinterval(min(was, IMPORT_SWITCH))
        ours = sys.getswitchinterval()
        try:
            with collector.importing():  # ~55,000 objects, no garbage (speed/collector.py)
                for name in SDK_MODULES:
                    try:
                        importlib.import_module(name)
                    except ImportError:  # another SDK layout, or no aiohttp: the SDK's own path says what is missing
                        if name == "openai":
                            raise
        except BaseException as exc:  # noqa: BLE001 — said where the SDK is next imported, by that import
            self.error = exc
        finally:
            if sys.getswitchinterval() == ours:  # unless something else has set it since
                sys.setswitchinterval(was)
            with self._lock:
                self._done.set()
                waiters, self._waiters = self._waiters, []
            for loop, future in waiters:
                loop.call_soon_threadsafe(_settle, future)

    def join(self) -> None:
        """Wait for the import to end (before a fork, in the forking thread)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    async def wait(self) -> None:
        """Until the SDK has imported, without holding up the event loop."""
        if self.done() or self._thread is None:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._done.is_set():
                return
            self._waiters.append((loop, future))
        await future


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _imported() -> bool:
    module = sys.modules.get("openai")
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


IMPORTER = Importer()


class Handed:
    """A request the SDK sends instead: ``why`` (and the ``status`` of an answer not taken), and whether this
    one was sent from here first (the endpoint then sees it twice)."""

    def __init__(self, why: str, status: int = 0, sent: bool = False):
        self.why, self.status, self.sent = why, status, sent


class Early:
    """One connector's requests before the SDK has imported: each sent as the SDK would send it, or not at all
    (``send`` returns a ``Handed``: the SDK sends it). Stops for good at the first answer it does not take."""

    def __init__(self, url: str, headers: list[tuple[str, str]], timeout: float, context: Callable[[], Any]):
        """``context``: gives the TLS context the SDK's client is given (None: none was prepared)."""
        self.url, self.headers, self.timeout, self.context = url, headers, timeout, context
        self.stopped = False
        self._session: Any = None

    def usable(self) -> bool:
        """Whether a request may leave from here now: the SDK has not imported yet and nothing stopped it."""
        return not self.stopped and not IMPORTER.done()

    def _client(self) -> Any:
        import aiohttp

        if self._session is None:  # as the SDK's transport makes its session (DEFAULT_CONNECTION_LIMITS, httpx's keep-alive)
            context = self.context()
            connector = aiohttp.TCPConnector(keepalive_timeout=5.0, ssl=context if context is not None else True, limit=1000)
            self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def send(self, body: Any) -> Any:
        """The endpoint's JSON answer to ``body``, or a ``Handed``: the SDK sends it (and every later request)."""
        import aiohttp

        data = body_bytes(body)
        if data is None:
            return Handed("a body only the SDK encodes")
        if self.url.startswith("https:") and self.context() is None:
            self.stopped = True
            return Handed("no TLS context was prepared: the SDK makes its own")
        IMPORTER.start()
        timeout = aiohttp.ClientTimeout(sock_connect=self.timeout, sock_read=self.timeout, connect=self.timeout)
        try:
            async with self._client().request("POST", self.url, headers=[*self.headers, ("content-length", str(len(data)))], data=data,
                                              allow_redirects=False, compress=False, timeout=timeout) as response:
                kind = response.headers.get("content-type", "*").split(";")[0]
                if not 200 <= response.status < 300 or not kind.endswith("json") or "set-cookie" in response.headers:
                    self.stopped = True
                    why = "a cookie" if 200 <= response.status < 300 and kind.endswith("json") else f"{response.status} {kind}"
                    return Handed(f"the early request was answered with {why}", response.status, sent=True)
                content = await response.read()
            return json.loads(content)
        except (aiohttp.ClientError, OSError, ValueError, RecursionError) as exc:  # OSError: a timeout too
            self.stopped = True  # the SDK sends it again, and says what is wrong in its own words
            return Handed(f"the early request failed ({type(exc).__name__})", sent=True)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
