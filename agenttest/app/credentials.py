"""Which values of a connector or MCP server file carry credentials — the secrets a run hides wherever it shows
text (docs/safety.md, "What is shown"). Decided by the field: a model name or a path read from ``$ENV`` is not a
secret (hidden, it turned every id and path that holds it into ``***``)."""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from agenttest.app.yaofiles import ENV_REFERENCE

# a field or variable named for a credential: key, api_key, x-api-key, token, access_token, password, client_secret,
# Authorization, Cookie, GITHUB_PAT, OPENAI_API_KEY … (not max_tokens, keywords, monkey)
NAMED = re.compile(r"(?:^|[_\-.])(?:api_?key|key|token|password|passwd|passphrase|secret|credentials?|authorization|auth|cookie|pat)$",
                   re.IGNORECASE)


def credentials(raw: Any, data: Any, found: dict[str, str]) -> list[tuple[str, str]]:
    """Each credential in ``data`` (a file's values with ``$ENV`` substituted; ``raw`` as written, ``found`` the
    variables' values by name), as (value, the variable it came from or ""):

    - a value from ``$ENV`` in a field named for a credential (``key``, ``api_key``, ``token``, ``password``,
      ``Authorization`` …) or in any header (under ``headers``);
    - a value from a variable named for a credential (``$ENV.OPENAI_API_KEY``), in whatever field;
    - the user and password of a URL (``http://user:pass@host``, written in the file or from ``$ENV``), and the
      ``Basic`` header they are sent as.

    A value written in the file itself is not taken for a secret (it is in the file for anyone to read), but
    for a URL's password."""
    out: list[tuple[str, str]] = []
    _walk(raw, data, "", False, found, out)
    return list(dict.fromkeys(out))


def _walk(raw: Any, data: Any, field: str, header: bool, found: dict[str, str], out: list[tuple[str, str]]) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            _walk(raw.get(key) if isinstance(raw, dict) else None, value, str(key), header or str(key).lower() == "headers", found, out)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            _walk(raw[i] if isinstance(raw, list) and i < len(raw) else None, value, field, header, found, out)
    elif isinstance(data, str):
        names = [n for n in ENV_REFERENCE.findall(raw) if n in found] if isinstance(raw, str) else []
        named = NAMED.search(field) is not None
        out.extend((found[n], n) for n in names if named or header or NAMED.search(n))
        out.extend((secret, "") for secret in userinfo(data))


def userinfo(value: str) -> list[str]:
    """The user and password of a URL in ``value`` (as written and decoded), and ``base64(user:password)`` — an
    endpoint or proxy that echoes the ``Authorization: Basic …`` header shows the password in that form."""
    if "@" not in value or "://" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if user is None and password is None:
        return []
    found = [s for s in (user, password, unquote(user or ""), unquote(password or "")) if s]
    if password is not None:
        found.append(base64.b64encode(f"{unquote(user or '')}:{unquote(password)}".encode()).decode())
    return list(dict.fromkeys(found))
