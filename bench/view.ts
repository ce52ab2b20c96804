/**
 * Run viewer benchmark: how fast `reins view` shows a big run.
 *
 *   nice -n 19 node --import tsx bench/view.ts [--rollouts 10000] [--big-mb 100] [--keep DIR [--reuse]]
 *
 * Generates a run directory (test/view/run-fixture.ts, written with the run store's record
 * writer): 10,000 rollouts of small agent trees, plus one rollout whose calls take ~100 MB of
 * calls.jsonl (a long agent session: each call's prompt carries the whole history). Then, each on
 * a freshly started server (cold indexes):
 *   - the overview's JSON, and the first meaningful paint of the overview in chromium;
 *   - the rollouts table (10,000 rows) painted, and a jump to its last row;
 *   - the big rollout: its page's first paint (summary, verdicts, call list), then its call tree
 *     and token view (every call of the rollout read and parsed, the prefix tree built).
 * Figures are printed, never asserted.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { formatRecordLine } from "../src/runtime/records/index.js";
import { startViewServer } from "../src/runtime/index.js";
import { ViewApi } from "../src/runtime/view/api.js";
import { RunData } from "../src/runtime/view/run-data.js";
import { callRecord, writeRunFixture } from "../test/view/run-fixture.js";
import { rng } from "../src/compiler/contract/rng.js";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const ROLLOUTS = Number(arg("rollouts", "10000"));
const BIG_MB = Number(arg("big-mb", "100"));
const keep = arg("keep", "");
const dir = keep || join(tmpdir(), `reins-bench-view-${process.pid}`);
const BIG_ID = "s1-big-session";

/** A long session: each call's prompt is the whole history so far plus ~1,000 new context tokens. */
function writeBigRollout(target: number): { calls: number; tokens: number } {
  const random = rng(11);
  const ids = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 150_000));
  let history = ids(2000);
  let bytes = 0;
  let seq = 0;
  let tokens = 0;
  const file = join(dir, "calls.jsonl");
  while (bytes < target) {
    const completion = ids(200);
    const line = formatRecordLine(callRecord(BIG_ID, seq, history, completion, random));
    appendFileSync(file, line);
    bytes += line.length;
    tokens += history.length + completion.length;
    history = [...history, ...completion, ...ids(1000)];
    seq++;
  }
  const result = {
    id: BIG_ID,
    step: 1,
    task: "write-word-yes-000",
    harness: "claude-code",
    pair: "write-word-yes-000@claude-code",
    attempt: 9,
    category: "productivity",
    status: "ok",
    reward: 1,
    passed: true,
    tries: 1,
    durationMs: 3_600_000,
    phases: {},
    calls: seq,
    harnessExit: { code: 0, signal: null, timedOut: false },
    verifier: null,
    retries: [],
    finishedAt: new Date().toISOString(),
  };
  appendFileSync(join(dir, "rollouts.jsonl"), `${JSON.stringify(result)}\n`);
  return { calls: seq, tokens };
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
let cpu0 = 0;
/** Wall time since t0, and this process's CPU time since the last mark (the server runs in it). */
const ms = (t0: number) => {
  const out = `${(performance.now() - t0).toFixed(0)} ms wall, ${(cpuMs() - cpu0).toFixed(0)} ms CPU`;
  cpu0 = cpuMs();
  return out;
};
const mark = () => {
  cpu0 = cpuMs();
  return performance.now();
};

