// The run viewer: hash routes #/ (overview), #/rollouts, #/rollout/<id>, #/group, #/compare.
// ?run=1 picks the second run directory. Every page reads the JSON API of this server. A
// multi-seed run directory's overview is its seeds table; two of them compare over their seeds.
import { el, put, getJson, pct, num, secs, link, table, verdict } from "./dom.js";
import { lineChart, chartRow } from "./charts.js";
import { renderRollout, renderRolloutColumn } from "./rollout.js";

const main = document.getElementById("main");
let runs = [];
let timer = null;

function runOf(query) {
  const r = Number(query.get("run") ?? "0");
  return Number.isInteger(r) && r >= 0 && r < runs.length ? r : 0;
}

function parseHash() {
  const h = location.hash.replace(/^#/, "") || "/";
  const [path, q] = h.split("?");
  const parts = path.split("/").filter(Boolean).map((p) => decodeURIComponent(p));
  return { page: parts[0] ?? "overview", parts: parts.slice(1), query: new URLSearchParams(q ?? "") };
}

function renderNav(page, run) {
  const items = [["overview", "Overview"], ["rollouts", "Rollouts"], ["compare", "Compare"]];
  put(document.getElementById("nav"), items.map(([p, label]) => el("a", { href: link(p === "overview" ? "" : p, [], run ? { run } : {}).replace("#//", "#/"), class: page === p ? "active" : null }, label)),
    runs.length > 1 ? runs.map((r, i) => el("a", { href: link(page === "rollout" ? "overview" : page, [], { run: i }), class: i === run ? "active" : null, title: r.dir }, `run ${i + 1}: ${r.name}`)) : null);
  put(document.getElementById("run-name"), runs[run] ? `${runs[run].name} — ${runs[run].dir}` : "");
}

async function route() {
  if (timer) { clearInterval(timer); timer = null; }
  const { page, parts, query } = parseHash();
  const run = runOf(query);
  renderNav(page, run);
  try {
    if ((page === "overview" || page === "") && runs[run]?.seeds) await seedsOverview(run);
    else if (page === "compare" && runs.length > 1 && runs.every((r) => r.seeds)) await seedsCompare();
    else if (page === "overview" || page === "") await overview(run);
    else if (page === "rollouts") await rollouts(run, query);
    else if (page === "rollout") await renderRollout(main, run, parts[0] ?? "", query);
    else if (page === "group") await group(run, query);
    else if (page === "compare") await compare(query);
    else put(main, el("p", {}, "No such page."));
  } catch (err) {
    put(main, el("p", { class: "fail" }, `Could not load: ${err.message}`));
  }
}

/** Poll a page while the run is still being written (no summary.json yet). */
function live(fn, finished) {
  put(document.getElementById("live"), finished ? "finished" : "live: refreshing every 5 s");
  if (!finished) timer = setInterval(fn, 5000);
}

// ── Overview ────────────────────────────────────────────────────────────────

async function overview(run) {
  const o = await getJson(`/api/runs/${run}/overview`);
  put(main, overviewView(o, run));
  live(async () => {
    const fresh = await getJson(`/api/runs/${run}/overview`);
    const y = window.scrollY;
    put(main, overviewView(fresh, run));
    window.scrollTo(0, y);
    if (fresh.finished) { clearInterval(timer); timer = null; put(document.getElementById("live"), "finished"); }
  }, o.finished);
}

function overviewView(o, run) {
  const train = o.phases.find((p) => p.phase === "train" || p.phase === "eval");
  const ho = o.summary?.heldOut;
  const cards = [
    card("rollouts", String(o.rollouts)),
    train ? card(`${train.phase} mean reward`, num(avg(train.byHarness, "meanReward"), 3), "mean-reward") : null,
    train ? card(`${train.phase} pass rate`, pct(weighted(train.byHarness, "passRate")), "pass-rate") : null,
    ho ? card("held-out before → after", `${pct(ho.before)} → ${pct(ho.after)}`, "held-out") : null,
    o.summary?.steps !== null && o.summary?.steps !== undefined ? card("steps", String(o.summary.steps)) : null,
    o.summary?.seconds ? card("wall time", secs(o.summary.seconds * 1000)) : null,
  ];
  const m = o.metrics;
  const series = (name, key) => ({ name, points: (m[key] ?? []).map((p) => ({ x: p.step, y: p.value })) });
  const harnesses = [...new Set(o.heldOut.flatMap((h) => Object.keys(h.byHarness)))];
  return el("div", { id: "overview" },
    el("h1", {}, o.run.name, " ", el("span", { class: "muted" }, o.run.kind)),
    (o.notes ?? []).map((n) => el("p", { class: "fail", "data-note": n.file }, n.message)),
    el("div", { class: "cards" }, cards),
    ho ? heldOutTable(ho) : null,
    el("h2", {}, "Curves"),
    chartRow(
      lineChart("reward per step", [{ name: "mean reward", points: o.steps.map((s) => ({ x: s.step, y: s.meanReward })) }, { name: "pass rate", points: o.steps.map((s) => ({ x: s.step, y: s.passRate })), dashed: true }], { yMin: 0, yMax: 1 }),
      lineChart("held-out pass rate", [{ name: "all", points: o.heldOut.map((h) => ({ x: h.step, y: h.passRate })) }, ...harnesses.map((n) => ({ name: n, points: o.heldOut.filter((h) => n in h.byHarness).map((h) => ({ x: h.step, y: h.byHarness[n] })), dashed: true }))], { yMin: 0, yMax: 1, yFormat: (v) => `${Math.round(v * 100)}%` }),
      lineChart("loss", [series("", "loss")]),
      lineChart("KL", [series("", "kl")]),
      lineChart("entropy", [series("", "entropy")]),
      lineChart("clip fraction", [series("", "clipFraction")]),
      lineChart("grad norm", [series("", "gradNorm")]),
      lineChart("step time (s)", [{ name: "", points: o.timing.filter((t) => t.step >= 0).map((t) => ({ x: t.step, y: t.seconds })) }]),
      lineChart("trainer tokens/s", [series("", "tokensPerSecond")]),
    ),
    o.phases.map((p) => phaseTables(p, run)),
    fidelity(o.summary?.fidelity),
  );
}

function card(k, v, id) {
  return el("div", { class: "card", "data-card": id ?? null }, el("div", { class: "k" }, k), el("div", { class: "v" }, v));
}

function avg(rows, key) {
  let s = 0, n = 0;
  for (const r of rows) if (r[key] !== null) { s += r[key] * r.rollouts; n += r.rollouts; }
  return n ? s / n : null;
}
const weighted = avg;

function heldOutTable(ho) {
  const rows = Object.entries(ho.byHarness ?? {}).map(([h, v]) => [h, pct(v.before), pct(v.after), String(v.n ?? ""), num(v.gainStdErrors, 2)]);
  return el("div", {},
    el("h2", {}, "Held-out pass rate, before and after training"),
    table([{ label: "harness" }, { label: "before", num: true }, { label: "after", num: true }, { label: "rollouts", num: true }, { label: "gain (std errors)", num: true }],
      [["all", pct(ho.before), pct(ho.after), "", ""], ...rows], { id: "held-out" }));
}

const PHASE_NAMES = { train: "Training rollouts", eval: "Evaluation rollouts", "held-out": "Held-out evaluations", sft: "SFT reference rollouts" };

function phaseTables(p, run) {
  const cols = (first) => [{ label: first }, { label: "rollouts", num: true }, { label: "mean reward", num: true }, { label: "pass@1", num: true }, { label: `pass@${p.k}`, num: true }];
  const row = (b) => [b.key, String(b.rollouts), num(b.meanReward), pct(b.passRate), pct(b.passAtK)];
  return el("section", { "data-phase": p.phase },
    el("h2", {}, `${PHASE_NAMES[p.phase] ?? p.phase} (${p.rollouts})`),
    el("div", { class: "grid" },
      el("div", {}, el("h3", {}, "per category"), table(cols("category"), p.byCategory.map(row))),
      el("div", {}, el("h3", {}, "per harness"), table(cols("harness"), p.byHarness.map(row))),
      el("div", {}, el("h3", {}, `per task (${p.byTask.length})`), table([...cols("task"), { label: "category" }], p.byTask.map((b) => [el("a", { href: link("rollouts", [], { run, task: b.key }) }, b.key), ...row(b).slice(1), b.category])))));
}

function fidelity(f) {
  if (!f?.byHarness) return el("div", {}, el("h2", {}, "Fidelity"), el("p", { class: "note" }, "No fidelity report (the run has not finished, or it predates the report)."));
  const harnesses = Object.keys(f.byHarness);
  const keys = [...new Set(harnesses.flatMap((h) => Object.entries(f.byHarness[h]).filter(([, v]) => typeof v === "number").map(([k]) => k)))];
  return el("div", {},
    el("h2", {}, "Fidelity (tokens the harness saw vs. tokens trained)"),
    table([{ label: "" }, ...harnesses.map((h) => ({ label: h, num: true }))], keys.map((k) => [k, ...harnesses.map((h) => num(f.byHarness[h][k], 3))]), { id: "fidelity" }));
}

// ── Seeds (a multi-seed run directory) ─────────────────────────────────────

const points = (x) => (x === null || x === undefined ? "–" : `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)}`);
const spread = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1));
const interval = (ci) => (ci ? `[${points(ci[0])}, ${points(ci[1])}]` : "–");

