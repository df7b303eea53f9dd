// How agent-test loads a Yao agent's TypeScript, as Yao resolves it: `import … from "./fetch"` finds
// fetch.ts, `@yao/runtime` is agent-test's stand-in for Yao's, every file under the app is an ES module,
// and a function (or const) declared at the top level without `export` (Yao's scripts share one global
// scope) is made reachable so that agent-test can call it. Lines are kept: what is added goes after the last line.
// The hooks are synchronous (module.registerHooks, Node >= 22.15); `next` answers a promise when they
// run as module.register's off-thread hooks instead (older Node), which they pass on unchanged.
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const OURS = new URL("./", import.meta.url).href;
const RUNTIME = new URL("./yao.mjs", import.meta.url).href;
const SUFFIXES = [".ts", ".js", ".mjs", "/index.ts", "/index.js"];
export const GLOBALS = "__agenttest_globals__";
const DECLARED = /^(export\s+)?(?:(?:async\s+)?function\s*\*?\s*|(?:const|let|var)\s+)([A-Za-z_$][\w$]*)/gm;

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function userFile(url) {
  return url.startsWith("file:") && !url.startsWith(OURS) && !url.includes("/node_modules/") && /\.(ts|mts|js|mjs)$/.test(url);
}

export function resolve(specifier, context, next) {
  if (specifier === "@yao/runtime") return { url: RUNTIME, shortCircuit: true };
  const relative = specifier.startsWith("./") || specifier.startsWith("../");
  if (relative && context.parentURL && userFile(context.parentURL)) {
    const path = fileURLToPath(new URL(specifier, context.parentURL));
    if (!isFile(path)) {
      const found = SUFFIXES.map((s) => path + s).find(isFile);
      if (found) return { url: pathToFileURL(found).href, shortCircuit: true };
    }
  }
  return next(specifier, context);
}

/** What a file declares at the top level without exporting it, exported as getters of one object: a
 * name that only looks declared (a line of a template string) reads `undefined` instead of breaking. */
export function exportsToAdd(source) {
  const names = [];
  for (const m of source.matchAll(DECLARED)) {
    if (!m[1] && !names.includes(m[2])) names.push(m[2]);
  }
  const getters = names.map((n) => `get ${n}() { return typeof ${n} === "undefined" ? undefined : ${n}; }`);
  return names.length ? `\n;export const ${GLOBALS} = { ${getters.join(", ")} };\n` : "";
}

export function load(url, context, next) {
  if (!userFile(url)) return next(url, context);
  const source = readFileSync(fileURLToPath(url), "utf8");
  const typescript = /\.m?ts$/.test(url);
  return { format: typescript ? "module-typescript" : "module", source: source + exportsToAdd(source), shortCircuit: true };
}