async function main() {
  let t0 = mark();
  const reuse = keep !== "" && process.argv.includes("--reuse") && existsSync(join(dir, "rollouts.jsonl"));
  if (!reuse) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  }
  // 2 held-out evaluations + steps × tasks × 2 harnesses × 4 attempts ≈ ROLLOUTS.
  const tasks = 50;
  const steps = Math.max(1, Math.round(ROLLOUTS / (tasks * 2 * 4)));
  const fixture = reuse ? { rollouts: readFileSync(join(dir, "rollouts.jsonl"), "utf8").trim().split("\n").slice(1) } : writeRunFixture(dir, { steps, tasks });
  const big = reuse ? { calls: 0, tokens: 0 } : writeBigRollout(BIG_MB * 1e6);
  const callsMb = statSync(join(dir, "calls.jsonl")).size / 1e6;
  console.log(
    `generated ${dir} in ${ms(t0)}: ${fixture.rollouts.length + 1} rollouts, calls.jsonl ${callsMb.toFixed(0)} MB, rollouts.jsonl ${(statSync(join(dir, "rollouts.jsonl")).size / 1e6).toFixed(1)} MB; big rollout: ${big.calls} calls, ${(big.tokens / 1e6).toFixed(1)} M tokens`,
  );

  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(600_000);
    const rows: [string, string][] = [];

    // The API's own cost, in this process with nothing in the background: CPU time per answer.
    {
      const api = new ViewApi([new RunData(dir)]);
      const none = new URLSearchParams();
      for (const [label, path] of [
        ["API overview, cold (rollouts, metrics, events indexed by streaming)", "/api/runs/0/overview"],
        ["API overview, warm (indexes refreshed: nothing appended)", "/api/runs/0/overview"],
        ["API rollouts table JSON (all rows)", "/api/runs/0/rollouts"],
        ["API big rollout summary, cold (no call index needed)", `/api/runs/0/rollouts/${BIG_ID}`],
        ["API big rollout call list, cold (calls.jsonl indexed by streaming)", `/api/runs/0/rollouts/${BIG_ID}/calls`],
        ["API big rollout tree, cold (its calls read and parsed, prefix tree built)", `/api/runs/0/rollouts/${BIG_ID}/tree`],
        ["API big rollout, one call's token page (tokenizer loaded)", `/api/runs/0/rollouts/${BIG_ID}/calls/0`],
        ["API big rollout, another call's token page", `/api/runs/0/rollouts/${BIG_ID}/calls/1`],
      ] as const) {
        t0 = mark();
        const answer = await api.answer(path, none);
        rows.push([`${label} [${(answer.body.length / 1e3).toFixed(0)} kB]`, ms(t0)]);
      }
    }

    // Overview: JSON on a fresh server (cold), again (warm), then first paint on another fresh server.
    let view = await startViewServer({ runDirs: [dir] });
    t0 = mark();
    await (await fetch(`${view.url}api/runs/0/overview`)).json();
    rows.push(["overview JSON, cold (indexes built by streaming)", ms(t0)]);
    t0 = mark();
    await (await fetch(`${view.url}api/runs/0/overview`)).json();
    rows.push(["overview JSON, warm (server indexing calls.jsonl in the background)", ms(t0)]);
    await view.close();
    view = await startViewServer({ runDirs: [dir] });
    t0 = mark();
    await page.goto(view.url);
    await page.waitForSelector("#overview #held-out");
    rows.push(["overview first meaningful paint in chromium, cold server", ms(t0)]);

    t0 = mark();
    await page.goto(`${view.url}#/rollouts`);
    await page.waitForSelector(".vrow");
    rows.push([`rollouts table painted (${fixture.rollouts.length + 1} rows)`, ms(t0)]);
    t0 = mark();
    // (Browser-side code as strings: this file is type-checked without the DOM library.)
    await page.evaluate(`(() => { const b = document.querySelector(".vbody"); b.scrollTop = b.scrollHeight; })()`);
    // Polled from here: waitForFunction compiles its predicate in the page, which the page's CSP forbids.
    const lastRowShown = `[...document.querySelectorAll(".vrow")].some((r) => r.dataset.id === ${JSON.stringify(BIG_ID)} || parseFloat(r.style.top) >= (${fixture.rollouts.length} - 40) * 24)`;
    while (!(await page.evaluate(lastRowShown))) await new Promise((r) => setTimeout(r, 10));
    rows.push(["rollouts table: jump to the last row and paint", ms(t0)]);
    rows.push(["rollouts table: row elements in the page", String(await page.locator(".vrow").count())]);
    await view.close();

    // The big rollout on a fresh server: first paint, then tree + tokens.
    view = await startViewServer({ runDirs: [dir] });
    t0 = mark();
    await page.goto(`${view.url}#/rollout/${BIG_ID}`);
    await page.waitForSelector('#rollout [data-card="reward"]', { timeout: 600_000 });
    rows.push([`big rollout (${callsMb.toFixed(0)} MB calls.jsonl, cold): first paint (summary, verdicts, call count)`, ms(t0)]);
    await page.waitForSelector("#tokens .tok", { timeout: 600_000 });
    rows.push(["big rollout: call tree and token view painted (all its calls parsed, prefix tree built)", ms(t0)]);
    t0 = mark();
    await page.goto(`${view.url}#/rollouts`);
    await page.waitForSelector(".vrow");
    await page.goto(`${view.url}#/rollout/${BIG_ID}`);
    await page.waitForSelector("#tokens .tok");
    rows.push(["big rollout again (analysis cached): tree and tokens painted", ms(t0)]);
    await view.close();

    const width = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  } finally {
    await browser.close();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
