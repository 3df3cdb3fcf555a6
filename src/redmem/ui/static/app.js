"use strict";
// The memory inspector: hash routes (#/, #/agent/A, #/agent/A/memory/ID, #/agent/A/ask), JSON API calls
// with the page's token in a header, every write confirmed in a dialog and sent as a POST.
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const main = document.getElementById("main");
  const state = { actions: [], defaultAgent: null, flash: null, generation: 0 };
  // A page whose data arrives after the user moved on renders nothing.
  const current = (mine) => mine === state.generation;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "on") { for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn); }
      else if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  const fmt = (v, d = 3) => (v === null || v === undefined) ? "–" : (typeof v === "number" ? v.toFixed(d) : String(v));
  const enc = encodeURIComponent;

  function showError(err) {
    const box = document.getElementById("error");
    box.textContent = err ? `${err.type}: ${err.message}` : "";
    box.hidden = !err;
  }
  function notice(text) {
    const box = document.getElementById("notice");
    box.textContent = text || ""; box.hidden = !text;
  }

  async function api(path, body) {
    const options = { headers: { "X-Redmem-Token": token } };
    if (body !== undefined) {
      options.method = "POST";
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify({ ...body, confirm: true });
    }
    const reply = await fetch("/api" + path, options);
    const data = await reply.json().catch(() => ({ error: { type: "HTTPError", message: reply.statusText } }));
    if (!reply.ok || data.error) {
      const err = data.error || { type: "HTTPError", message: String(reply.status) };
      throw err;
    }
    return data;
  }

  function confirmAction(text) {
    const dialog = document.getElementById("confirm");
    document.getElementById("confirm-text").textContent = text;
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
      dialog.showModal();
      document.getElementById("confirm-cancel").focus();
    });
  }

  async function act(agent, name, payload, question) {
    if (!(await confirmAction(question))) return null;
    try {
      const done = await api(`/agents/${enc(agent)}/actions/${enc(name)}`, payload);
      showError(null);
      return done;
    } catch (err) { showError(err); return null; }
  }

  function navFor(agent, current) {
    const nav = document.getElementById("nav");
    nav.replaceChildren(
      el("a", { href: "#/", "aria-current": current === "tenants" ? "page" : null }, "Tenants"),
      agent ? el("a", { href: `#/agent/${enc(agent)}`, "aria-current": current === "memories" ? "page" : null }, `Memories of ${agent}`) : null,
      agent ? el("a", { href: `#/agent/${enc(agent)}/ask`, "aria-current": current === "ask" ? "page" : null }, "Ask (playground)") : null,
    );
  }

  function humanBytes(n) {
    const units = ["B", "KB", "MB", "GB"]; let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
  }

  async function tenantsPage(mine) {
    navFor(state.defaultAgent, "tenants");
    const data = await api("/tenants");
    if (!current(mine)) return;
    const rows = data.tenants.map((t) => el("tr", {},
      el("td", {}, el("a", { href: `#/agent/${enc(t.agent)}` }, t.agent)),
      el("td", { class: "num" }, t.memories.toLocaleString()), el("td", { class: "num" }, humanBytes(t.bytes))));
    main.replaceChildren(el("h2", {}, "Tenants"),
      el("p", { class: "muted" }, `${data.tenants.length} agents; size estimated from a sample of each agent's records.`),
      el("table", { id: "tenants" }, el("thead", {}, el("tr", {}, el("th", {}, "agent"), el("th", {}, "memories"), el("th", {}, "size"))),
        el("tbody", {}, rows)));
  }

  async function memoriesPage(agent, params, mine) {
    navFor(agent, "memories");
    const q = params.get("q") || "", filter = params.get("filter") || "", sort = params.get("sort") || "decay";
    const offset = Number(params.get("offset") || 0), limit = 50;
    const search = el("input", { type: "search", id: "search", name: "q", value: q, placeholder: "words to search (BM25)" });
    const filterBox = el("input", { type: "text", id: "filter", name: "filter", value: filter, placeholder: "field=value&tags__any=a,b" });
    const sortBox = el("select", { id: "sort", name: "sort" },
      ["decay", "relevance", "confidence", "newest", "oldest", "id"].map((s) => el("option", { value: s, selected: s === sort }, s)));
    const form = el("form", { class: "controls", role: "search", on: { submit: (e) => {
      e.preventDefault();
      const next = new URLSearchParams({ q: search.value, filter: filterBox.value, sort: sortBox.value });
      location.hash = `#/agent/${enc(agent)}?${next}`;
    } } },
      el("label", {}, "Search", search), el("label", {}, "Filter", filterBox), el("label", {}, "Sort by", sortBox),
      el("button", { type: "submit", class: "primary", id: "apply" }, "Apply"));
    main.replaceChildren(el("h2", {}, `Memories of ${agent}`), form, el("p", { class: "muted", id: "loading" }, "loading…"));
    const query = new URLSearchParams({ q, filter, sort, offset, limit });
    let data;
    try { data = await api(`/agents/${enc(agent)}/memories?${query}`); if (!current(mine)) return; showError(null); }
    catch (err) { if (!current(mine)) return; showError(err); main.querySelector("#loading").textContent = "No page: fix the search or filter."; return; }
    const selected = new Set();
    const forget = el("button", { type: "button", id: "forget-selected", class: "danger", disabled: true, on: { click: async () => {
      const done = await act(agent, "forget", { memory_ids: [...selected] }, `Forget ${selected.size} memories of ${agent}? This deletes them.`);
      if (done) { notice(`forgot ${done.forgotten.length} memories`); route(); }
    } } }, "Forget selected");
    const exportButton = el("button", { type: "button", id: "export", on: { click: async () => {
      const done = await act(agent, "export", selected.size ? { memory_ids: [...selected] } : {},
        selected.size ? `Export ${selected.size} memories as JSON?` : `Export every memory of ${agent} as JSON?`);
      if (done) {
        const link = el("a", { href: URL.createObjectURL(new Blob([JSON.stringify(done, null, 2)], { type: "application/json" })),
          download: `redmem-${agent}.json` }); link.click();
        notice(`exported ${done.memories.length} memories`);
      }
    } } }, "Export");
    const rows = data.rows.map((r) => {
      const box = el("input", { type: "checkbox", "aria-label": `select ${r.memory_id}`, on: { change: (e) => {
        e.target.checked ? selected.add(r.memory_id) : selected.delete(r.memory_id); forget.disabled = !selected.size; } } });
      return el("tr", {}, el("td", {}, box),
        el("td", {}, el("a", { href: `#/agent/${enc(agent)}/memory/${enc(r.memory_id)}`, class: "memory-link" }, r.content || r.memory_id),
          el("div", { class: "muted" }, [r.speaker, r.date].filter(Boolean).join(" · "))),
        el("td", { class: "num" }, fmt(r.match)), el("td", { class: "num" }, fmt(r.decay)),
        el("td", { class: "num" }, fmt(r.confidence)), el("td", { class: "num wide" }, r.updated || "–"));
    });
    const page = (delta) => {
      const next = new URLSearchParams({ q, filter, sort, offset: Math.max(0, offset + delta) });
      location.hash = `#/agent/${enc(agent)}?${next}`;
    };
    main.replaceChildren(el("h2", {}, `Memories of ${agent}`), form,
      el("p", { class: "muted", id: "summary" }, `${data.total.toLocaleString()} memories, ordered by ${data.order}; showing ${data.rows.length ? offset + 1 : 0}–${offset + data.rows.length}`),
      el("div", { class: "row-actions" }, forget, exportButton),
      el("table", { class: "memories", id: "memories" }, el("thead", {}, el("tr", {}, el("th", {}, el("span", { class: "muted" }, "✓")),
        el("th", {}, "memory"), el("th", {}, "match"), el("th", {}, "decay"), el("th", {}, "confidence"), el("th", { class: "wide" }, "last updated"))),
        el("tbody", {}, rows)),
      el("div", { class: "pager" },
        el("button", { type: "button", id: "prev", disabled: offset === 0, on: { click: () => page(-limit) } }, "← Previous"),
        el("button", { type: "button", id: "next", disabled: offset + data.rows.length >= data.total, on: { click: () => page(limit) } }, "Next →")));
  }

  function fieldList(entries) {
    return el("dl", { class: "fields" }, entries.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v === null || v === undefined ? "–" : (typeof v === "object" ? JSON.stringify(v) : String(v)))]));
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    for (const child of children.flat()) if (child) node.append(child instanceof Node ? child : String(child));
    return node;
  }

  // The decay score since the last touch (solid), projected ahead (dashed), now and the accesses marked.
  function timelineChart(t) {
    const W = 640, H = 180, L = 44, R = 12, T = 10, B = 28;
    const span = t.points[t.points.length - 1].days || 1;
    const top = Math.max(...t.points.map((p) => p.decay), 1e-9);
    const x = (d) => L + (W - L - R) * Math.min(Math.max(d, 0), span) / span;
    const y = (v) => T + (H - T - B) * (1 - v / top);
    const line = (pts, dashed) => svg("polyline", { points: pts.map((p) => `${x(p.days).toFixed(1)},${y(p.decay).toFixed(1)}`).join(" "),
      fill: "none", stroke: "#0b57d0", "stroke-width": 2, "stroke-dasharray": dashed ? "5 4" : "none" });
    const past = t.points.filter((p) => p.past), ahead = t.points.filter((p) => p.days >= t.now_days);
    return svg("svg", { id: "timeline", viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img",
      "aria-label": `decay score from the last touch (${t.touched}) to ${fmt(span - t.now_days, 0)} days ahead` },
      svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#5b6275" }),
      svg("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#5b6275" }),
      svg("text", { x: 4, y: T + 10, "font-size": 11 }, fmt(top, 2)),
      svg("text", { x: 4, y: H - B, "font-size": 11 }, "0"),
      svg("text", { x: L, y: H - 8, "font-size": 11 }, "last touch"),
      svg("text", { x: W - R, y: H - 8, "font-size": 11, "text-anchor": "end" }, `+${fmt(span, 0)} days`),
      line(past, false), line(ahead, true),
      svg("line", { x1: x(t.now_days), y1: T, x2: x(t.now_days), y2: H - B, stroke: "#b3261e", "stroke-dasharray": "2 3" }),
      svg("text", { x: x(t.now_days) + 3, y: T + 10, "font-size": 11, fill: "#b3261e" }, "now"),
      t.accesses.filter((a) => a.days >= 0).map((a) => svg("circle", { cx: x(a.days), cy: H - B, r: 3, fill: "#2e7d32" },
        svg("title", {}, `access ${a.at}`))));
  }

  function timelineSection(t) {
    if (!t) return [el("h3", {}, "Scores over time"), el("p", { class: "muted" }, "never touched: no decay curve")];
    const rows = t.points.map((p) => el("tr", { class: p.past ? "" : "muted" }, el("td", { class: "num" }, fmt(p.days, 2)),
      el("td", {}, p.at), el("td", { class: "num" }, fmt(p.decay, 4))));
    return [el("h3", {}, "Scores over time"),
      el("p", { class: "muted" }, `Decay since the last touch (${t.touched}), with the confidence now; dashed: where it is heading. `,
        `Green: confirmed accesses (${t.accesses.length}).`),
      timelineChart(t),
      el("details", {}, el("summary", {}, "values"), el("table", { id: "timeline-values" },
        el("thead", {}, el("tr", {}, el("th", {}, "days after touch"), el("th", {}, "at"), el("th", {}, "decay"))), el("tbody", {}, rows)))];
  }

  async function memoryPage(agent, id, mine) {
    navFor(agent, "memory");
    const m = await api(`/agents/${enc(agent)}/memories/${enc(id)}`);
    if (!current(mine)) return;
    const outcome = el("select", { id: "outcome", "aria-label": "outcome" },
      ["acted", "used", "dismissed", "deferred", "contradicted"].map((o) => el("option", { value: o }, o)));
    const supersededBy = el("input", { id: "superseded-by", "aria-label": "superseded by (memory id)", placeholder: "memory id" });
    const actions = el("div", { class: "row-actions" },
      el("button", { type: "button", class: "danger", id: "forget", on: { click: async () => {
        const done = await act(agent, "forget", { memory_ids: [id] }, `Forget this memory of ${agent}? This deletes it.`);
        if (done) { state.flash = `forgot ${id}`; location.hash = `#/agent/${enc(agent)}`; }
      } } }, "Forget"),
      el("label", {}, "Outcome", outcome),
      el("button", { type: "button", id: "feedback", on: { click: async () => {
        const done = await act(agent, "feedback", { outcomes: { [id]: outcome.value } }, `Report "${outcome.value}" for this memory?`);
        if (done) { notice(`reported ${outcome.value}`); route(); }
      } } }, "Report outcome"),
      state.actions.includes("supersede") ? el("label", {}, "Superseded by", supersededBy) : null,
      state.actions.includes("supersede") ? el("button", { type: "button", id: "supersede", on: { click: async () => {
        const done = await act(agent, "supersede", { memory_ids: [id], by: supersededBy.value.trim() },
          `Mark this memory superseded by ${supersededBy.value.trim()}? It stays, readable as of its time.`);
        if (done) { notice("superseded"); route(); }
      } } }, "Supersede") : null,
      state.actions.filter((a) => !["forget", "feedback", "export", "supersede"].includes(a)).map((name) =>
        el("button", { type: "button", on: { click: async () => {
          const done = await act(agent, name, { memory_ids: [id] }, `${name} this memory?`);
          if (done) { notice(`${name}: done`); route(); }
        } } }, name)));
    main.replaceChildren(...[el("h2", {}, "Memory ", el("span", { class: "mono" }, id)), actions,
      el("p", { class: "mono muted" }, m.key),
      el("h3", {}, "Fields"), fieldList(Object.entries(m.fields)),
      el("h3", {}, "Scores now"), fieldList(Object.entries(m.scores).map(([k, v]) => [k, fmt(v, 4)])),
      ...timelineSection(m.timeline),
      el("h3", {}, "Outcome history"), fieldList(Object.entries(m.outcomes)),
      m.history ? el("h3", {}, "Versions (oldest first)") : null,
      m.history ? el("table", { id: "versions" }, el("thead", {}, el("tr", {}, el("th", {}, "valid from"), el("th", {}, "valid to"), el("th", {}, "memory"))),
        el("tbody", {}, m.history.map((v) => el("tr", {}, el("td", {}, v.valid_from || "–"), el("td", {}, v.valid_to || "current"),
          el("td", {}, el("a", { href: `#/agent/${enc(agent)}/memory/${enc(v.memory_id)}` }, v.content || v.memory_id)))))) : null,
      el("h3", {}, "Access"), fieldList([["confirmed accesses", m.access.count], ["last", m.access.last],
        ["log", m.access.log.join(", ") || "–"], ["staged reads", m.access.staged.join(", ") || "–"],
        ["recall proposal", m.proposal ? `${m.proposal.status} (${m.proposal.surfaced}: ${m.proposal.reason})` : "–"]]),
      el("h3", {}, "Edges (strongest first)"),
      m.edges.length ? el("table", { id: "edges" }, el("thead", {}, el("tr", {}, el("th", {}, "weight"), el("th", {}, "memory"))),
        el("tbody", {}, m.edges.map((e) => el("tr", {}, el("td", { class: "num" }, fmt(e.weight)),
          el("td", {}, el("a", { href: `#/agent/${enc(agent)}/memory/${enc(e.memory_id)}` }, e.content || e.memory_id))))))
        : el("p", { class: "muted" }, "no edges")].filter((part) => part !== null));
  }

  function explainItem(item) {
    const arms = item.arms.map((a) => el("li", {}, `${a.arm}: rank ${a.rank ?? "–"}, score ${fmt(a.score)}, weight ${a.weight} → adds ${fmt(a.contribution, 4)}`));
    const boosts = item.boosts.filter((b) => b.value !== null || b.note.startsWith("moved")).map((b) =>
      el("li", {}, `${b.name}: ${b.note}${b.contribution ? ` (+${fmt(b.contribution, 4)})` : ""}`));
    return el("div", { class: "item" },
      el("h4", {}, `#${item.rank} · score ${fmt(item.score)} · ${item.source}${item.truncated ? " · truncated" : ""}`),
      el("div", {}, item.content || item.record_id),
      el("ul", {}, arms, boosts),
      el("div", { class: "muted" }, `fused ${fmt(item.fused, 4)} ÷ best ${fmt(item.normaliser, 4)}; match ${fmt(item.match)}`));
  }

  function askPage(agent) {
    navFor(agent, "ask");
    const question = el("textarea", { id: "question", name: "question", "aria-label": "question", placeholder: "What does the agent know about…?" });
    const items = el("input", { type: "number", id: "max-items", min: 1, max: 100, value: 10 });
    const tokens = el("input", { type: "number", id: "max-tokens", min: 1, max: 100000, value: 2000 });
    const out = el("div", { id: "answer" });
    const form = el("form", { on: { submit: async (e) => {
      e.preventDefault();
      out.replaceChildren(el("p", { class: "muted" }, "assembling…"));
      try {
        const r = await api(`/agents/${enc(agent)}/assemble`, { question: question.value, max_items: Number(items.value), max_tokens: Number(tokens.value) });
        showError(null);
        const x = r.explanation, share = Math.min(100, 100 * r.token_count / r.max_tokens);
        const cut = x.left_out.map((o) => el("tr", {}, el("td", {}, el("a", { href: `#/agent/${enc(agent)}/memory/${enc(o.record_id)}` }, o.record_id)),
          el("td", {}, o.reason), el("td", { class: "num" }, fmt(o.score)), el("td", {}, o.detail)));
        out.replaceChildren(
          el("p", { id: "budget-label" }, `${r.token_count} / ${r.max_tokens} tokens · ${x.items.length} items · ${x.mode} mode, ${x.fusion} fusion, weights ${JSON.stringify(x.weights)} · tenant ${JSON.stringify(x.tenant)} · filters ${x.filters ? JSON.stringify(x.filters) : "none"}`),
          el("div", { class: "budget", role: "progressbar", "aria-labelledby": "budget-label", "aria-valuemin": 0, "aria-valuemax": r.max_tokens, "aria-valuenow": r.token_count },
            el("div", { style: null, "data-share": share })),
          el("div", { class: "columns" },
            el("section", { "aria-label": "selected" }, el("h3", {}, "Selected, and why"), x.items.map(explainItem),
              el("h3", {}, "Context sent"), el("pre", { class: "context", id: "context" }, r.context || "(empty)")),
            el("section", { "aria-label": "left out" }, el("h3", {}, `Left out (${x.left_out.length})`),
              x.left_out.length ? el("table", { id: "left-out" }, el("thead", {}, el("tr", {}, el("th", {}, "memory"), el("th", {}, "reason"), el("th", {}, "score"), el("th", {}, "detail"))), el("tbody", {}, cut))
                : el("p", { class: "muted" }, "nothing was cut"))));
        const bar = out.querySelector(".budget > div"); bar.style.width = `${share}%`;
      } catch (err) { showError(err); out.replaceChildren(); }
    } } },
      el("label", {}, "Question", question),
      el("div", { class: "controls" }, el("label", {}, "Max items", items), el("label", {}, "Max tokens", tokens),
        el("button", { type: "submit", class: "primary", id: "run" }, "Assemble")),
      el("p", { class: "muted" }, "Assembling records the reads it makes, as an agent's turn does (staged reads, proposals)."));
    main.replaceChildren(el("h2", {}, `Ask ${agent}'s memory`), form, out);
    question.focus();
  }

  async function route() {
    const mine = ++state.generation;
    const [path, query] = location.hash.replace(/^#/, "").split("?");
    const params = new URLSearchParams(query || "");
    const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
    try {
      if (parts[0] === "agent" && parts[2] === "memory") await memoryPage(parts[1], parts[3], mine);
      else if (parts[0] === "agent" && parts[2] === "ask") askPage(parts[1]);
      else if (parts[0] === "agent") await memoriesPage(parts[1], params, mine);
      else await tenantsPage(mine);
      if (current(mine) && parts[2] !== "ask") main.focus({ preventScroll: true });
    } catch (err) { if (current(mine)) showError(err); }
  }

  window.addEventListener("hashchange", () => { notice(state.flash); state.flash = null; route(); });
  api("/settings").then((s) => { state.actions = s.actions; state.defaultAgent = s.default_agent; route(); })
    .catch(showError);
}());
