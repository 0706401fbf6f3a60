// agentgym view: the pages of one local viewer, drawn from its JSON endpoints (agentgym/viewer/api.py)
// or, in a --static copy, from the data files beside this one. Every text that comes from an episode
// goes into the page as text (textContent), never as markup.
"use strict";

const STATIC = typeof window.AGV_DATA === "object";
const PAGE = 50;
const SHOW = 2000; // characters of a text shown before "show more"
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];

// ----- elements -----
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = visible(v);
    else if (k === "style") e.style.cssText = v; // CSSOM: the page's policy refuses style attributes
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : visible(c));
  return e;
}

// control characters (an ANSI escape's ESC among them) shown as their visible symbols
function visible(value) {
  return String(value).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g,
    (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
}

function fmt(x, digits = 3) {
  return x === null || x === undefined ? "-" : typeof x === "number" ? x.toFixed(digits) : String(x);
}

function link(href, text, attrs) { return el("a", { href, text, ...(attrs || {}) }); }

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v !== null && v !== undefined) q.set(k, v);
  return q.toString();
}

// a long text: the first SHOW characters, and a button that shows the rest
function textBlock(text, cls) {
  const pre = el("pre", { class: cls || "" });
  text = text || "";
  if (text.length <= SHOW) { pre.textContent = visible(text); return pre; }
  const more = el("button", { class: "more" });
  let open = false;
  const draw = () => {
    pre.textContent = visible(open ? text : text.slice(0, SHOW) + " …");
    more.textContent = open ? "show less" : `show more (${text.length - SHOW} more chars)`;
    pre.append(el("br"), more);
  };
  more.addEventListener("click", () => { open = !open; draw(); });
  draw();
  return pre;
}

// ----- data: the server's endpoints, or the --static data files -----
const waiting = {};
function loadStatic(key) {
  if (window.AGV_DATA[key] !== undefined) return Promise.resolve(window.AGV_DATA[key]);
  if (!waiting[key]) {
    waiting[key] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "data/" + key + ".js";
      s.onload = () => resolve(window.AGV_DATA[key]);
      s.onerror = () => reject(new Error("missing data file data/" + key + ".js"));
      document.head.append(s);
    });
  }
  return waiting[key];
}

function filterRows(rows, p) {
  const task = (p.task || "").toLowerCase();
  const rmin = p.rmin === undefined || p.rmin === "" ? null : Number(p.rmin);
  const rmax = p.rmax === undefined || p.rmax === "" ? null : Number(p.rmax);
  let out = rows.filter((r) =>
    !((p.success === "1" || p.success === "0") && r.success !== (p.success === "1")) &&
    !(p.group && r.group !== p.group) &&
    !(task && !r.task_id.toLowerCase().includes(task)) &&
    !(rmin !== null && (r.return === null || r.return < rmin)) &&
    !(rmax !== null && (r.return === null || r.return > rmax)) &&
    ["agent", "env", "split"].every((k) => !p[k] || r[k] === p[k]));
  if (p.sort === "return" || p.sort === "-return") {
    const v = (r) => (r.return === null ? -Infinity : r.return);
    out = out.slice().sort((a, b) => (p.sort === "return" ? v(a) - v(b) : v(b) - v(a)));
  }
  return out;
}

