"""Model calls in the report (``--calls``, issue 58): what keeping them costs. 1,000 cases — standard ones and dynamic
conversations of 3 turns with a simulator — through the openai connector on the benchmark server, an agent with a
~1.2 KB system prompt and two tool schemas; each run with ``--calls none``, ``failed`` (one case in ten fails) and
``all``: the run's wall and CPU, the JSON and HTML reports' sizes and the CPU time to make each from the report
read back (best of nine). And the viewer of a 10,000-case report that keeps every call, to its first screen."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

import viewer as pages
from workloads import NEEDLE, standard_cases

PROMPT = ("You are the expense assistant of ACME Corp. Policy: travel up to $5,000 needs no approval; above it, a manager "
          "approves. Meals: $75 a day. Always confirm the amount, the type and the date before you file anything. ") * 6
TOOLS = [{"name": "create_expense", "description": "File an expense report for the current user.",
          "parameters": {"type": "object", "properties": {"type": {"type": "string", "enum": ["travel", "meal", "equipment"]},
                                                          "amount": {"type": "number", "description": "in USD"},
                                                          "date": {"type": "string", "format": "date"}}, "required": ["type", "amount"]}},
         {"name": "lookup_policy", "description": "The expense policy for one type of expense.",
          "parameters": {"type": "object", "properties": {"type": {"type": "string"}}, "required": ["type"]}}]

WRITES = 9  # making a report takes a fraction of a second: the best of nine is steady on a loaded machine
# a report read back and each format made from it (CPU seconds, the best of WRITES: wall time on a shared machine
# measures the others' load), in a process of agenttest's
TIME_WRITE = """
import gc, json, sys, time
from agenttest.reporting.codec import read
from agenttest.reporting.formats import renderer
report = read(sys.argv[1])
took = {}
for ext in (".json", ".html"):
    best = None
    for _ in range(int(sys.argv[2])):
        gc.collect()
        start = time.process_time()
        made = renderer(ext)(report)
        if not isinstance(made, str):
            made = "".join(made)
        best = min(best or 1e9, time.process_time() - start)
    took[ext] = best
