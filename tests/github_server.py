"""A real HTTP server on 127.0.0.1 standing in for the GitHub REST API, for the Action's tests: an issue's
comments (paged, created, updated), a commit's workflow runs and their artifacts, and the artifact download
that redirects to storage — which notes whether the token followed the redirect (it must not)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any = None, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else b"")
        self.send_response(status)
        self.send_header("Content-Type", "application/zip" if raw is not None else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str) -> None:
        api = self.server.api
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with api.lock:
            api.requests.append({"method": method, "path": url.path, "query": query, "body": body,
                                 "authorization": self.headers.get("Authorization")})
        if url.path.startswith("/storage/"):  # where a download redirects: no token wanted here
            self._send(200, raw=api.archives[url.path.rsplit("/", 1)[1]])
            return
        if self.headers.get("Authorization") != f"Bearer {api.token}":
            self._send(401, {"message": "Bad credentials"})
            return
        for pattern, handler in api.routes(method):
            found = re.fullmatch(pattern, url.path)
            if found:
                status, payload, headers = handler(*found.groups(), query=query, body=body)
                self._send(status, payload, headers)
                return
        self._send(404, {"message": "Not Found"})

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PATCH(self) -> None:
        self._route("PATCH")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    api: GitHubApi


class GitHubApi:
    """``url`` is the API base ($GITHUB_API_URL). ``comments[number]`` holds an issue's comments."""

    def __init__(self, repo: str = "acme/weather-agent", token: str = "ghs_loopbackTOKEN0123456789"):
        self.repo, self.token = repo, token
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.runs: dict[str, list[int]] = {}  # head sha → successful run ids
        self.artifacts: dict[int, list[dict[str, Any]]] = {}
        self.archives: dict[str, bytes] = {}
        self.read_only = False  # a fork's token: writes are refused
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._next = 1000
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.api = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def routes(self, method: str) -> list[tuple[str, Any]]:
        repo = re.escape(self.repo)
        table = {
            "GET": [(rf"/repos/{repo}/issues/(\d+)/comments", self._list),
                    (rf"/repos/{repo}/actions/runs", self._runs),
                    (rf"/repos/{repo}/actions/runs/(\d+)/artifacts", self._artifacts),
                    (rf"/repos/{repo}/actions/artifacts/(\d+)/zip", self._zip)],
            "POST": [(rf"/repos/{repo}/issues/(\d+)/comments", self._create)],
            "PATCH": [(rf"/repos/{repo}/issues/comments/(\d+)", self._update)],
        }
        return table[method]

    def _page(self, items: list[Any], query: dict[str, str]) -> list[Any]:
        size, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        return items[(page - 1) * size: page * size]

    def _list(self, number: str, query: dict[str, str], body: Any) -> tuple[int, Any, None]:
        return 200, self._page(self.comments.get(int(number), []), query), None

    def _create(self, number: str, query: dict[str, str], body: Any) -> tuple[int, Any, None]:
        if self.read_only:
            return 403, {"message": "Resource not accessible by integration"}, None
        self._next += 1
        made = {"id": self._next, "body": body["body"], "user": {"login": "github-actions[bot]", "type": "Bot"}}
        self.comments.setdefault(int(number), []).append(made)
        return 201, made, None

    def _update(self, comment_id: str, query: dict[str, str], body: Any) -> tuple[int, Any, None]:
        if self.read_only:
            return 403, {"message": "Resource not accessible by integration"}, None
        for comments in self.comments.values():
            for c in comments:
                if c["id"] == int(comment_id):
                    c["body"] = body["body"]
                    return 200, c, None
        return 404, {"message": "Not Found"}, None

    def _runs(self, query: dict[str, str], body: Any) -> tuple[int, Any, None]:
        ids = self.runs.get(query.get("head_sha", ""), []) if query.get("status") == "success" else []
        runs = [{"id": i, "head_sha": query.get("head_sha"), "conclusion": "success"} for i in ids]
        return 200, {"total_count": len(runs), "workflow_runs": self._page(runs, query)}, None

    def _artifacts(self, run: str, query: dict[str, str], body: Any) -> tuple[int, Any, None]:
        found = [a for a in self.artifacts.get(int(run), []) if not query.get("name") or a["name"] == query["name"]]
        return 200, {"total_count": len(found), "artifacts": self._page(found, query)}, None

    def _zip(self, artifact: str, query: dict[str, str], body: Any) -> tuple[int, Any, dict[str, str]]:
        return 302, None, {"Location": f"{self.url}/storage/{artifact}"}

    def add_artifact(self, sha: str, run: int, name: str, archive: bytes, expired: bool = False) -> None:
        self._next += 1
        self.runs.setdefault(sha, []).append(run)
        self.artifacts.setdefault(run, []).append({"id": self._next, "name": name, "expired": expired,
                                                  "archive_download_url": f"{self.url}/repos/{self.repo}/actions/artifacts/{self._next}/zip"})
        self.archives[str(self._next)] = archive

    def __enter__(self) -> GitHubApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