const staticApi = {
  async sources() { return loadStatic("sources"); },
  async source(p) { return loadStatic(`s${p.src}/source`); },
  async curve(p) {
    const rows = await loadStatic(`s${p.src}/metrics`);
    return { key: p.key, points: rows.filter((r) => typeof r[p.key] === "number").map((r) => [r.step, r[p.key]]) };
  },
  async _file(p, file) {
    const src = await loadStatic(`s${p.src}/source`);
    const k = src.files.findIndex((f) => f.file === file);
    if (k < 0) throw new Error(`no episode file ${file}`);
    return loadStatic(`s${p.src}/f${k}`);
  },
  async episodes(p) {
    const src = await loadStatic(`s${p.src}/source`);
    const files = p.file ? [p.file] : src.files.filter((f) =>
      ["agent", "env", "split"].every((k) => !p[k] || f[k] === p[k])).map((f) => f.file);
    let rows = [];
    const skipped = { count: 0, lines: [] };
    for (const f of files) {
      const data = await this._file(p, f);
      rows = rows.concat(data.rows);
      const notes = data.skipped || { count: 0, lines: [] };
      skipped.count += notes.count;
      skipped.lines = skipped.lines.concat(notes.lines.map((n) => ({ file: f, ...n }))).slice(0, 20);
    }
    const matched = filterRows(rows, p);
    const offset = Number(p.offset || 0), limit = Math.min(Number(p.limit || PAGE), 500);
    return { total: matched.length, all: rows.length, offset, limit, rows: matched.slice(offset, offset + limit),
             groups: [...new Set(rows.map((r) => r.group))].slice(0, 1000), skipped };
  },
  async group(p) {
    const data = await this._file(p, p.file);
    const rows = data.rows.filter((r) => r.group === p.group);
    return { file: p.file, group: p.group, total: rows.length,
             episodes: rows.slice(0, 64).map((r) => ({ row: r, episode: data.episodes[r.id] })) };
  },
  async episode(p) {
    const src = await loadStatic(`s${p.src}/source`);
    const data = await this._file(p, p.file);
    const id = Number(p.id);
    if (!data.episodes[id]) throw new Error(`no episode ${id}`);
    return { source: src.name, kind: src.kind, file: p.file, row: data.rows[id], episode: data.episodes[id] };
  },
  async find(p) {
    const data = await this._file(p, p.file);
    const hit = data.rows.find((r) => r.task_id === p.task);
    return { id: hit ? hit.id : null };
  },
};

async function api(name, params) {
  if (STATIC) return staticApi[name](params || {});
  const r = await fetch(`api/${name}?${query(params || {})}`);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// ----- charts: inline SVG, one line per run -----
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function chart(title, series) {
  const W = 460, H = 200, L = 48, R = 10, T = 10, B = 24;
  const pts = series.flatMap((s) => s.points);
  const box = el("div", { class: "chart" }, el("h4", { text: title }));
  if (!pts.length) { box.append(el("p", { class: "dim", text: "no values" })); return box; }
  let [x0, x1] = [Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...pts.map((p) => p[1])), Math.max(...pts.map((p) => p[1]))];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const Y = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "plot" });
  s.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
  s.append(svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
  const label = (x, y, text, anchor) => {
    const t = svg("text", { x, y, "text-anchor": anchor, class: "tick" });
    t.textContent = text;
    s.append(t);
  };
  label(L - 4, T + 8, fmt(y1), "end");
  label(L - 4, H - B, fmt(y0), "end");
  label(L, H - 6, fmt(x0, 0), "start");
  label(W - R, H - 6, fmt(x1, 0), "end");
  series.forEach((ser, k) => {
    const colour = COLOURS[k % COLOURS.length];
    if (ser.points.length === 1) {
      s.append(svg("circle", { cx: X(ser.points[0][0]), cy: Y(ser.points[0][1]), r: 3, fill: colour }));
    } else {
      s.append(svg("polyline", { points: ser.points.map((p) => `${X(p[0])},${Y(p[1])}`).join(" "),
                                 fill: "none", stroke: colour, "stroke-width": 1.5 }));
    }
    for (const p of ser.points) {
      const dot = svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 6, class: "hit" });
      const tip = svg("title", {});
      tip.textContent = `${ser.name}: step ${p[0]}, ${fmt(p[1], 4)}`;
      dot.append(tip);
      s.append(dot);
    }
  });
  box.append(s, el("div", { class: "legend" }, ...series.map((ser, k) =>
    el("span", { style: `color:${COLOURS[k % COLOURS.length]}`, text: "● " + ser.name + "  " }))));
  return box;
}

