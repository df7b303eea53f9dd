"""The runs the viewer's tests (and docs/ screenshots) look at, made by the real CLI on the offline app
of ``agent-test init``: run A passes; run B breaks two cases and echoes markup; a model matrix on two mock
connectors that answer differently; ``agent-test diff`` of A and B. All of them land in one history."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

ECHO = "echo <img src=x onerror=\"window.__pwned=1\"></script><script>window.__pwned=2</script> done"
TERSE = """rules:
  - name: after-lookup
    tool: lookup_order
    reply: "Order {{ tool_result.order_id }} is {{ tool_result.status }}."
  - name: lookup
    user: '(?i)order\\D*(?P<order>\\d+)'
    tool_calls:
      - name: lookup_order
        arguments: { order_id: "{{ order }}" }
default: "Hi. Orders only."
"""
BROKEN = {"greets": {"type": "contains", "value": "refund"}, "asks-number": {"type": "regex", "value": "(?i)tracking code"}}
ASKED = {"greets": "Hi there, about my order"}  # run B asks this instead: the agent's answer changes too


def _cli(root: Path, *args: str) -> int:
    from agenttest.cli import main

    old = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    if result.exit_code not in (0, 1):
        raise AssertionError(f"agent-test {' '.join(args)} exited {result.exit_code}:\n{result.output}")
    return result.exit_code


def _cases(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("//")]


def build(root: Path) -> dict[str, Path]:
    """The app in ``root`` and its reports: a (json, html), b, matrix, diff; and the history database."""
    from agenttest.app.scaffold import init

    init(str(root))
    support = root / "assistants" / "support"
    rules = (support / "mock.yml").read_text()
    (support / "mock.yml").write_text(rules.replace("rules:\n", "rules:\n  - name: echo\n    user: '^echo (?P<text>.*)'\n    reply: \"{{ text }}\"\n", 1))
    (support / "terse.yml").write_text(TERSE)
    (root / "connectors" / "terse.conn.yao").write_text(json.dumps({"type": "mock", "options": {"rules": "terse.yml", "model": "terse"}}))
    broken = root / "tests-b"
    broken.mkdir()
    cases = [{**c, "assert": BROKEN[c["id"]]} if c["id"] in BROKEN else c for c in _cases(root / "tests" / "cases.jsonl")]
    cases = [{**c, "input": ASKED[c["id"]]} if c["id"] in ASKED else c for c in cases]
    cases.append({"id": "echo", "name": "echoes what it is given", "input": ECHO, "assert": {"type": "contains", "value": "done"}})
    (broken / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (broken / "dynamic.jsonl").write_text((root / "tests" / "dynamic.jsonl").read_text())
    out = {name: root / "out" / name for name in ("a.json", "a.html", "b.json", "b.html", "matrix.html", "diff.html")}
    assert _cli(root, "-i", "tests", "-q", "-o", str(out["a.json"]), "-o", str(out["a.html"])) == 0
    assert _cli(root, "-i", "tests-b", "-q", "-o", str(out["b.json"]), "-o", str(out["b.html"])) == 1
    _cli(root, "-i", "tests/cases.jsonl", "-c", "mock,terse", "-q", "-o", str(out["matrix.html"]))
    assert _cli(root, "diff", str(out["a.json"]), str(out["b.json"]), "-o", str(out["diff.html"])) == 0
    return {**{k.replace(".", "_"): v for k, v in out.items()}, "history": root / ".agent-test" / "history.sqlite"}


def screenshots(demo: dict[str, Path], folder: Path) -> list[Path]:
    """The docs' pictures of the viewer (docs/reports.md), taken in headless Chromium."""
    from browser import chromium

    from agenttest.history import server

    httpd, _ = server.start(server.Pages(history=str(demo["history"])))
    shots = [("viewer-report.png", demo["b_html"].as_uri(), None), ("viewer-chat.png", demo["a_html"].as_uri() + "#order-status", 1000),
             ("viewer-matrix.png", demo["matrix_html"].as_uri(), None), ("viewer-diff.png", demo["diff_html"].as_uri() + "#greets", 560),
             ("viewer-history.png", server.url_of(httpd), None)]
    taken = []
    try:
        with chromium() as browser:
            for name, url, height in shots:
                page = browser.new_page(viewport={"width": 1100, "height": height or 640})
                page.goto(url)
                page.screenshot(path=str(folder / name))
                taken.append(folder / name)
    finally:
        httpd.shutdown()
    return taken


if __name__ == "__main__":  # python tests/viewer_demo.py DIR [--screenshots docs/]: make the demo to look at
    import sys

    made = build(Path(sys.argv[1]).resolve())
    for name, path in made.items():
        print(f"{name}: {path}")
    if "--screenshots" in sys.argv:
        for path in screenshots(made, Path(sys.argv[sys.argv.index("--screenshots") + 1]).resolve()):
            print(f"screenshot: {path}")
