// ragen dash: one page app, no build step. Data comes from /api/*; every
// string from a run is put in the DOM as text, never as HTML.
"use strict";

const $app = document.getElementById("app");
const $status = document.getElementById("status");
let CFG = { poll_ms: 2000, play: false };
let timers = [];

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path, opts) {
  const r = await fetch(path, opts);
  const ct = r.headers.get("Content-Type") || "";
  const body = ct.includes("json") ? await r.json() : { error: await r.text() };
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function status(msg, bad) {
  $status.textContent = msg || "";
  $status.style.color = bad ? "#ffb4ab" : "";
}

function fmt(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : v.toFixed(4);
}

const COLORS = ["#2f5fd0", "#d0452f", "#1a9e5c", "#9b3fd0", "#d08a1a", "#1a8fb0", "#b01a6e", "#5c6b1a"];

function ema(ys, alpha) {
  if (!alpha) return ys;
  let last = null, out = [];
  for (const y of ys) {
    if (y === null || y === undefined || Number.isNaN(y)) { out.push(y); continue; }
    last = last === null ? y : alpha * last + (1 - alpha) * y;
    out.push(last);
  }
  return out;
}

// lineChart draws series (name, xs, ys) sharing an x axis (step) with uPlot:
// drag to zoom, double-click to reset, hover shows values in the legend.
function lineChart(parent, title, series, opts) {
  opts = opts || {};
  const xsAll = [...new Set(series.flatMap(s => s.xs))].sort((a, b) => a - b);
  const data = [xsAll];
  for (const s of series) {
    const m = new Map();
    s.xs.forEach((x, i) => m.set(x, s.ys[i]));
    data.push(xsAll.map(x => (m.has(x) ? m.get(x) : null)));
  }
  const box = h("div", { class: "chart", "data-title": title }, h("div", { class: "title", text: title }));
  parent.append(box);
  const width = Math.max(300, (box.clientWidth || 460) - 12);
  const u = new uPlot({
    width, height: opts.height || 220,
    scales: { x: { time: false } },
    axes: [{ label: "step", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] }, { size: 60 }],
    cursor: { drag: { x: true, y: false } },
    series: [{ label: "step" }].concat(series.map((s, i) => ({
      label: s.name, stroke: s.color || COLORS[i % COLORS.length], width: 1.6, spanGaps: true,
      points: { show: xsAll.length < 40 }, value: (u, v) => fmt(v),
    }))),
  }, data, box);
  box._uplot = u;
  return u;
}

function setActiveNav(page) {
  document.querySelectorAll("header nav a").forEach(a => a.classList.toggle("active", a.dataset.page === page));
}

function clearTimers() { timers.forEach(t => clearInterval(t)); timers = []; }