async function curves(runs) {
  // runs: [{index, name}]; the metrics every run has in common first
  const described = await Promise.all(runs.map((r) => api("source", { src: r.index })));
  const keys = [...new Set(described.flatMap((d) => d.metrics || []))].sort();
  const defaults = ["reward/mean", "success/mean", "eval/success", "terms/format", "loss/policy", "kl"];
  let chosen = defaults.filter((k) => keys.includes(k));
  const area = el("div", { class: "charts", id: "charts" });
  const picker = el("select", { id: "metric" }, el("option", { value: "", text: "add a metric…" }),
    ...keys.map((k) => el("option", { value: k, text: k })));
  const draw = async () => {
    area.replaceChildren();
    const evals = {};
    described.forEach((d, k) => Object.entries(d.eval_curve || {}).forEach(([split, points]) => {
      (evals[split] = evals[split] || []).push({ name: runs[k].name, points });
    }));
    for (const [split, series] of Object.entries(evals)) {
      area.append(chart(`held-out success (${split}, evaluation files)`, series));
    }
    for (const key of chosen) {
      const got = await Promise.all(runs.map((r) => api("curve", { src: r.index, key })));
      area.append(chart(key, got.map((g, k) => ({ name: runs[k].name, points: g.points }))));
    }
  };
  picker.addEventListener("change", () => {
    if (picker.value && !chosen.includes(picker.value)) { chosen = chosen.concat([picker.value]); draw(); }
    picker.value = "";
  });
  await draw();
  return el("section", {}, el("h2", { text: "Learning curves" }), picker, area);
}

// ----- one episode as a transcript -----
function shade(value, scale) {
  if (value === null || value === undefined) return "";
  const a = Math.min(1, Math.abs(value) / scale) * 0.55;
  return value >= 0 ? `background: rgba(44,160,44,${a})` : `background: rgba(214,39,40,${a})`;
}

function termColour(v) {
  if (v === null || v === undefined) return "";
  const t = Math.max(0, Math.min(1, v));
  return `background: hsl(${Math.round(120 * t)}, 65%, 82%)`;
}

function chips(obj, cls, colour) {
  return Object.entries(obj || {}).map(([k, v]) =>
    el("span", { class: "chip " + cls, style: colour ? colour(v) : "",
                 text: `${k} ${typeof v === "number" ? fmt(v) : JSON.stringify(v)}` }));
}

function transcript(ep) {
  const box = el("div", { class: "transcript" });
  ep.turns.forEach((t, k) => {
    const facts = el("div", { class: "facts" },
      el("span", { class: "turnno", text: `turn ${k + 1}` }),
      el("span", { class: "chip", text: `reward ${fmt(t.reward)}` }),
      el("span", { class: "chip " + (t.action_valid === false ? "bad" : "good"),
                   text: t.action_valid === false ? "invalid" : t.action_valid === true ? "valid" : "validity ?" }),
      t.advantage === null ? null : el("span", { class: "chip adv", style: shade(t.advantage, 2),
                                                 text: `advantage ${fmt(t.advantage)}` }),
      ...chips(t.terms, "term", termColour), ...chips(t.signals, "signal"));
    const reply = textBlock(t.reply, "reply");
    if (t.advantage !== null) reply.style.cssText = shade(t.advantage, 2);
    box.append(el("div", { class: "turn" }, facts, el("div", { class: "who", text: "observation" }),
                  textBlock(t.observation, "obs"), el("div", { class: "who", text: "reply" }), reply,
                  ...Object.entries(t.notes || {}).map(([k, v]) => el("div", { class: "note", text: `${k}: ${v}` }))));
  });
  if (ep.final_observation) {
    box.append(el("div", { class: "turn" }, el("div", { class: "who", text: "final observation" }),
                  textBlock(ep.final_observation, "obs")));
  }
  return box;
}

const BRIEF = ["trained", "tag", "lag", "agent", "outcome"]; // what a side-by-side column shows of the rest
function episodeHead(ep, compact) {
  const meta = Object.entries(ep.meta || {}).filter(([k, v]) => v !== null && v !== undefined && v !== "" &&
                                                    (!compact || BRIEF.includes(k)));
  return el("div", { class: "head" },
    el("div", {}, el("b", { text: ep.task_id }), "  ",
       el("span", { class: "chip " + (ep.success ? "good" : "bad"), text: ep.success ? "success" : "failure" }),
       el("span", { class: "chip", text: `return ${fmt(ep.return)}` }),
       ep.advantage === null ? null : el("span", { class: "chip adv", style: shade(ep.advantage, 2),
                                                  text: `advantage ${fmt(ep.advantage)}` }),
       el("span", { class: "chip", text: `group ${ep.group}` })),
    el("div", { class: "meta" }, ...chips(ep.episode_terms, "term", termColour), ...chips(ep.signals, "signal"),
       ...meta.map(([k, v]) => el("span", { class: "chip dim", text: `${k} ${typeof v === "object" ? JSON.stringify(v) : v}` }))),
    ep.instruction ? el("div", { class: "instruction", text: ep.instruction }) : null,
    ep.system_prompt ? el("details", {}, el("summary", { text: "system prompt" }), textBlock(ep.system_prompt, "sys")) : null);
}

