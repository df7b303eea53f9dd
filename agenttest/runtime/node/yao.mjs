// The Yao globals that have a counterpart in agent-test (console, ctx, http, Process("scripts.…"), log)
// and, for the ones that do not (ctx.memory, ctx.sandbox, ctx.Send, FS, Store, Query, …), a stand-in
// whose every use throws an error naming the API. Also what `@yao/runtime` exports.
import { format } from "node:util";
import { Worker, MessageChannel, receiveMessageOnPort } from "node:worker_threads";
import { callback, current, send, sleep } from "./channel.mjs";

export class Unsupported extends Error {
  constructor(api, why = "") {
    super(`${api} is a Yao API with no counterpart in agent-test${why ? `: ${why}` : ""} (see docs/migrating-from-yao.md)`);
    this.name = "UnsupportedYaoAPI";
  }
}

/** A value whose every use — property, call, `new` — throws Unsupported naming `api`. */
export function unsupported(api, why) {
  const fail = () => { throw new Unsupported(api, why); };
  return new Proxy(function () {}, {
    get(_, key) {
      if (key === Symbol.toPrimitive || key === "then" || key === Symbol.toStringTag) return undefined;
      throw new Unsupported(typeof key === "string" ? `${api}.${key}` : api, why);
    },
    apply: fail,
    construct: fail,
  });
}

// console.* and log.* output goes to the case that runs, as Python's print does.
function emit(stream, args) {
  send({ type: "console", id: current.id, stream, text: format(...args) + "\n" });
}

export const console = {
  log: (...a) => emit("stdout", a), info: (...a) => emit("stdout", a), debug: (...a) => emit("stdout", a),
  trace: (...a) => emit("stdout", a), dir: (v) => emit("stdout", [v]), table: (v) => emit("stdout", [v]),
  warn: (...a) => emit("stderr", a), error: (...a) => emit("stderr", a),
  assert: (ok, ...a) => { if (!ok) emit("stderr", ["Assertion failed", ...a]); },
  time() {}, timeEnd() {}, timeLog() {}, group() {}, groupEnd() {}, count() {},
};

function logger(level) {
  return (message, ...args) => emit("stderr", [`[${level}] ${String(message).replaceAll("%v", "%s")}`, ...args]);
}

export const log = {
  Trace: logger("trace"), Debug: logger("debug"), Info: logger("info"), Warn: logger("warn"), Error: logger("error"),
  Fatal: logger("fatal"), Panic: logger("panic"),
};

// http.Get/Post/…: Yao's are synchronous, so a worker thread runs fetch while this thread waits.
let fetcher = null;
const FETCH = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", async ({ request, port, flag }) => {
  let answer;
  try {
    const response = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body });
    answer = { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
  } catch (e) {
    answer = { error: String((e && e.cause && e.cause.message) || (e && e.message) || e) };
  }
  port.postMessage(answer);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});`;

function fetchSync(request) {
  if (fetcher === null) {
    fetcher = new Worker(FETCH, { eval: true, stdout: true, stderr: true }); // not piped to our process.stdout
    fetcher.unref();
  }
  const { port1, port2 } = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(4));
  fetcher.postMessage({ request, port: port2, flag }, [port2]);
  Atomics.wait(flag, 0, 0);
  return receiveMessageOnPort(port1).message;
}

function withQuery(url, query) {
  if (!query || typeof query !== "object") return url;
  const u = new URL(url);
  for (const [k, v] of Object.entries(query)) for (const one of [].concat(v)) u.searchParams.append(k, String(one));
  return u.toString();
}

function send_(method, url, payload, query, headers) {
  headers = { ...(headers || {}) };
  let body;
  if (payload !== undefined && payload !== null && method !== "GET" && method !== "HEAD") {
    body = typeof payload === "string" ? payload : JSON.stringify(payload);
    if (typeof payload !== "string" && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
      headers["Content-Type"] = "application/json";
    }
  }
  const answer = fetchSync({ method, url: withQuery(url, query), headers, body });
  if (answer.error) return { status: 0, code: 0, data: null, headers: {}, message: answer.error };
  let data = answer.text;
  if ((answer.headers["content-type"] || "").includes("json")) {
    try { data = JSON.parse(answer.text); } catch { /* keep the text */ }
  }
  return { status: answer.status, code: answer.status, data, headers: answer.headers };
}

export const http = {
  Get: (url, query, headers) => send_("GET", url, null, query, headers),
  Head: (url, payload, query, headers) => send_("HEAD", url, payload, query, headers),
  Post: (url, payload, files, query, headers) => {
    if (files) throw new Unsupported("http.Post with files");
    return send_("POST", url, payload, query, headers);
  },
  Put: (url, payload, query, headers) => send_("PUT", url, payload, query, headers),
  Patch: (url, payload, query, headers) => send_("PATCH", url, payload, query, headers),
  Delete: (url, payload, query, headers) => send_("DELETE", url, payload, query, headers),
  Send: (method, url, payload, query, headers) => send_(String(method).toUpperCase(), url, payload, query, headers),
  Stream: unsupported("http.Stream"),
};

const AGENT_PROCESS = /^agents\.(.+)\.(Stream|Call)$/;

/** Yao's Process: `agents.<id>.Stream` (or `.Call`) calls an agent — `Process("agents.expense.Stream", ctx,
 * messages, options?)`, the design's script-test example — and `scripts.<module>.<Fn>` the app's Python function. */
export function Process(name, ...args) {
  const agent = AGENT_PROCESS.exec(String(name));
  if (agent) {
    const first = args[0];  // Yao passes ctx first; a plain object that is not a message counts as one too
    const ctxFirst = isContext(first) || (args.length >= 2 && first && typeof first === "object" && !Array.isArray(first) && !("role" in first));
    const [messages, options] = ctxFirst ? args.slice(1) : args;
    return agentCall(agent[1], messages, options);
  }
  if (typeof name !== "string" || !name.startsWith("scripts.")) {
    const kind = String(name).split(".")[0];
    throw new Unsupported(`Process("${name}")`,
      `Yao's ${kind} processes do not run here; only Process("agents.<id>.Stream", ctx, messages) and Process("scripts.<module>.<Fn>") do`);
  }
  return callback("process", { name: name.slice("scripts.".length), args });
}

