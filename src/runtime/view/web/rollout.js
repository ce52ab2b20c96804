// One rollout: summary, verifier checks, the call tree (calls as nodes; dead leaves and filtered
// branches marked) and the token-level prefix tree, the token view with its mask and overlays,
// the conversation decoded from the recorded token ids, and the harness's stdout/stderr.
import { el, put, getJson, getText, pct, num, secs, link, table, verdict } from "./dom.js";

const api = (run, id) => `/api/runs/${run}/rollouts/${encodeURIComponent(id)}`;

export async function renderRollout(main, run, id, query) {
  const r = await getJson(api(run, id));
  const row = r.row;
  const treeBox = el("div", { id: "tree" }, el("p", { class: "muted" }, `Reading ${row.calls} calls…`));
  const callBox = el("div", { id: "call" });
  const out = el("div", { id: "output" });
  const diffBox = el("div", { id: "diff" });
  put(main, el("div", { id: "rollout", "data-rollout": row.id },
    el("h1", {}, "Rollout ", el("span", { id: "rollout-id" }, row.id)),
    el("div", { class: "cards" },
      card("reward", row.reward === null ? "–" : num(row.reward), "reward"),
      card("verdict", verdict(row.passed)),
      card("advantage", num(r.advantage), "advantage"),
      card("task", row.task), card("harness", row.harness), card("step", String(row.step)), card("phase", row.phase),
      card("status", row.status), card("time", secs(row.durationMs)), card("calls", String(row.calls))),
    el("p", {},
      el("a", { href: link("group", [], { run, step: row.step, task: row.task, harness: row.harness }) }, `group of ${r.siblings.length} (step ${row.step}, ${row.harness})`),
      " · siblings: ", r.siblings.map((s) => [el("a", { href: link("rollout", [s.id], { run }), class: s.passed ? "pass" : "fail" }, s.id), ` (${num(s.reward)}, adv ${num(s.advantage)}) `]),
      r.siblings.length > 1 ? el("a", { href: link("compare", [], { a: row.id, ra: run, b: r.siblings.find((s) => s.id !== row.id).id, rb: run }) }, "· compare with a sibling") : null),
    record(r.record),
    el("h2", {}, "Prefix tree"),
    treeBox,
    callBox,
    el("h2", {}, "Workspace diff"),
    diffBox,
    el("h2", {}, "Harness output"),
    out));
  loadOutput(out, run, row.id);
  loadDiff(diffBox, run, row.id);
  if (row.calls === 0) { put(treeBox, el("p", { class: "note" }, "No model calls recorded for this rollout.")); return; }
  const tree = await getJson(`${api(run, id)}/tree`);
  put(treeBox, treeView(tree, run, id, callBox));
  const want = Number(query.get("call") ?? "NaN");
  const first = tree.calls.find((c) => c.seq === want) ?? tree.calls[tree.calls.length - 1];
  await showCall(callBox, run, id, first.seq, tree);
}

function card(k, v, id) {
  return el("div", { class: "card", "data-card": id ?? null }, el("div", { class: "k" }, k), el("div", { class: "v" }, v));
}

function record(rec) {
  if (!rec) return null;
  const results = Object.entries(rec.verifier?.parts ?? {}).flatMap(([part, p]) => (Array.isArray(p?.results) ? p.results : []).map((c) => ({ part, ...c })));
  const phases = Object.entries(rec.phases ?? {}).map(([k, v]) => `${k.replace(/Ms$/, "")} ${secs(v)}`).join(" · ");
  return el("div", {},
    el("h2", {}, "Verifier"),
    rec.verifier ? el("p", { class: "muted" }, `status ${String(rec.verifier.status ?? "")} · reward ${num(rec.verifier.reward)} · pass threshold ${num(rec.verifier.passThreshold)}`) : el("p", { class: "note" }, "No verifier result (the rollout failed before verification)."),
    results.length ? table([{ label: "check" }, { label: "part" }, { label: "verdict" }, { label: "score", num: true }, { label: "message" }],
      results.map((c) => [String(c.name ?? c.type ?? ""), c.part, verdict(c.pass), num(c.score), String(c.reason ?? "")]), { id: "checks" }) : null,
    Object.entries(rec.verifier?.parts ?? {}).filter(([, p]) => !Array.isArray(p?.results)).map(([part, p]) => el("pre", {}, `${part}: ${JSON.stringify(p, null, 1)}`)),
    el("p", { class: "muted" }, `harness exit: ${rec.harnessExit ? `code ${rec.harnessExit.code ?? "–"}${rec.harnessExit.signal ? ` signal ${rec.harnessExit.signal}` : ""}${rec.harnessExit.timedOut ? " (timed out)" : ""}` : "–"} · tries ${rec.tries} · ${phases}`),
    rec.error ? el("p", { class: "fail" }, `${rec.error.code}: ${rec.error.message}`) : null,
    (rec.retries ?? []).length ? el("p", { class: "muted" }, `retried after: ${rec.retries.map((x) => x.code).join(", ")}`) : null,
    mcpCalls(rec.mcp));
}