// ----- pages -----

async function pageHome(box) {
  const { sources } = await api("sources");
  box.append(el("h2", { text: "Sources" }),
    el("table", { class: "grid", id: "sources" },
      el("tr", {}, el("th", { text: "name" }), el("th", { text: "kind" }), el("th", { text: "path" })),
      ...sources.map((s) => el("tr", {}, el("td", {}, link(`#/src/${s.index}`, s.name)),
                               el("td", { text: s.kind }), el("td", { text: s.path })))));
  const runs = sources.filter((s) => s.kind === "run");
  if (runs.length) box.append(await curves(runs));
}

async function pageSource(i, box) {
  const s = await api("source", { src: i });
  box.append(el("h2", { text: `${s.name} (${s.kind})` }), el("p", { class: "dim", text: s.path }));
  if (s.left_out && s.left_out.length) {
    box.append(el("div", { class: "note", id: "left-out" }, el("b", { text: "left out: " }),
      ...s.left_out.map((f) => el("div", { text: `${f.file}: ${f.why}` }))));
  }
  if (s.kind === "run") {
    const train = s.files.filter((f) => !f.eval), evals = s.files.filter((f) => f.eval);
    box.append(el("p", {}, train.length ? link(`#/episodes/${i}?${query({ file: train[train.length - 1].file })}`,
                                                  "episodes of the last step") : "no saved training episodes"));
    box.append(await curves([{ index: i, name: s.name }]));
    const table = (title, files) => el("section", {}, el("h3", { text: title }),
      el("table", { class: "grid" }, el("tr", {}, ...["step", "split", "file", "size"].map((h) => el("th", { text: h }))),
        ...files.map((f) => el("tr", {}, el("td", { text: f.step }), el("td", { text: f.split }),
          el("td", {}, link(`#/episodes/${i}?${query({ file: f.file })}`, f.file)),
          el("td", { text: `${(f.bytes / 1024).toFixed(1)} KB` })))));
    if (evals.length) box.append(table("Held-out evaluations", evals));
    box.append(table("Training steps", train.slice().reverse()));
  } else {
    box.append(el("p", {}, link(`#/episodes/${i}`, "every episode")),
      el("table", { class: "grid", id: "board" },
        el("tr", {}, ...["agent", "env", "split", "episodes", "success", "return", "outcomes"].map((h) => el("th", { text: h }))),
        ...s.table.map((r) => el("tr", {},
          el("td", {}, link(`#/episodes/${i}?${query({ agent: r.agent, env: r.env, split: r.split })}`, r.agent)),
          el("td", { text: r.env }), el("td", { text: r.split }), el("td", { text: r.episodes }),
          el("td", { text: fmt(r.success) }), el("td", { text: fmt(r.return) }),
          el("td", { text: Object.entries(r.outcomes).map(([k, v]) => `${k} ${v}`).join(", ") })))));
  }
}

