"""What went wrong with an HTTP call, said truthfully: the cause behind the SDK's "Connection error."
(refused, no such host, reset, out of file descriptors) and how long the server asked us to wait."""

from __future__ import annotations

import errno
import math
import time
from typing import Any

# errno → (kind, what happened); "unreachable" means nothing was sent (the endpoint may be down)
_ERRNOS = {
    errno.ECONNREFUSED: ("unreachable", "connection refused"),
    errno.EHOSTUNREACH: ("unreachable", "no route to host"),
    errno.ENETUNREACH: ("unreachable", "network unreachable"),
    errno.ECONNRESET: ("connection", "connection reset by the server"),
    errno.EPIPE: ("connection", "connection closed by the server while sending"),
    errno.ECONNABORTED: ("connection", "connection aborted"),
    errno.EMFILE: ("connection", "out of file descriptors (too many open connections: try a lower --parallel, or raise `ulimit -n`)"),
    errno.ENFILE: ("connection", "the system is out of file descriptors (try a lower --parallel)"),
}


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen and len(out) < 12:
        seen.add(id(node))
        out.append(node)
        node = node.__cause__ or node.__context__
    return out


def connection_failure(exc: BaseException) -> tuple[str, str]:
    """``(kind, text)`` for a failed connection: kind ``unreachable`` (refused, DNS: nothing was sent) or
    ``connection`` (reset, dropped, local limits); the text names the real cause."""
    for node in _chain(exc):
        code = getattr(node, "errno", None)
        if type(node).__name__ == "gaierror" or (isinstance(code, int) and code < 0 and isinstance(node, OSError)):
            return "unreachable", f"cannot resolve the host name ({getattr(node, 'strerror', None) or node})"
        if isinstance(code, int) and code in _ERRNOS:
            return _ERRNOS[code]
    names = {type(n).__name__ for n in _chain(exc)}
    text = " ".join(str(n) for n in _chain(exc))
    if "RemoteProtocolError" in names or "disconnected" in text.lower():
        return "connection", "the server closed the connection without answering"
    if "ReadError" in names or "WriteError" in names:
        return "connection", "the connection broke while the request was under way"
    if "ConnectError" in names:
        return "unreachable", "cannot connect"
    cause = exc.__cause__ or exc
    return "connection", f"{type(cause).__name__}: {cause}"


def tls_failure(exc: BaseException) -> str | None:
    """What went wrong in the TLS handshake, or None if it was not TLS: an untrusted or mismatched
    certificate, or TLS spoken to what is not a TLS server. Another attempt fares no better."""
    import ssl

    nodes = _chain(exc)
    nodes += [inner for n in nodes for inner in (getattr(n, "certificate_error", None), getattr(n, "os_error", None))
              if isinstance(inner, BaseException)]  # aiohttp keeps the ssl module's error beside its own
    errors = [n for n in nodes if isinstance(n, ssl.SSLError)]
    if not errors:
        return None
    error = next((n for n in errors if type(n).__module__ == "ssl"), errors[0])  # the ssl module's own says most
    why = getattr(error, "verify_message", None) or getattr(error, "reason", None) or str(error)
    if isinstance(error, ssl.SSLCertVerificationError) or any(isinstance(n, ssl.SSLCertVerificationError) for n in errors):
        return f"its TLS certificate is not trusted ({why}); if your own CA signed it, point SSL_CERT_FILE at a bundle that holds it"
    hint = " — is it http://, not https://?" if "WRONG_VERSION_NUMBER" in f"{why} {error}" else ""
    return f"the TLS handshake failed ({why}){hint}"


def disguised(exc: BaseException) -> bool:
    """Whether a "timeout" is a connection failure in disguise: the SDK's aiohttp transport maps every
    aiohttp connection error — refused, reset, server disconnected — to httpx's ConnectTimeout."""
    return any(type(n).__module__.startswith("aiohttp") and "Timeout" not in type(n).__name__ for n in _chain(exc))


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms`` (OpenAI's, the finer) before ``Retry-After`` in
    seconds or as an HTTP date; None when it did not say (or said nonsense in both)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        raw = headers.get("retry-after")
    except (TypeError, ValueError, AttributeError):
        return None
    try:
        value = float(ms) / 1000 if ms is not None else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if 0 <= value < 1e6:
        return value
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        from email.utils import parsedate_to_datetime  # here: an HTTP date is rare, and email.utils costs every start-up ~2 ms

        try:
            value = parsedate_to_datetime(str(raw)).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(0.0, value) if value < 1e6 and value == value else None
