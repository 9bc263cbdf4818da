// converge dashboard. Every stored value is written as a text node or an
// attribute value, never parsed as markup: PR titles, finding bodies and
// messages are written by others (no HTML-parsing sink anywhere).
"use strict";

(function () {
  const token = new URLSearchParams(location.search).get("token");
  const SVGNS = "http://www.w3.org/2000/svg";
  const main = document.getElementById("main");
  const live = document.getElementById("live");
  let stream = null;
  let streamKey = null;
  let seq = 0; // the newest render wins over a slower earlier one

  // api resolves path against the page (so the dashboard works mounted
  // under a prefix) and carries the token a browser was opened with.
  function api(path, params) {
    const u = new URL(path, document.baseURI);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    if (token) u.searchParams.set("token", token);
    return u.toString();
  }

  async function getJSON(path) {
    const r = await fetch(api(path), { cache: "no-store" });
    if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()).trim());
    return r.json();
  }

  // el builds an element: attrs are set as attribute values, children
  // strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (/^on/i.test(k) || k === "style") throw new Error("refused attribute " + k);
      e.setAttribute(k, String(v));
    }
  }

  function append(e, children) {
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  // link makes an anchor only for an http(s) address; anything else
  // (a javascript: URL among them) stays plain text.
  function link(href, text) {
    if (typeof href === "string" && /^https?:\/\//i.test(href)) {
      return el("a", { href: href, rel: "noopener noreferrer", target: "_blank" }, text);
    }
    return document.createTextNode(String(text));
  }

  function short(sha) {
    return sha ? String(sha).slice(0, 8) : "";
  }

  function when(t) {
    if (!t || t.startsWith("0001-")) return "";
    const d = new Date(t);
    return isNaN(d) ? "" : d.toLocaleString();
  }

  function cost(run) {
    if (run.cost_usd === undefined || run.cost_usd === null) return "not reported";
    const c = "$" + Number(run.cost_usd).toFixed(2);
    return run.cost_coverage === "partial" ? c + " (partial: some agents reported no price)" : c;
  }

  function terminalCell(run) {
    if (run.state !== "ended") return el("td", { class: "muted" }, "—");
    const cls = run.terminal === "two-stable" ? "term-two-stable" : run.exit_code ? "term-bad" : "";
    return el("td", { class: cls, title: run.message || null }, run.terminal, run.exit_code !== undefined ? " (exit " + run.exit_code + ")" : "");
  }

  function replace(...nodes) {
    main.replaceChildren(...nodes);
  }

  function showError(err) {
    replace(el("p", { class: "error", role: "alert" }, String(err && err.message ? err.message : err)));
  }

  async function renderList(n) {
    const runs = await getJSON("api/runs");
    if (n !== seq) return;
    document.title = "converge: runs";
    const rows = runs.map((r) =>
      el("tr", { "data-run": r.id, "data-state": r.state },
        el("td", null, el("a", { href: "#/run/" + encodeURIComponent(r.id) }, r.id)),
        el("td", { class: "kind" }, r.kind),
        el("td", null, link(r.url, r.target)),
        el("td", { class: "state-" + r.state }, r.state),
        terminalCell(r),
        el("td", { class: "num", "data-rounds": r.rounds }, String(r.rounds)),
        el("td", { class: "num" }, cost(r)),
        el("td", { class: "muted" }, when(r.started_at))));
    const table = el("table", { id: "runs" },
      el("thead", null, el("tr", null, ["run", "kind", "target", "state", "terminal", "rounds", "cost", "started"].map((h) => el("th", null, h)))),
      el("tbody", null, rows));
    replace(el("h1", null, "Runs"), runs.length ? table : el("p", { class: "muted" }, "No runs yet."));
  }

  // series of the timeline chart: one panel per question.
  function panels(d) {
    const rounds = d.rounds;
    const keys = (field) => [...new Set(rounds.flatMap((p) => Object.keys(p[field] || {})))].sort();
    const of = (field, k) => rounds.map((p) => (p[field] && p[field][k]) || 0);
    return [
      { id: "verdict", title: "Findings by verdict", series: keys("by_verdict").map((k) => ({ name: "verdict:" + k, label: k, values: of("by_verdict", k) })) },
      { id: "source", title: "Findings by source", series: keys("by_source").map((k) => ({ name: "source:" + k, label: k, values: of("by_source", k) })) },
      { id: "threads", title: "Threads", series: [
        { name: "threads:open", label: "open", values: rounds.map((p) => p.threads_open) },
        { name: "threads:resolved", label: "resolved", values: rounds.map((p) => p.threads_resolved) }] },
      { id: "diff", title: "Cumulative diff (lines)", limit: d.diff_limit, series: [
        { name: "diff:cumulative", label: "loop's lines", values: rounds.map((p) => p.cum_diff_lines) }] },
      { id: "cost", title: "Cumulative cost (USD)", money: true, series: [
        { name: "cost:cumulative", label: "reported cost", values: rounds.map((p) => p.cum_cost_usd) }] },
    ];
  }

  function chart(panel, rounds) {
    const W = 360, H = 150, L = 34, R = 10, T = 10, B = 22;
    const all = panel.series.flatMap((s) => s.values);
    let top = Math.max(1, ...all, panel.limit || 0);
    if (!panel.money) top = Math.ceil(top);
    const x = (i) => L + (rounds.length <= 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (rounds.length - 1));
    const y = (v) => T + (H - T - B) * (1 - v / top);
    const fmt = (v) => (panel.money ? "$" + Number(v).toFixed(2) : String(v));
    const g = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": panel.title, "data-chart": panel.id },
      svg("line", { class: "axis", x1: L, y1: y(0), x2: W - R, y2: y(0) }),
      svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: y(0) }),
      svg("text", { x: L - 4, y: T + 8, "text-anchor": "end" }, fmt(top)),
      svg("text", { x: L - 4, y: y(0), "text-anchor": "end" }, "0"),
      rounds.map((p, i) => svg("text", { x: x(i), y: H - 6, "text-anchor": "middle" }, "r" + p.n)));
    if (panel.limit) {
      g.append(svg("line", { class: "limit", "data-limit": panel.limit, x1: L, y1: y(panel.limit), x2: W - R, y2: y(panel.limit) },
        svg("title", null, "3× the PR's lines at start: " + panel.limit)));
      const ly = y(panel.limit);
      g.append(svg("text", { x: W - R, y: ly - 3 < T + 8 ? ly + 11 : ly - 3, "text-anchor": "end" }, "3× limit " + panel.limit));
    }
    panel.series.forEach((s, k) => {
      const cls = "sw" + (k % 7);
      g.append(svg("polyline", { class: cls, points: s.values.map((v, i) => x(i) + "," + y(v)).join(" ") }));
      s.values.forEach((v, i) => g.append(svg("circle", {
        class: cls, r: 3.5, cx: x(i), cy: y(v),
        "data-series": s.name, "data-round": rounds[i].n, "data-value": v,
      }, svg("title", null, s.label + ", round " + rounds[i].n + ": " + fmt(v)))));
    });
    return el("figure", null, el("figcaption", null, panel.title), g,
      el("div", { class: "legend" }, panel.series.map((s, k) => el("span", { class: "sw" + (k % 7) }, s.label))));
  }

  function proofView(d) {
    if (!d.proof) return el("p", { class: "muted", id: "proof" }, d.proof_empty || "no proof");
    const rows = Object.entries(d.proof).map(([k, v]) =>
      el("tr", null, el("th", null, k.replace(/_/g, " ")), el("td", null, valueText(v))));
    return el("table", { id: "proof" }, el("tbody", null, rows));
  }

  function valueText(v) {
    if (v === null || v === undefined) return "—";
    if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ") : "none";
    if (typeof v === "object") return el("code", null, JSON.stringify(v));
    return String(v);
  }

  async function renderRun(n, id) {
    const d = await getJSON("api/runs/" + encodeURIComponent(id));
    if (n !== seq) return;
    const r = d.run;
    document.title = "converge: " + r.id;
    const summary = el("dl", { class: "summary" },
      el("dt", null, "kind"), el("dd", { class: "kind" }, r.kind),
      el("dt", null, "target"), el("dd", null, link(r.url, r.target)),
      el("dt", null, "state"), el("dd", { class: "state-" + r.state, id: "run-state" }, r.state),
      el("dt", null, "terminal"), el("dd", null, r.state === "ended" ? r.terminal + " (exit " + r.exit_code + ")" : "—"),
      r.message ? [el("dt", null, "why"), el("dd", null, r.message)] : null,
      el("dt", null, "rounds"), el("dd", { id: "run-rounds" }, String(r.rounds)),
      el("dt", null, "cost"), el("dd", null, cost(r)),
      el("dt", null, "started"), el("dd", null, when(r.started_at)));
    const charts = d.rounds.length
      ? el("div", { class: "charts", id: "timeline", "data-run": r.id, "data-rounds": d.rounds.length }, panels(d).map((p) => chart(p, d.rounds)))
      : el("p", { class: "muted", id: "timeline", "data-run": r.id, "data-rounds": 0 }, "No round recorded.");
    const threads = d.threads.length
      ? el("table", { id: "threads" },
        el("thead", null, el("tr", null, ["finding", "round", "where", "source", "verdict", "disposition", "actions", "summary"].map((h) => el("th", null, h)))),
        el("tbody", null, d.threads.map((t) => el("tr", { "data-thread": t.id },
          el("td", null, link(t.url, t.thread_id || t.id)),
          el("td", { class: "num" }, String(t.round)),
          el("td", null, t.path ? el("code", null, t.path + (t.line ? ":" + t.line : "")) : "—"),
          el("td", null, t.source, t.author ? " (" + t.author + ")" : ""),
          el("td", null, t.verdict),
          el("td", { title: t.reason || null }, t.disposition, t.resolved ? ", resolved" : ""),
          el("td", { class: "muted" }, (t.actions || []).join(", ") || "—"),
          el("td", { class: "finding-summary" }, t.summary)))))
      : el("p", { class: "muted", id: "threads" }, "No findings.");
    const decisions = d.decisions.length
      ? el("ol", { class: "decisions", id: "decisions" }, d.decisions.map((e) =>
        el("li", null, el("span", { class: "kind" }, e.kind), e.round ? " (round " + e.round + ")" : "", ": ", e.message)))
      : el("p", { class: "muted", id: "decisions" }, "None recorded.");
    replace(
      el("p", null, el("a", { href: "#/" }, "← all runs")),
      el("h1", null, "Run ", r.id),
      summary,
      el("h2", null, "Timeline"), charts,
      el("h2", null, "Threads"), threads,
      el("h2", null, "Decision log"), decisions,
      el("h2", null, "Proof"), proofView(d));
  }

  function current() {
    const m = /^#\/run\/(.+)$/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  function render() {
    const n = ++seq;
    const id = current();
    const p = id ? renderRun(n, id) : renderList(n);
    p.catch((err) => { if (n === seq) showError(err); });
  }

  // listen keeps one event stream per view. The server sends "change"
  // with the store's version of what the view shows: at once, then each
  // time it changes. The view renders on each new version only, so a
  // page is not rebuilt under the reader's hands for nothing.
  function listen(id) {
    const key = id || "";
    if (stream && streamKey === key) return;
    if (stream) stream.close();
    streamKey = key;
    let version = null;
    const s = new EventSource(api("api/stream", id ? { run: id } : {}));
    stream = s;
    s.addEventListener("open", () => { live.dataset.state = "live"; live.textContent = "live"; });
    s.addEventListener("error", () => {
      live.dataset.state = "down";
      live.textContent = "reconnecting";
      // A stream that never opened (a wrong token, the server gone):
      // the read says why.
      if (version === null && s === stream) render();
    });
    s.addEventListener("change", (e) => {
      const v = JSON.parse(e.data).version;
      if (v === version || s !== stream) return;
      version = v;
      render();
    });
    s.addEventListener("failure", (e) => { live.dataset.state = "down"; live.textContent = "store: " + JSON.parse(e.data).error; });
  }

  function route() {
    listen(current());
  }

  window.addEventListener("hashchange", route);
  route();
})();
