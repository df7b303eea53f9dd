/* agent-test viewer: draws the JSON in #agent-test-data (a run report, a comparison of two runs, the run
   history or one case's history). Every value is put in the page as text (textContent, setAttribute),
   never parsed as markup: outputs come from models and tools. No network, no libraries. */
(function () {
  "use strict";
  const node = document.getElementById("agent-test-data");
  if (!node) return;
  performance.mark("viewer:start");
  const DATA = JSON.parse(node.textContent);
  performance.mark("viewer:parsed");
  document.documentElement.classList.add("js");
  const app = document.getElementById("app");
  const PAGE = 200; // rows drawn at a time: a 10,000-case report opens as fast as a small one
  const RANK = { failed: 0, error: 0, timeout: 0, incomplete: 1, flaky: 1, passed: 2, skipped: 3 };
  const CHIPS = [["failed", "Failed"], ["error", "Errored"], ["timeout", "Timed out"], ["flaky", "Flaky"], ["incomplete", "Incomplete"], ["passed", "Passed"], ["skipped", "Skipped"]];
  const MARK = { passed: "✓", failed: "✗", error: "!", timeout: "⏱", skipped: "–" };

  // ---- building blocks ------------------------------------------------------------------------------
  // control characters and bidirectional overrides in a model's text are shown as their code, never obeyed:
  // U+202E would show "deliaf" reversed over "failed", ESC and NUL as boxes (the console and Markdown do the same)
  const UNSEEN = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function shown(v) {
    return String(v).replace(UNSEEN, c => { const n = c.charCodeAt(0); return n < 0x100 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0"); });
  }
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    for (const k in props || {}) {
      const v = props[k];
      if (v == null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = shown(v);
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : k === "title" ? shown(v) : String(v));
    }
    for (const c of kids.flat(Infinity)) if (c != null && c !== false && c !== "") el.append(c instanceof Node ? c : shown(c));
    return el;
  }
  function put(parent, ...kids) { // append, leaving out the parts that are not there (null, false, "")
    parent.append(...kids.flat(Infinity).filter(c => c != null && c !== false && c !== ""));
  }
  function s(tag, attrs, ...kids) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const k in attrs || {}) if (k === "text") el.textContent = shown(attrs[k]); else el.setAttribute(k, String(attrs[k]));
    for (const c of kids.flat(Infinity)) if (c) el.append(c);
    return el;
  }
  function text(v) {
    if (v == null) return "";
    return typeof v === "string" ? v : JSON.stringify(v, null, 2);
  }
  function contentText(c) {
    if (c == null) return "";
    if (typeof c === "string") return c;
    if (Array.isArray(c)) return c.map(p => (p && typeof p === "object") ? (p.text != null ? String(p.text) : "[" + (p.name || p.type || "part") + "]") : String(p)).join(" ");
    return text(c);
  }
  function shorten(t, n) { t = String(t).replace(/\s+/g, " ").trim(); return t.length > n ? t.slice(0, n - 1) + "…" : t; }
  function ms(v) {  // below 10 ms to the 0.1 ms a report keeps (a fast case is not "0ms")
    v = +v || 0;
    if (v <= 0) return "0ms";
    if (v < 10) return v.toFixed(1) + "ms";
    return v < 1000 ? Math.round(v) + "ms" : v < 60000 ? (v / 1000).toFixed(1) + "s" : (v / 60000).toFixed(1) + "m";
  }
  function pct(x) { return percent(x, 1); }
  function wholeRate(sum) { // the whole run's pass rate on a page that holds part of it: from its counts (a rate short of all never reads 100%)
    const ran = (sum.total || 0) - (sum.skipped || 0) - (sum.not_run || 0);
    if (typeof sum.passed === "number" && ran > 0) return pct(sum.passed / ran);
    return typeof sum.pass_rate === "number" ? pct(sum.pass_rate / 100) : "—";
  }
  function percent(x, d) { // a share in percent, with the digits it takes for a share short of all (or above none) not to read 100% (or 0%): as the console
    const at = () => Math.round(x * 100 * 10 ** d) / 10 ** d;
    let v = at();
    while (d < 4 && ((v === 100 && x < 1 - 1e-9) || (v === 0 && x > 1e-9))) { d++; v = at(); }
    return v + "%";
  }
  function money(v) { return v == null ? "—" : "$" + (v < 0.01 ? v.toFixed(5) : v.toFixed(4)); }
  function badge(kind, label) { return h("span", { class: "badge " + kind.replace(/ /g, "-"), text: (label || kind).toUpperCase() }); }
  function usageMark(u) { return !u || !u.source ? "" : u.source === "estimated" ? " (estimated)" : " (usage unknown)"; }
  function pre(v, cls) { return h("pre", { class: cls }, text(v)); }
  function section(title, ...kids) { return h("section", null, h("h3", { text: title }), kids); }
  function card(label, value, cls, note) { return h("div", { class: "card" }, h("span", { class: "meta", text: label }), h("b", { class: value ? cls : "", text: value }), note ? h("span", { class: "interval", text: note }) : null); }
  function span(iv) { return iv ? percent(iv[0], 0) + "–" + percent(iv[1], 0) : ""; }
  function plural(n, word) { return (+n).toLocaleString("en") + " " + word + (n === 1 ? "" : "s"); }
  function tally(label, n, cls) { return card(label, (+n || 0).toLocaleString("en"), +n ? cls : ""); } // a count on a card: 6,000, not 6000
  function estimateNote(e, level) { // "95% CI 71%–93% · 40 cases, 120 runs": a rate is never shown without what it stands on
    return e ? (Math.round(level * 1000) / 10) + "% CI " + span(e.interval) + " · " + plural(e.cases, "case") + (e.runs !== e.cases ? ", " + plural(e.runs, "run") : "") : "";
  }
  function messages(input) {
    if (Array.isArray(input) && input.every(m => m && typeof m === "object" && "content" in m)) return input;
    if (input == null || input === "") return [];
    return [{ role: "user", content: typeof input === "string" ? input : text(input) }];
  }
  function inputText(input) { return messages(input).map(m => contentText(m.content)).join("\n"); }
  // what each model was sent and answered (calls.js, loaded before this file): cards under the turn or check they served
  const CALLS = agentTestCalls({ h, text, ms, shorten, contentText });

  // ---- a run report as cases ---------------------------------------------------------------------------
  function verdictOf(runs, gate) {
    const ran = runs.filter(r => r.status !== "skipped");
    const bad = ran.filter(r => r.status !== "passed");
    const worst = () => { const kinds = new Set(bad.map(r => r.status)); return kinds.size === 1 ? [...kinds][0] : "failed"; };
    if (gate) {
      if (gate.verdict === "incomplete") return "incomplete"; // cut short before its runs could decide it
      if (gate.verdict !== "passed" && gate.verdict !== "failed") return "skipped";
      if (gate.verdict === "passed") return gate.flaky ? "flaky" : "passed";
      return bad.length ? worst() : "failed";
    }
    if (!ran.length) return "skipped";
    return bad.length ? worst() : "passed";
  }
  // the run a verdict is shown with: the first that did not pass when the verdict is not a pass, else the first
  function shownRun(runs, verdict) {
    const bad = verdict !== "passed" && verdict !== "flaky" && runs.find(r => r.status !== "passed" && r.status !== "skipped");
    return bad || runs[0];
  }
  function worstOf(verdicts) { return verdicts.reduce((a, b) => (RANK[b] < RANK[a] ? b : a), verdicts[0] || "skipped"); }

  function buildCases(report) {
    const sum = report.summary || {};
    const matrix = sum.matrix || [];
    const gates = new Map((sum.gates || []).map(g => [(g.file || "") + "\0" + g.id + "\0" + (g.connector || ""), g]));
    const byKey = new Map();
    (report.results || []).forEach(r => {
      const key = (r.file || "") + "\0" + r.id;
      let c = byKey.get(key);
      if (!c) { c = { key, id: r.id, file: r.file || "", line: r.line, name: r.name || "", tags: r.tags || [], description: r.description || "", order: byKey.size, sides: new Map() }; byKey.set(key, c); }
      const conn = matrix.length ? (r.connector || "") : "";
      if (!c.sides.has(conn)) c.sides.set(conn, { connector: conn, runs: [] });
      c.sides.get(conn).runs.push(r);
    });
    const cases = [...byKey.values()];
    const ids = new Map();
    cases.forEach(c => ids.set(c.id, (ids.get(c.id) || 0) + 1));
    for (const c of cases) {
      c.anchor = ids.get(c.id) > 1 ? c.id + "@" + c.file : c.id;
      c.sides = matrix.length ? matrix.filter(m => c.sides.has(m)).map(m => c.sides.get(m)) : [...c.sides.values()];
      let passed = 0, ran = 0, duration = 0, n = 0;
      for (const side of c.sides) {
        side.gate = gates.get(c.file + "\0" + c.id + "\0" + (side.runs[0].connector || "")) || null;
        side.verdict = verdictOf(side.runs, side.gate);
        for (const r of side.runs) { if (r.status !== "skipped") { ran++; if (r.status === "passed") passed++; } duration += r.duration_ms || 0; n++; }
      }
      c.verdict = worstOf(c.sides.map(x => x.verdict));
      c.flaky = c.verdict === "flaky"; // one meaning everywhere: passed its gate, not every run (a failed gate is failed)
      c.passed = passed; c.ran = ran; c.rate = ran ? passed / ran : null; c.duration = n ? duration / n : 0;
      const g = c.sides.length === 1 ? c.sides[0].gate : null;
      c.gate = g; c.cls = g ? g.classification : null;
      const all = c.sides.flatMap(x => x.runs);
      const first = all.find(r => r.status !== "passed" && r.status !== "skipped") || all[0];
      c.reason = first && first.status !== "passed" ? (first.error || first.skip_reason || "") : "";
      const said = first && first.status !== "passed" ? first : all[0]; // the output beside the reason is that run's
      c.output = said ? shorten(text(said.output), 200) : "";
      c.search = null; // made on the first search (searchOf): opening a large report does not wait for it
    }
    cases.sort((a, b) => RANK[a.verdict] - RANK[b.verdict] || a.order - b.order); // failures first, then input order
    return cases;
  }

  function searchOf(c) {
    if (c.search === null) {
      const all = c.sides.flatMap(x => x.runs).slice(0, 3);
      c.search = [c.id, c.name, c.tags.join(" "), c.file, c.description, c.reason,
        all.map(r => shorten(inputText(r.input) + " " + (r.turns || []).map(t => text(t.input) + " " + text(t.output)).join(" ") + " " + text(r.output), 4000))].join(" ").toLowerCase();
    }
    return c.search;
  }

  function strip(runs, chosen, choose) {
    return h("span", { class: "strip", title: runs.map(r => "run " + r.run + ": " + r.status).join(", ") },
      runs.map((r, i) => {
        const cls = r.status === "passed" ? "p" : r.status === "skipped" ? "s" : "f";
        return choose ? h("button", { class: cls + (i === chosen ? " on" : ""), title: "run " + r.run + ": " + r.status, onclick: () => choose(i), text: MARK[r.status] || "?" })
          : h("span", { class: cls, text: MARK[r.status] || "?" });
      }));
  }

  // ---- the report: overview -----------------------------------------------------------------------------
  function reportView(report, links) {
    const sum = report.summary || {};
    const cases = buildCases(report);
    performance.mark("viewer:cases");
    const matrix = sum.matrix || [];
    const state = { on: new Set(), query: "", different: false, shown: PAGE }; // no chip pressed: every verdict shown
    const count = v => cases.filter(c => c.verdict === v).length;
    const overview = h("div", { id: "overview" });
    const detail = h("div", { id: "case" });
    app.append(overview, detail);

    const tbody = h("tbody");
    const more = h("div", { class: "more" });
    const search = h("input", { type: "search", id: "search", placeholder: "Search id, name, tags, input, output…", "aria-label": "search" });
    const chipButtons = CHIPS.filter(([key]) => key !== "incomplete" || count(key)).map(([key, label]) => h("button", { // incomplete: a run cut short
      class: "chip", "data-chip": key, "aria-pressed": "false", title: "show only these (press several to combine)",
      onclick: e => { state.on.has(key) ? state.on.delete(key) : state.on.add(key); e.currentTarget.setAttribute("aria-pressed", state.on.has(key)); refresh(); }
    }, label, h("span", { class: "n", text: count(key) })));
    let timer = 0;
    search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { state.query = search.value.trim().toLowerCase(); refresh(); }, 60); });
    const toolbar = h("div", { class: "toolbar" }, chipButtons, search,
      matrix.length ? h("label", { class: "toggle" }, h("input", { type: "checkbox", id: "different", onchange: e => { state.different = e.target.checked; refresh(); } }), "different only") : null,
      h("span", { class: "meta small", id: "shown" }));

    const head = matrix.length ? ["", "Case", ...matrix] : ["", "Case", "Runs", "Pass rate", "Gate", "Class", "Time", "Output"];
    const table = h("table", { class: "cases", id: "cases" }, h("thead", null, h("tr", null, head.map(x => h("th", { text: x })))), tbody);

    function differs(c) {
      if (c.sides.length < 2) return false;
      const outs = c.sides.map(x => x.verdict + "\0" + text(shownRun(x.runs, x.verdict).output));
      return outs.some(o => o !== outs[0]);
    }
    function visible() {
      const words = state.query ? state.query.split(/\s+/) : [];
      return cases.filter(c => (!state.on.size || state.on.has(c.verdict)) && words.every(w => searchOf(c).includes(w)) && (!state.different || differs(c)));
    }
    function row(c) {
      const title = h("td", null, h("a", { href: "#" + encodeURIComponent(c.anchor), text: c.id }),
        c.name ? h("div", { class: "meta small", text: c.name }) : null,
        c.tags.length ? h("div", null, c.tags.map(t => h("span", { class: "tag", text: t }))) : null,
        c.reason ? h("div", { class: "reason small", text: shorten(c.reason, 160) }) : null);
      const cells = matrix.length
        ? c.sides.map(x => h("td", null, badge(x.verdict), " ", strip(x.runs), h("div", { class: "small", text: shorten(text(shownRun(x.runs, x.verdict).output), 160) })))
        : [h("td", null, strip(c.sides[0].runs)), h("td", null, c.rate == null ? "—" : pct(c.rate), c.gate && c.gate.interval && c.ran > 1 ? h("div", { class: "interval", text: span(c.gate.interval) }) : null),
          h("td", { text: c.gate ? "≥ " + pct(c.gate.min_pass_rate) : "—" }), h("td", { text: c.cls || "—" }),
          h("td", { text: ms(c.duration) }), h("td", { class: "out", text: c.output })];
      return h("tr", { class: "case", "data-id": c.id, "data-verdict": c.verdict, onclick: e => { if (e.target.tagName !== "A") location.hash = "#" + encodeURIComponent(c.anchor); } },
        h("td", null, badge(c.verdict)), title, cells);
    }
    function refresh(keep) {
      const list = visible();
      if (!keep) state.shown = PAGE;
      tbody.replaceChildren(...list.slice(0, state.shown).map(row));
      document.getElementById("shown").textContent = list.length + " of " + cases.length + " cases";
      more.replaceChildren(list.length > state.shown ? h("button", { class: "chip", id: "show-more", onclick: () => { state.shown += PAGE * 5; refresh(true); }, text: "Show " + Math.min(PAGE * 5, list.length - state.shown) + " more" }) : "");
    }
    put(overview, links && links.home ? h("div", { class: "nav" }, h("a", { href: links.home, id: "home", text: "← Run history" })) : null,
      headerOf(report, cases, count), toolbar, table, more);
    refresh();
    performance.mark("viewer:rows");
    put(overview, passKOf(report), generationOf(report), chartsOf(report, cases), warningsOf(report));

    const failing = cases.filter(c => RANK[c.verdict] === 0);
    const byAnchor = new Map(cases.map(c => [c.anchor, c]));
    function route() {
      const key = decodeURIComponent(location.hash.slice(1));
      const c = byAnchor.get(key);
      if (!c) { detail.replaceChildren(); overview.hidden = false; return; }
      overview.hidden = true;
      detail.replaceChildren(casePage(c, failing, links));
      window.scrollTo(0, 0);
    }
    window.addEventListener("hashchange", route);
    route();
  }

  // the run in a few lines: who ran what, a banner when it was cut short, cards counting cases and gates (not runs)
  function headerOf(report, cases, count) {
    const sum = report.summary || {}, meta = report.metadata || {};
    const metaLine = h("p", { class: "meta" }, "Agent ", h("b", { text: sum.agent_id || "—" }), " · connector ", h("b", { text: sum.connector || "—" }),
      " · input ", meta.input_file || "—", " · started ", meta.started_at || "—", meta.version ? " · agent-test " + meta.version : "",
      (meta.options || {}).merged ? " · merged from " + meta.options.merged.join(", ") : "",
      (sum.roles || []).length ? " · roles: " + sum.roles.map(p => p.role + " " + p.agent + " on " + p.connector + (p.mock ? " (a mock)" : "")).join("; ") : "");
    const banners = [];
    const cut = DATA.cut; // a page of more results than it carries (reporting/html.py): what it holds, where the rest are
    if (cut) banners.push(cut.said);
    if (sum.interrupted) banners.push("Interrupted (" + (sum.terminated ? "SIGTERM" : "Ctrl-C") + "): the report holds the results that finished.");
    else if (sum.stopped_early) banners.push((meta.options || {}).fail_fast ? "Stopped early (--fail-fast): no case was started after the first failure."
      : "Stopped early: a case file changed while the run read it (the warnings say where and what it cost).");
    const lacking = (meta.options || {}).missing_shards;
    if (lacking && lacking.length) banners.push("Partial merge: shard" + (lacking.length > 1 ? "s " : " ") + lacking.join(", ") + " missing — their cases are in no figure here.");
    const vacuous = (sum.gates || []).filter(g => g.verdict === "passed" && g.runs > 0 && g.passed === 0).length;
    if (vacuous) banners.push(vacuous + (vacuous === 1 ? " case passed its gate" : " cases passed their gates") + " with no passing run (min_pass_rate 0).");
    if (sum.checked_nothing) {
      const ids = [...new Set((report.results || []).filter(r => r.checked_nothing && r.status !== "skipped").map(r => r.id))];
      banners.push("Checked nothing: " + sum.checked_nothing + (sum.checked_nothing === 1 ? " case (" : " cases (") + ids.slice(0, 10).join(", ")
        + (ids.length > 10 ? " and " + (ids.length - 10) + " more" : "") + ") checked nothing but that the agent answered (no assertion, expected, required checkpoint or budget).");
    }
    if (sum.not_run) banners.push("Not run: " + sum.not_run + ((sum.gates || []).some(g => g.planned > 1) || sum.matrix ? " runs" : ""));  // --runs, a matrix: runs, not cases
    const tokens = (sum.usage || {}).total_tokens || 0;
    const counted = usageMark(sum.usage);
    const ran = cases.filter(c => c.verdict !== "skipped").length;
    const good = cases.filter(c => c.verdict === "passed" || c.verdict === "flaky").length;
    return [h("h1", { text: "Agent Test Report" }), metaLine, banners.map(b => h("div", { class: "banner", text: b })), h("div", { class: "cards", id: "cards" },
      cut ? [["Results", sum.total, ""], ["Passed", sum.passed, "passed"], ["Failed", sum.failed, "failed"], ["Errors", sum.errors, "error"],
        ["Timeouts", sum.timeouts, "timeout"], ["Skipped", sum.skipped, "skipped"], ["Shown here", cut.kept, ""]].map(([l, v, c]) => card(l, (+v || 0).toLocaleString("en"), +v ? c : "")) :
      [tally("Cases", cases.length, ""), tally("Passed", count("passed"), "passed"), tally("Failed", count("failed"), "failed"),
      tally("Errors", count("error"), "error"), tally("Timeouts", count("timeout"), "timeout"), tally("Flaky", count("flaky"), "flaky"),
      tally("Skipped", count("skipped"), "skipped"), count("incomplete") ? tally("Incomplete", count("incomplete"), "incomplete") : null],
      sum.gates ? card("Gates passed", sum.gates_passed + "/" + sum.cases, sum.gates_failed ? "failed" : sum.gates_passed < sum.cases ? "" : "passed") : null,
      cut ? card("Pass rate", wholeRate(sum), "", "of every result")
        : card("Pass rate", ran ? pct(good / ran) : "—", "", ran ? plural(good, "case") + " of " + ran.toLocaleString("en") : ""),
      sum.pass_rate_interval ? card("Runs passed", pct(sum.pass_rate_interval.rate), "", estimateNote(sum.pass_rate_interval, sum.confidence)) : null,
      !cut && (report.results || []).length !== cases.length ? tally("Runs", (report.results || []).length, "") : null,
      card("Duration", ms(sum.duration_ms), ""), tokens || counted ? card("Tokens", (tokens ? tokens.toLocaleString("en") : "unknown") + counted, "") : null,
      sum.costs && sum.costs.total != null ? card("Cost", money(sum.costs.total) + counted, "") : null,
      (sum.suites || []).length ? card("Suite checks", (sum.suites || []).filter(x => x.passed).length + "/" + sum.suites.length,
        (sum.suites || []).every(x => x.passed) ? "passed" : "failed") : null),
      (sum.suites || []).map(x => h("div", { class: "suite", id: "suite-" + x.id },
        section("Suite " + x.id + (x.connector ? " on " + x.connector : "") + (x.name ? " — " + x.name : "") + (x.passed ? " ✓" : " ✗ (the run fails)"),
          assertions(x.assertions || [], null, "suite " + x.id + " "))))];
  }

  // the suite's pass^k and pass@k (tau-bench's table) with their intervals; every k up to 12 runs, then some (as the console)
  function shownK(n) { if (n <= 12) return [...Array(n).keys()]; return [1, 2, 3, 4, 5, 10, 20, 50, 100, 200, 500].filter(k => k < n).map(k => k - 1).concat([n - 1]); }
  function passKOf(report) {
    const sum = report.summary || {};
    const tables = sum.pass_k ? [["", sum.pass_k]] : [];
    for (const c of Object.keys(sum.pass_k_by_connector || {})) if ((sum.matrix || []).length) tables.push([c, sum.pass_k_by_connector[c]]);
    if (!tables.length) return null;
    const level = Math.round((sum.confidence || 0.95) * 1000) / 10 + "% CI";
    const fig = (v, iv) => [h("span", { text: v.toFixed(3) }), iv ? h("span", { class: "interval", text: iv[0].toFixed(2) + "–" + iv[1].toFixed(2) }) : null];
    const one = ([conn, t]) => {
      const cols = shownK(t.k.length);
      return h("div", { class: "passk", "data-connector": conn || null }, conn ? h("h3", { text: conn }) : null,
        h("table", { class: "passk-table" }, h("thead", null, h("tr", null, h("th", { text: "k" }), cols.map(i => h("th", { text: t.k[i] })))),
          h("tbody", null,
            h("tr", { "data-row": "pass_hat" }, h("td", null, "pass^k", t.pass_hat_interval ? h("span", { class: "interval", text: level }) : null), cols.map(i => h("td", null, fig(t.pass_hat[i], (t.pass_hat_interval || [])[i])))),
            h("tr", { "data-row": "pass_at" }, h("td", null, "pass@k", t.pass_at_interval ? h("span", { class: "interval", text: level }) : null), cols.map(i => h("td", null, fig(t.pass_at[i], (t.pass_at_interval || [])[i])))),
            h("tr", { "data-row": "cases" }, h("td", { class: "meta", text: "cases" }), cols.map(i => h("td", { class: "meta", text: t.cases[i] }))))));
    };
    const first = tables[0][1];
    return h("section", { id: "pass-k" }, h("h2", { text: "pass^k" }),
      h("p", { class: "meta", text: "The chance that k runs of a case all pass (pass^k) or that one of them does (pass@k), unbiased over each case's runs, averaged over the " +
        first.cases[0] + " cases that ran " + first.k[first.k.length - 1] + " times" + (shownK(first.k.length).length < first.k.length ? "; some k shown, the JSON report has each" : "") + "." }),
      tables.map(one));
  }

  function generationOf(report) { // what the generators (-i agents:…) were sent and answered: where the cases came from
    const log = (report.summary || {}).generation_calls;
    return log ? section("How the cases were generated", CALLS.of({ calls: log, id: "generation" }, "generation").rest()) : null;
  }

  function warningsOf(report) {
    const list = [...((report.metadata || {}).warnings || [])];
    for (const r of report.results || []) for (const w of r.warnings || []) list.push(r.id + ": " + w);
    return list.length ? section("Warnings", h("ul", null, list.map(w => h("li", { class: "warn", text: w })))) : null;
  }

  // ---- a case page ---------------------------------------------------------------------------------------
  function casePage(c, failing, links) {
    const at = failing.indexOf(c);
    const prev = at > 0 ? failing[at - 1] : at < 0 && failing.length ? failing[failing.length - 1] : null;
    const next = at >= 0 ? failing[at + 1] : failing[0];
    const link = (x, label, id) => x ? h("a", { href: "#" + encodeURIComponent(x.anchor), id, text: label }) : h("span", { class: "meta", text: label });
    const nav = h("div", { class: "nav" }, h("a", { href: links && links.all ? links.all : "#", id: "back", text: "← All cases" }), // a paged report's: its first page
      link(prev, "◀ previous failing", "prev"), link(next, "next failing ▶", "next"),
      at >= 0 ? h("span", { class: "meta", text: "failing " + (at + 1) + " of " + failing.length }) : null,
      links && links.case ? h("a", { href: links.case + "?id=" + encodeURIComponent(c.id) + (c.anchor !== c.id ? "&file=" + encodeURIComponent(c.file) : ""), id: "case-history", text: "this case across runs" }) : null);
    const head = h("div", null, h("h1", null, badge(c.verdict), " ", c.id),
      c.name ? h("div", { text: c.name }) : null, c.description ? h("p", { class: "meta", text: c.description }) : null,
      h("div", { class: "meta" }, c.tags.map(t => h("span", { class: "tag", text: t })), c.file ? c.file + (c.line ? ":" + c.line : "") : "",
        c.ran > 1 ? " · " + c.passed + "/" + c.ran + " runs passed" + (c.gate && c.gate.interval ? " (" + plural(c.ran, "run") + ": " + span(c.gate.interval) + ")" : "") : "", c.gate ? " · gate ≥ " + pct(c.gate.min_pass_rate) + " " + c.gate.verdict : "",
        c.cls ? " · " + c.cls : ""));
    const sides = h("div", { class: "side", style: "grid-template-columns:repeat(" + c.sides.length + ",minmax(0,1fr))" }, c.sides.map(side => sideView(side, c.sides.length > 1)));
    return h("div", null, nav, head, sides);
  }

  function sideView(side, titled) {
    const box = h("div", { class: "connector", "data-connector": side.connector });
    let chosen = Math.max(0, side.runs.findIndex(r => r.status !== "passed" && r.status !== "skipped"));
    function draw() {
      const r = side.runs[chosen];
      box.replaceChildren(h("div", null, titled ? h("h2", null, side.connector, " ", badge(side.verdict)) : null,
        side.runs.length > 1 ? h("div", null, "Runs ", strip(side.runs, chosen, i => { chosen = i; draw(); }), h("span", { class: "meta", text: " run " + r.run })) : null,
        runView(r)));
    }
    draw();
    return box;
  }

  function runView(r, where) {
    const C = CALLS.of(r, where);
    const reasons = r.status === "passed" ? [] : [r.error || r.skip_reason, ...(r.assertion_errors || [])].filter((x, i, a) => x && a.indexOf(x) === i);
    const usage = r.usage || {};
    return h("div", { class: "run" },
      reasons.length ? h("div", { class: "reasons" }, reasons.map(x => h("div", { text: x }))) : null,
      h("div", { class: "meta small" }, r.status, " · ", ms(r.duration_ms), usage.total_tokens ? " · " + usage.total_tokens + " tokens" + usageMark(usage) : usage.source === "unknown" ? " · tokens unknown" : "",
        r.cost != null ? " · " + money(r.cost) + usageMark(usage) : "", r.connector ? " · " + r.connector : "",
        r.truncated ? h("span", { class: "reason", "data-truncated": "true", text: " · reply cut at its token limit" }) : "",
        r.error_by ? h("span", { class: "reason", text: " · the " + (r.error_by === "validator" ? "judge" : r.error_by) + "'s error, not the agent's" }) : "",
        (r.model_calls || []).length ? " · models: " + [...new Set(r.model_calls.map(m => (CALLS.ROLE[m.role] || m.role) + " " + (m.model || m.connector)))].join(", ") : "",
        C.any ? " · " + plural(r.calls.exchanges.length, "model call") + " kept" : (r.model_calls || []).length && r.status !== "passed" ? " · model calls not kept (--calls none)" : ""),
      section("Conversation", conversation(r, C)),
      (r.assertions || []).length ? section("Assertions", assertions(r.assertions, C, "")) : null,
      (r.checkpoints || []).length ? section("Checkpoints", checkpoints(r.checkpoints)) : null,
      r.world ? section("World", world(r.world)) : null,
      ["stdout", "stderr", "traceback"].map(k => r[k] ? section(k, pre(r[k], k === "traceback" ? "reason" : "")) : null),
      (r.logs || []).length ? section("Logs", pre(r.logs.join("\n"))) : null,
      (r.warnings || []).length ? section("Warnings", h("ul", null, r.warnings.map(w => h("li", { class: "warn", text: w })))) : null,
      C.any ? (x => x ? section("Other model calls", x) : null)(C.rest()) : null);  // last: what no turn or check claimed
  }

  function bubble(role, content, who) {
    return h("div", { class: "msg " + (["user", "assistant", "system", "tool"].includes(role) ? role : "user") },
      h("span", { class: "who", text: who || role }), typeof content === "string" ? content : contentText(content));
  }
  function toolCall(c) {
    const marks = [c.server ? "server " + c.server : "", c.mocked ? "mocked" : "", c.fault ? "fault: " + c.fault : "",
      c.violation ? "policy violation" : "", c.duration_ms ? ms(c.duration_ms) : ""].filter(Boolean);
    return h("div", { class: "call" + (c.error != null ? " err" : ""), "data-tool": c.name },
      h("div", null, h("span", { class: "meta small", text: "tool call " }), h("code", { text: c.name }), marks.length ? h("span", { class: "mark small", text: "  " + marks.join(" · ") }) : null),
      h("div", { class: "meta small", text: "arguments" }), pre(c.arguments),
      c.error != null ? [h("div", { class: "reason small", text: "error" }), pre(c.error, "reason")] : [h("div", { class: "meta small", text: "result" }), pre(c.result)]);
  }
  function reply(output, who, truncated) { // the agent's bubble; an empty reply is said, never an empty box
    if (output == null || output === "") return h("div", { class: "msg assistant empty", "data-empty": "true" }, h("span", { class: "who", text: who }), h("span", { class: "meta", text: "(empty reply)" }));
    return bubble("assistant", text(output), who + (truncated ? " (cut at its token limit)" : ""));
  }
  function turnChecks(t, C) { // a scripted turn's own assertions, each with its judge's calls
    return h("div", { class: "turn-checks" }, h("span", { class: "meta small", text: t.passed === false ? "this turn's checks: not all passed" : "this turn's checks" }),
      assertions(t.assertions, C, "turn " + t.turn + " "));
  }
  function conversation(r, C) {
    const chat = h("div", { class: "chat" });
    if (r.simulator && (r.simulator.persona || r.simulator.goal || r.simulator.use)) {
      chat.append(h("div", { class: "sim" }, h("b", { text: "Simulator" }), r.simulator.use ? " " + r.simulator.use : "",
        r.simulator.persona ? h("div", null, h("span", { class: "meta", text: "persona " }), r.simulator.persona) : null,
        r.simulator.goal ? h("div", null, h("span", { class: "meta", text: "goal " }), r.simulator.goal) : null));
    }
    if (r.turns && r.turns.length) {
      for (const t of r.turns) {
        chat.append(h("div", { class: "turn", "data-turn": t.turn }, h("div", { class: "turn-head", text: "Turn " + t.turn + " · " + ms(t.duration_ms) }),
          t.simulator_reasoning ? h("div", { class: "reasoning", text: "simulator: " + t.simulator_reasoning }) : null,
          bubble("user", text(t.input) + ((t.attachments || []).length ? "\n+ " + t.attachments.join(", ") : "")),
          C.wrote(t.turn),  // the simulator's call that wrote this message, under it
          (t.tool_calls || []).map(toolCall),
          t.error ? h("div", { class: "reason", text: t.error }) : reply(t.output, "agent", t.truncated),
          (t.checkpoints || []).length ? h("div", null, t.checkpoints.map(id => h("span", { class: "cp", "data-checkpoint": id, text: "✓ " + id }))) : null,
          (t.assertions || []).length ? turnChecks(t, C) : null,
          C.turn(t.turn), C.checks(t.turn)));
      }
      const missing = (r.checkpoints || []).filter(c => !c.reached);
      if (missing.length) chat.append(h("div", { id: "missing" }, h("span", { class: "meta", text: "missing checkpoints " }),
        missing.map(c => h("span", { class: "cp missing", text: "✗ " + c.id + (c.required ? "" : " (optional)") }))));
    } else {
      for (const m of messages(r.input)) chat.append(bubble(m.role || "user", m.content));
      (r.tool_calls || []).forEach(c => chat.append(toolCall(c)));
      if (r.output_from === "tool_result") chat.append(h("div", { class: "meta", "data-output-from": "tool_result", text: "output: the first tool result (the agent's answer is its tool call)" }), pre(r.output));
      else if (r.output != null && r.output !== "") chat.append(bubble("assistant", text(r.output), "agent" + (r.truncated ? " (cut at its token limit)" : "")));
      else if (r.status !== "skipped") chat.append(h("div", { class: "msg assistant empty", "data-empty": "true" }, h("span", { class: "meta", text: (r.tool_calls || []).length ? "(the agent's last reply was empty)" : "(no output)" })));
      put(chat, C.turn(1));
    }
    return chat;
  }
  function assertions(list, C, prefix) {
    return h("table", { class: "assertions" }, list.map((a, i) => h("tr", { class: "assertion", "data-assertion": prefix + "assertion " + (i + 1) },
      h("td", { class: a.passed ? "passed" : "failed", text: a.passed ? "✓" : a.severity === "minor" ? "✗ minor" : "✗" }),
      h("td", null, a.description || a.id ? h("b", { text: a.description ? a.description + (a.id ? " [" + a.id + "]" : "") : a.id }) : null,
        a.description || a.id ? " " : null, h("code", { text: a.type }), a.weight != null ? h("span", { class: "meta", text: " weight " + a.weight }) : null),
      h("td", null, a.message || (a.passed ? "" : "failed"), a.score != null ? h("span", { class: "meta", text: " score " + a.score }) : null,
        !a.passed && (a.expected != null || a.actual != null)
          ? h("div", { class: "ea" }, h("div", null, h("div", { class: "meta small", text: a.negated ? "expected not" : "expected" }), pre(a.expected)), h("div", null, h("div", { class: "meta small", text: "actual" }), pre(a.actual)))
          : a.checked ? h("div", { class: "meta small", text: shorten(a.checked, 200) })  // what it looked at ("not: …" when negated)
          : a.expected != null ? h("div", { class: "meta small", text: "expected " + shorten(text(a.expected), 200) }) : null,
        C ? C.served(prefix + "assertion " + (i + 1)) : null))));
  }
  function checkpoints(list) {
    return h("ul", null, list.map(c => h("li", null, h("span", { class: c.reached ? "cp" : "cp missing", text: (c.reached ? "✓ " : "✗ ") + c.id }),
      c.reached ? "reached at turn " + c.reached_at_turn : (c.message || "not reached"), c.required ? "" : " (optional)",
      c.description ? h("span", { class: "meta", text: " — " + c.description }) : null)));
  }
  function world(w) {
    const changes = w.changes || [];
    const one = v => shorten(typeof v === "string" ? v : JSON.stringify(v), 300); // a value on one line, as the console shows it
    const line = c => c.op === "added" ? "+ " + c.path + " = " + one(c.after) : c.op === "removed" ? "- " + c.path + " (was " + one(c.before) + ")"
      : "~ " + c.path + ": " + one(c.before) + " → " + one(c.after);
    return h("div", null, changes.length ? h("ul", null, changes.map(c => h("li", { class: c.op }, h("code", { text: line(c) })))) : h("p", { class: "meta", text: "unchanged" }),
      h("details", null, h("summary", { text: "initial and final world" }), h("div", { class: "ea" }, pre(w.initial), pre(w.final))));
  }

  // ---- charts (inline SVG) -----------------------------------------------------------------------------
  function bars(title, items) {
    if (items.length < 1) return null;
    items = items.slice(0, 12);
    const rowH = 20, w = 360, labelW = 130;
    return h("div", { class: "chart" }, h("b", { text: title }), s("svg", { viewBox: "0 0 " + w + " " + (items.length * rowH + 4), role: "img" },
      items.map((it, i) => s("g", { transform: "translate(0," + (i * rowH + 2) + ")" },
        s("text", { x: 0, y: 13, text: shorten(it.label || "(none)", 22) }),
        s("rect", { x: labelW, y: 2, width: w - labelW - 70, height: 14, fill: "#eef1f6", rx: 2 }),
        s("rect", { x: labelW, y: 2, width: Math.max(0, (w - labelW - 70) * it.value), height: 14, fill: it.value >= 1 ? "#34a853" : it.value >= 0.8 ? "#e0a33a" : "#d9534f", rx: 2 }),
        s("text", { x: w - 64, y: 13, text: pct(it.value) + " (" + it.n + ")" })))));
  }
  function histogram(title, values, fmt) {
    values = values.filter(v => v > 0);
    if (values.length < 2) return null;
    const lo = Math.min(...values), hi = Math.max(...values), n = 12, step = (hi - lo) / n || 1;
    const counts = new Array(n).fill(0);
    values.forEach(v => counts[Math.min(n - 1, Math.floor((v - lo) / step))]++);
    const top = Math.max(...counts), w = 360, hgt = 110, bw = (w - 10) / n;
    return h("div", { class: "chart" }, h("b", { text: title }), s("svg", { viewBox: "0 0 " + w + " " + (hgt + 18), role: "img" },
      counts.map((k, i) => s("rect", { x: 5 + i * bw, y: hgt - (hgt - 12) * k / top, width: bw - 2, height: (hgt - 12) * k / top, fill: "#5b8def" },
        s("title", { text: fmt(lo + i * step) + "–" + fmt(lo + (i + 1) * step) + ": " + k }))),
      s("text", { x: 5, y: hgt + 14, text: fmt(lo) }), s("text", { x: w - 60, y: hgt + 14, text: fmt(hi) })));
  }
  function rates(cases, keysOf) {
    const m = new Map();
    for (const c of cases) for (const k of keysOf(c)) {
      const e = m.get(k) || { label: k, good: 0, n: 0 };
      if (c.verdict !== "skipped") { e.n++; if (c.verdict === "passed" || c.verdict === "flaky") e.good++; }
      m.set(k, e);
    }
    return [...m.values()].filter(e => e.n).map(e => ({ label: e.label, value: e.good / e.n, n: e.n })).sort((a, b) => a.value - b.value);
  }
  function chartsOf(report, cases) {
    const results = report.results || [];
    const byConnector = [];
    for (const c of cases) for (const side of c.sides) byConnector.push({ verdict: side.verdict, conn: side.runs[0].connector || "" });
    const connRates = rates(byConnector, x => [x.conn]);
    const charts = [
      new Set(cases.map(c => c.file)).size > 1 ? bars("Pass rate by file", rates(cases, c => [c.file.split("/").pop()])) : null,
      cases.some(c => c.tags.length) ? bars("Pass rate by tag", rates(cases, c => c.tags)) : null,
      connRates.length > 1 || (report.summary || {}).matrix ? bars("Pass rate by connector", connRates) : null,
      histogram("Duration per run", results.map(r => r.duration_ms || 0), ms),
      histogram("Tokens per run", results.map(r => (r.usage || {}).total_tokens || 0), v => Math.round(v) + ""),
    ].filter(Boolean);
    return charts.length ? h("section", { id: "charts" }, h("h2", { text: "Charts" }), h("div", { class: "charts" }, charts)) : null;
  }

  // ---- a comparison of two runs ------------------------------------------------------------------------
  function words(a, b) {
    const x = a.split(/(\s+)/), y = b.split(/(\s+)/);
    let p = 0; while (p < x.length && p < y.length && x[p] === y[p]) p++;
    let q = 0; while (q < x.length - p && q < y.length - p && x[x.length - 1 - q] === y[y.length - 1 - q]) q++;
    const xs = x.slice(p, x.length - q), ys = y.slice(p, y.length - q);
    const out = [[], []], eq = t => { out[0].push(t); out[1].push(t); };
    x.slice(0, p).forEach(eq);
    if (xs.length * ys.length > 4e6) { out[0].push(h("del", { text: xs.join("") })); out[1].push(h("ins", { text: ys.join("") })); }
    else {
      const L = Array.from({ length: xs.length + 1 }, () => new Uint32Array(ys.length + 1));
      for (let i = xs.length - 1; i >= 0; i--) for (let j = ys.length - 1; j >= 0; j--) L[i][j] = xs[i] === ys[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
      let i = 0, j = 0;
      while (i < xs.length || j < ys.length) {
        if (i < xs.length && j < ys.length && xs[i] === ys[j]) { eq(xs[i]); i++; j++; }
        else if (j < ys.length && (i === xs.length || L[i][j + 1] >= L[i + 1][j])) out[1].push(h("ins", { text: ys[j++] }));
        else out[0].push(h("del", { text: xs[i++] }));
      }
    }
    x.slice(x.length - q).forEach(eq);
    return out;
  }
  function diffView(d) {
    const entries = (d.diff.cases || []).filter(x => x.kind !== "unchanged");
    const counts = d.diff.counts || {};
    const kinds = Object.keys(counts).filter(k => counts[k] && k !== "unchanged");
    const on = new Set(); // no chip pressed: every kind shown
    const list = h("div", { id: "entries" });
    const detail = h("div", { id: "entry" });
    const said = d.diff.paired_lines || []; // the paired test in words, made by the report's writer (reporting/evidence.py)
    const moved = new Set(((d.diff.paired || {}).moved || []).map(m => m.id + "\0" + (m.connector || "")));
    const overview = h("div", null, h("h1", { text: "agent-test diff" }), h("p", { class: "meta" }, d.diff.base + " → " + d.diff.new),
      (d.diff.notes || []).map(n => h("div", { class: "banner notes", text: "⚠ " + n })),
      said.length ? h("div", { class: "evidence " + ((d.diff.paired || {}).verdict || "").replace(/ /g, "-"), id: "paired" },
        h("b", { text: said[0] }), h("ul", null, said.slice(1).map(x => h("li", { text: x.trim() })))) : null,
      h("div", { class: "cards" }, Object.keys(counts).filter(k => counts[k]).map(k => card(k, counts[k], k === "regressed" || k === "still failing" ? "failed" : k === "fixed" ? "passed" : ""))),
      h("div", { class: "toolbar" }, kinds.map(k => h("button", { class: "chip", "data-chip": k, "aria-pressed": "false", onclick: e => { on.has(k) ? on.delete(k) : on.add(k); e.currentTarget.setAttribute("aria-pressed", on.has(k)); draw(); } }, k, h("span", { class: "n", text: counts[k] })))),
      list);
    app.append(overview, detail);
    const label = x => x.connector ? x.id + " on " + x.connector : x.id;
    const verdicts = x => x.kind === "new" ? (x.after || "") : x.kind === "removed" ? (x.before || "") + " (no longer in the run)" : (x.before || "") + " → " + (x.after || "");
    function draw() {
      list.replaceChildren(entries.length ? h("table", { class: "cases" }, h("tbody", null, entries.filter(x => !on.size || on.has(x.kind)).map(x =>
        h("tr", { class: "case", "data-kind": x.kind, onclick: () => { location.hash = "#" + encodeURIComponent(label(x)); } },
          h("td", null, badge(x.kind), moved.has(x.id + "\0" + (x.connector || "")) ? h("span", { class: "badge moved", title: "moved beyond its runs' noise (Fisher, Holm)", text: "MOVED" }) : null),
          h("td", null, h("a", { href: "#" + encodeURIComponent(label(x)), text: label(x) })),
          h("td", { text: verdicts(x) }),
          h("td", null, (x.changes || []).slice(0, 3).map(c => h("div", { class: "small" }, h("b", { text: c.what }), ": " + shorten(c.before, 80) + " → " + shorten(c.after, 80))),
            !(x.changes || []).length && x.reason ? h("div", { class: "reason small", text: x.reason }) : null)))))
        : h("p", { text: "Every case has the same verdict, output and tool calls." }));
    }
    function entryPage(x) {
      const at = entries.indexOf(x);
      const nav = h("div", { class: "nav" }, h("a", { href: "#", text: "← All changes" }),
        entries[at - 1] ? h("a", { href: "#" + encodeURIComponent(label(entries[at - 1])), text: "◀ previous" }) : null,
        entries[at + 1] ? h("a", { href: "#" + encodeURIComponent(label(entries[at + 1])), text: "next ▶" }) : null);
      const before = x.before_runs || [], after = x.after_runs || [];
      const pairs = Math.max(before.length, after.length);
      const runs = [];
      for (let i = 0; i < pairs; i++) {
        const a = before[i], b = after[i];
        const [da, db] = words(a ? text(a.output) : "", b ? text(b.output) : "");
        const col = (r, out, title) => h("div", null, h("h3", null, title, " ", r ? badge(r.status) : h("span", { class: "meta", text: "(none)" })),
          r ? [h("div", { class: "meta small", text: "output" }), h("pre", { class: "output" }, out), runView(r, title.split(" ")[0].toLowerCase() + " · " + label(x) + (r.run > 1 ? " run " + r.run : ""))] : null);
        runs.push(h("div", { class: "side", style: "grid-template-columns:1fr 1fr" }, col(a, da, "Before" + (pairs > 1 ? " · run " + (i + 1) : "")), col(b, db, "After" + (pairs > 1 ? " · run " + (i + 1) : ""))));
      }
      return h("div", null, nav, h("h1", null, badge(x.kind), " ", label(x)), h("p", { text: verdicts(x) }),
        (x.changes || []).length ? h("ul", null, x.changes.map(c => h("li", null, h("b", { text: c.what }), ": ", c.before, " → ", c.after))) : null,
        x.reason ? h("div", { class: "reasons" }, h("div", { text: x.reason })) : null, runs);
    }
    function route() {
      const key = decodeURIComponent(location.hash.slice(1));
      const x = entries.find(e => label(e) === key);
      overview.hidden = !!x;
      detail.replaceChildren(x ? entryPage(x) : "");
    }
    draw();
    window.addEventListener("hashchange", route);
    route();
  }

  // ---- the run history (agent-test view) --------------------------------------------------------------
  function trend(runs) {
    const pts = runs.filter(r => r.pass_rate != null).slice().reverse();
    if (pts.length < 2) return null;
    const w = 1100, hgt = 150, step = (w - 40) / (pts.length - 1);
    const y = v => 10 + (hgt - 20) * (1 - v / 100);
    const xy = pts.map((r, i) => [30 + i * step, y(r.pass_rate)]);
    const banded = pts.filter(r => r.pass_rate_low != null && r.pass_rate_high != null).length === pts.length;  // the interval over cases
    const band = banded ? s("polygon", { class: "band", fill: "#5b8def", "fill-opacity": 0.15, stroke: "none",
      points: pts.map((r, i) => (30 + i * step) + "," + y(r.pass_rate_high)).concat(pts.map((r, i) => (30 + i * step) + "," + y(r.pass_rate_low)).reverse()).join(" ") }) : null;
    return h("div", { class: "chart", id: "trend" }, h("b", { text: "Pass rate over runs (oldest to newest)" + (banded ? ", with its interval over cases" : "") }), s("svg", { viewBox: "0 0 " + w + " " + hgt, role: "img" },
      band,
      [0, 50, 100].map(v => [s("line", { x1: 30, x2: w - 10, y1: 10 + (hgt - 20) * (1 - v / 100), y2: 10 + (hgt - 20) * (1 - v / 100), stroke: "#e5e8ee" }),
        s("text", { x: 0, y: 14 + (hgt - 20) * (1 - v / 100), text: v + "%" })]),
      s("polyline", { points: xy.map(p => p.join(",")).join(" "), fill: "none", stroke: "#5b8def", "stroke-width": 2 }),
      xy.map((p, i) => s("circle", { cx: p[0], cy: p[1], r: 3.5, fill: pts[i].exit_code === 0 ? "#34a853" : "#d9534f" }, s("title", { text: "#" + pts[i].id + " " + pts[i].started_at + ": " + pts[i].pass_rate_text + ", " + pts[i].cases_text + " cases" })))));
  }
  function judgeTrend(rows) { // each judge's agreement with the labels over the runs (oldest to newest), one line each
    const judged = rows.filter(r => r.agreement != null);
    if (!judged.length) return null;
    const names = [...new Set(judged.map(r => r.validator + (r.connector ? " on " + r.connector : "")))];
    const runs = [...new Set(judged.map(r => r.run_id))].sort((a, b) => a - b);
    const w = 1100, hgt = 150, step = runs.length > 1 ? (w - 40) / (runs.length - 1) : 0, colors = ["#5b8def", "#d9534f", "#34a853", "#e0a33a", "#8e44ad"];
    const y = v => 10 + (hgt - 20) * (1 - v);
    return h("div", { class: "chart", id: "judge-trend" }, h("b", { text: "Judge agreement with the labels over runs (oldest to newest)" }),
      s("svg", { viewBox: "0 0 " + w + " " + hgt, role: "img" }, [0, 0.5, 1].map(v => s("text", { x: 0, y: y(v) + 4, text: v * 100 + "%" })),
        names.map((n, k) => {
          const pts = runs.map((id, i) => [i, judged.find(r => r.run_id === id && r.validator + (r.connector ? " on " + r.connector : "") === n)]).filter(p => p[1]);
          return s("g", { "data-judge": n }, s("polyline", { points: pts.map(([i, r]) => (30 + i * step) + "," + y(r.agreement)).join(" "), fill: "none", stroke: colors[k % colors.length], "stroke-width": 2 }),
            pts.map(([i, r]) => s("circle", { cx: 30 + i * step, cy: y(r.agreement), r: 3.5, fill: colors[k % colors.length] },
              s("title", { text: "#" + r.run_id + " " + n + ": agreement " + pct(r.agreement) + " of " + r.labelled + " labelled, κ " + (r.kappa == null ? "—" : r.kappa.toFixed(2)) }))));
        })));
  }
  function runsView(d) {
    const form = h("form", { method: "get", action: "/compare", id: "compare" },
      h("table", { class: "cases", id: "runs" }, h("thead", null, h("tr", null, ["A", "B", "Run", "When", "Inputs", "Connector", "Cases", "Pass rate", "Exit"].map(x => h("th", { text: x })))),
        h("tbody", null, d.runs.map((r, i) => h("tr", { "data-run": r.id },
          h("td", null, h("input", { type: "radio", name: "a", value: r.id, checked: i === 1, "aria-label": "compare from run " + r.id })),
          h("td", null, h("input", { type: "radio", name: "b", value: r.id, checked: i === 0, "aria-label": "compare to run " + r.id })),
          h("td", null, h("a", { href: "/run/" + r.id, text: "#" + r.id })), h("td", { text: r.started_at }), h("td", { class: "out", text: r.inputs }),
          h("td", { text: r.connector }), h("td", { text: r.cases_text + " (" + r.failed + " not passing)" }),
          h("td", { class: r.exit_code === 0 ? "passed" : "failed", text: r.pass_rate_text }), h("td", { text: r.exit_code }))))),
      d.runs.length > 1 ? h("p", null, h("button", { type: "submit", class: "chip", id: "compare-button", text: "Compare A → B" })) : null);
    app.append(h("div", null, h("h1", { text: "Run history" }), h("p", { class: "meta", text: d.database + " · " + d.runs.length + " runs" }),
      d.runs.length ? [trend(d.runs), judgeTrend(d.judges || []), form] : h("p", { text: "No runs recorded yet: run agent-test and come back." })));
  }
  function caseHistoryView(d) {
    const hist = d.history; // newest first
    const facts = [];
    const bad = v => RANK[v] === 0;
    const oldest = hist.slice().reverse();
    const firstBad = oldest.find(x => bad(x.verdict));
    const lastGreen = hist.find(x => x.verdict === "passed" || x.verdict === "flaky");
    if (firstBad) facts.push("first failing run #" + firstBad.run_id + " (" + firstBad.started_at + ")");
    if (lastGreen) facts.push("last green run #" + lastGreen.run_id + " (" + lastGreen.started_at + ")");
    const flaky = hist.filter(x => x.flaky).length;
    facts.push("flaky in " + flaky + " of " + hist.length + " runs");
    app.append(h("div", null, h("div", { class: "nav" }, h("a", { href: "/", text: "← Run history" })), h("h1", { text: d.case.id }), d.case.file ? h("p", { class: "meta", text: d.case.file }) : null,
      h("p", null, "Oldest to newest ", h("span", { class: "strip", id: "verdicts" }, oldest.map(x => h("a", { href: "/run/" + x.run_id + "#" + encodeURIComponent(d.case.id), class: bad(x.verdict) ? "f" : x.verdict === "skipped" || x.verdict === "incomplete" ? "s" : "p", title: "#" + x.run_id + " " + x.verdict, text: bad(x.verdict) ? MARK[x.verdict] || "✗" : x.verdict === "skipped" ? "–" : x.verdict === "incomplete" ? "…" : x.flaky ? "≈" : "✓" })))),
      h("ul", { id: "facts" }, facts.map(f => h("li", { text: f }))),
      h("table", { class: "cases" }, h("thead", null, h("tr", null, ["Run", "When", "File", "Connector", "Verdict", "Runs passed", "Time", "Output / reason"].map(x => h("th", { text: x })))),
        h("tbody", null, hist.map(x => h("tr", null, h("td", null, h("a", { href: "/run/" + x.run_id + "#" + encodeURIComponent(d.case.id), text: "#" + x.run_id })),
          h("td", { text: x.started_at }), h("td", { text: x.file }), h("td", { text: x.connector }), h("td", null, badge(x.verdict)), h("td", { text: x.passed + "/" + x.runs }), h("td", { text: ms(x.duration_ms) }),
          h("td", { class: "out", text: x.reason || x.output })))))));
  }

  function judgesOf(report) { // each judge against the labels (FORMATS §19): the figures, the confusion matrix, the disagreements
    const judges = (report.summary || {}).judges || [];
    if (!judges.length) return null;
    const fig = v => v == null ? "—" : v.toFixed(2);
    const name = j => j.validator + (j.connector ? " on " + j.connector : "");
    const rows = judges.map(j => h("tr", { "data-judge": j.validator + "@" + j.connector },
      h("td", { text: name(j) }), h("td", { text: j.labelled }),
      h("td", null, j.agreement ? pct(j.agreement.rate) : "—", j.agreement ? h("span", { class: "interval", text: span(j.agreement.interval) }) : null),
      h("td", { text: fig(j.kappa) }), h("td", { text: fig(j.tpr) }), h("td", { text: fig(j.tnr) }), h("td", { text: fig(j.precision) }),
      h("td", { text: j.flip_rate == null ? "—" : pct(j.flip_rate) }), h("td", { text: j.swap_consistency == null ? "—" : pct(j.swap_consistency) }),
      h("td", { class: j.gate ? (j.gate.passed ? "passed" : "failed") : "", text: j.gate ? (j.gate.passed ? "passes" : "fails: " + j.gate.below.join(", ")) : "—" })));
    const details = judges.filter(j => j.confusion).map(j => h("div", { class: "judge", "data-judge": j.validator + "@" + j.connector },
      h("p", { class: "small" }, h("b", { text: name(j) }), " · labelled pass: judged pass " + j.confusion.tp + ", fail " + j.confusion.fn +
        " · labelled fail: judged pass " + j.confusion.fp + ", fail " + j.confusion.tn + (j.unusable ? " · " + j.unusable + " without a verdict" : "")),
      (j.disagreements || []).length ? h("ul", { class: "disagreements" }, j.disagreements.map(d => h("li", null,
        h("a", { href: "#" + encodeURIComponent(d.id), text: d.id + (d.connector ? " on " + d.connector : "") + (d.run > 1 ? " (run " + d.run + ")" : "") }),
        ": labelled " + (d.label ? "pass" : "fail") + ", judged " + (d.verdict ? "pass" : "fail") + " — " + shorten(d.criterion, 120) + " — judge: " + shorten(d.reason, 200)))) : null));
    return h("section", { id: "judges" }, h("h2", { text: "Judges" }),
      h("table", { class: "cases" }, h("thead", null, h("tr", null, ["Judge", "Labelled", "Agreement", "κ", "TPR", "TNR", "Precision", "Flip rate", "Swap consistency", "Gate"].map(x => h("th", { text: x })))),
        h("tbody", null, rows)), details);
  }

  function saidOf(said) { // evidence said in words by the report's writer (reporting/evidence.py): the matrix compared
    const matrix = (said || {}).matrix || [];
    return matrix.length ? section("Connectors compared", h("ul", { class: "evidence", id: "matrix-evidence" }, matrix.map(x => h("li", { class: x.startsWith("  ") ? "small" : "", text: x.trim() })))) : null;
  }

  const views = { report: d => { reportView(d.report, d.links); put(document.getElementById("overview"), judgesOf(d.report), saidOf(d.said)); }, diff: diffView, runs: runsView, case: caseHistoryView };
  try { views[DATA.kind](DATA); } catch (e) { document.documentElement.classList.remove("js"); app.textContent = ""; throw e; }
})();
