/**
 * Long harness prompts on CPU: what a GRPO step through a real harness costs the tiny onnx policy
 * (the quickstart's shape: 4 layers, d=128, BPE with 400 merges), with and without reusing the
 * prompt prefix every rollout shares (a harness's system prompt, tool schema and reminders).
 *
 *   node --import tsx bench/long-prompts.ts [--prefix 3000] [--tasks 8] [--group 4] [--threads 1]
 *       [--concurrency 4] [--rollouts 64] [--contexts 2048,4096,8192] [--only engine|trainer|context]
 *
 * engine:  `tasks × group` rollouts, two calls each: the shared prefix plus a task instruction, then
 *          the same extended by the completion and a tool result; `concurrency` calls in flight.
 *          Prefix cache off vs on (same run), seconds and prompt tokens prefilled.
 * trainer: forward_backward on a GRPO batch of `rollouts` tree rows that share the prefix (a task
 *          instruction, then turns with branches), prefix sharing off vs on (same worker).
 * context: one prompt of each length in `contexts`: the engine's prefill and 32 decoded tokens, and
 *          the trainer's forward_backward of one row of that length (the policy's RoPE has no fixed
 *          limit; init_model writes max_position_embeddings 8192 by default, --max-len for more).
 * Ratios are within one run; times are medians of `--repeats` (default 1 for the engine and context
 * parts, 2 for the trainer).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRng, type Rng } from "../src/compiler/contract/rng.js";
import type { GenerateRequest } from "../src/runtime/engines/engine.js";
import { OnnxEngine } from "../src/runtime/engines/onnx.js";
import { TrainerWorker, trainerRoot } from "../src/runtime/training/trainer-process.js";
import type { PackedTree, TrainingBatch } from "../src/runtime/trajectories/batch.js";

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
function sarg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
}

const prefixLen = arg("prefix", 3000);
const tasks = arg("tasks", 8);
const group = arg("group", 4);
const threads = arg("threads", 1);
const concurrency = arg("concurrency", 4);
const rollouts = arg("rollouts", 64);
const contexts = sarg("contexts", "2048,4096,8192").split(",").map(Number);
const only = sarg("only", "");
const root = mkdtempSync(join(tmpdir(), "reins-bench-long-"));
const corpus = join(root, "corpus.txt");
writeFileSync(corpus, ["README.md", "docs/trajectories.md", "docs/sandboxes.md"].map((f) => readFileSync(f, "utf8")).join("\n"));
const modelDir = join(root, "model");
const info = JSON.parse(
  execFileSync("/usr/bin/python3", ["-m", "trainers.torch.init_model", "--out", modelDir, "--seed", "0", "--corpus", corpus, "--merges", "400"], {
    cwd: trainerRoot(),
    env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" },
    encoding: "utf8",
  }),
) as { parameters: number; vocabSize: number };
const vocab = info.vocabSize - 16; // ordinary ids only
const ids = (rng: Rng, n: number) => Array.from({ length: n }, () => Math.floor(rng.next() * vocab));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const shared = ids(createRng(1), prefixLen);
console.log(`model: ${info.parameters} parameters, vocab ${info.vocabSize} (4 layers, d=128, 400 BPE merges); threads ${threads}`);

async function engineStep(prefixCache: boolean): Promise<{ secs: number; prefilled: number; hits: number }> {
  const e = new OnnxEngine({
    type: "onnx",
    modelPath: modelDir,
    threads,
    parallel: 1,
    seed: 1,
    ...(prefixCache ? { prefixCache: { entries: 16, maxMiB: 512 } } : {}),
  });
  await e.ready();
  const instr = Array.from({ length: tasks }, (_, t) => ids(createRng(100 + t), 60));
  const calls = Array.from({ length: tasks * group }, (_, k) => ({ k, task: k % tasks }));
  let prefilled = 0;
  const req = (promptIds: number[], k: number, seq: number): GenerateRequest => ({
    promptIds,
    sampling: { temperature: 1, topP: 1, maxTokens: 32, stopIds: [] },
    rolloutId: `r${k}`,
    try: 1,
    seq,
  });
  const t0 = performance.now();
  let next = 0;
  const workerLoop = async () => {
    while (next < calls.length) {
      const { k, task } = calls[next++];
      const first = [...shared, ...instr[task]];
      const a = await e.generate(req(first, k, 0));
      const second = [...first, ...a.ids, ...ids(createRng(1000 + k), 100)];
      await e.generate(req(second, k, 1));
      prefilled += first.length + second.length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, workerLoop));
  const secs = (performance.now() - t0) / 1000;
  const stats = await e.prefixCacheStats();
  await e.close();
  return { secs, prefilled: stats ? stats.prefilledTokens : prefilled, hits: stats?.hits ?? 0 };
}

if (!only || only === "engine") {
  const off = await engineStep(false);
  const on = await engineStep(true);
  console.log(`\nengine: ${tasks * group} rollouts × 2 calls, ${prefixLen}-token shared prefix, 32 tokens generated a call, ${concurrency} in flight`);
  console.log("| prefix cache | seconds | prompt tokens prefilled | hits |\n|---|---|---|---|");
  console.log(`| off | ${off.secs.toFixed(2)} | ${off.prefilled} | – |`);
  console.log(`| on | ${on.secs.toFixed(2)} | ${on.prefilled} | ${on.hits}/${tasks * group * 2} |`);
  console.log(`prefix cache: ${(off.secs / on.secs).toFixed(2)}x faster, ${(off.prefilled / on.prefilled).toFixed(1)}x fewer prompt tokens prefilled`);
}

/** A GRPO rollout: the shared prefix, a task instruction, then turns (completion, tool result) with a retry branch now and then. */
function rolloutTree(k: number): PackedTree {
  const rng = createRng(500 + k);
  const adv = rng.next() * 2 - 1;
  const t: PackedTree = {
    rollout: `r${k}`,
    task: `t${k % tasks}`,
    harness: "bench",
    tokens: [],
    parent: [],
    position: [],
    lossMask: [],
    rolloutLogprobs: [],
    advantages: [],
    branch: [],
  };
  const seg = (prev: number, toks: number[], gen: boolean): number => {
    for (const tok of toks) {
      const i = t.tokens.length;
      t.tokens.push(tok);
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
  let end = seg(seg(-1, shared, false), ids(createRng(100 + (k % tasks)), 60), false);
  for (let turn = 0; turn < 3; turn++) {
    const start = end;
    end = seg(seg(start, ids(rng, 20 + Math.floor(rng.next() * 30)), true), ids(rng, 30 + Math.floor(rng.next() * 50)), false);
    if (rng.next() < 0.3) seg(start, ids(rng, 20 + Math.floor(rng.next() * 30)), true); // a retried completion
  }
  return t;
}

const algorithm: TrainingBatch["algorithm"] = {
  type: "GRPO",
  clip: { low: 0.2, high: 0.28 },
  klCoef: 0,
  entropyCoef: 0,
  correction: { type: "TIS", level: "token", cap: 2 },
  lossAggregation: "token-mean",
};
const batchOf = (trees: PackedTree[]): TrainingBatch => ({
  formatVersion: 1,
  step: 0,
  layout: "tree",
  algorithm,
  composition: { pairs: [], harnesses: {} },
  trees,
});

if (!only || only === "trainer" || only === "context") {
  const worker = await TrainerWorker.start({ modelDir, outDir: join(root, "out"), threads, microBatchTokens: 8192 });
  try {
    if (!only || only === "trainer") {
      const batch = batchOf(Array.from({ length: rollouts }, (_, k) => rolloutTree(k)));
      const repeats = arg("repeats", 2);
      const runs = { on: [] as number[], off: [] as number[] };
      const last: Record<string, { tokensProcessed: number; microBatches: number; loss: number; tokens: number }> = {};
      for (let r = 0; r < repeats; r++) {
        for (const share of [true, false]) {
          const m = await worker.client.forwardBackward(batch, { sharePrefix: share });
          await worker.client.optimStep({ learningRate: 0 });
          runs[share ? "on" : "off"].push(m.seconds);
          last[share ? "on" : "off"] = m;
        }
      }
      console.log(
        `\ntrainer: forward_backward, GRPO batch of ${rollouts} tree rows (${tasks} tasks), ${prefixLen}-token shared prefix, 60-token instruction, 3 turns`,
      );
      console.log("| prefix sharing | seconds (median) | tokens through the model | micro-batches | trained tokens | loss |\n|---|---|---|---|---|---|");
      for (const k of ["off", "on"] as const) {
        const m = last[k];
        console.log(`| ${k} | ${median(runs[k]).toFixed(2)} | ${m.tokensProcessed} | ${m.microBatches} | ${m.tokens} | ${m.loss.toFixed(7)} |`);
      }
      console.log(
        `prefix sharing: ${(median(runs.off) / median(runs.on)).toFixed(2)}x faster, ${(last.off.tokensProcessed / last.on.tokensProcessed).toFixed(1)}x fewer tokens through the model`,
      );
    }
    if (!only || only === "context") {
      console.log("\ncontext length: one prompt (engine: prefill + 32 decoded tokens, greedy; trainer: forward_backward of one row, 32 trained tokens)");
      console.log("| tokens | engine prefill + 32 tokens, s | engine decode, ms/token | trainer forward_backward, s |\n|---|---|---|---|");
      const e = new OnnxEngine({ type: "onnx", modelPath: modelDir, threads, parallel: 1, seed: 1 });
      await e.ready();
      for (const n of contexts) {
        const prompt = ids(createRng(n), n - 32);
        const t0 = performance.now();
        await e.generate({ promptIds: prompt, sampling: { temperature: 0, topP: 1, maxTokens: 1, stopIds: [] }, rolloutId: "c", try: 1, seq: 0 });
        const prefill = (performance.now() - t0) / 1000;
        const t1 = performance.now();
        await e.generate({ promptIds: prompt, sampling: { temperature: 0, topP: 1, maxTokens: 32, stopIds: [] }, rolloutId: "c", try: 1, seq: 0 });
        const full = (performance.now() - t1) / 1000;
        const rng = createRng(n + 1);
        const tree: PackedTree = {
          rollout: "c",
          task: "c",
          harness: "bench",
          tokens: ids(rng, n),
          parent: Array.from({ length: n }, (_, i) => i - 1),
          position: Array.from({ length: n }, (_, i) => i),
          lossMask: Array.from({ length: n }, (_, i) => (i >= n - 32 ? 1 : 0)),
          rolloutLogprobs: Array.from({ length: n }, (_, i) => (i >= n - 32 ? -1 : 0)),
          advantages: Array.from({ length: n }, (_, i) => (i >= n - 32 ? 0.5 : 0)),
          branch: Array.from({ length: n }, () => -1),
        };
        const m = await worker.client.forwardBackward(batchOf([tree]));
        await worker.client.optimStep({ learningRate: 0 });
        console.log(`| ${n} | ${full.toFixed(2)} | ${(((full - prefill) / 31) * 1000).toFixed(1)} | ${m.seconds.toFixed(2)} |`);
      }
      await e.close();
    }
  } finally {
    await worker.stop();
  }
}
rmSync(root, { recursive: true, force: true });