async function route() {
  clearTimers();
  let page = location.pathname.replace(/^\//, "") || "runs";
  if (!PAGES[page]) page = "runs";
  setActiveNav(page);
  $app.replaceChildren();
  status("");
  try { await PAGES[page](); } catch (e) { status(e.message, true); $app.append(h("p", { class: "err", text: e.message })); }
}

document.addEventListener("click", e => {
  const a = e.target.closest("header nav a");
  if (!a) return;
  e.preventDefault();
  history.pushState(null, "", a.getAttribute("href"));
  route();
});
window.addEventListener("popstate", route);

function qs() { return new URLSearchParams(location.search); }
function setQS(p) { history.replaceState(null, "", location.pathname + "?" + p.toString()); }

// ---------- runs ----------
async function pageRuns() {
  const { runs, sweeps } = await api("/api/runs");
  if (!runs.length && !sweeps.length) { $app.append(h("p", { text: "No runs in the given folders yet." })); return; }
  const p = qs();
  const chosen = new Set((p.get("runs") || (runs[0] ? runs[0].id : "")).split(",").filter(Boolean));
  const keySel = new Set((p.get("keys") || "").split(",").filter(Boolean));
  let smooth = parseFloat(p.get("smooth") || "0") || 0;
  const recs = {}; // run id -> records
  const lastStep = {};

  const side = h("div", { class: "side" });
  const main = h("div", { class: "grow" });
  $app.append(h("div", { class: "row" }, side, main));
  const sweepBox = h("div");
  const charts = h("div", { class: "charts", id: "charts" });
  main.append(sweepBox, charts);

  side.append(h("h3", { text: "Runs" }));
  for (const r of runs) {
    side.append(h("label", { class: "keys" },
      h("input", { type: "checkbox", "data-run": r.id, checked: chosen.has(r.id), onchange: async e => {
        e.target.checked ? chosen.add(r.id) : chosen.delete(r.id);
        await load(); draw(); save();
      } }), r.name, h("span", { class: "muted", text: " (" + r.steps + " records)" })));
  }
  side.append(h("h3", { text: "Smoothing" }));
  const sm = h("input", { type: "range", min: 0, max: 0.99, step: 0.01, value: smooth, id: "smooth",
    oninput: e => { smooth = parseFloat(e.target.value); smLabel.textContent = smooth.toFixed(2); draw(); save(); } });
  const smLabel = h("span", { text: smooth.toFixed(2) });
  side.append(h("div", {}, sm, " ", smLabel));
  side.append(h("h3", { text: "Metrics" }));
  const filt = h("input", { type: "search", placeholder: "filter keys, e.g. success", id: "keyfilter", style: "width:100%", oninput: () => listKeys() });
  const keyList = h("div", { class: "keys", id: "keylist" });
  side.append(filt, keyList);

  function save() {
    const q = new URLSearchParams();
    q.set("runs", [...chosen].join(","));
    q.set("keys", [...keySel].join(","));
    if (smooth) q.set("smooth", smooth);
    setQS(q);
  }
  async function load() {
    for (const id of chosen) {
      const since = lastStep[id] === undefined ? "" : "&since=" + lastStep[id];
      const d = await api("/api/metrics?run=" + encodeURIComponent(id) + since);
      recs[id] = (recs[id] || []).concat(d.records);
      if (d.records.length) lastStep[id] = d.records[d.records.length - 1].step;
    }
  }
  function allKeys() {
    const ks = new Set();
    for (const id of chosen) for (const r of recs[id] || []) for (const k in r.data) ks.add(k);
    return [...ks].sort();
  }
  function listKeys() {
    const f = filt.value.toLowerCase();
    keyList.replaceChildren();
    for (const k of allKeys()) {
      if (f && !k.toLowerCase().includes(f)) continue;
      keyList.append(h("label", {}, h("input", { type: "checkbox", "data-key": k, checked: keySel.has(k), onchange: e => {
        e.target.checked ? keySel.add(k) : keySel.delete(k); draw(); save();
      } }), k));
    }
  }
  function draw() {
    charts.replaceChildren();
    if (!keySel.size) {
      // upstream's headline keys, when present
      for (const k of allKeys()) if (/^val-env\/[^/]+\/success$|^train\/[^/]+\/success$|^critic\/score\/mean$|^actor\/entropy$|^response_length\/mean$|^collapse_first_turn_sample\/mi_estimate$/.test(k)) keySel.add(k);
      if (!keySel.size) allKeys().slice(0, 4).forEach(k => keySel.add(k));
      listKeys();
    }
    for (const k of keySel) {
      const series = [];
      for (const id of chosen) {
        const xs = [], ys = [];
        for (const r of recs[id] || []) if (k in r.data) { xs.push(r.step); ys.push(r.data[k]); }
        if (xs.length) series.push({ name: runs.find(r => r.id === id).name, xs, ys: ema(ys, smooth) });
      }
      if (series.length) lineChart(charts, k, series);
    }
    if (!charts.children.length) charts.append(h("p", { class: "muted", text: "No data for the chosen runs and metrics." }));
  }
  async function sweepTables() {
    sweepBox.replaceChildren();
    for (const s of sweeps) {
      const d = await api("/api/sweep?sweep=" + encodeURIComponent(s.id));
      const keys = d.keys.filter(k => /success|mean@/.test(k)).slice(0, 8);
      const tbl = h("table", { class: "sweep" }, h("tr", {}, h("th", { text: "run" }), h("th", { text: "last step" }), keys.map(k => h("th", { text: k }))),
        d.runs.map(r => h("tr", {}, h("td", { text: r.name }), h("td", { text: r.steps }), keys.map(k => h("td", { text: fmt(r.last[k]) })))));
      const files = Object.entries(d.files).map(([n, t]) => h("details", {}, h("summary", { text: n }), h("pre", { text: t })));
      sweepBox.append(h("div", { class: "panel" }, h("h2", { text: "Sweep " + d.name + " (" + d.runs.length + " runs)" }), tbl, files));
    }
  }
  await load();
  listKeys();
  draw();
  await sweepTables();
  status("live: polling every " + CFG.poll_ms / 1000 + " s");
  timers.push(setInterval(async () => {
    const before = JSON.stringify(lastStep);
    try { await load(); } catch (e) { status(e.message, true); return; }
    if (JSON.stringify(lastStep) !== before) { listKeys(); draw(); status("updated at step " + Object.values(lastStep).join(", ")); }
  }, CFG.poll_ms));
}

// ---------- trajectories ----------
async function pageTrajectories() {
  const { runs } = await api("/api/runs");
  const withRoll = runs.filter(r => r.rollouts > 0);
  if (!withRoll.length) { $app.append(h("p", { text: "No trajectory files: training runs export them under rollouts/, ragen eval writes *.jsonl." })); return; }
  const p = qs();
  const runSel = h("select", { id: "traj-run" }, withRoll.map(r => h("option", { value: r.id, text: r.name })));
  runSel.value = p.get("run") || withRoll[0].id;
  const fileSel = h("select", { id: "traj-file" });
  const f = {
    env: h("input", { type: "number", id: "f-env", min: 0, placeholder: "any" }),
    group: h("input", { type: "number", id: "f-group", min: 0, placeholder: "any" }),
    tag: h("select", { id: "f-tag" }, h("option", { value: "", text: "any" })),
    success: h("select", { id: "f-success" }, ["any", "yes", "no"].map(v => h("option", { value: v, text: v }))),
    format_error: h("select", { id: "f-format" }, ["any", "yes", "no"].map(v => h("option", { value: v, text: v }))),
    reward_min: h("input", { type: "number", id: "f-rmin", step: "any", placeholder: "min" }),
    reward_max: h("input", { type: "number", id: "f-rmax", step: "any", placeholder: "max" }),
  };
  for (const [k, el] of Object.entries(f)) if (p.get(k)) el.value = p.get(k);
  const count = h("span", { class: "muted", id: "traj-count" });
  const list = h("div", { id: "traj-list" });
  $app.append(h("div", { class: "panel" },
    h("div", { class: "filters" }, h("label", {}, "run", runSel), h("label", {}, "file (step)", fileSel)),
    h("div", { class: "filters" },
      h("label", {}, "env", f.env), h("label", {}, "group", f.group), h("label", {}, "tag", f.tag),
      h("label", {}, "success", f.success), h("label", {}, "format error", f.format_error),
      h("label", {}, "reward", f.reward_min, "–", f.reward_max), count)), list);

  async function files() {
    const d = await api("/api/rollouts?run=" + encodeURIComponent(runSel.value));
    fileSel.replaceChildren(...d.files.map(x => h("option", { value: x.name, text: x.kind === "eval" ? x.name : x.kind + " · step " + x.step })));
    const want = p.get("file");
    if (want && d.files.some(x => x.name === want)) fileSel.value = want;
  }
  async function show() {
    const q = new URLSearchParams({ run: runSel.value, file: fileSel.value });
    for (const [k, el] of Object.entries(f)) if (el.value !== "" && el.value !== "any") q.set(k, el.value);
    setQS(q);
    const d = await api("/api/trajectories?" + q.toString());
    const tagNow = f.tag.value;
    f.tag.replaceChildren(h("option", { value: "", text: "any" }), ...d.tags.map(t => h("option", { value: t, text: t })));
    f.tag.value = tagNow;
    count.textContent = d.matched + " of " + d.total + " trajectories" + (d.matched > d.trajectories.length ? " (showing " + d.trajectories.length + ")" : "");
    list.replaceChildren(...d.trajectories.map((t, i) => trajView(t, i < 3)));
  }
  runSel.onchange = async () => { p.delete("file"); await files(); await show(); };
  fileSel.onchange = show;
  for (const el of Object.values(f)) el.onchange = show;
  await files();
  await show();
}

function trajView(t, open) {
  const head = h("summary", {},
    h("b", { text: t.id }), " · env " + t.env_id + " · group " + t.group_id + (t.tag ? " · " + t.tag : "") + " · " + t.num_turns + " turn(s) · reward " + fmt(t.total_reward),
    h("span", { class: "badge " + (t.success ? "ok" : "bad"), text: t.success ? "success" : "fail" }),
    t.format_error ? h("span", { class: "badge warn", text: "format error" }) : null);
  const turns = h("div", { class: "turns" });
  t.turns.forEach((u, i) => {
    const reward = u.reward !== null && u.reward !== undefined ? h("span", { class: "badge", title: "reward the export appended to this state", text: "reward " + fmt(u.reward) }) : null;
    turns.append(h("div", { class: "turn" },
      h("h3", {}, "turn " + (i + 1), reward, u.format_error ? h("span", { class: "badge warn", text: "format error" }) : null),
      h("div", { class: "muted", text: i === 0 ? "prompt / state" : "observation" }), h("pre", { class: "state", text: u.state }),
      u.response ? [
        u.think ? [h("div", { class: "muted", text: "thinking" }), h("pre", { class: "think", text: u.think })] : null,
        h("div", { class: "muted", text: "answer" }), h("pre", { class: "answer", text: u.answer || u.response }),
        h("div", {}, h("span", { class: "muted", text: "actions: " }), u.actions.length ? u.actions.map(a => h("span", { class: "chip", text: a })) : h("span", { class: "err", text: "none parsed" })),
      ] : null));
  });
  if (t.final) turns.append(h("div", { class: "turn" }, h("h3", { text: "final observation" }), h("pre", { class: "state", text: t.final })));
  const mets = Object.entries(t.metrics).sort();
  if (mets.length) turns.append(h("details", {}, h("summary", { class: "muted", text: "metrics" }), h("table", {}, mets.map(([k, v]) => h("tr", {}, h("td", { text: k }), h("td", { text: fmt(v) }))))));
  return h("details", { class: "traj", open: open }, head, turns);
}

// ---------- RAGEN-2 ----------
async function pageRagen2() {
  const { runs } = await api("/api/runs");
  if (!runs.length) { $app.append(h("p", { text: "No runs." })); return; }
  const p = qs();
  const runSel = h("select", { id: "r2-run" }, runs.map(r => h("option", { value: r.id, text: r.name })));
  runSel.value = p.get("run") || (runs.find(r => r.has_filter) || runs[0]).id;
  const stepSel = h("select", { id: "r2-step" });
  const charts = h("div", { class: "charts one", id: "r2-charts" });
  const groups = h("div", { id: "r2-groups" });
  $app.append(h("div", { class: "panel filters" }, h("label", {}, "run", runSel), h("label", {}, "step", stepSel)),
    h("div", { class: "row" },
      h("div", { class: "panel grow" }, h("h2", { text: "Rollout filter: groups kept and dropped" }), groups),
      h("div", { class: "panel", style: "width:540px;flex:none" }, h("h2", { text: "Collapse diagnostics next to success" }),
        h("p", { class: "legend-note", text: "MI near 0 and retrieval accuracy near chance mean the reasoning no longer depends on the input: the policy templates. Drag to zoom, double-click to reset." }), charts)));
  let steps = [];
  async function load() {
    const [m, fl] = await Promise.all([api("/api/metrics?run=" + encodeURIComponent(runSel.value)), api("/api/filter?run=" + encodeURIComponent(runSel.value))]);
    steps = fl.steps;
    charts.replaceChildren();
    const recs = m.records;
    const series = re => {
      const out = [];
      const keys = [...new Set(recs.flatMap(r => Object.keys(r.data)))].filter(k => re.test(k)).sort();
      keys.forEach((k, i) => {
        const xs = [], ys = [];
        for (const r of recs) if (k in r.data && r.data[k] !== null) { xs.push(r.step); ys.push(r.data[k]); }
        if (xs.length) out.push({ name: k, xs, ys, color: COLORS[i % COLORS.length] });
      });
      return out;
    };
    const plots = [
      ["success", /^(val-env|train)\/[^/]+\/success$/],
      ["MI estimate", /^collapse_(first_turn|trajectory)_sample\/mi_estimate$/],
      ["retrieval accuracy (and chance)", /^collapse_(first_turn|trajectory)_sample\/retrieval_(accuracy|chance_level)$/],
      ["reasoning entropy: conditional and marginal", /^collapse_(first_turn|trajectory)_sample\/(conditional_entropy_est|reasoning_entropy_est)$/],
      ["filter: kept ratio and in-group reward std", /^rollout\/(filter_kept_ratio|in_group_reward_std|chosen_in_group_reward_std)$/],
    ];
    for (const [title, re] of plots) {
      const s = series(re);
      if (s.length) lineChart(charts, title, s, { height: 170 });
      else charts.append(h("div", { class: "chart", "data-title": title }, h("div", { class: "title", text: title }),
        h("p", { class: "muted", text: "not logged by this run" + (title.includes("MI") || title.includes("entropy") || title.includes("retrieval") ? " (collapse_detection.first_turn_enabled / multi_turn_enabled, thinking on, context_window_mode full)" : "") })));
    }
    const want = parseInt(p.get("step") || "", 10);
    stepSel.replaceChildren(...steps.map((s, i) => h("option", { value: i, text: "step " + s.step + " · kept " + s.groups.filter(g => g.kept).length + "/" + s.groups.length })));
    const idx = steps.findIndex(s => s.step === want);
    stepSel.value = idx >= 0 ? idx : steps.length - 1;
    showStep();
  }
  function showStep() {
    groups.replaceChildren();
    const s = steps[parseInt(stepSel.value, 10)];
    if (!s) { groups.append(h("p", { class: "muted", text: "This run exported no filter decisions (rollouts/filter_step_N.json: written by ragen train and ragen demo)." })); return; }
    const q = new URLSearchParams({ run: runSel.value, step: s.step }); setQS(q);
    const maxStd = Math.max(1e-9, ...s.groups.map(g => g.reward_std || 0));
    const kept = s.groups.filter(g => g.kept).length;
    groups.append(h("p", {}, "Filter ", h("b", { text: s.strategy + " " + s.value }), " (" + s.type + ", score " + s.metric + ")" + (s.unchanged ? " keeps every group (no-filter setting)" : "") + ": ",
      h("b", { id: "r2-kept", text: kept + " kept" }), ", ", h("b", { id: "r2-dropped", text: (s.groups.length - kept) + " dropped" }), " of " + s.groups.length + " groups."));
    const rows = [...s.groups].sort((a, b) => (b.reward_std || 0) - (a.reward_std || 0));
    groups.append(h("table", { id: "r2-table" },
      h("tr", {}, ["group", "decision", "reward std", "", "rewards", "trajectories"].map(t => h("th", { text: t }))),
      rows.map(g => h("tr", { class: g.kept ? "kept" : "dropped" },
        h("td", { text: g.group_id }),
        h("td", {}, h("span", { class: "badge " + (g.kept ? "ok" : "bad"), text: g.kept ? "kept" : "dropped" })),
        h("td", { text: fmt(g.reward_std) }),
        h("td", { style: "width:120px" }, h("div", { class: "bar", style: "width:" + Math.round(100 * (g.reward_std || 0) / maxStd) + "%" })),
        h("td", { text: g.rewards.map(fmt).join(" ") }),
        h("td", {}, h("a", { href: "/trajectories?" + new URLSearchParams({ run: runSel.value, file: "train_step_" + s.step + ".jsonl", group: g.group_id }), text: "view" }))))));
  }
  runSel.onchange = () => { p.delete("step"); load(); };
  stepSel.onchange = showStep;
  await load();
}

// ---------- play ----------
async function pagePlay() {
  if (!CFG.play) { $app.append(h("p", { text: "Play is off: start ragen dash with env configs (it is on by default)." })); return; }
  const o = await api("/api/play/options");
  const tag = h("select", { id: "play-tag" }, o.tags.map(t => h("option", { value: t, text: t })));
  const pol = h("select", { id: "play-policy" }, o.policies.map(x => h("option", { value: x.id, text: x.label })));
  const seed = h("input", { type: "number", id: "play-seed", value: 0, min: 0 });
  const start = h("button", { class: "primary", id: "play-start", text: "New episode" });
  const step = h("button", { id: "play-step", text: "Step", disabled: true });
  const auto = h("button", { id: "play-auto", text: "Run", title: "play on without pressing Step (also for the next episode)" });
  const stop = h("button", { id: "play-stop", text: "Stop", disabled: true });
  const log = h("div", { id: "play-log" });
  const p = qs();
  // offer only the policies that can play the chosen env (random actions need a list of actions)
  const fitPolicies = () => {
    const ok = (o.tag_policies || {})[tag.value];
    for (const opt of pol.options) opt.disabled = ok ? !ok.includes(opt.value) : false;
    if (pol.selectedOptions[0] && pol.selectedOptions[0].disabled) {
      const first = [...pol.options].find(x => !x.disabled);
      if (first) pol.value = first.value;
    }
  };
  tag.onchange = fitPolicies;
  if (p.get("tag")) tag.value = p.get("tag");
  if (p.get("policy")) pol.value = p.get("policy");
  fitPolicies();
  if (p.get("seed")) seed.value = p.get("seed");
  $app.append(h("div", { class: "panel filters" }, h("label", {}, "env tag", tag), h("label", {}, "policy", pol), h("label", {}, "seed", seed), start, step, auto, stop), log);
  let sid = null, es = null, autoOn = false, cur = null, ended = false;
  async function post(path) { return api(path + (path.includes("?") ? "&" : "?") + "session=" + sid, { method: "POST" }); }
  start.onclick = async () => {
    if (es) es.close();
    if (sid) post("/api/play/stop").catch(() => {});
    log.replaceChildren();
    const d = await api("/api/play/start", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ tag: tag.value, seed: parseInt(seed.value || "0", 10), policy: pol.value, auto: autoOn }) });
    sid = d.session;
    ended = false;
    step.disabled = stop.disabled = false;
    es = new EventSource("/api/play/events?session=" + sid);
    const on = (t, f) => es.addEventListener(t, ev => f(JSON.parse(ev.data)));
    on("status", e => status(e.text));
    on("reset", e => log.append(h("div", { class: "panel" }, h("h3", { text: "initial state" }), h("pre", { class: "state", text: e.state }))));
    on("turn", e => {
      cur = { stream: h("pre", { class: "stream", id: "stream-" + e.turn }), box: null };
      cur.box = h("div", { class: "panel turn", "data-turn": e.turn }, h("h3", { text: "turn " + (e.turn + 1) }),
        h("details", {}, h("summary", { class: "muted", text: "prompt" }), h("pre", { text: e.prompt })),
        h("div", { class: "muted", text: "response (streaming)" }), cur.stream);
      log.append(cur.box);
      status("turn " + (e.turn + 1) + ": generating");
    });
    on("delta", e => { if (cur) cur.stream.textContent += e.text; });
    on("result", e => {
      if (!cur) return;
      cur.box.append(h("div", { class: "turn-result" },
        e.think ? [h("div", { class: "muted", text: "thinking" }), h("pre", { class: "think", text: e.think })] : null,
        h("div", {}, h("span", { class: "muted", text: "actions: " }), (e.actions || []).length ? e.actions.map(a => h("span", { class: "chip", text: a })) : h("span", { class: "err", text: "none parsed (format penalty)" })),
        h("div", {}, h("span", { class: "muted", text: "reward: " }), h("b", { class: "reward", text: fmt(e.reward) }), e.done ? h("span", { class: "badge", text: "episode over" }) : null),
        e.state ? [h("div", { class: "muted", text: "observation" }), h("pre", { class: "state", text: e.state })] : null));
      status("turn " + (e.turn + 1) + " done" + (autoOn ? "" : ": press Step for the next"));
    });
    on("done", e => {
      log.append(h("div", { class: "panel", id: "play-done" }, h("b", { text: "Episode finished: " }),
        h("span", { class: "badge " + (e.success ? "ok" : "bad"), text: e.success ? "success" : "fail" }),
        h("table", {}, Object.entries(e.metrics || {}).sort().map(([k, v]) => h("tr", {}, h("td", { text: k }), h("td", { text: fmt(v) }))))));
      status("episode finished");
      step.disabled = true;
      ended = true;
    });
    on("fail", e => { log.append(h("p", { class: "err", text: e.error })); status(e.error, true); });
    es.addEventListener("end", () => { es.close(); stop.disabled = true; });
    if (!autoOn) status("press Step to play a turn, Run to play on");
  };
  step.onclick = () => post("/api/play/step").catch(e => status(e.message, true));
  auto.onclick = async () => {
    autoOn = !autoOn;
    auto.textContent = autoOn ? "Pause" : "Run";
    if (sid && !ended) await post("/api/play/auto?on=" + (autoOn ? 1 : 0)).catch(e => status(e.message, true));
  };
  stop.onclick = async () => { if (es) es.close(); await post("/api/play/stop").catch(() => {}); stop.disabled = step.disabled = true; ended = true; status("stopped"); };
}

const PAGES = { runs: pageRuns, trajectories: pageTrajectories, ragen2: pageRagen2, play: pagePlay };

(async () => {
  try { CFG = await api("/api/config"); } catch (e) { status(e.message, true); }
  route();
})();
