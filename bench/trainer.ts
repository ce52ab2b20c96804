/**
 * Trainer throughput: forward_backward on the tree-packed batch against the per-path batch of the
 * same rollouts (CPU, the reference torch worker, the default small policy model).
 *
 *   node --import tsx bench/trainer.ts [--rollouts 8] [--threads 1] [--repeats 2]
 *   node --import tsx bench/trainer.ts --long 4096,16384,65536 [--threads 2] [--layouts tree,paths]
 *
 * Rollouts are synthetic agent-like trees: a shared prompt, then turns (generated call, context
 * tool result) with occasional branches (retries, subagents), so paths share long prefixes.
 * Reported: tokens through the model, seconds (median), trained tokens per second, and the ratio.
 * `--long`: one rollout of about each many tokens (a long agent context with three retries), one
 * forward_backward per layout, each in a fresh worker: seconds and the worker's peak resident
 * memory (VmHWM), tree-packed against per-path.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRng } from "../src/compiler/contract/rng.js";
import { TrainerWorker, trainerRoot } from "../src/runtime/training/trainer-process.js";
import type { PackedTree, TrainingBatch } from "../src/runtime/trajectories/batch.js";
import { unpackPaths } from "../src/runtime/trajectories/samples.js";

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

/** An agent rollout: prompt, then `turns` × (completion, tool result), branching with probability `fork`. */
/** An empty packed tree and a writer of segments: `n` random tokens below `prev` (generated ones trained). */
function treeWriter(rollout: string, rng: ReturnType<typeof createRng>, vocab: number, adv: number) {
  const t: PackedTree = {
    rollout,
    task: "bench",
    harness: "bench",
    tokens: [],
    parent: [],
    position: [],
    lossMask: [],
    rolloutLogprobs: [],
    advantages: [],
    branch: [],
  };
  const seg = (prev: number, n: number, gen: boolean): number => {
    for (let k = 0; k < n; k++) {
      const i = t.tokens.length;
      t.tokens.push(Math.floor(rng.next() * vocab));
      t.parent.push(prev);
      t.position.push(prev < 0 ? 0 : t.position[prev] + 1);
      t.lossMask.push(gen ? 1 : 0);
      t.rolloutLogprobs.push(gen ? -1 - rng.next() : 0);
      t.advantages.push(gen ? adv : 0);
      t.branch.push(-1);
      prev = i;
    }
    return prev;
  };
  return { t, seg };
}

function agentTree(seed: number, rollout: string, vocab: number, turns: number, fork: number): PackedTree {
  const rng = createRng(seed);
  const { t, seg } = treeWriter(rollout, rng, vocab, rng.next() * 2 - 1);
  const turn = (prev: number, left: number): void => {
    if (left === 0) return;
    const end = seg(seg(prev, 20 + Math.floor(rng.next() * 30), true), 30 + Math.floor(rng.next() * 50), false);
    const forked = rng.next() < fork;
    turn(end, left - 1); // depth-first: the path goes on before its sibling is packed
    if (forked) {
      const retry = seg(prev, 20 + Math.floor(rng.next() * 30), true); // a sibling completion (retry/subagent)
      turn(retry, Math.min(2, left - 1));
    }
  };
  turn(seg(-1, 150, false), turns);
  return t;
}

/** One long agent rollout of about `tokens` tokens whose path forks `forks` times (a retried call). */
function longTree(seed: number, tokens: number, forks: number, vocab: number): PackedTree {
  const rng = createRng(seed);
  const { t, seg } = treeWriter(`long-${tokens}`, rng, vocab, 0.5);
  // Depth-first: each retry's short continuation is packed before the main path goes on.
  const forkAt = Array.from({ length: forks }, (_, k) => Math.floor(((k + 1) * tokens) / (forks + 1)));
  let end = seg(-1, Math.min(1000, tokens >> 2), false);
  while (t.tokens.length < tokens) {
    if (forkAt.length > 0 && t.tokens.length >= forkAt[0]!) {
      forkAt.shift();
      seg(seg(end, 40, true), 200, false);
    }
    end = seg(seg(end, 20 + Math.floor(rng.next() * 30), true), 30 + Math.floor(rng.next() * 50), false);
  }
  return t;
}

