/**
 * Trajectories benchmark: prefix-tree building and sample export throughput, and the training
 * work the tree saves (naiveTokens / trainedTokens, naiveTokens / treeTokens).
 *
 *   node --import tsx bench/trajectories.ts [CALLS.jsonl]
 *
 * Synthetic rollouts: append-only multi-turn chains with one failed-and-retried call and a
 * two-call subagent branch (see test/trajectories/synthetic.ts). With CALLS.jsonl, captured
 * records are measured the same way.
 */
import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { CallRecord } from "../src/runtime/records/index.js";
import { defaultAlgorithm } from "../src/compiler/index.js";
import { parseCallRecords } from "../src/runtime/records/index.js";
import type { RolloutAnalysis } from "../src/runtime/trajectories/rollout.js";
import { analyzeRollouts } from "../src/runtime/trajectories/rollout.js";
import { packTree, unpackPaths } from "../src/runtime/trajectories/samples.js";
import { benchRollout, seededRng } from "../test/trajectories/synthetic.js";

const DEFAULT_ALGORITHM = defaultAlgorithm();

interface Row {
  label: string;
  rollouts: number;
  calls: number;
  naive: number;
  tree: number;
  trained: number;
  buildMs: number;
  exportMs: number;
}

// Collect garbage between timed runs so one run's garbage is not billed to the next.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/**
 * CPU milliseconds (user + system) spent in f: unlike wall time, not inflated when other
 * processes on a shared machine preempt this one.
 */
function timed(f: () => unknown): number {
  gc();
  const t0 = process.cpuUsage();
  f();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

function exportAll(analyses: RolloutAnalysis[]): number {
  let tokens = 0;
  for (const a of analyses) {
    const tree = packTree(a.tree, a.filter, { rollout: a.rollout, task: "t", harness: "h" }, 1, a.ownership);
    for (const p of unpackPaths(tree)) tokens += p.tokens.length;
    tokens += tree.tokens.length;
  }
  return tokens;
}

/**
 * Measure several cases side by side: `reps` rounds, each timing every case once (build, then
 * export), keeping each case's fastest run, so load from other processes hits all sizes alike.
 */
function measureAll(cases: { label: string; records: CallRecord[] }[], reps: number): Row[] {
  const prepared = cases.map((c) => ({ ...c, analyses: analyzeRollouts(c.records, DEFAULT_ALGORITHM.filters) }));
  for (const p of prepared) exportAll(p.analyses);
  const build = prepared.map(() => Infinity);
  const exp = prepared.map(() => Infinity);
  for (let r = 0; r < reps; r++) {
    prepared.forEach((p, i) => {
      build[i] = Math.min(
        build[i],
        timed(() => analyzeRollouts(p.records, DEFAULT_ALGORITHM.filters)),
      );
      exp[i] = Math.min(
        exp[i],
        timed(() => exportAll(p.analyses)),
      );
    });
  }
  return prepared.map((p, i) => {
    const sum = (f: (a: RolloutAnalysis) => number) => p.analyses.reduce((s, a) => s + f(a), 0);
    return {
      label: p.label,
      rollouts: p.analyses.length,
      calls: p.records.length,
      naive: sum((a) => a.stats.naiveTokens),
      tree: sum((a) => a.stats.trainedTokens + a.stats.contextTokens),
      trained: sum((a) => a.stats.trainedTokens),
      buildMs: build[i],
      exportMs: exp[i],
    };
  });
}

function syntheticSet(turns: number, rollouts: number, seed: number): CallRecord[] {
  const rng = seededRng(seed);
  const out: CallRecord[] = [];
  for (let r = 0; r < rollouts; r++) out.push(...benchRollout(rng, `t${turns}-r${r}`, turns));
  return out;
}

function printTable(rows: Row[]): void {
  const header = [
    "rollouts",
    "calls",
    "naive tok",
    "tree tok",
    "naive/trained",
    "naive/tree",
    "build ms",
    "build Mtok/s",
    "ns/naive tok",
    "export ms",
    "export Mtok/s",
  ];
  const cells = rows.map((r) => [
    r.label,
    String(r.rollouts),
    String(r.calls),
    String(r.naive),
    String(r.tree),
    `${(r.naive / r.trained).toFixed(1)}x`,
    `${(r.naive / r.tree).toFixed(1)}x`,
    r.buildMs.toFixed(1),
    (r.naive / r.buildMs / 1000).toFixed(1),
    ((r.buildMs * 1e6) / r.naive).toFixed(1),
    r.exportMs.toFixed(1),
    (r.tree / r.exportMs / 1000).toFixed(1),
  ]);
  const all = [["", ...header], ...cells];
  const widths = all[0].map((_, i) => Math.max(...all.map((row) => row[i].length)));
  for (const row of all) console.log(row.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  "));
}

const reps = 7;
console.log("# trajectories: build (tree + lineage + filters) and export (packed tree + per-path samples)");
console.log("# times are CPU ms (process.cpuUsage), fastest of the rounds; cases are measured interleaved\n");
console.log("## synthetic multi-turn rollouts, by turns per rollout (tool results 30-300, completions 20-120 tokens)");
const byTurns = measureAll(
  [8, 16, 32, 64].map((turns) => ({ label: `${turns} turns`, records: syntheticSet(turns, Math.max(2, Math.round(256 / turns)), turns) })),
  reps,
);
printTable(byTurns);

console.log("\n## linear growth: the same 32-turn rollout shape, 1x to 8x as many rollouts");
const scale = measureAll(
  [8, 16, 32, 64].map((n) => ({ label: `${n} rollouts`, records: syntheticSet(32, n, 7) })),
  reps,
);
printTable(scale);
const first = scale[0];
const last = scale[scale.length - 1];
console.log(
  `\nnaive tokens x${(last.naive / first.naive).toFixed(2)} -> build time x${(last.buildMs / first.buildMs).toFixed(2)}, ` +
    `tree tokens x${(last.tree / first.tree).toFixed(2)} -> export time x${(last.exportMs / first.exportMs).toFixed(2)}`,
);

// Reading a record file is the CLI's real bottleneck (JSON), so it is measured on its own.
const largest = syntheticSet(32, 64, 7);
const jsonl = largest.map((r) => JSON.stringify(r)).join("\n");
const parseMs = Math.min(...[0, 1, 2].map(() => timed(() => parseCallRecords(jsonl, "bench.jsonl"))));
const naiveLargest = largest.reduce((t, r) => t + r.promptIds.length + r.completionIds.length, 0);
console.log(
  `parsing the 64-rollout record file (${(jsonl.length / 1e6).toFixed(0)} MB): ${parseMs.toFixed(0)} ms, ` +
    `${(naiveLargest / parseMs / 1000).toFixed(1)} Mtok/s; parse / build time = ${(parseMs / last.buildMs).toFixed(1)}x`,
);

const captured = process.argv[2];
console.log("\n## captured rollouts");
if (!captured) {
  console.log("none given (pass a proxy call record file: node --import tsx bench/trajectories.ts CALLS.jsonl)");
} else {
  const parsed = parseCallRecords(readFileSync(captured, "utf8"), captured);
  const errors = parsed.diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) {
    for (const d of errors.slice(0, 5)) console.log(`${d.file}:${d.line}: ${d.code}: ${d.message}`);
    process.exitCode = 1;
  } else {
    printTable(measureAll([{ label: captured.split("/").pop() ?? captured, records: parsed.value }], reps));
  }
}
