/**
 * Learning smoke check: the onnx engine samples, the torch worker trains with GRPO, new weights are
 * published and hot-reloaded, and the reward goes up.
 *
 *   node --import tsx bench/learning-smoke.ts [--steps 12] [--threads 1]
 *
 * Toy task: after a chat prompt, the reward is the share of lowercase ASCII letters among the
 * first 16 completion tokens (a fresh byte-level model emits one about 10% of the time). Each step:
 * 4 prompts × 8 samples at temperature 1 → group advantages (GRPO, per prompt) → one tree per
 * rollout → forward_backward + optim_step → save_weights → engine.reload.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OnnxEngine } from "../src/runtime/engines/onnx.js";
import { TrainerWorker, trainerRoot } from "../src/runtime/training/trainer-process.js";
import { computeGroupAdvantages } from "../src/runtime/trajectories/advantages.js";
import type { PackedTree, TrainingBatch } from "../src/runtime/trajectories/batch.js";

export interface SmokeOptions {
  steps: number;
  prompts: number;
  groupSize: number;
  maxTokens: number;
  learningRate: number;
  threads: number;
  seed: number;
  log?: (line: string) => void;
}

export interface SmokeResult {
  rewards: number[];
  versions: string[];
  sampleSeconds: number;
  trainSeconds: number;
  publishSeconds: number;
  sampledTokens: number;
  totalSeconds: number;
}

const LETTER = (id: number) => id >= 97 && id <= 122;

function promptIds(k: number, specials: Record<string, number>): number[] {
  const bytes = (s: string) => [...Buffer.from(s, "utf8")];
  return [specials["<|im_start|>"], ...bytes(`user\nWrite a word (${k}).`), specials["<|im_end|>"], 10, specials["<|im_start|>"], ...bytes("assistant\n")];
}

function reward(ids: number[], stop: number, maxTokens: number): number {
  let n = 0;
  for (const id of ids) if (id !== stop && LETTER(id)) n++;
  return n / maxTokens;
}

function rolloutTree(rollout: string, prompt: number[], ids: number[], logprobs: number[], advantage: number): PackedTree {
  const tokens = [...prompt, ...ids];
  const n = tokens.length;
  return {
    rollout,
    task: rollout.split("-")[0],
    harness: "smoke",
    tokens,
    parent: tokens.map((_, i) => i - 1),
    position: tokens.map((_, i) => i),
    lossMask: tokens.map((_, i) => (i >= prompt.length ? 1 : 0)),
    rolloutLogprobs: tokens.map((_, i) => (i >= prompt.length ? logprobs[i - prompt.length] : 0)),
    advantages: tokens.map((_, i) => (i >= prompt.length ? advantage : 0)),
    branch: new Array(n).fill(-1),
  };
}

export async function runLearningSmoke(o: SmokeOptions): Promise<SmokeResult> {
  const log = o.log ?? (() => undefined);
  const t0 = performance.now();
  const root = mkdtempSync(join(tmpdir(), "reins-smoke-"));
  const modelDir = join(root, "model");
  const info = JSON.parse(
    execFileSync("/usr/bin/python3", ["-m", "trainers.torch.init_model", "--out", modelDir, "--seed", String(o.seed)], {
      cwd: trainerRoot(),
      env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" },
      encoding: "utf8",
    }),
  ) as { specialTokens: Record<string, number>; version: string };
  const stop = info.specialTokens["<|im_end|>"];
  const worker = await TrainerWorker.start({ modelDir, outDir: join(root, "trainer"), threads: o.threads, learningRate: o.learningRate, seed: o.seed });
  const engine = new OnnxEngine({ type: "onnx", modelPath: modelDir, threads: o.threads, seed: o.seed });
  const res: SmokeResult = { rewards: [], versions: [info.version], sampleSeconds: 0, trainSeconds: 0, publishSeconds: 0, sampledTokens: 0, totalSeconds: 0 };
  const algorithm: TrainingBatch["algorithm"] = {
    type: "GRPO",
    clip: { low: 0.2, high: 0.28 },
    klCoef: 0,
    entropyCoef: 0,
    correction: { type: "TIS", level: "token", cap: 2 },
    lossAggregation: "token-mean",
  };
  try {
    for (let step = 0; step <= o.steps; step++) {
      let t = performance.now();
      const jobs = [];
      for (let p = 0; p < o.prompts; p++) {
        const prompt = promptIds(p, info.specialTokens);
        for (let g = 0; g < o.groupSize; g++) {
          const rollout = `p${p}-s${step}-g${g}`;
          jobs.push(
            engine
              .generate({
                promptIds: prompt,
                sampling: { temperature: 1, topP: 1, maxTokens: o.maxTokens, stopIds: [stop] },
                rolloutId: rollout,
                try: 1,
                seq: 0,
              })
              .then((r) => ({ rollout, task: `p${p}`, prompt, r, reward: reward(r.ids, stop, o.maxTokens) })),
          );
        }
      }
      const samples = await Promise.all(jobs);
      res.sampleSeconds += (performance.now() - t) / 1000;
      res.sampledTokens += samples.reduce((s, x) => s + x.r.ids.length, 0);
      const mean = samples.reduce((s, x) => s + x.reward, 0) / samples.length;
      res.rewards.push(mean);
      log(`step ${step}: mean reward ${mean.toFixed(3)} (weights ${samples[0].r.weightsVersion})`);
      if (step === o.steps) break; // the last round only measures
      t = performance.now();
      const adv = computeGroupAdvantages(
        samples.map((s) => ({ rollout: s.rollout, task: s.task, harness: "smoke", reward: s.reward })),
        { estimator: "GRPO", normalizeStd: true, dropZeroVariance: true },
      );
      const trees = samples
        .filter((s) => adv.advantages.has(s.rollout) && s.r.ids.length > 0)
        .map((s) => rolloutTree(s.rollout, s.prompt, s.r.ids, s.r.logprobs, adv.advantages.get(s.rollout)!));
      if (trees.length > 0) {
        await worker.client.forwardBackward({ formatVersion: 1, step, layout: "tree", trees, algorithm, composition: { pairs: [], harnesses: {} } });
        await worker.client.optimStep();
      }
      res.trainSeconds += (performance.now() - t) / 1000;
      t = performance.now();
      const saved = await worker.client.saveWeights({ formats: ["onnx"] });
      await engine.reload(saved.version, saved.dir);
      res.versions.push(saved.version);
      res.publishSeconds += (performance.now() - t) / 1000;
    }
  } finally {
    await engine.close();
    await worker.stop();
    rmSync(root, { recursive: true, force: true });
  }
  res.totalSeconds = (performance.now() - t0) / 1000;
  return res;
}

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runLearningSmoke({
    steps: arg("steps", 12),
    prompts: 4,
    groupSize: 8,
    maxTokens: 16,
    learningRate: arg("lr", 3e-3),
    threads: arg("threads", 1),
    seed: arg("seed", 0),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  const first = r.rewards[0];
  const last = r.rewards[r.rewards.length - 1];
  console.log("| measure | value |\n|---|---|");
  console.log(`| reward before (step 0) | ${first.toFixed(3)} |`);
  console.log(`| reward after ${r.rewards.length - 1} GRPO steps | ${last.toFixed(3)} |`);
  console.log(`| after / before | ${(last / Math.max(first, 1e-9)).toFixed(2)}x |`);
  console.log(`| sampling s / training s / publish+reload s | ${r.sampleSeconds.toFixed(1)} / ${r.trainSeconds.toFixed(1)} / ${r.publishSeconds.toFixed(1)} |`);
  console.log(`| sampled tokens/s | ${(r.sampledTokens / r.sampleSeconds).toFixed(0)} |`);
  console.log(`| total s | ${r.totalSeconds.toFixed(1)} |`);
}