/** The process's peak resident memory in MiB (VmHWM), or NaN where /proc is not there. */
function peakMiB(pid: number | undefined): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A fresh small policy (the worker's default shapes) in `modelDir`, without its ONNX export. */
function createModel(modelDir: string, extra: string[] = []): { vocabSize: number; parameters: number } {
  return JSON.parse(
    execFileSync("/usr/bin/python3", ["-m", "trainers.torch.init_model", "--out", modelDir, "--seed", "0", "--no-onnx", ...extra], {
      cwd: trainerRoot(),
      env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" },
      encoding: "utf8",
    }),
  ) as { vocabSize: number; parameters: number };
}

const algorithm: TrainingBatch["algorithm"] = {
  type: "GRPO",
  clip: { low: 0.2, high: 0.28 },
  klCoef: 0,
  entropyCoef: 0,
  correction: { type: "TIS", level: "token", cap: 2 },
  lossAggregation: "token-mean",
};
const longArg = process.argv.indexOf("--long");
if (longArg > 0) {
  await benchLong(process.argv[longArg + 1]!.split(",").map(Number));
  process.exit(0);
}

async function benchLong(sizes: number[]): Promise<void> {
  const threads = arg("threads", 2);
  const i = process.argv.indexOf("--layouts");
  const layouts = (i > 0 ? process.argv[i + 1]!.split(",") : ["tree", "paths"]).filter((l): l is "tree" | "paths" => l === "tree" || l === "paths");
  const root = mkdtempSync(join(tmpdir(), "reins-bench-trainer-"));
  const modelDir = join(root, "model");
  const info = createModel(modelDir, ["--max-len", String(Math.max(...sizes) * 2)]);
  console.log(`model: ${info.parameters} parameters, vocab ${info.vocabSize}; one rollout with 3 retries per size; torch threads ${threads}`);
  console.log("| tokens in the tree | layout | rows | tokens through the model | seconds | peak memory (MiB) | idle worker (MiB) |");
  console.log("|---|---|---|---|---|---|---|");
  try {
    for (const size of sizes) {
      const tree = longTree(size, size, 3, info.vocabSize);
      const out: Record<string, { seconds: number; peak: number }> = {};
      for (const layout of layouts) {
        const rows = layout === "tree" ? [tree] : unpackPaths(tree);
        const worker = await TrainerWorker.start({ modelDir, outDir: join(root, `out-${size}-${layout}`), threads, microBatchTokens: 8192 });
        try {
          const idle = peakMiB(worker.pid);
          const m = await worker.client.forwardBackward({
            formatVersion: 1,
            step: 0,
            layout,
            algorithm,
            composition: { pairs: [], harnesses: {} },
            ...(layout === "tree" ? { trees: rows } : { paths: rows }),
          } as TrainingBatch);
          out[layout] = { seconds: m.seconds, peak: peakMiB(worker.pid) };
          console.log(
            `| ${tree.tokens.length} | ${layout} | ${rows.length} | ${m.tokensProcessed} | ${m.seconds.toFixed(1)} | ${out[layout].peak.toFixed(0)} | ${idle.toFixed(0)} |`,
          );
        } finally {
          await worker.stop();
        }
      }
      if (out.paths && out.tree) {
        console.log(
          `| ${tree.tokens.length} | tree vs per-path | | | ${(out.paths.seconds / out.tree.seconds).toFixed(2)}x faster | ${(out.paths.peak / out.tree.peak).toFixed(2)}x less | |`,
        );
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const rollouts = arg("rollouts", 8);
const threads = arg("threads", 1);
const repeats = arg("repeats", 2);
const root = mkdtempSync(join(tmpdir(), "reins-bench-trainer-"));
const modelDir = join(root, "model");
const info = createModel(modelDir);
const trees = Array.from({ length: rollouts }, (_, k) => agentTree(100 + k, `r${k}`, info.vocabSize, 6, 0.35));
const batch = (layout: "tree" | "paths"): TrainingBatch => ({
  formatVersion: 1,
  step: 0,
  layout,
  algorithm,
  composition: { pairs: [], harnesses: {} },
  ...(layout === "tree" ? { trees } : { paths: trees.flatMap((t) => unpackPaths(t)) }),
});
const worker = await TrainerWorker.start({ modelDir, outDir: join(root, "out"), threads, microBatchTokens: 8192 });
const runs: Record<"tree" | "paths", { seconds: number[]; processed: number; trained: number; loss: number }> = {
  tree: { seconds: [], processed: 0, trained: 0, loss: 0 },
  paths: { seconds: [], processed: 0, trained: 0, loss: 0 },
};
try {
  for (let r = 0; r < repeats + 1; r++) {
    for (const layout of ["tree", "paths"] as const) {
      const m = await worker.client.forwardBackward(batch(layout));
      await worker.client.optimStep({ learningRate: 0 }); // clear the gradients, keep the weights
      if (r === 0) continue; // warm-up
      runs[layout].seconds.push(m.seconds);
      runs[layout].processed = m.tokensProcessed;
      runs[layout].trained = m.tokens;
      runs[layout].loss = m.loss;
    }
  }
} finally {
  await worker.stop();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `model: ${info.parameters} parameters, vocab ${info.vocabSize}; ${rollouts} rollouts, ${batch("paths").paths!.length} paths; torch threads ${threads}`,
);
console.log("| layout | tokens through the model | trained tokens | seconds (median) | trained tokens/s | loss |");
console.log("|---|---|---|---|---|---|");
for (const layout of ["tree", "paths"] as const) {
  const x = runs[layout];
  const s = median(x.seconds);
  console.log(`| ${layout} | ${x.processed} | ${x.trained} | ${s.toFixed(3)} | ${(x.trained / s).toFixed(0)} | ${x.loss.toFixed(6)} |`);
}
const speed = median(runs.paths.seconds) / median(runs.tree.seconds);
console.log(`tree-packed vs per-path: ${speed.toFixed(2)}x faster, ${(runs.paths.processed / runs.tree.processed).toFixed(2)}x fewer tokens through the model`);
