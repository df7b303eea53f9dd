/* agent-test viewer: what each model was sent and answered (a result's "calls", --calls). Each call is a card,
   closed until opened (its content is drawn then): the request as sent beside the response as received, the
   system prompt, the tool schemas, the parameters, usage and timings, retries; "copy as curl" and "copy as JSON"
   (the key as $OPENAI_API_KEY: a report never holds it); two calls picked anywhere — two runs, two connectors, the
   two sides of a comparison — are shown as a diff. Loaded before viewer.js, which gives it its building blocks. */
function agentTestCalls(lib) { // eslint-disable-line no-unused-vars
  "use strict";
  const { h, text, ms, shorten, contentText } = lib;
  const ROLE = { agent: "agent", validator: "judge", simulator: "simulator", generator: "generator" };
  const picked = []; // the calls chosen for a diff: {label, text}
  let panel = null;

  // ---- a run's calls, filed by where the viewer shows them ------------------------------------------------------
  function of(r, where) {
    const log = r.calls;
    const all = log ? (log.exchanges || []) : [];
    const used = new Set();
    const label = where || r.id + (r.run > 1 ? " run " + r.run : "") + (r.connector ? " @ " + r.connector : "");
    function cards(list) {
      if (!list.length) return null;
      list.forEach(i => used.add(i));
      return h("div", { class: "mcalls" }, list.map(i => card(log, all[i], i, label)));
    }
    const at = pred => all.map((e, i) => [e, i]).filter(([e, i]) => !used.has(i) && pred(e)).map(([, i]) => i);
    return {
      any: all.length > 0,
      wrote: n => cards(at(e => !e.for && e.role === "simulator" && (e.turn || 0) === n)), // the simulator's call that wrote a turn's message
      turn: n => cards(at(e => !e.for && (e.turn || 0) === n)), // the agent's calls of a turn (and the simulator's, where wrote() was not asked)
      checks: n => cards(at(e => e.for && e.for.startsWith("checkpoint ") && (e.turn || 0) === n)), // checkpoint judges at a turn
      served: what => cards(at(e => e.for === what)), // a judge's calls under the assertion they served
      rest: () => cards(at(() => true)), // whatever is left, in order
    };
  }

  // ---- one call -------------------------------------------------------------------------------------------
  function body(log, e) {
    const out = Object.assign({}, e.parameters || {});
    out.messages = (e.messages || []).map(i => log.messages[i]);
    if (e.tools != null) out.tools = log.tools[e.tools];
    return out;
  }
  function usageOf(u) {
    if (!u) return "";
    const source = u.source === "estimated" ? "estimated" : u.source === "unknown" ? "unknown" : "measured";
    return (u.source === "unknown" && !u.total_tokens ? "tokens unknown" : (u.total_tokens || 0) + " tokens") + " (" + source + ")";
  }
  function summary(log, e, i) {
    const a = e.response;
    const model = (a && a.model) || (e.parameters || {}).model || "";
    const status = !a ? h("span", { class: "reason", text: "no answer" })
      : a.finish_reason === "length" ? h("span", { class: "reason", "data-truncated": "true", text: "cut at its token limit" })
      : (a.tool_calls || []).length ? "→ " + a.tool_calls.map(c => c.name).join(", ")
      : a.content ? "“" + shorten(a.content, 80) + "”" : h("span", { class: "warn", text: "empty reply" });
    return h("summary", null, h("span", { class: "badge role-" + e.role, text: (ROLE[e.role] || e.role).toUpperCase() }), " ",
      h("span", { class: "meta small", text: "#" + (i + 1) + " " + e.connector + (model && model !== e.connector ? " · " + model : "") }), " ", status,
      h("span", { class: "meta small" }, " · " + ms(e.duration_ms), a ? " · " + usageOf(a.usage) : "",
        (e.retries || []).length ? " · " + e.retries.length + (e.retries.length === 1 ? " retry" : " retries") : "", e.replayed ? " · replayed" : ""));
  }
  function card(log, e, i, where) {
    const box = h("details", { class: "mcall" + (e.error ? " err" : ""), "data-role": e.role, "data-call": i, "data-for": e.for || null });
    box.append(summary(log, e, i));
    box.addEventListener("toggle", () => { if (box.open && box.childNodes.length === 1) box.append(inside(log, e, i, where)); });
    return box;
  }
  function inside(log, e, i, where) {
    const sent = body(log, e);
    const label = where + " · " + (ROLE[e.role] || e.role) + " call #" + (i + 1) + (e.turn ? " (turn " + e.turn + ")" : "");
    const copied = h("span", { class: "meta small copied" });
    const tools = h("div", { class: "mtools" },
      h("button", { class: "chip", "data-copy": "curl", disabled: e.url ? null : true, title: e.url ? "the request as a curl command; the key is $OPENAI_API_KEY" : "this connector has no endpoint (the mock)",
        onclick: () => copy(curl(e.url, sent), copied) }, "Copy as curl"),
      h("button", { class: "chip", "data-copy": "json", title: "the request as JSON (url, headers, body); the key is $OPENAI_API_KEY", onclick: () => copy(asJson(e.url, sent), copied) }, "Copy as JSON"),
      h("button", { class: "chip", "data-pick": "true", title: "pick two calls to see their difference", onclick: ev => pick(ev.currentTarget, label, sent, e.response || { error: e.error }) }, "Compare"),
      copied);
    return h("div", { class: "minside" }, tools,
      summarised(sent) ? h("div", { class: "warn small", text: "attachments are summarised in the report: the copied request carries that text in their place" }) : null,
      h("div", { class: "ea" }, h("div", { class: "mreq" }, h("h4", { text: "Request" }), request(log, e, sent)), h("div", { class: "mres" }, h("h4", { text: "Response" }), response(e))),
      timing(e));
  }
  function request(log, e, sent) {
    const params = Object.keys(sent).filter(k => k !== "messages" && k !== "tools");
    const prior = previous(log, e);
    const msgs = sent.messages;
    const system = msgs.filter(m => m && m.role === "system");
    return [
      e.url ? h("div", { class: "meta small", text: "POST " + e.url }) : h("div", { class: "meta small", text: "no endpoint: " + e.connector + " answers in-process" }),
      params.length ? h("table", { class: "params" }, params.map(k => h("tr", null, h("td", null, h("code", { text: k })), h("td", null, h("code", { text: typeof sent[k] === "string" ? sent[k] : JSON.stringify(sent[k]) }))))) : null,
      system.length ? h("div", { class: "msystem" }, h("div", { class: "meta small", text: "system prompt" }), system.map(m => h("pre", { class: "system" }, contentText(m.content)))) : null,
      prior > 0 ? h("details", { class: "mprior" }, h("summary", { class: "meta small", text: prior + " message" + (prior === 1 ? "" : "s") + " as in the call before" }), msgs.slice(0, prior).map(message)) : null,
      msgs.slice(prior).filter(m => !(m && m.role === "system" && prior === 0)).map(message),
      sent.tools ? h("details", { class: "mschemas" }, h("summary", { class: "meta small", text: "tools: " + sent.tools.map(t => (t.function || t).name).join(", ") }),
        sent.tools.map(t => h("pre", null, JSON.stringify(t.function || t, null, 2)))) : null];
  }
  function previous(log, e) { // how many of this call's first messages the same role's call before it sent too
    const all = log.exchanges, at = all.indexOf(e);
    for (let j = at - 1; j >= 0; j--) {
      const p = all[j];
      if (p.role !== e.role || p.connector !== e.connector) continue;
      const a = p.messages || [], b = e.messages || [];
      let n = 0; while (n < a.length && n < b.length && a[n] === b[n]) n++;
      return n === a.length ? n : 0;
    }
    return 0;
  }
  function message(m) {
    if (!m || typeof m !== "object") return h("pre", null, text(m));
    const calls = (m.tool_calls || []).map(c => h("div", { class: "small" }, h("code", { text: "→ " + ((c.function || c).name || "?") }), " ", shorten(text((c.function || c).arguments), 300)));
    const content = m.content == null ? "" : contentText(m.content);
    return h("div", { class: "mmsg " + (m.role || "user") },
      h("span", { class: "who", text: (m.role || "?") + (m.tool_call_id ? " · " + m.tool_call_id : "") + (m.name ? " · " + m.name : "") }),
      content !== "" ? h("div", { class: "mtext", text: content }) : (calls.length ? null : h("div", { class: "meta small", text: m.content === null ? "(content: null)" : "(empty)" })), calls);
  }
  function response(e) {
    const a = e.response;
    if (!a) return h("div", { class: "reason", text: e.error || "no answer" });
    const u = a.usage || {};
    return [
      a.content ? h("div", { class: "mmsg assistant" }, h("div", { class: "mtext", text: a.content })) : (a.tool_calls || []).length ? null : h("div", { class: "warn", text: "(empty reply)" }),
      (a.tool_calls || []).map(c => h("div", { class: "call" }, h("code", { text: c.name }), h("span", { class: "meta small", text: " " + (c.id || "") }), h("pre", null, text(c.arguments)))),
      h("table", { class: "params" },
        h("tr", null, h("td", { text: "finish_reason" }), h("td", { class: a.finish_reason === "length" ? "reason" : "" }, a.finish_reason || "—", a.finish_reason === "length" ? " (cut at its token limit)" : "")),
        h("tr", null, h("td", { text: "model" }), h("td", { text: a.model || "—" })),
        h("tr", { "data-usage": u.source || "endpoint" }, h("td", { text: "usage" }), h("td", null, (u.prompt_tokens || 0) + " prompt + " + (u.completion_tokens || 0) + " completion = " + (u.total_tokens || 0),
          u.cached_tokens ? " (" + u.cached_tokens + " cached)" : "",
          h("span", { class: u.source ? "warn" : "meta", text: u.source === "estimated" ? " — estimated (the endpoint sent no usage)" : u.source === "unknown" ? " — unknown (not counted)" : " — measured by the endpoint" })))),
      e.error ? h("div", { class: "reason", text: e.error }) : null];
  }
  function timing(e) {
    const total = e.duration_ms || 0;
    const w = v => Math.max(0, Math.min(100, total ? 100 * v / total : 0)) + "%";
    return h("div", { class: "mtiming" },
      h("div", { class: "bar", title: "queued, then waiting for the first byte, then the rest" },
        h("span", { class: "q", style: "width:" + w(e.queued_ms || 0) }),
        e.first_byte_ms != null ? h("span", { class: "fb", style: "width:" + w(e.first_byte_ms - (e.queued_ms || 0)) }) : null),
      h("div", { class: "meta small", text: "queued " + ms(e.queued_ms || 0) + " · first byte " + (e.first_byte_ms != null ? ms(e.first_byte_ms) : "— (not streamed)") + " · total " + ms(total) }),
      (e.retries || []).length ? h("ol", { class: "retries small" }, e.retries.map(x => h("li", null, h("b", { text: x.kind }), x.status ? " " + x.status : "", x.error ? ": " + x.error : "",
        x.waited_ms ? h("span", { class: "meta", text: " — waited " + ms(x.waited_ms) })  : null))) : null);
  }
  function summarised(sent) { return JSON.stringify(sent.messages).includes("[attachment "); }

  // ---- copy ---------------------------------------------------------------------------------------------------
  const HEADERS = { "Content-Type": "application/json", "Authorization": "Bearer $OPENAI_API_KEY" };
  function quoted(value) { return "'" + value.replace(/'/g, "'\\''") + "'"; } // for a shell: a URL's ? and & stay in it
  function curl(url, sent) {
    return "curl " + quoted(url) + " \\\n  -H 'Content-Type: application/json' \\\n  -H \"Authorization: Bearer $OPENAI_API_KEY\" \\\n  -d " + quoted(JSON.stringify(sent));
  }
  function asJson(url, sent) { return JSON.stringify({ method: "POST", url: url || null, headers: HEADERS, body: sent }, null, 2); }
  function copy(value, said) {
    const done = ok => { said.textContent = ok ? " copied" : " could not copy: select it below"; if (!ok) said.after(h("pre", { class: "copied-text" }, value)); };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(value).then(() => done(true), () => done(fallback(value)));
    else done(fallback(value));
  }
  function fallback(value) {
    const area = h("textarea", { style: "position:fixed;top:-10em;opacity:0" });
    area.value = value;
    document.body.append(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
    area.remove();
    return ok;
  }

  // ---- a diff of two calls ------------------------------------------------------------------------------------
  function pick(button, label, sent, answer) {
    const at = picked.findIndex(p => p.button === button);
    if (at >= 0) { picked.splice(at, 1); button.setAttribute("aria-pressed", "false"); }
    else {
      if (picked.length === 2) picked.shift().button.setAttribute("aria-pressed", "false");
      picked.push({ button, label, text: JSON.stringify({ request: sent, response: answer }, null, 2) });
      button.setAttribute("aria-pressed", "true");
    }
    drawPanel();
  }
  function drawPanel() {
    if (!panel) { panel = h("div", { id: "call-diff", class: "callpanel" }); document.body.append(panel); }
    if (!picked.length) { panel.hidden = true; return; }
    panel.hidden = false;
    const close = h("button", { class: "link", text: "clear", onclick: () => { picked.splice(0).forEach(p => p.button.setAttribute("aria-pressed", "false")); drawPanel(); } });
    if (picked.length === 1) { panel.replaceChildren(h("div", null, h("b", { text: "Compare: " }), picked[0].label, " — pick another call to compare with it ", close)); return; }
    const [a, b] = picked;
    const rows = lineDiff(a.text.split("\n"), b.text.split("\n"));
    const changed = rows.filter(r => r[0] !== " ").length;
    panel.replaceChildren(h("div", null, h("b", { text: "Compare" }), " ", h("span", { class: "was", text: "− " + a.label }), " → ", h("span", { class: "now", text: "+ " + b.label }), " · ",
      changed ? changed + " lines differ" : "the same request and response", " ", close),
      h("pre", { class: "mdiff" }, rows.map(([k, line]) => k === " " ? "  " + line + "\n" : h(k === "-" ? "del" : "ins", { text: k + " " + line + "\n" }))));
  }
  function lineDiff(x, y) { // a longest-common-subsequence diff of two texts' lines (their common head and tail first)
    let p = 0; while (p < x.length && p < y.length && x[p] === y[p]) p++;
    let q = 0; while (q < x.length - p && q < y.length - p && x[x.length - 1 - q] === y[y.length - 1 - q]) q++;
    const xs = x.slice(p, x.length - q), ys = y.slice(p, y.length - q), out = x.slice(0, p).map(l => [" ", l]);
    if (xs.length * ys.length > 4e6) { xs.forEach(l => out.push(["-", l])); ys.forEach(l => out.push(["+", l])); }
    else {
      const L = Array.from({ length: xs.length + 1 }, () => new Uint32Array(ys.length + 1));
      for (let i = xs.length - 1; i >= 0; i--) for (let j = ys.length - 1; j >= 0; j--) L[i][j] = xs[i] === ys[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
      let i = 0, j = 0;
      while (i < xs.length || j < ys.length) {
        if (i < xs.length && j < ys.length && xs[i] === ys[j]) { out.push([" ", xs[i]]); i++; j++; }
        else if (i < xs.length && (j === ys.length || L[i + 1][j] >= L[i][j + 1])) out.push(["-", xs[i++]]);
        else out.push(["+", ys[j++]]);
      }
    }
    x.slice(x.length - q).forEach(l => out.push([" ", l]));
    return out;
  }

  return { of, ROLE, curl, asJson };
}
