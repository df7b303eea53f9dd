"""``agent-test view``: the run history in the viewer, served on 127.0.0.1 by the standard library's
``http.server`` — the runs with their pass-rate trend, any run, a case across runs, two runs compared;
or one report file."""

from __future__ import annotations

import os
import threading
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agenttest.errors import AgentTestError
from agenttest.history.comparison import compare
from agenttest.reporting.codec import read, report_of
from agenttest.history.store import History
from agenttest.model import RunReport
from agenttest.history import diffs, pagedview
from agenttest.history.paging import PAGED_BYTES, NotPaged, PagedReport
from agenttest.reporting import html, viewer

HOST = "127.0.0.1"  # never another interface: the history holds what the agent said


class NotFound(Exception):
    pass


class BadRequest(Exception):
    """A request the pages cannot mean: a run number that is not one."""


class Pages:
    """The pages the server shows: HTML for a path and query (NotFound when there is none) — no HTTP in here."""

    def __init__(self, history: str | None = None, report: RunReport | None = None, paged: PagedReport | None = None,
                 per_page: int = pagedview.PER_PAGE):
        self.history_path = history
        self.single = report
        self.paged = paged  # a big report file, a page at a time (history/paging.py)
        self.per_page = per_page

    def get(self, path: str, query: dict[str, str], lists: dict[str, list[str]] | None = None) -> str:
        if self.single is not None and path == "/":
            return html.page_of(self.single)
        if self.paged is not None:
            return self._paged(path, lists if lists is not None else {k: [v] for k, v in query.items()})
        if self.history_path is None:
            raise NotFound(path)
        with History(self.history_path, create=False) as history:
            if path == "/":
                return self._runs(history)
            if path.startswith("/run/"):
                report = self._report(history, path.removeprefix("/run/"))
                return html.page_of(report, {"home": "/", "case": "/case"})
            if path == "/case" and query.get("id"):
                return self._case(history, query["id"], query.get("file") or None)
            if path == "/compare" and query.get("a") and query.get("b"):
                base, new = self._report(history, query["a"]), self._report(history, query["b"])
                comparison = compare(base, new, f"run #{query['a']}", f"run #{query['b']}")
                return diffs.to_html(comparison, base, new)
        raise NotFound(path)

    def _paged(self, path: str, lists: dict[str, list[str]]) -> str:
        assert self.paged is not None
        try:
            if path == "/":
                view = pagedview.view_of(lists, self.paged.statuses)
                return pagedview.overview(self.paged, view, self.per_page)
            if path.startswith("/result/"):
                return pagedview.result_page(self.paged, path.removeprefix("/result/"))
        except pagedview.BadQuery as exc:
            raise BadRequest(str(exc)) from None
        except LookupError as exc:
            raise NotFound(str(exc)) from None
        raise NotFound(path)

    def _report(self, history: History, run_id: str) -> RunReport:
        """A recorded run's report: a run id that is not one (``²``, 21 digits) is not found; a stored report that
        cannot be read is said as such."""
        if not (run_id.isascii() and run_id.isdigit()):
            raise BadRequest(f"'{run_id}' is not a run number")
        number = int(run_id) if len(run_id) <= 18 else None  # past SQLite's integers: no such run
        data = history.report(number) if number is not None else None
        if data is None:
            raise NotFound(f"run {run_id}")
        try:
            return report_of(data)
        except Exception as exc:  # a report damaged in the database: the page says so, the server goes on
            raise AgentTestError(f"the report of run #{number} in {history.path} cannot be read: {exc}") from None

    def _runs(self, history: History) -> str:
        listed = history.runs()
        runs = [{**vars(r), "cases_text": r.cases_text(), "pass_rate_text": r.pass_rate_text()} for r in listed]
        rows = "".join(f'<tr><td><a href="/run/{_e(r.id)}">#{_e(r.id)}</a></td><td>{_e(r.started_at)}</td><td>{_e(r.inputs)}</td>'
                       f'<td>{_e(r.connector)}</td><td>{_e(r.cases_text())}</td><td>{_e(r.pass_rate_text())}</td><td>{_e(r.exit_code)}</td></tr>'
                       for r in listed)  # every column escaped: the database is a file anyone with the folder can write
        static = (f"<h1>Run history</h1><p>{escape(history.path)}</p><table><tr><th>Run</th><th>When</th><th>Inputs</th><th>Connector</th>"
                  f"<th>Cases</th><th>Pass rate</th><th>Exit</th></tr>{rows}</table>")
        judges = [vars(j) for j in history.judges(len(listed))]  # judge agreement over the same runs
        return viewer.page("runs", {"runs": runs, "database": history.path, **({"judges": judges} if judges else {})}, "agent-test history", static)

    def _case(self, history: History, case_id: str, file: str | None) -> str:
        verdicts = [vars(v) for v in history.case(case_id, file)]
        rows = "".join(f'<tr><td><a href="/run/{_e(v["run_id"])}">#{_e(v["run_id"])}</a></td><td>{_e(v["started_at"])}</td>'
                       f'<td>{_e(v["verdict"])}</td><td>{_e(v["reason"] or v["output"])}</td></tr>' for v in verdicts)
        static = f"<h1>{escape(case_id)}</h1><table><tr><th>Run</th><th>When</th><th>Verdict</th><th></th></tr>{rows}</table>"
        return viewer.page("case", {"case": {"id": case_id, "file": file or ""}, "history": verdicts}, f"{case_id} — agent-test history", static)