async function pageEpisodes(i, p, box) {
  const s = await api("source", { src: i });
  const board = s.kind === "board";
  if (!board && !p.file && s.files.length) p.file = s.files.filter((f) => !f.eval).concat(s.files).slice(-1)[0].file;
  const page = Number(p.page || 0);
  const res = await api("episodes", { ...p, src: i, offset: page * PAGE, limit: PAGE });
  const go = (changes) => { location.hash = `#/episodes/${i}?${query({ ...p, page: 0, ...changes })}`; };
  const select = (id, value, options) => el("select", { id },
    ...options.map(([v, t]) => { const o = el("option", { value: v, text: t }); if (v === (value || "")) o.selected = true; return o; }));
  const form = el("form", { id: "filters", class: "filters" });
  const fields = [];
  if (!board) fields.push(["file", "step", select("file", p.file, s.files.map((f) => [f.file, f.file]))]);
  else for (const k of ["agent", "env", "split"]) {
    fields.push([k, k, select(k, p[k], [["", "any"], ...[...new Set(s.files.map((f) => f[k]))].map((v) => [v, v])])]);
  }
  fields.push(["success", "success", select("success", p.success, [["", "any"], ["1", "yes"], ["0", "no"]])]);
  fields.push(["group", "group", select("group", p.group, [["", "any"], ...res.groups.map((g) => [g, g])])]);
  fields.push(["task", "task", el("input", { id: "task", value: p.task || "", size: 18, placeholder: "part of a task id" })]);
  fields.push(["rmin", "return ≥", el("input", { id: "rmin", value: p.rmin || "", size: 5 })]);
  fields.push(["rmax", "return ≤", el("input", { id: "rmax", value: p.rmax || "", size: 5 })]);
  fields.push(["sort", "order", select("sort", p.sort, [["", "as played"], ["-return", "return, high first"], ["return", "return, low first"]])]);
  for (const [, label, input] of fields) form.append(el("label", {}, label + " ", input), " ");
  form.append(el("button", { id: "apply", type: "submit", text: "apply" }));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    go(Object.fromEntries(fields.map(([k, , input]) => [k, input.value])));
  });
  box.append(el("h2", {}, link(`#/src/${i}`, s.name), board ? " — episodes" : ` — ${p.file || "no episodes"}`), form);
  const pages = Math.max(1, Math.ceil(res.total / PAGE));
  box.append(el("p", { id: "count", text: `${res.total} of ${res.all} episodes` + (res.total > PAGE ? `, page ${page + 1} of ${pages}` : "") }));
  if (res.skipped && res.skipped.count) box.append(skippedNote(res.skipped));
  const head = ["#", "task", "group", "success", "return", "turns", board ? "outcome" : "advantage", board ? "agent" : "trained",
                "first reply"];
  const table = el("table", { class: "grid", id: "rows" }, el("tr", {}, ...head.map((h) => el("th", { text: h }))));
  for (const r of res.rows) {
    const href = `#/episode/${i}?${query({ file: r.file, id: r.id })}`;
    table.append(el("tr", { class: r.success ? "ok" : "" },
      el("td", { text: r.id }), el("td", {}, link(href, r.task_id, { class: "open" })),
      el("td", {}, link(`#/group/${i}?${query({ file: r.file, group: r.group })}`, r.group, { class: "grp" })),
      el("td", { text: r.success ? "yes" : "no" }), el("td", { text: fmt(r.return) }), el("td", { text: r.turns }),
      board ? el("td", { text: r.outcome }) : el("td", { style: shade(r.advantage, 2), text: fmt(r.advantage) }),
      board ? el("td", { text: `${r.agent} · ${r.env} ${r.split}` }) : el("td", { text: r.trained === false ? "dropped" : (r.tag || "") }),
      el("td", { class: "first-reply", text: r.reply })));
  }
  box.append(table);
  const nav = el("div", { class: "pager" });
  if (page > 0) nav.append(el("button", { id: "prev", text: "← previous", onclick: () => { location.hash = `#/episodes/${i}?${query({ ...p, page: page - 1 })}`; } }));
  if ((page + 1) * PAGE < res.total) nav.append(el("button", { id: "next", text: "next →", onclick: () => { location.hash = `#/episodes/${i}?${query({ ...p, page: page + 1 })}`; } }));
  box.append(nav);
}

// the lines of the episode files that are not episodes (malformed JSON, a field of the wrong kind, too long)
function skippedNote(skipped) {
  const more = skipped.count - skipped.lines.length;
  return el("div", { class: "note", id: "skipped" },
    el("b", { text: `${skipped.count} line${skipped.count === 1 ? "" : "s"} skipped (not episodes): ` }),
    ...skipped.lines.map((n) => el("div", { text: `${n.file} line ${n.line}: ${n.why}` })),
    more > 0 ? el("div", { text: `and ${more} more` }) : null);
}

