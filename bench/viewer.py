"""The viewer at size (issue 27): a 10,000-case HTML report, written by the CLI on the mock connector,
opened in headless Chromium — time to its first screen, to apply a filter chip and a search — and its
file size next to the JSON report of the same run. Without Chromium (or Playwright) the rows say so."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

from workloads import standard_cases

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
FIRST_SCREEN = "() => new Promise(r => { const t = () => document.querySelector('#cases tbody tr') ? r(performance.now()) : requestAnimationFrame(t); t(); })"
CHIP = """async () => { const t = performance.now(); document.querySelector('[data-chip=failed]').click();
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0))); return [performance.now() - t, document.querySelectorAll('#cases tbody tr').length]; }"""
SEARCH = """async () => { const box = document.querySelector('#search'), shown = document.querySelector('#shown'), before = shown.textContent;
  const t = performance.now(); box.value = 'confirm #9990'; box.dispatchEvent(new Event('input'));
  await new Promise(r => { const o = new MutationObserver(() => { if (shown.textContent !== before) { o.disconnect(); r(); } });
    o.observe(shown, {childList: true, characterData: true, subtree: true}); });
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0))); return [performance.now() - t, document.querySelectorAll('#cases tbody tr').length]; }"""


def _cases(n: int) -> list[dict[str, Any]]:
    """Standard cases; one in twenty asks for a word the mock never says, so it fails."""
    cases = standard_cases(n)
    for i, case in enumerate(cases):
        case["tags"] = ["smoke" if i % 2 else "regression"]
        if i % 20 == 7:
            case["assertions"] = [{"type": "contains", "value": "rejected"}]
    return cases


def _browser() -> tuple[Any, str] | tuple[None, str]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, "the playwright package is not installed"
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    return (sync_playwright, path) if path else (None, "no chromium on this machine")


def _row(b: Any, name: str, seconds: float | None, target: str, met: bool | None) -> None:
    b.rows.append({"workload": name, "wall": f"{seconds:.2f} s" if seconds is not None else "—", "ideal": "—", "ratio": "—", "cpu/case": "—",
                   "peak in-flight": "—", "peak RSS": "—", "target": target, "met": "—" if b.smoke or met is None else ("yes" if met else "NO")})
    print("  ".join(f"{k}={v}" for k, v in b.rows[-1].items()), flush=True)


# each report format made from the same run's report, read back (in a process of agenttest's, not the harness's)
TIME_FORMATS = """
import json, sys, time
from agenttest.reporting.codec import read
from agenttest.reporting.formats import renderer, report_formats
report = read(sys.argv[1])
took = {}
for ext in report_formats():
    best = None
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        made = renderer(ext)(report)
        if not isinstance(made, str):
            made = "".join(made)
        seconds = time.perf_counter() - start
        best = seconds if best is None else min(best, seconds)
    took[ext] = best
print(json.dumps(took))
"""


def _formats(b: Any, n: int, json_path: str) -> None:
    """Each report format of an n-case run, made from the report read back (best of the repeats): a format
    that costs more than a second at 10,000 results is a cost paid after every large run."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", TIME_FORMATS, json_path, str(b.repeats())], capture_output=True, text=True, check=True)
    for ext, seconds in json.loads(done.stdout).items():
        _row(b, f"report format {ext}: made from a {n}-result report (best of {b.repeats()})", seconds, "≤ 1.00 s", seconds <= 1.0)