export class Exception extends Error {
  constructor(message, code = 500) {
    super(message);
    this.name = "Exception";
    this.code = code;
  }
}

const MISSING = {
  FS: "files live in Yao's data folders", Store: "Yao's key-value stores", Query: "Yao's query DSL and databases",
  Eval: "", neo: "", io: "", i18n: "", Studio: "", WebSocket: "", Job: "", Plan: "",
};
const missing = Object.fromEntries(Object.entries(MISSING).map(([k, why]) => [k, unsupported(k, why)]));
export const { FS, Store, Query, Eval, neo, io, i18n } = missing;
export const time = { Sleep: (ms) => sleep(Number(ms) || 0) };

/** The globals Yao gives every script. */
export function install(target) {
  Object.assign(target, { http, log, Process, Exception, time, ...missing });
  Object.defineProperty(target, "console", { value: console, writable: true, configurable: true });
}

// ctx: the case's fields as data (what JSON.stringify(ctx) gives, so a Create returning ctx works as in
// Yao); Yao's objects as non-enumerable properties.
const CONTEXT_OBJECTS = ["memory", "trace", "mcp", "llm", "sandbox", "space", "kb", "search", "computer"];
const CONTEXT_METHODS = ["Send", "SendStream", "Append", "Replace", "End", "BlockID", "Merge", "Set", "Release"];

function agentCall(id, messages, options) {
  return callback("agent", { id, messages, options: options ?? null });
}

const IS_CONTEXT = Symbol("agenttest.ctx");
const isContext = (value) => Boolean(value && typeof value === "object" && value[IS_CONTEXT]);

export function makeContext(data) {
  const ctx = { theme: "", accept: "standard", route: "", referer: "", ...data };
  Object.defineProperty(ctx, IS_CONTEXT, { value: true, enumerable: false });
  const agent = (id) => ({ Stream: (m, o) => agentCall(id, m, o), Call: (m, o) => agentCall(id, m, o) });
  agent.Call = agentCall;
  agent.Stream = agentCall;
  Object.defineProperty(ctx, "agent", { value: agent, enumerable: false });
  for (const name of CONTEXT_OBJECTS) {
    Object.defineProperty(ctx, name, { get() { throw new Unsupported(`ctx.${name}`); }, enumerable: false });
  }
  for (const name of CONTEXT_METHODS) {
    Object.defineProperty(ctx, name, { get() { throw new Unsupported(`ctx.${name}`, "there is no chat to send to"); }, enumerable: false });
  }
  return ctx;
}

export const agent = { Context: Object, Message: Object };
export const testing = { T: Object };
