// How agent-test loads a Yao agent's TypeScript, as Yao resolves it: `import … from "./fetch"` finds
// fetch.ts, `@yao/runtime` is agent-test's stand-in for Yao's, every file under the app is an ES module,
// and a function (or const) declared at the top level without `export` (Yao's scripts share one global
// scope) is exported so that agent-test can call it. Lines are kept: what is added goes after the last line.
// The hooks are synchronous (module.registerHooks, Node >= 22.15); `next` answers a promise when they
// run as module.register's off-thread hooks instead (older Node), which they pass on unchanged.
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const OURS = new URL("./", import.meta.url).href;
const RUNTIME = new URL("./yao.mjs", import.meta.url).href;
const SUFFIXES = [".ts", ".js", ".mjs", "/index.ts", "/index.js"];
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

/** `export { … }` for the top-level functions a file declares without exporting them. */
export function exportsToAdd(source) {
  const names = [];
  for (const m of source.matchAll(DECLARED)) {
    const name = m[2];
    const listed = new RegExp(`export\\s*\\{[^}]*\\b${name.replace(/\$/g, "\\$")}\\b`).test(source);
    if (!m[1] && !listed && !names.includes(name)) names.push(name);
  }
  return names.length ? `\n;export { ${names.join(", ")} };\n` : "";
}

export function load(url, context, next) {
  if (!userFile(url)) return next(url, context);
  const source = readFileSync(fileURLToPath(url), "utf8");
  const typescript = /\.m?ts$/.test(url);
  return { format: typescript ? "module-typescript" : "module", source: source + exportsToAdd(source), shortCircuit: true };
}
