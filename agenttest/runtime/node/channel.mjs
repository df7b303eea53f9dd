// The wire to agent-test's Python side: one JSON object a line, requests in on fd 0, answers out on fd 1.
// Everything is synchronous on purpose: Yao's APIs (Process, http.Get, ctx.agent) return values, not
// promises, so a callback into Python blocks here until its reply arrives; a request that arrives
// meanwhile (an agent called from a script test runs its own TypeScript hooks) runs nested.
import fs from "node:fs";

const chunk = Buffer.alloc(1 << 16);
const early = new Map(); // callback replies that arrived while a nested request waited for its own
let pending = Buffer.alloc(0);
let callbacks = 0;
let nested = () => {};

/** The request whose JavaScript is running: its console output and callbacks belong to it. */
export const current = { id: null };

export function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Set how a request that arrives while JavaScript waits for Python is run. */
export function onNested(run) {
  nested = run;
}

/** JSON that survives what user code returns: undefined is null, cycles and BigInts are named. */
export function encode(value) {
  const seen = [];
  return JSON.stringify(value, function (key, v) {
    if (typeof v === "bigint") return v.toString();
    if (v instanceof Error) return { name: v.name, message: v.message };
    if (typeof v === "object" && v !== null) {
      while (seen.length && seen[seen.length - 1] !== this) seen.pop();
      if (seen.includes(v)) return "[Circular]";
      seen.push(v);
    }
    return v;
  }) ?? "null";
}

export function send(message) {
  const data = Buffer.from(encode(message) + "\n");
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(1, data, offset);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
      sleep(1);
    }
  }
}

/** The next message from Python, or null when Python has gone (its end of the pipe closed). */
export function receive() {
  for (;;) {
    const newline = pending.indexOf(10);
    if (newline >= 0) {
      const line = pending.subarray(0, newline).toString("utf8");
      pending = pending.subarray(newline + 1);
      if (line.trim()) return JSON.parse(line);
      continue;
    }
    let n;
    try {
      n = fs.readSync(0, chunk, 0, chunk.length, null);
    } catch (e) {
      if (e.code === "EAGAIN") { sleep(1); continue; }
      if (e.code === "EOF") return null;
      throw e;
    }
    if (n === 0) return null;
    pending = Buffer.concat([pending, chunk.subarray(0, n)]);
  }
}

/** Ask Python to do `api` (run a Python script, call an agent, judge with a validator) and wait. */
export function callback(api, args) {
  const cid = `c${++callbacks}`;
  send({ type: "callback", id: current.id, cid, api, args });
  for (;;) {
    const reply = early.get(cid) ?? receive();
    if (reply === null) process.exit(0);
    early.delete(cid);
    if (reply.type !== "reply") { nested(reply); continue; }
    if (reply.cid !== cid) { early.set(reply.cid, reply); continue; }
    if (reply.ok) return reply.value;
    throw new Error(reply.error);
  }
}