async function seedsOverview(run) {
  const s = await getJson("/api/seeds");
  const mine = s.runs.find((r) => r.index === run);
  const draw = (data) => put(main, el("div", { id: "seeds" }, seedsView(data.runs.find((r) => r.index === run))));
  draw(s);
  live(async () => {
    const fresh = await getJson("/api/seeds");
    draw(fresh);
    const r = fresh.runs.find((x) => x.index === run);
    if (r && r.pending.length === 0) { clearInterval(timer); timer = null; put(document.getElementById("live"), "finished"); }
  }, !mine || mine.pending.length === 0);
}

/** One multi-seed run: a row per seed, the mean and sd of each column, the gain's interval. */
function seedsView(r) {
  if (!r) return el("p", {}, "Not a multi-seed run directory.");
  const h = r.summary.heldOut;
  const rows = r.summary.seeds.map((x) => [String(x.seed), pct(x.heldOut.before), pct(x.heldOut.after), points(x.heldOut.gain), num(x.heldOut.gainStdErrors, 1), String(x.heldOut.n), String(x.steps), secs(x.seconds * 1000), `reins view ${x.runDir}`]);
  const pending = r.pending.map((seed) => [String(seed), "–", "–", "–", "–", "–", "–", "–", "not finished"]);
  const harnesses = Object.entries(h.byHarness);
  return el("section", { "data-seeds": String(r.index) },
    el("h1", {}, r.name, " ", el("span", { class: "muted" }, `${r.seeds.length} seeds`)),
    el("div", { class: "cards" },
      card("mean held-out gain (points)", points(h.gain.mean), "seeds-gain"),
      card("95% interval (t)", interval(h.gain.ci95), "seeds-ci"),
      card("seeds above 3 SE", `${h.seedsAbove3SE} of ${h.n}`, "seeds-above")),
    el("h2", {}, "Held-out pass rate per seed"),
    table([{ label: "seed" }, { label: "before", num: true }, { label: "after", num: true }, { label: "gain (points)", num: true }, { label: "gain (SE)", num: true }, { label: "rollouts", num: true }, { label: "steps", num: true }, { label: "time", num: true }, { label: "run" }],
      [...rows, ...pending,
        ["mean", pct(h.before.mean), pct(h.after.mean), points(h.gain.mean), "", "", "", "", ""],
        ["sd", spread(h.before.sd), spread(h.after.sd), spread(h.gain.sd), "", "", "", "", ""],
        ["95% CI", "", "", interval(h.gain.ci95), "", "", "", "", ""]],
      { id: `seeds-${r.index}`, class: "seeds" }),
    el("p", { class: "gain-line" }, gainLine("held-out gain", h)),
    harnesses.length > 1 ? el("div", {}, el("h3", {}, "per harness"), harnesses.map(([name, o]) => el("p", {}, gainLine(name, o)))) : null,
    el("p", { class: "muted" }, "Each seed is an ordinary run directory: open one with the command in its row."));
}