/** The try's MCP servers and every tools/call reins relayed (recorded outside the sandbox). */
function mcpCalls(mcp) {
  if (!mcp) return null;
  const servers = mcp.servers.map((s) => `${s.name} (${s.where}; ${s.tools.length} tools${s.exit ? `; exited ${s.exit.code ?? s.exit.signal}` : ""})`).join(" · ");
  const short = (v) => { const t = v === undefined ? "" : JSON.stringify(v); return t.length > 240 ? `${t.slice(0, 239)}…` : t; };
  const answer = (c) => (c.error ? `error ${c.error.code}: ${c.error.message}` : short(c.result));
  return el("div", { id: "mcp" },
    el("h2", {}, "MCP calls"),
    el("p", { class: "muted" }, `servers: ${servers || "none"}`),
    mcp.calls.length
      ? table([{ label: "at", num: true }, { label: "server" }, { label: "tool" }, { label: "arguments" }, { label: "latency", num: true }, { label: "answer" }],
        mcp.calls.map((c) => [secs(c.atMs), c.server, c.tool, short(c.arguments), secs(c.latencyMs), answer(c)]), { id: "mcp-calls" })
      : el("p", { class: "note" }, "The harness made no MCP tool call."));
}

/** Calls as nodes: each call hangs under the call whose sequence its prompt continues. */
function treeView(tree, run, id, callBox) {
  const bySeq = new Map(tree.calls.map((c) => [c.seq, c]));
  const endsAt = new Map();
  for (const c of tree.calls) if (c.endNode >= 0 && !endsAt.has(c.endNode)) endsAt.set(c.endNode, c.seq);
  const nodeParent = new Map(tree.nodes.map((n) => [n.id, n.parent]));
  const nodeDepthEnd = new Map(tree.nodes.map((n) => [n.id, n.depth + n.tokens]));
  // The parent call: the earliest call ending on this call's path at its parent length.
  const parentOf = (c) => {
    if (c.parentLength === 0 || c.endNode < 0) return null;
    for (let n = c.endNode; n >= 0; n = nodeParent.get(n)) if (nodeDepthEnd.get(n) === c.parentLength && endsAt.has(n) && endsAt.get(n) < c.seq) return endsAt.get(n);
    return null;
  };
  const children = new Map();
  const roots = [];
  for (const c of tree.calls) {
    const p = parentOf(c);
    if (p === null) roots.push(c); else (children.get(p) ?? children.set(p, []).get(p)).push(c);
  }
  const item = (c) => {
    const cls = c.drop === "dead-leaf" || c.dead ? "dead" : c.drop === "class" ? "class" : c.failed ? "failed" : "";
    const why = c.drop === "dead-leaf" ? `dead leaf${c.deadReason ? ` (${c.deadReason})` : ""}` : c.drop === "class" ? `filtered: ${c.callClass}` : c.dead ? "dead leaf (kept)" : c.failed ? "failed call" : "";
    return el("li", {},
      el("span", { class: `call ${cls}`, "data-seq": c.seq, title: `${c.callClass} · ${c.finishReason} · ${c.weightsVersion}`, onclick: () => { showCall(callBox, run, id, c.seq, tree); } },
        `call ${c.seq}`, el("span", { class: "muted" }, ` · ${c.callClass} · +${c.promptLength - c.parentLength} ctx · ${c.completionLength} gen · ${c.finishReason}`),
        why ? el("span", { class: "fail" }, ` · ${why}`) : null),
      (children.get(c.seq) ?? []).length ? el("ul", {}, children.get(c.seq).map(item)) : null);
  };
  const s = tree.stats;
  return el("div", {},
    el("p", { class: "muted" }, `${s.calls} calls · ${s.nodes} tree nodes · ${s.leavesBefore} leaves (${s.leaves} kept) · ${s.droppedDeadLeaves} dead leaves dropped · ${s.droppedBranches} branches filtered · ${s.trainedTokens} trained / ${s.contextTokens} context tokens · naive ${s.naiveTokens}`,
      tree.dropped ? el("span", { class: "fail" }, ` · rollout dropped: ${tree.dropped}`) : null),
    el("p", { class: "legend" }, el("span", {}, el("span", { class: "swatch", style: null }), "kept"), el("span", { class: "fail" }, "red dashed: dead leaf"), el("span", {}, " orange dashed: filtered class")),
    el("div", { class: "calltree" }, el("ul", {}, roots.map(item))),
    el("details", {}, el("summary", {}, "token-level prefix tree (nodes are runs of tokens; green trained, grey context, red dashed dropped)"),
      el("img", { class: "tree", alt: "prefix tree", src: `${api(run, id)}/tree.svg`, loading: "lazy" })));
}