def report_pages(path: str, paged: bool = False) -> Pages:
    """One report file's pages: a file past PAGED_BYTES (any, with ``paged``) a page at a time, its index made in
    the background while the first page is served; a smaller one (or one not laid out as agent-test writes it) read
    whole, as before."""
    if os.path.isfile(path) and (paged or os.path.getsize(path) >= PAGED_BYTES):
        try:
            big = PagedReport(path)
        except NotPaged:
            pass
        else:
            big.start_indexing()
            return Pages(paged=big)
    return Pages(report=read(path))


def _e(value: Any) -> str:
    """Any value of the database as inert HTML text (a column may hold text where a number belongs)."""
    return escape(str(value))


def _handler(pages: Pages) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            # a page another site opens through a DNS name pointing here is refused: only our own host names
            if self.headers.get("Host", "").rsplit(":", 1)[0] not in (HOST, "localhost"):
                return self._send(403, "<h1>Forbidden</h1>")
            url = urlsplit(self.path)
            home = "Run history" if pages.history_path is not None else "The report"
            try:
                try:
                    lists = parse_qs(url.query, max_num_fields=100)  # more fields than any page has
                except ValueError:
                    raise BadRequest("a query of more than 100 fields") from None
                self._send(200, pages.get(url.path, {k: v[0] for k, v in lists.items()}, lists))
            except BadRequest as exc:
                self._send(400, f"<h1>Bad request</h1><p>{escape(str(exc))}</p><p><a href=\"/\">{home}</a></p>")
            except NotFound as exc:
                self._send(404, f"<h1>Not found</h1><p>{escape(str(exc))}</p><p><a href=\"/\">{home}</a></p>")
            except AgentTestError as exc:
                self._send(500, f"<h1>Cannot show this</h1><p>{escape(exc.format_message())}</p><p><a href=\"/\">{home}</a></p>")
            except Exception as exc:  # noqa: BLE001 — a bug of ours, or a database damaged under us: a page, never a dropped connection
                self._send(500, f"<h1>Cannot show this</h1><p>internal error: {escape(type(exc).__name__)}: {escape(str(exc))}</p>"
                                f"<p><a href=\"/\">{home}</a></p>")

        def _send(self, status: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # the terminal shows the URL, not every request
            pass

    return Handler


def make_server(pages: Pages, port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 (port 0: any free one); ``serve_forever`` starts it."""
    try:
        server = ThreadingHTTPServer((HOST, port), _handler(pages))
    except OSError as exc:
        raise AgentTestError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}", hint="pass another --port N") from None
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    return f"http://{HOST}:{server.server_address[1]}/"


def start(pages: Pages, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """The server running in a background thread (tests and ``--open``)."""
    server = make_server(pages, port)
    thread = threading.Thread(target=server.serve_forever, name="agent-test-view", daemon=True)
    thread.start()
    return server, thread
