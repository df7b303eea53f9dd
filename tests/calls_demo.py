"""A failing dynamic case on the loopback OpenAI server (tests/openai_server.py), for the viewer's model-call tests
and docs/viewer.md's pictures: a shop assistant with a system prompt and a tool, a simulated customer, a judge that
finds no delivery date — each a real model call through the openai connector — run by the real CLI, on two
connectors (a model matrix) so that two calls can be compared. ``python tests/calls_demo.py DIR --screenshots
docs/`` makes them to look at."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from openai_server import Answer, OpenAIServer, last_user

KEY = "sk-demo-KEEP-OUT-0123456789abcdef"
SYSTEM = ("You are the support assistant of a small online shop. When a customer asks about an order, ask for its number "
          "if you do not have it, then call lookup_order and tell them its status and delivery date in one short sentence.")
SIMULATOR = "You play a customer of the shop, as your persona says. Answer with the JSON your instructions describe."
JUDGE = "You are a strict validator. Answer with JSON: {\"passed\": true|false, \"reason\": \"…\"}."
TOOLS = [{"name": "lookup_order", "description": "Look an order up by its number",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}]
SAID = {1: "Hi, where is my order?", 2: "It's 1042.", 3: "And when will it arrive?"}


def responder(request: dict[str, Any]) -> Answer:
    """The same answer to the same request, whoever sends it (the CLI, or a request copied from the viewer)."""
    first = request["messages"][0].get("content")
    if first == SIMULATOR:
        turn = json.loads(last_user(request))["turn_number"]
        return Answer(json.dumps({"message": SAID[min(turn, 3)], "goal_achieved": False, "reasoning": f"turn {turn} of my script"}), usage=(180, 24))
    if first == JUDGE:
        return Answer(json.dumps({"passed": False, "reason": "the assistant never says when the order arrives"}), usage=(210, 16))
    last = request["messages"][-1]
    terse = request.get("model") == "shop-mini"
    if last.get("role") == "tool":
        return Answer("Order 1042 has shipped." if terse else "Order 1042 has shipped and is on its way.", usage=(96, 12))
    if re.search(r"\d{3,}", last_user(request)):
        return Answer(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "1042"}}], usage=(88, 18), call_ids=["call_lookup_1042"])
    if "arrive" in last_user(request):
        return Answer("I'm not sure." if terse else "", usage=(120, 5 if terse else 0), finish_reason="stop")
    return Answer("What is your order number?" if terse else "Sure — what is your order number?", usage=(64, 9))


def build(root: Path, server: OpenAIServer) -> dict[str, Path]:
    """The app in ``root`` on ``server``; its reports: ``html``/``json`` (one connector), ``matrix`` (two)."""
    os.environ["SHOP_KEY"] = KEY
    (root / "connectors").mkdir(parents=True, exist_ok=True)
    for name, model in (("shop", "shop-large"), ("mini", "shop-mini")):
        options = {"model": model, "host": server.host, "key": "$ENV.SHOP_KEY", "temperature": 0.2}
        (root / "connectors" / f"{name}.conn.yao").write_text(json.dumps({"type": "openai", "options": options}))
    for agent, prompt, extra in (("support", SYSTEM, {"tools": TOOLS}), ("customer", SIMULATOR, {}), ("judge", JUDGE, {"options": {"temperature": 0}})):
        folder = root / "assistants" / agent
        (folder / "src").mkdir(parents=True, exist_ok=True)
        (folder / "package.yao").write_text(json.dumps({"name": agent, "connector": "shop", **extra}, indent=2))
        (folder / "prompts.yml").write_text("- role: system\n  content: " + json.dumps(prompt) + "\n")
    (root / "assistants" / "support" / "src" / "tools.py").write_text(
        "import os\n\ndef lookup_order(ctx, order_id):  # a careless tool: its result carries the key it used\n"
        "    return {'order_id': order_id, 'status': 'shipped', 'auth': 'Bearer ' + os.environ['SHOP_KEY']}\n")
    case = {"id": "order-status", "name": "a customer asks where their order is", "max_turns": 3, "end": "simulator",
            "simulator": {"use": "customer", "options": {"metadata": {"persona": "A customer waiting for a parcel", "goal": "Learn when order 1042 arrives"}}},
            "checkpoints": [{"id": "asks", "assert": {"type": "contains", "value": "order number"}},
                            {"id": "looks-up", "after": ["asks"], "assert": {"type": "tool_called", "name": "lookup_order"}}],
            "assertions": [{"type": "agent", "use": "agents:judge", "value": "The assistant tells the customer when the order arrives"}]}
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "cases.jsonl").write_text(json.dumps(case) + "\n")
    out = {name: root / "out" / file for name, file in (("json", "report.json"), ("html", "report.html"), ("matrix", "matrix.html"),
                                                        ("mini", "mini.json"), ("diff", "diff.html"))}
    server.responder = responder
    _cli(root, "-i", "tests", "-n", "support", "-q", "--no-history", "-o", str(out["json"]), "-o", str(out["html"]))
    _cli(root, "-i", "tests", "-n", "support", "-q", "--no-history", "-c", "shop,mini", "-o", str(out["matrix"]))
    _cli(root, "-i", "tests", "-n", "support", "-q", "--no-history", "-c", "mini", "-o", str(out["mini"]))
    _cli(root, "diff", str(out["json"]), str(out["mini"]), "-o", str(out["diff"]), code=0)
    return out


def _cli(root: Path, *args: str, code: int = 1) -> None:
    from agenttest.cli import main

    old = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    if result.exit_code != code:  # a run fails: the judge finds no delivery date
        raise AssertionError(f"agent-test {' '.join(args)} exited {result.exit_code}:\n{result.output}")


def screenshots(made: dict[str, Path], folder: Path) -> list[Path]:
    """docs/viewer.md's pictures: the failing case's page with its model calls, a call opened, two calls compared."""
    from browser import chromium

    taken = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(made["html"].as_uri() + "#order-status")
        page.screenshot(path=str(folder / "viewer-calls.png"), full_page=True)
        taken.append(folder / "viewer-calls.png")
        page.locator(".turn[data-turn='2'] details.mcall[data-role=agent]").first.locator("summary").click()
        page.locator(".turn[data-turn='2'] details.mcall[data-role=agent] .minside").first.scroll_into_view_if_needed()
        page.locator(".turn[data-turn='2'] details.mcall[data-role=agent]").first.screenshot(path=str(folder / "viewer-call-open.png"))
        taken.append(folder / "viewer-call-open.png")
        page.locator("tr[data-assertion='assertion 1'] details.mcall summary").click()
        page.locator("tr[data-assertion='assertion 1'] details.mcall").screenshot(path=str(folder / "viewer-call-judge.png"))
        taken.append(folder / "viewer-call-judge.png")
        page.goto(made["matrix"].as_uri() + "#order-status")
        for side in ("shop", "mini"):
            card = page.locator(f".connector[data-connector={side}] .turn[data-turn='3'] details.mcall[data-role=agent]").first
            card.locator("summary").click()
            card.locator("[data-pick]").click()
        page.wait_for_selector("#call-diff pre.mdiff")
        page.locator("#call-diff").screenshot(path=str(folder / "viewer-call-diff.png"))
        taken.append(folder / "viewer-call-diff.png")
    return taken


if __name__ == "__main__":  # python tests/calls_demo.py DIR [--screenshots docs/]
    import sys

    with OpenAIServer() as srv:
        made = build(Path(sys.argv[1]).resolve(), srv)
    for name, path in made.items():
        print(f"{name}: {path}")
    if "--screenshots" in sys.argv:
        for path in screenshots(made, Path(sys.argv[sys.argv.index("--screenshots") + 1]).resolve()):
            print(f"screenshot: {path}")