function gainLine(label, o) {
  if (o.n === 0) return `${label}: no seed has finished with a held-out evaluation before and after training`;
  const shown = o.gain.ci95 ? `sd ${spread(o.gain.sd)}, 95% CI ${interval(o.gain.ci95)}` : "one seed: no spread";
  return `${label} over ${o.n} seed${o.n === 1 ? "" : "s"}: ${points(o.gain.mean)} points (${shown}); ${o.seedsAbove3SE} of ${o.n} above 3 standard errors`;
}

async function seedsCompare() {
  const s = await getJson("/api/seeds");
  const d = s.difference;
  const diff = (label, x) => `${label}: ${points(x.difference)} points (Welch 95% CI ${interval(x.ci95)}${x.df ? `, ${x.df.toFixed(1)} degrees of freedom` : ""})`;
  put(main, el("div", { id: "compare" },
    el("h1", {}, "Compare two recipes over their seeds"),
    el("div", { class: "grid" }, s.runs.map((r) => el("div", {}, el("h2", {}, `run ${r.index + 1}`), seedsView(r)))),
    d ? el("div", { id: "seeds-difference" },
      el("h2", {}, "Difference of the mean held-out gains (run 2 − run 1)"),
      el("p", {}, diff("held-out gain", d)),
      Object.entries(d.byHarness).length > 1 ? Object.entries(d.byHarness).map(([h, x]) => el("p", {}, diff(h, x))) : null) : null));
}

