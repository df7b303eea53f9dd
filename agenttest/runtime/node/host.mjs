// The Node side of agent-test's TypeScript runtime: one process per run. Python asks it to load a file
// ("load"), call a hook ("call") or run a script test ("test"); each answer is one "result" message.
// The JavaScript runs on this one thread, one request at a time; deadlines are Python's business (a
// call that runs past its deadline is ended by ending this process).
import module from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as hooks from "./loader.mjs";
import { current, onNested, receive, send } from "./channel.mjs";
import { install, makeContext } from "./yao.mjs";
import { makeT, Skip, Stop } from "./testing.mjs";

// With synchronous hooks a file loads synchronously (require of an ES module), so a request that arrives
// while JavaScript waits for Python (an agent whose hooks were never called before) can still load it.
const sync = typeof module.registerHooks === "function";
if (sync) module.registerHooks({ resolve: hooks.resolve, load: hooks.load });
else module.register("./loader.mjs", import.meta.url);
const requireFile = module.createRequire(import.meta.url);
install(globalThis);
for (const name of ["stdout", "stderr"]) {
  // user code writing to process.stdout would break the wire: its text goes to the case like console's
  const write = (text) => { send({ type: "console", id: current.id, stream: name, text: String(text) }); return true; };
  Object.defineProperty(process, name, { value: { write, isTTY: false, fd: -1, on() {}, once() {}, end() {} }, configurable: true });
}

const modules = new Map();
const CTX = "__agenttest_ctx__";
const OURS = fileURLToPath(new URL("./", import.meta.url));  // stacks are read with plain paths

function loadNow(file) {
  if (!modules.has(file)) {
    if (!sync) throw new Error(`${file} cannot be loaded while another call waits (Node ${process.versions.node}; 22.15 or later can)`);
    modules.set(file, requireFile(file));
  }
  return modules.get(file);
}

async function importFile(file) {
  if (sync || modules.has(file)) {
    try {
      return loadNow(file);
    } catch (error) {
      if (error.code !== "ERR_REQUIRE_ASYNC_MODULE") throw error; // top-level await: import() below
    }
  }
  modules.set(file, await import(pathToFileURL(file).href));
  return modules.get(file);
}

/** The module's functions: its exports, and what it declares for Yao's one global scope. */
function callable(mod) {
  const found = {};
  for (const source of [mod[hooks.GLOBALS] || {}, mod]) {
    for (const k of Object.keys(source)) if (typeof source[k] === "function") found[k] = source[k];
  }
  return found;
}

function functions(mod) {
  return Object.keys(callable(mod));
}

/** File URLs (an imported file's syntax error starts its stack with one) as the plain paths a user reads. */
function plainPaths(text) {
  return text.replace(/file:\/\/(\/[^\s():]*)/g, (_, path) => {
    try { return decodeURIComponent(path); } catch { return path; }
  });
}

/** The error as Python reports it: message, the innermost line of the user's own code, their stack. */
function describe(error) {
  const e = error instanceof Error ? error : new Error(String(error));
  const stack = plainPaths(String(e.stack || ""));
  const frames = stack.split("\n").filter((l) => /^\s+at /.test(l))
    .filter((l) => !l.includes(OURS) && !l.includes("node:"));
  // a syntax error has no frames: its stack starts with the file and line
  const site = frames[0] ?? (/^(?:file:\/\/)?\/\S+:\d+/.exec(stack) || [""])[0];
  const m = /((?:\/[^\s():]+)*\/([^/\s():]+\.(?:ts|js|mts|mjs))):(\d+)/.exec(site);
  return { name: e.name, message: e.message, where: m ? `${m[2]}:${m[3]}` : "", file: m ? m[1] : "", line: m ? Number(m[3]) : null,
    stack: [`${e.name}: ${e.message}`, ...frames].join("\n") };
}

function fn(mod, request) {
  const f = callable(mod)[request.fn];
  if (typeof f !== "function") throw new Error(`${request.file} has no function ${request.fn}`);
  return f;
}

function call(mod, request) {
  const contexts = [];
  const args = (request.args || []).map((a) => {
    if (a && typeof a === "object" && CTX in a) {
      const ctx = makeContext(a[CTX]);
      contexts.push(ctx);
      return ctx;
    }
    return a;
  });
  const settle = (value) => ({ value: value === undefined ? null : value, world: contexts.length ? contexts[0].world : null });
  const value = fn(mod, request)(...args);
  return value && typeof value.then === "function" ? value.then(settle) : settle(value);
}

function test(mod, request) {
  const { t, results, logs, failed } = makeT(request.fn, request.file);
  const ctx = makeContext(request.ctx);
  const finish = (error) => {
    const status = error instanceof Skip ? "skipped" : failed() ? "failed" : "passed";
    return { status, results, logs, skip_reason: error instanceof Skip ? error.message : "", world: ctx.world };
  };
  const caught = (error) => {
    if (error instanceof Stop || error instanceof Skip) return finish(error);
    throw error;
  };
  try {
    const value = fn(mod, request)(t, ctx);
    return value && typeof value.then === "function" ? value.then(() => finish(null), caught) : finish(null);
  } catch (error) {
    return caught(error);
  }
}

const OPS = {
  load: async (request) => ({ functions: functions(await importFile(request.file)) }),
  call: async (request) => call(await importFile(request.file), request),
  test: async (request) => test(await importFile(request.file), request),
};

async function handle(request) {
  const outer = current.id;
  current.id = request.id;
  try {
    send({ type: "result", id: request.id, ok: true, value: await OPS[request.op](request) });
  } catch (error) {
    send({ type: "result", id: request.id, ok: false, error: describe(error) });
  } finally {
    current.id = outer;
  }
}

// A request that arrives while JavaScript waits for Python runs now, synchronously (its function must
// not be async).
onNested((request) => {
  const outer = current.id;
  current.id = request.id;
  try {
    const mod = loadNow(request.file);
    const value = request.op === "test" ? test(mod, request) : request.op === "call" ? call(mod, request) : { functions: functions(mod) };
    if (value && typeof value.then === "function") throw new Error(`${request.fn} is async and was called while another call waits`);
    send({ type: "result", id: request.id, ok: true, value });
  } catch (error) {
    send({ type: "result", id: request.id, ok: false, error: describe(error) });
  } finally {
    current.id = outer;
  }
});

send({ type: "ready", version: process.versions.node });
for (let request = receive(); request !== null; request = receive()) {
  if (request.type === "reply") continue; // a reply to a callback that was abandoned
  await handle(request);
}
process.exit(0);