async function pageGroup(i, p, box) {
  const res = await api("group", { src: i, file: p.file, group: p.group });
  box.append(el("h2", { text: `group ${p.group} — ${p.file}` }),
    el("p", { class: "dim", text: `${res.total} episodes` + (res.total > res.episodes.length ? `, the first ${res.episodes.length} shown` : "") }));
  const cols = el("div", { class: "columns", id: "group-columns" });
  for (const { row, episode } of res.episodes) {
    cols.append(el("div", { class: "column" },
      el("div", {}, link(`#/episode/${i}?${query({ file: row.file, id: row.id })}`, `episode ${row.id}`)),
      episodeHead(episode, true), transcript(episode)));
  }
  box.append(cols);
}

async function compareForm(i, file, task, id) {
  const { sources } = await api("sources");
  const srcSel = el("select", { id: "cmp-src" }, ...sources.map((s) => el("option", { value: s.index, text: s.name })));
  srcSel.value = String(i);
  const fileSel = el("select", { id: "cmp-file" });
  const fill = async () => {
    const s = await api("source", { src: srcSel.value });
    fileSel.replaceChildren(...s.files.map((f) => el("option", { value: f.file, text: f.file })));
  };
  srcSel.addEventListener("change", fill);
  await fill();
  const status = el("span", { class: "dim" });
  const button = el("button", { id: "cmp-go", text: "compare", onclick: async () => {
    const hit = await api("find", { src: srcSel.value, file: fileSel.value, task });
    if (hit.id === null) { status.textContent = visible(` no episode of ${task} in ${fileSel.value}`); return; }
    location.hash = `#/compare?${query({ a: `${i}|${file}|${id}`, b: `${srcSel.value}|${fileSel.value}|${hit.id}` })}`;
  } });
  return el("div", { class: "filters", id: "cmp" }, "the same task in ", srcSel, " ", fileSel, " ", button, status);
}

async function pageEpisode(i, p, box) {
  const res = await api("episode", { src: i, file: p.file, id: p.id });
  box.append(el("h2", {}, link(`#/src/${i}`, res.source), " — ",
                   link(`#/episodes/${i}?${query({ file: res.kind === "run" ? res.file : "" })}`, res.file), ` — episode ${p.id}`));
  const form = await compareForm(i, res.file, res.episode.task_id, p.id);
  box.append(episodeHead(res.episode, false), form, transcript(res.episode));
}

async function pageCompare(p, box) {
  const sides = await Promise.all(["a", "b"].map((k) => {
    const [src, file, id] = (p[k] || "").split("|");
    return api("episode", { src, file, id });
  }));
  const cols = el("div", { class: "columns two", id: "compare" });
  for (const res of sides) {
    cols.append(el("div", { class: "column" }, el("h3", { text: `${res.source} — ${res.file}` }),
                   episodeHead(res.episode, true), transcript(res.episode)));
  }
  box.append(el("h2", { text: `task ${sides[0].episode.task_id}, side by side` }), cols);
}

let renders = 0;
async function render() {
  const me = ++renders;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = hash.split("?");
  const p = Object.fromEntries(new URLSearchParams(qs || ""));
  const parts = path.split("/").filter(Boolean);
  const box = el("div");
  let error = "";
  try {
    if (!parts.length) await pageHome(box);
    else if (parts[0] === "src") await pageSource(parts[1], box);
    else if (parts[0] === "episodes") await pageEpisodes(parts[1], p, box);
    else if (parts[0] === "group") await pageGroup(parts[1], p, box);
    else if (parts[0] === "episode") await pageEpisode(parts[1], p, box);
    else if (parts[0] === "compare") await pageCompare(p, box);
    else error = "no such page";
  } catch (e) {
    error = String(e.message || e);
  }
  if (me !== renders) return; // a later page was asked for meanwhile
  document.getElementById("main").replaceChildren(box);
  document.getElementById("error").textContent = visible(error);
  document.body.dataset.ready = hash;
}

window.addEventListener("hashchange", render);
render();