// ── Rollouts table ──────────────────────────────────────────────────────────

const ROW_H = 24;
const PASSED = "__passed__";
const SHOWN = [["id", "rollout"], ["step", "step"], ["task", "task"], ["harness", "harness"], ["category", "category"], ["phase", "phase"], ["status", "status"], ["reward", "reward"], ["calls", "calls"], ["durationMs", "time"], ["failure", "failure"]];

async function rollouts(run, query) {
  const data = await getJson(`/api/runs/${run}/rollouts`);
  const col = Object.fromEntries(data.columns.map((c, i) => [c, i]));
  const rows = data.rows;
  const state = { step: query.get("step") ?? "", task: query.get("task") ?? "", harness: query.get("harness") ?? "", reward: query.get("reward") ?? "", failure: query.get("failure") ?? "", sort: "", desc: false };
  const distinct = (c) => [...new Set(rows.map((r) => r[col[c]]))].sort((a, b) => (typeof a === "number" ? a - b : String(a).localeCompare(String(b))));
  const select = (key, values, label) => el("label", {}, label, " ", el("select", { "data-filter": key, onchange: (e) => { state[key] = e.target.value; update(); } }, el("option", { value: "" }, "all"), values.map((v) => (String(v) === "" ? el("option", { value: PASSED, selected: state[key] === PASSED ? "selected" : null }, "(none: passed)") : el("option", { value: String(v), selected: String(v) === state[key] ? "selected" : null }, String(v))))));
  const count = el("span", { class: "muted", id: "count" });
  const body = el("div", { class: "vbody" });
  const spacer = el("div", {});
  body.append(spacer);
  const head = el("div", { class: "vhead" }, SHOWN.map(([c, label]) => el("div", { "data-sort": c, onclick: () => { state.desc = state.sort === c ? !state.desc : false; state.sort = c; update(); } }, label)));
  put(main, el("div", { id: "rollouts" },
    el("h1", {}, "Rollouts"),
    el("div", { class: "filters" },
      select("step", distinct("step"), "step"),
      el("label", {}, "task ", el("input", { "data-filter": "task", value: state.task, placeholder: "contains…", oninput: (e) => { state.task = e.target.value; update(); } })),
      select("harness", distinct("harness"), "harness"),
      el("label", {}, "reward ", el("select", { "data-filter": "reward", onchange: (e) => { state.reward = e.target.value; update(); } }, [["", "all"], ["1", "= 1"], ["partial", "0 < r < 1"], ["0", "= 0"], ["none", "no reward"]].map(([v, l]) => el("option", { value: v, selected: v === state.reward ? "selected" : null }, l)))),
      select("failure", distinct("failure"), "failure"),
      count),
    el("div", { class: "vtable" }, head, body)));
  let view = rows;
  const draw = () => {
    const first = Math.max(0, Math.floor(body.scrollTop / ROW_H) - 10);
    const last = Math.min(view.length, first + Math.ceil(body.clientHeight / ROW_H) + 20);
    const frag = [];
    for (let i = first; i < last; i++) {
      const r = view[i];
      const id = r[col.id];
      frag.push(el("div", { class: "vrow", style: null, "data-id": id, onclick: () => { location.hash = link("rollout", [id], { run }); } },
        SHOWN.map(([c]) => {
          const v = r[col[c]];
          if (c === "reward") return el("div", { class: r[col.passed] ? "pass" : "fail" }, v === null ? "–" : num(v));
          if (c === "durationMs") return el("div", {}, secs(v));
          return el("div", { title: String(v) }, String(v));
        })));
    }
    spacer.replaceChildren(...frag);
    frag.forEach((node, k) => { node.style.top = `${(first + k) * ROW_H}px`; });
  };
  const update = () => {
    const t = state.task.toLowerCase();
    view = rows.filter((r) =>
      (state.step === "" || String(r[col.step]) === state.step) &&
      (t === "" || String(r[col.task]).toLowerCase().includes(t)) &&
      (state.harness === "" || r[col.harness] === state.harness) &&
      (state.failure === "" || r[col.failure] === (state.failure === PASSED ? "" : state.failure)) &&
      (state.reward === "" || rewardMatch(r[col.reward], state.reward)));
    if (state.sort) {
      const i = col[state.sort];
      const dir = state.desc ? -1 : 1;
      view.sort((a, b) => dir * compareValues(a[i], b[i]));
    }
    spacer.style.height = `${view.length * ROW_H}px`;
    put(count, `${view.length} of ${rows.length} rollouts`);
    body.scrollTop = Math.min(body.scrollTop, Math.max(0, view.length * ROW_H - body.clientHeight));
    draw();
  };
  body.addEventListener("scroll", () => requestAnimationFrame(draw));
  update();
}