let overlay = "none";
// The call last asked for: an earlier request that answers later is dropped, not drawn over it.
let shown = 0;

async function showCall(box, run, id, seq, tree, from) {
  const mine = ++shown;
  document.querySelectorAll(".call.selected").forEach((n) => n.classList.remove("selected"));
  document.querySelector(`.call[data-seq="${seq}"]`)?.classList.add("selected");
  const c = tree.calls.find((x) => x.seq === seq);
  const start = from ?? Math.max(0, c.parentLength - 50);
  const page = await getJson(`${api(run, id)}/calls/${seq}?from=${start}`);
  if (mine !== shown) return;
  const tokens = el("div", { class: "tokens", id: "tokens" });
  const draw = () => {
    const spans = page.ids.map((tokenId, i) => {
      const lp = page.logprobs[i];
      const tlp = page.trainerLogprobs?.[i] ?? null;
      const ratio = lp !== null && tlp !== null ? Math.exp(tlp - lp) : null;
      const text = page.pieces ? page.pieces[i] : `⟨${tokenId}⟩`;
      const span = el("span", { class: `tok ${page.marks[i]}`, "data-ratio": ratio === null ? null : ratio.toFixed(4), title: `#${page.from + i} id ${tokenId} · ${page.marks[i]}${lp !== null ? ` · logprob ${lp.toFixed(3)} · p ${Math.exp(lp).toFixed(3)}` : ""}${tlp !== null ? ` · trainer logprob ${tlp.toFixed(3)} · ratio ${ratio.toFixed(3)}` : ""}${page.marks[i] === "trained" ? ` · advantage ${num(page.advantage)}` : ""}` }, text);
      if (overlay === "logprob" && lp !== null) span.style.backgroundColor = `rgba(192, 57, 43, ${Math.min(1, -lp / 4).toFixed(2)})`;
      if (overlay === "trainer" && tlp !== null) span.style.backgroundColor = `rgba(192, 57, 43, ${Math.min(1, -tlp / 4).toFixed(2)})`;
      // |log ratio| of 0.2 (a clip range) is full colour: blue where the trainer gives more, orange less.
      if (overlay === "ratio" && ratio !== null) span.style.backgroundColor = ratio >= 1 ? `rgba(21, 101, 192, ${Math.min(1, Math.log(ratio) / 0.2).toFixed(2)})` : `rgba(230, 81, 0, ${Math.min(1, -Math.log(ratio) / 0.2).toFixed(2)})`;
      if (overlay === "advantage" && page.marks[i] === "trained" && page.advantage !== null) span.style.backgroundColor = page.advantage >= 0 ? `rgba(46, 125, 50, ${Math.min(1, Math.abs(page.advantage) / 2 + 0.15).toFixed(2)})` : `rgba(192, 57, 43, ${Math.min(1, Math.abs(page.advantage) / 2 + 0.15).toFixed(2)})`;
      return span;
    });
    tokens.replaceChildren(...spans);
  };
  const btn = (label, value) => el("button", { "data-overlay": value, onclick: () => { overlay = value; draw(); } }, label);
  const nav = el("span", {},
    page.from > 0 ? el("button", { onclick: () => showCall(box, run, id, seq, tree, Math.max(0, page.from - 4000)) }, "◀ earlier") : null,
    ` tokens ${page.from}–${page.from + page.ids.length} of ${page.total} (prompt ${page.promptLength}) `,
    page.from + page.ids.length < page.total ? el("button", { onclick: () => showCall(box, run, id, seq, tree, page.from + page.ids.length) }, "later ▶") : null);
  put(box,
    el("h2", {}, `Call ${seq}`, el("span", { class: "muted" }, ` · ${c.callClass} · ${c.dialect} · ${c.finishReason} · weights ${c.weightsVersion} · ${secs(c.durationMs)}`)),
    c.error ? el("p", { class: "fail" }, `${c.error.kind}: ${c.error.message}`) : null,
    c.parse && !c.parse.ok ? el("p", { class: "fail" }, `completion did not parse: ${c.parse.error ?? ""} ${c.parse.detail ?? ""}`) : null,
    el("h3", {}, "Tokens"),
    el("p", { class: "legend" }, el("span", { class: "tok trained" }, "trained"), el("span", { class: "tok context" }, "context (masked)"), el("span", { class: "tok dropped" }, "dropped by a filter"),
      " overlay: ", btn("none", "none"), btn("sampled logprob", "logprob"), btn("trainer logprob", "trainer"), btn("ratio π_train/π_rollout", "ratio"), btn("advantage", "advantage")),
    page.trainerNote ? el("p", { class: "note", id: "trainer-note" }, page.trainerNote) : el("p", { class: "muted", id: "trainer-note" }, ratioSummary(page)),
    page.tokenizerMissing ? el("p", { class: "note" }, `Token ids only: ${page.tokenizerMissing}`) : null,
    nav, tokens,
    el("h3", {}, "Conversation (decoded from the recorded token ids)"),
    page.conversation ? el("div", { id: "conversation" },
      el("div", { class: "turn" }, el("div", { class: "who" }, c.parentLength > 0 ? `context added since the previous call (from token ${page.conversation.promptFrom})` : "prompt"), el("pre", {}, page.conversation.prompt.text)),
      el("div", { class: "turn" }, el("div", { class: "who" }, "model"), el("pre", {}, page.conversation.completion.text))) : el("p", { class: "note" }, "No tokenizer to decode with."));
  // The call shown, once its page is here (the tree marks the selected call before it arrives).
  box.setAttribute("data-seq", String(seq));
  draw();
}

