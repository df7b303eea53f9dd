"""The viewer: one self-contained HTML page that carries its data as JSON and draws it with its own
script and style (package files beside this module) — a run report, a comparison of two runs, the run
history. Without JavaScript the page shows its static HTML instead."""

from __future__ import annotations

import json
from functools import cache
from html import escape
from importlib.resources import files
from typing import Any, Literal

Kind = Literal["report", "diff", "runs", "case"]
# inside <script> nothing may close the element or open a comment; JSON allows these as \u escapes
_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


@cache
def asset(name: str) -> str:
    """One of the viewer's files (viewer.js, calls.js, viewer.css), as shipped in the package."""
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def embed(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element whatever its strings hold."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    for ch, escaped in _UNSAFE.items():
        text = text.replace(ch, escaped)
    return text


def page(kind: Kind, data: dict[str, Any], title: str, static: str) -> str:
    """The whole page: ``static`` shows without JavaScript; with it, the viewer draws ``data`` instead."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:; connect-src 'none'\">"
        f"<title>{escape(title)}</title><style>{asset('viewer.css')}</style></head><body>"
        # <noscript>: with JavaScript the static content is not even parsed into elements (a 10,000-row table costs seconds)
        f"<noscript><div id=\"static\">{static}</div></noscript><div id=\"app\"></div>"
        f"<script type=\"application/json\" id=\"agent-test-data\">{embed({'kind': kind, **data})}</script>"
        f"<script>{asset('calls.js')}\n{asset('viewer.js')}</script></body></html>\n"
    )