function rewardMatch(r, f) {
  if (f === "none") return r === null;
  if (r === null) return false;
  if (f === "1") return r >= 1;
  if (f === "0") return r <= 0;
  return r > 0 && r < 1;
}

function compareValues(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  return typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
}

// ── Group ───────────────────────────────────────────────────────────────────

async function group(run, query) {
  const g = await getJson(`/api/runs/${run}/group?${new URLSearchParams({ step: query.get("step") ?? "", task: query.get("task") ?? "", harness: query.get("harness") ?? "" })}`);
  const checks = (v) => {
    const results = Object.values(v?.parts ?? {}).flatMap((p) => (Array.isArray(p?.results) ? p.results : []));
    return results.map((c) => el("div", {}, c.pass ? "✓ " : "✗ ", String(c.name ?? c.type ?? "check"), c.pass ? "" : ` — ${String(c.reason ?? "")}`));
  };
  put(main, el("div", { id: "group" },
    el("h1", {}, `Group: step ${g.step} · ${g.task} · ${g.harness}`),
    el("p", { class: "muted" }, `${g.rollouts.length} siblings; advantages computed as the trainer does for this group (the plan's algorithm).`),
    el("div", { class: "grid" }, g.rollouts.map((r) => el("div", { class: "card", "data-sibling": r.id },
      el("div", {}, el("a", { href: link("rollout", [r.id], { run }) }, r.id)),
      el("div", { class: "v" }, r.reward === null ? "–" : num(r.reward)),
      el("div", {}, verdict(r.passed), ` · advantage ${num(r.advantage)}`),
      el("div", { class: "muted" }, `${r.calls} calls · ${secs(r.durationMs)} · ${r.status}`),
      r.failure ? el("div", { class: "fail" }, r.failure) : null,
      checks(r.verifier))))));
}