print(json.dumps(took))
"""


def _app(b: Any) -> None:
    folder = os.path.join(b.tmp, "assistants", "callbot")
    os.makedirs(os.path.join(folder, "src"), exist_ok=True)
    with open(os.path.join(folder, "package.yao"), "w") as fh:
        json.dump({"name": "callbot", "connector": "bench", "tools": TOOLS, "options": {"temperature": 0.2}}, fh)
    with open(os.path.join(folder, "prompts.yml"), "w") as fh:
        fh.write("- role: system\n  content: " + json.dumps(PROMPT) + "\n")
    with open(os.path.join(folder, "src", "tools.py"), "w") as fh:
        fh.write("def create_expense(ctx, **kw):\n    return {'id': 'EXP-1'}\n\ndef lookup_policy(ctx, **kw):\n    return {'limit': 5000}\n")


def _cases(n: int) -> list[dict[str, Any]]:
    """Three in four standard, one in four a dynamic conversation; one case in ten asks for what is never said."""
    cases: list[dict[str, Any]] = []
    for i, case in enumerate(standard_cases(n)):
        if i % 4 == 3:
            case = {"id": case["id"], "simulator": {"use": "sim", "options": {"metadata": {"persona": "p", "goal": "g"}}},
                    "input": "I want to submit an expense", "max_turns": 3,
                    "checkpoints": [{"id": "asks", "assert": {"type": "contains", "value": "alpha"}}]}
        if i % 10 == 7:
            case["assertions"] = [{"type": "contains", "value": "never said"}]
        elif "assertions" not in case and "checkpoints" not in case:
            case["assertions"] = [{"type": "contains", "value": NEEDLE}]
        cases.append(case)
    return cases


def _row(b: Any, name: str, wall: str = "—", cpu: str = "—", rss: str = "—", target: str = "", met: bool | None = None, ratio: str = "—") -> None:
    b.rows.append({"workload": name, "wall": wall, "ideal": "—", "ratio": ratio, "cpu/case": cpu, "peak in-flight": "—", "peak RSS": rss,
                   "target": target, "met": "—" if b.smoke or met is None else ("yes" if met else "NO")})
    print("  ".join(f"{k}={v}" for k, v in b.rows[-1].items()), flush=True)


def calls(b: Any) -> None:
    n = b.size(1000)
    _app(b)
    path = b.cases("calls", _cases(n))
    b.server.configure(0.0, 0.0)
    sizes: dict[str, tuple[int, int]] = {}
    for keep in ("none", "failed", "all"):
        json_path, html_path = (os.path.join(b.tmp, f"calls-{keep}{ext}") for ext in (".json", ".html"))
        runs = [b.invoke(["-i", path, "-n", "callbot", "--parallel", "20", "--no-history", "--calls", keep, "-o", json_path, "-o", html_path])
                for _ in range(b.repeats())]
        m = min(runs, key=lambda r: r.cpu)
        sizes[keep] = (os.path.getsize(json_path), os.path.getsize(html_path))
        done = subprocess.run([sys.executable, "-c", TIME_WRITE, json_path, str(WRITES if not b.smoke else 1)], capture_output=True, text=True, check=True)
        took = json.loads(done.stdout)
        base = sizes["none"]
        _row(b, f"--calls {keep}: {n} cases (¾ standard, ¼ 3-turn dynamic), the run (best CPU of {b.repeats()})", f"{m.wall:.2f} s",
             f"{m.cpu / n * 1000:.2f} ms", f"{m.rss_mb:.0f} MB")
        _row(b, f"  its JSON report {sizes[keep][0] / 2**20:.2f} MB, made in {took['.json']:.2f} s CPU; HTML {sizes[keep][1] / 2**20:.2f} MB, "
                f"made in {took['.html']:.2f} s CPU", ratio=f"{sizes[keep][0] / base[0]:.2f} × none",
             target="≤ 4 × none (JSON)" if keep == "all" else "", met=sizes[keep][0] <= 4 * base[0] if keep == "all" else None)
    _viewer(b)


def _viewer(b: Any) -> None:
    """A 10,000-case HTML report with every call kept (--calls all), to its first screen in headless Chromium."""
    n = b.size(10_000)
    path = b.cases("viewer-calls", pages._cases(n))
    page_path = os.path.join(b.tmp, "viewer-calls.html")
    b.invoke(["-i", path, "-n", "mockbot", "--parallel", "20", "--no-history", "--calls", "all", "-o", page_path])
    size = os.path.getsize(page_path) / 2**20
    playwright, why = pages._browser()
    name = f"viewer: {n}-case report keeping every call ({size:.1f} MB) to its first screen"
    if playwright is None:
        _row(b, name + f" — not measured: {why}", target="≤ 2.00 s")
        return
    opened, card = [], []
    with playwright() as pw:
        browser = pw.chromium.launch(executable_path=why, args=pages.ARGS)
        for _ in range(b.repeats()):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto("file://" + page_path, wait_until="commit")
            opened.append(page.evaluate(pages.FIRST_SCREEN) / 1000)
            page.click("#cases tbody tr a")
            card.append(page.evaluate(OPEN_CARD) / 1000)
            page.close()
        browser.close()
    _row(b, name, f"{statistics.median(opened):.2f} s", target="≤ 2.00 s", met=statistics.median(opened) <= 2.0)
    _row(b, "  a failing case's first model call card opened", f"{statistics.median(card):.3f} s", target="≤ 0.50 s", met=statistics.median(card) <= 0.5)


OPEN_CARD = """async () => { await new Promise(r => { const t = () => document.querySelector('details.mcall') ? r() : requestAnimationFrame(t); t(); });
  const card = document.querySelector('details.mcall'), t = performance.now(); card.open = true;
  await new Promise(r => { const w = () => card.querySelector('.minside') ? requestAnimationFrame(() => r()) : requestAnimationFrame(w); w(); });
  return performance.now() - t; }"""