def viewer(b: Any) -> None:
    n = b.size(10_000)
    path = b.cases("viewer", _cases(n))
    page_path, json_path = os.path.join(b.tmp, "viewer.html"), os.path.join(b.tmp, "viewer.json")
    b.invoke(["-i", path, "-n", "mockbot", "--parallel", "20", "--no-history", "-o", json_path, "-o", page_path])
    _formats(b, n, json_path)
    ratio = os.path.getsize(page_path) / os.path.getsize(json_path)
    b.rows.append({"workload": f"viewer: {n}-case HTML report size vs its JSON report ({os.path.getsize(page_path) / 2**20:.1f} MB)",
                   "wall": "—", "ideal": "—", "ratio": f"{ratio:.2f}", "cpu/case": "—", "peak in-flight": "—", "peak RSS": "—",
                   "target": "≤ 1.5 × JSON", "met": "—" if b.smoke else ("yes" if ratio <= 1.5 else "NO")})
    print("  ".join(f"{k}={v}" for k, v in b.rows[-1].items()), flush=True)
    playwright, why = _browser()
    names = (f"viewer: {n}-case report to its first screen (headless Chromium)", "viewer: a filter chip applied (failed only)",
             "viewer: a search applied (output word)")
    if playwright is None:
        for name in names:
            _row(b, name + f" — not measured: {why}", None, "≤ 2.00 s", None)
        return
    opened, chips, searches = [], [], []
    with playwright() as pw:
        browser = pw.chromium.launch(executable_path=why, args=ARGS)
        for _ in range(b.repeats()):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto("file://" + page_path, wait_until="commit")
            opened.append(page.evaluate(FIRST_SCREEN) / 1000)  # since the navigation started
            took, shown = page.evaluate(CHIP)
            assert shown == min(200, n // 20 + (n % 20 > 7)), shown  # the failures, first page of them
            chips.append(took / 1000)
            page.click("[data-chip=failed]")  # every case again, then search
            took, shown = page.evaluate(SEARCH)
            searches.append(took / 1000)
            page.close()
        browser.close()
    for name, times in zip(names, (opened, chips, searches)):
        _row(b, name, statistics.median(times), "≤ 2.00 s", statistics.median(times) <= 2.0)


def _agent_test() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "agent-test")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "agenttest"]


def _first_screen(b: Any, browser: Any, path: str, query: str) -> tuple[float, float, float]:
    """``agent-test view REPORT --paged`` started, to its first page's rows in Chromium (the process's start-up, the
    report's two ends read, the first rows indexed and drawn); then a search over every result, then the failures only."""
    start = time.perf_counter()
    proc = subprocess.Popen(_agent_test() + ["view", path, "--paged", "--port", "0"], cwd=b.tmp, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url, wait_until="commit")
        page.wait_for_selector("#cases tbody tr")
        opened = time.perf_counter() - start
        searched = time.perf_counter()
        page.fill("#search", query)
        page.press("#search", "Enter")
        page.wait_for_selector("#shown:has-text('1 result ·')", timeout=120_000)
        searched = time.perf_counter() - searched
        filtered = time.perf_counter()
        page.goto(url + "?status=failed", wait_until="domcontentloaded", timeout=120_000)  # a run with no failure: an empty page
        page.wait_for_selector("#shown")
        filtered = time.perf_counter() - filtered
        page.close()
        return opened, searched, filtered
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def paged(b: Any) -> None:
    """Issue 57's bar: the first screen of a million-result report in ≤ 2 s. A report the CLI wrote (100,000 mock
    cases), and one of a million results written by the same writer (bench/bigreport.py), each opened by
    ``agent-test view REPORT.json --paged`` in headless Chromium: from the command's start to the first rows."""
    import bigreport

    n = b.size(100_000)
    path = b.cases("paged", _cases(n))
    cli_report, big = os.path.join(b.tmp, "paged.json"), os.path.join(b.tmp, "paged-big.json")
    b.invoke(["-i", path, "-n", "mockbot", "--parallel", "20", "--no-history", "-o", cli_report])
    streamed = getattr(b, "million_report", None)  # the CLI's own million, when `million` ran first in this bench
    if streamed:
        big, big_n = streamed
        big_label = f"the CLI's streamed {big_n:,}-case report"
    else:
        big_n = 2_000 if b.smoke else 1_000_000
        bigreport.write(cli_report, big, big_n)
        big_label = f"a {big_n:,}-result report (bench/bigreport.py)"
    playwright, why = _browser()
    reports = ((f"the CLI's {n:,}-case report", cli_report, n), (big_label, big, big_n))
    if playwright is None:
        for label, _, _ in reports:
            _row(b, f"viewer paged: {label} to its first screen — not measured: {why}", None, "≤ 2.00 s", None)
        return
    with playwright() as pw:
        browser = pw.chromium.launch(executable_path=why, args=ARGS)
        for label, report, size in reports:
            mb = os.path.getsize(report) / 2**20
            took = [_first_screen(b, browser, report, f"confirm #{size - 3}") for _ in range(b.repeats())]
            opened, searched, filtered = (statistics.median(t[i] for t in took) for i in range(3))
            _row(b, f"viewer paged: {label} ({mb:,.0f} MB), agent-test view to its first screen (Chromium)", opened, "≤ 2.00 s", opened <= 2.0)
            _row(b, "viewer paged: a search over every result, to its page", searched, "—", None)
            _row(b, "viewer paged: the failures only, to their page", filtered, "—", None)
        browser.close()