// ── Compare ─────────────────────────────────────────────────────────────────

async function compare(query) {
  const overviews = await Promise.all(runs.map((_, i) => getJson(`/api/runs/${i}/overview`)));
  const overlay = (title, pick, opts) => lineChart(title, overviews.map((o, i) => ({ name: `run ${i + 1}: ${o.run.name}`, points: pick(o) })), opts);
  const metric = (key) => (o) => (o.metrics[key] ?? []).map((p) => ({ x: p.step, y: p.value }));
  const a = query.get("a") ?? "";
  const b = query.get("b") ?? "";
  const ra = Number(query.get("ra") ?? "0");
  const rb = Number(query.get("rb") ?? (runs.length > 1 ? "1" : "0"));
  const form = el("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); const f = new FormData(e.target); location.hash = link("compare", [], { a: f.get("a"), ra: f.get("ra"), b: f.get("b"), rb: f.get("rb") }); } },
    el("label", {}, "rollout A ", el("input", { name: "a", value: a, size: 24 })), runSelect("ra", ra),
    el("label", {}, "rollout B ", el("input", { name: "b", value: b, size: 24 })), runSelect("rb", rb),
    el("button", { type: "submit" }, "compare"));
  const cols = el("div", { class: "side" });
  put(main, el("div", { id: "compare" },
    el("h1", {}, runs.length > 1 ? "Compare runs" : "Compare"),
    runs.length > 1 ? null : el("p", { class: "note" }, "One run directory was given: pass a second one (reins view RUN_DIR RUN_DIR2) to overlay two runs' curves."),
    chartRow(
      overlay("mean reward per step", (o) => o.steps.map((s) => ({ x: s.step, y: s.meanReward })), { yMin: 0, yMax: 1 }),
      overlay("held-out pass rate", (o) => o.heldOut.map((h) => ({ x: h.step, y: h.passRate })), { yMin: 0, yMax: 1 }),
      overlay("loss", metric("loss")), overlay("KL", metric("kl")), overlay("entropy", metric("entropy")), overlay("clip fraction", metric("clipFraction")), overlay("grad norm", metric("gradNorm"))),
    el("h2", {}, "Two rollouts side by side"),
    el("p", { class: "muted" }, "Pick two rollouts (of one task, for instance two siblings or the same task before and after training)."),
    form, cols));
  if (a && b) {
    const left = el("div", {}), right = el("div", {});
    put(cols, left, right);
    await Promise.all([renderRolloutColumn(left, ra, a), renderRolloutColumn(right, rb, b)]);
  }
}

function runSelect(name, value) {
  return el("select", { name }, runs.map((r, i) => el("option", { value: String(i), selected: i === value ? "selected" : null }, `run ${i + 1}`)));
}

runs = await getJson("/api/runs");
window.addEventListener("hashchange", route);
await route();
document.body.dataset.ready = "1";