/** Mean |log ratio| and the extremes over this page's trained tokens. */
function ratioSummary(page) {
  const logs = page.ids.map((_, i) => (page.logprobs[i] !== null && page.trainerLogprobs[i] !== null ? page.trainerLogprobs[i] - page.logprobs[i] : null)).filter((x) => x !== null);
  if (logs.length === 0) return "No trained token on this page.";
  const mean = logs.reduce((s, x) => s + Math.abs(x), 0) / logs.length;
  return `trainer vs sampler on ${logs.length} trained tokens here: mean |log ratio| ${mean.toFixed(4)}, ratio ${Math.exp(Math.min(...logs)).toFixed(3)}–${Math.exp(Math.max(...logs)).toFixed(3)}`;
}

async function loadDiff(box, run, id) {
  const d = await getJson(`${api(run, id)}/diff`);
  if (d.refused) { put(box, el("p", { class: "fail" }, d.refused.message)); return; }
  if (!d.recorded) { put(box, el("p", { class: "note" }, "No workspace diff was kept for this rollout (it failed before verification, or the run is from before diffs were kept).")); return; }
  const kb = (n) => (n === null ? "–" : n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`);
  put(box,
    el("p", { class: "muted" }, `${d.added} added · ${d.modified} modified · ${d.deleted} deleted · ${d.unchanged} unchanged (the task's files → what the verifier read)`),
    d.files.map((f) => el("details", { class: `diff-file ${f.status}`, open: d.files.length <= 8 ? "" : null },
      el("summary", {}, el("span", { class: `diff-status ${f.status}` }, f.status), ` ${f.path} `, el("span", { class: "muted" }, `${f.kind} · ${kb(f.bytesBefore)} → ${kb(f.bytesAfter)}${f.target !== undefined ? ` · → ${f.target}` : ""}`)),
      f.patch ? el("pre", { class: "patch" }, f.patch.split("\n").slice(2).map((line) => el("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "" }, `${line}\n`))) : el("p", { class: "note" }, f.omitted ? `no patch: ${f.omitted}` : ""))));
}

async function loadOutput(box, run, id) {
  const [stdout, stderr] = await Promise.all([getText(`${api(run, id)}/output/stdout`), getText(`${api(run, id)}/output/stderr`)]);
  put(box,
    el("h3", {}, "stdout"), stdout ? el("pre", { id: "stdout" }, stdout) : el("p", { class: "note" }, "empty or not kept"),
    el("h3", {}, "stderr"), stderr ? el("pre", { id: "stderr" }, stderr) : el("p", { class: "note" }, "empty or not kept"));
}

/** A compact column for Compare: summary, checks and the last call's conversation. */
export async function renderRolloutColumn(box, run, id) {
  let r;
  try { r = await getJson(api(run, id)); } catch { put(box, el("p", { class: "fail" }, `rollout ${id} not found in run ${run + 1}`)); return; }
  put(box, el("h3", {}, el("a", { href: link("rollout", [id], { run }) }, id), ` · run ${run + 1}`),
    el("p", {}, `${r.row.task} · ${r.row.harness} · step ${r.row.step} · reward ${num(r.row.reward)} · `, verdict(r.row.passed), ` · advantage ${num(r.advantage)}`),
    record(r.record));
  const list = await getJson(`${api(run, id)}/calls`);
  if (list.calls.length === 0) return;
  const last = list.calls[list.calls.length - 1];
  const page = await getJson(`${api(run, id)}/calls/${last.seq}?from=0`);
  box.append(el("h3", {}, `last call (${last.seq})`), page.conversation ? el("pre", {}, page.conversation.completion.text) : el("p", { class: "note" }, page.tokenizerMissing ?? ""));
}
