"""The GitHub REST API, the few calls the Action makes, over the standard library: a comment found by its
hidden marker and created or updated (never a second one), and the report a base commit's successful run
left as an artifact. The token goes to the API's host only — never to where a download redirects."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from agenttest.errors import AgentTestError

TIMEOUT = 30  # seconds for one request
PAGES = 50  # at most 5,000 comments or runs are looked through


class ApiError(AgentTestError):
    """A call the API refused or that did not reach it; the message says which and why."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # followed by hand, without the token


@dataclass(frozen=True)
class GitHub:
    api: str  # https://api.github.com, or $GITHUB_API_URL (GitHub Enterprise, a test's loopback server)
    repo: str  # owner/name
    token: str

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One JSON call; an HTTP error is an ApiError with GitHub's message."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.api.rstrip("/") + path, data=data, method=method, headers=self._headers())
        if data is not None:
            request.add_header("Content-Type", "application/json")
        raw = self._open(request).read()
        return json.loads(raw) if raw else None

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "agent-test"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _open(self, request: urllib.request.Request, opener: Any = None) -> Any:
        try:
            return opener.open(request, timeout=TIMEOUT) if opener is not None else urllib.request.urlopen(request, timeout=TIMEOUT)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400 and opener is not None:
                return exc  # a redirect, read by download()
            said = _message(exc)
            raise ApiError(f"GitHub API: {request.get_method()} {urlsplit(request.full_url).path}: HTTP {exc.code}"
                           + (f": {said}" if said else "")) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(f"GitHub API: {request.get_method()} {urlsplit(request.full_url).path}: {reason}") from None

    def pages(self, path: str, key: str | None = None) -> Any:
        """Every item of a paged list (``key``: the list inside each page's object)."""
        for page in range(1, PAGES + 1):
            sep = "&" if "?" in path else "?"
            items = self.call("GET", f"{path}{sep}per_page=100&page={page}")
            items = items.get(key, []) if key and isinstance(items, dict) else items
            yield from items or []
            if not items or len(items) < 100:
                return

    # ---- the comment ----

    def upsert_comment(self, number: int, body: str, marker: str) -> tuple[str, int]:
        """Update the pull request's comment that carries ``marker``, else create it: ("updated"|"created", id)."""
        path = f"/repos/{self.repo}/issues/{number}/comments"
        for found in self.pages(path):
            if marker in (found.get("body") or ""):
                self.call("PATCH", f"/repos/{self.repo}/issues/comments/{found['id']}", {"body": body})
                return "updated", int(found["id"])
        made = self.call("POST", path, {"body": body})
        return "created", int(made["id"])

    # ---- the base's report ----

    def artifact_report(self, sha: str, artifact: str, member: str) -> bytes | None:
        """``member`` of the newest unexpired artifact named ``artifact`` of a successful run on commit ``sha``."""
        runs = self.pages(f"/repos/{self.repo}/actions/runs?head_sha={quote(sha)}&status=success", "workflow_runs")
        for run in runs:
            found = self.pages(f"/repos/{self.repo}/actions/runs/{run['id']}/artifacts?name={quote(artifact)}", "artifacts")
            for item in found:
                if item.get("name") == artifact and not item.get("expired"):
                    return _member(self.download(item["archive_download_url"]), member)
        return None

    def download(self, url: str) -> bytes:
        """The bytes at ``url``: asked with the token, and the redirect (to storage) followed without it."""
        opener = urllib.request.build_opener(_NoRedirect)
        answer = self._open(urllib.request.Request(url, headers=self._headers()), opener)
        for _ in range(5):
            location = answer.headers.get("Location") if 300 <= getattr(answer, "code", 200) < 400 else None
            if not location:
                return answer.read()
            answer = self._open(urllib.request.Request(location, headers={"User-Agent": "agent-test"}), opener)
        raise ApiError(f"GitHub API: {url}: too many redirects")


def _member(archive: bytes, member: str) -> bytes | None:
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
            names = [n for n in zipped.namelist() if n == member or n.endswith("/" + member)]
            return zipped.read(names[0]) if names else None
    except zipfile.BadZipFile:
        raise ApiError("GitHub API: the artifact is not a zip archive") from None


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("message", ""))
    except (ValueError, AttributeError, OSError):
        return ""
