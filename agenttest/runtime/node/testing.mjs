// What a Yao script test receives as `t`: every t.assert.* of Yao's agent test package, with Yao's
// rules (Contains on the text of a value, Equal on JSON, Match with a Go-style pattern), and
// t.log/error/fail/fatal/skip. Each check records a result; t.fatal and t.skip stop the test.
import { callback, encode } from "./channel.mjs";

export class Stop extends Error {}
export class Skip extends Error {}

/** JSON with sorted keys, as Go's json.Marshal compares two values. */
function canonical(value) {
  return encode(sortKeys(value));
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object" && !(value instanceof Error)) {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]));
  }
  return value === undefined ? null : value;
}

const equal = (a, b) => canonical(a) === canonical(b);
const isNil = (v) => v === null || v === undefined;
const show = (v) => (typeof v === "string" ? JSON.stringify(v) : canonical(v));

function typeName(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function length(v) {
  if (typeof v === "string" || Array.isArray(v)) return v.length;
  if (v && typeof v === "object") return Object.keys(v).length;
  return 0;
}

/** A RegExp from a Go pattern: a leading (?i), (?s) or (?m) becomes a flag. */
function regexp(pattern) {
  if (pattern instanceof RegExp) return pattern;
  const m = /^\(\?([imsU]+)\)/.exec(String(pattern));
  return m ? new RegExp(String(pattern).slice(m[0].length), m[1].replace("U", "")) : new RegExp(String(pattern));
}

function contains(container, item) {
  if (Array.isArray(container) && container.some((x) => equal(x, item))) return true;
  return String(container).includes(String(item));
}

function extract(data, path) {
  const steps = String(path).replace(/^\$\.?/, "").match(/[^.[\]]+/g) || [];
  let value = data;
  for (const step of steps) {
    if (value === null || value === undefined) return undefined;
    value = value[step];
  }
  return value;
}

/** `file:line` of the innermost frame in the test file (`flow_test.ts:3`): where a check failed. */
function lineIn(file) {
  const base = String(file).split("/").pop();
  for (const frame of String(new Error().stack || "").split("\n").slice(1)) {
    const m = /(?:file:\/\/)?(\/[^\s():]+):(\d+):\d+\)?$/.exec(frame);
    if (m && (m[1] === file || decodeURIComponent(m[1]) === file || m[1].endsWith(`/${base}`))) return `${base}:${m[2]}`;
  }
  return "";
}

export function makeT(name, file = "") {
  const results = [];
  const logs = [];
  const record = (kind, passed, message, msg, expected = null, actual = null) => {
    const said = passed ? "" : msg ? `${msg}: ${message}` : message;
    results.push({ kind, passed, message: said, expected, actual, where: passed || !file ? "" : lineIn(file) });
    return passed;
  };
  const failed = () => results.some((r) => !r.passed);
  const text = (args) => args.map((a) => (typeof a === "string" ? a : canonical(a))).join(" ");

  const calls = (fn) => {
    if (typeof fn !== "function") return "not a function";
    try { fn(); } catch (e) { return `${(e && e.name) || "Error"}: ${(e && e.message) || e}`; }
    return null;
  };

  const assert = {
    True: (v, msg) => record("True", Boolean(v), `expected true, got ${show(v)}`, msg, true, v),
    False: (v, msg) => record("False", !v, `expected false, got ${show(v)}`, msg, false, v),
    Equal: (a, e, msg) => record("Equal", equal(a, e), `expected ${show(e)}, got ${show(a)}`, msg, e, a),
    NotEqual: (a, e, msg) => record("NotEqual", !equal(a, e), `expected something other than ${show(e)}`, msg, e, a),
    Nil: (v, msg) => record("Nil", isNil(v), `expected nil, got ${show(v)}`, msg, null, v),
    NotNil: (v, msg) => record("NotNil", !isNil(v), "expected a value, got nil", msg, null, v),
    Contains: (c, item, msg) => record("Contains", contains(c, item), `${show(c)} does not contain ${show(item)}`, msg, item, c),
    NotContains: (c, item, msg) => record("NotContains", !contains(c, item), `${show(c)} contains ${show(item)}`, msg, item, c),
    Len: (v, n, msg) => record("Len", length(v) === Number(n), `expected length ${n}, got ${length(v)}`, msg, n, length(v)),
    Greater: (a, b, msg) => record("Greater", Number(a) > Number(b), `expected ${show(a)} > ${show(b)}`, msg, b, a),
    GreaterOrEqual: (a, b, msg) => record("GreaterOrEqual", Number(a) >= Number(b), `expected ${show(a)} >= ${show(b)}`, msg, b, a),
    Less: (a, b, msg) => record("Less", Number(a) < Number(b), `expected ${show(a)} < ${show(b)}`, msg, b, a),
    LessOrEqual: (a, b, msg) => record("LessOrEqual", Number(a) <= Number(b), `expected ${show(a)} <= ${show(b)}`, msg, b, a),
    Match: (v, p, msg) => record("Match", regexp(p).test(String(v)), `${show(v)} does not match /${p}/`, msg, String(p), v),
    NotMatch: (v, p, msg) => record("NotMatch", !regexp(p).test(String(v)), `${show(v)} matches /${p}/`, msg, String(p), v),
    Type: (v, type, msg) => record("Type", typeName(v) === type, `expected type ${type}, got ${typeName(v)}`, msg, type, typeName(v)),
    Error: (err, msg) => record("Error", !isNil(err), "expected an error, got nil", msg, null, err),
    NoError: (err, msg) => record("NoError", isNil(err), `expected no error, got ${show(err)}`, msg, null, err),
    Panic: (fn, msg) => {
      const outcome = calls(fn);
      return record("Panic", outcome !== null && outcome !== "not a function",
        outcome === "not a function" ? "Panic requires a function" : "expected the function to throw, but it returned", msg);
    },
    NoPanic: (fn, msg) => {
      const outcome = calls(fn);
      return record("NoPanic", outcome === null, `expected the function not to throw, but got ${outcome}`, msg, null, outcome);
    },
    JSONPath: (data, path, e, msg) => {
      const actual = extract(data, path);
      return record("JSONPath", equal(actual, e), `path '${path}': expected ${show(e)}, got ${show(actual)}`, msg, e, actual ?? null);
    },
    Agent: (response, agentId, options) => {
      const verdict = callback("assert.Agent", { response, agent: agentId, options: options ?? null });
      results.push({ ...verdict, where: verdict.passed || !file ? "" : lineIn(file) });
      return verdict.passed;
    },
  };

  const t = {
    name,
    assert,
    log: (...args) => { logs.push(text(args)); },
    error: (...args) => { record("error", false, text(args) || "error"); },
    fail: (reason = "test failed") => { record("fail", false, String(reason)); },
    fatal: (reason = "fatal error") => { record("fatal", false, String(reason)); throw new Stop(); },
    skip: (reason = "") => { throw new Skip(String(reason)); },
    get failed() { return failed(); },
  };
  Object.assign(t, { Log: t.log, Error: t.error, Fail: t.fail, Fatal: t.fatal, Skip: t.skip });
  return { t, results, logs, failed };
}
