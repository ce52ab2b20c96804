/**
 * Shared test material for the trainer and the onnx engine: a tiny model made at run time by
 * trainers.torch.init_model, random tree-packed batches, and a worker starter.
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import type { ResolvedAlgorithm } from "../../src/compiler/contract/plan.js";
import { createRng, type Rng } from "../../src/compiler/contract/rng.js";
import { TrainerWorker, trainerRoot, type TrainerWorkerOptions } from "../../src/runtime/training/trainer-process.js";
import type { PackedTree, TrainingBatch } from "../../src/runtime/trajectories/batch.js";
import { unpackPaths } from "../../src/runtime/trajectories/samples.js";
import { tempDir } from "../temp.js";

export const PYTHON = "/usr/bin/python3";

export interface TinyModel {
  dir: string;
  version: string;
  vocabSize: number;
  specialTokens: Record<string, number>;
}

/** A 2-layer, d=64 model with the byte-level tokenizer (about 0.1M parameters). */
export function makeTinyModel(seed: number, parent = tempDir("reins-model-"), extra: string[] = []): TinyModel {
  const dir = join(parent, `model-${seed}`);
  const out = execFileSync(
    PYTHON,
    [
      "-m",
      "trainers.torch.init_model",
      "--out",
      dir,
      "--seed",
      String(seed),
      "--layers",
      "2",
      "--hidden",
      "64",
      "--heads",
      "4",
      "--intermediate",
      "128",
      ...extra,
    ],
    { cwd: trainerRoot(), env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" }, encoding: "utf8" },
  );
  const info = JSON.parse(out) as { version: string; vocabSize: number; specialTokens: Record<string, number> };
  return { dir, version: info.version, vocabSize: info.vocabSize, specialTokens: info.specialTokens };
}

export function startWorker(model: TinyModel, opts: Partial<TrainerWorkerOptions> = {}): Promise<TrainerWorker> {
  return TrainerWorker.start({
    modelDir: model.dir,
    outDir: tempDir("reins-trainer-"),
    python: PYTHON,
    threads: 1,
    learningRate: 1e-3,
    ...opts,
  });
}

/** Run a trainers.torch.checks operation. */
export function runCheck<T>(request: object): T {
  const out = execFileSync(PYTHON, ["-m", "trainers.torch.checks"], {
    cwd: trainerRoot(),
    env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1" },
    input: JSON.stringify(request),
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out) as T;
}

/**
 * trainers.torch.checks as one long-lived process (`--serve`): a file's requests share one import of
 * torch (and transformers), answered in order, a JSON line each.
 */
export interface ChecksProcess {
  ask<T>(request: object): Promise<T>;
  stop(): Promise<void>;
}

export function startChecks(python: string = PYTHON, env: Record<string, string> = {}): ChecksProcess {
  const child: ChildProcessWithoutNullStreams = spawn(python, ["-m", "trainers.torch.checks", "--serve"], {
    cwd: trainerRoot(),
    env: { ...process.env, PYTHONPATH: trainerRoot(), PYTHONDONTWRITEBYTECODE: "1", ...env },
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const waiting: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  const ended = new Promise<void>((resolve) => child.on("close", () => resolve()));
  void ended.then(() => {
    for (const w of waiting.splice(0)) w.reject(new Error(`trainers.torch.checks ended: ${stderr}`));
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    const w = waiting.shift();
    if (!w) return;
    const out = JSON.parse(line) as { error?: string };
    if (out.error !== undefined) w.reject(new Error(`trainers.torch.checks: ${out.error}`));
    else w.resolve(out);
  });
  return {
    ask<T>(request: object): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        waiting.push({ resolve: resolve as (v: unknown) => void, reject });
        child.stdin.write(`${JSON.stringify(request)}\n`);
      });
    },
    async stop() {
      child.stdin.end();
      await ended;
    },
  };
}

export const ALGORITHM: TrainingBatch["algorithm"] = {
  type: "GRPO",
  clip: { low: 0.2, high: 0.28 },
  klCoef: 0,
  entropyCoef: 0,
  correction: { type: "none" },
  lossAggregation: "token-mean",
};

function randInt(rng: Rng, n: number): number {
  return Math.floor(rng.next() * n);
}

/**
 * A random rollout tree in DFS order: a context prompt, then turns that branch. Generated
 * segments are trained (loss mask 1) with a per-rollout advantage; context segments are not.
 */
export function randomTree(rng: Rng, rollout: string, vocab: number, opts: { segments?: number; maxSeg?: number } = {}): PackedTree {
  const tokens: number[] = [];
  const parent: number[] = [];
  const position: number[] = [];
  const lossMask: number[] = [];
  const rolloutLogprobs: number[] = [];
  const advantages: number[] = [];
  const adv = rng.next() * 2 - 1;
  const maxSeg = opts.maxSeg ?? 6;
  const emit = (prev: number, n: number, generated: boolean): number => {
    for (let k = 0; k < n; k++) {
      const i = tokens.length;
      tokens.push(randInt(rng, vocab));
      parent.push(prev);
      position.push(prev < 0 ? 0 : position[prev] + 1);
      lossMask.push(generated && prev >= 0 ? 1 : 0);
      rolloutLogprobs.push(generated && prev >= 0 ? -rng.next() * 4 : 0);
      advantages.push(generated && prev >= 0 ? adv : 0);
      prev = i;
    }
    return prev;
  };
  // Each call spends `budget` segments: one here, the rest split between one or two children.
  const grow = (prev: number, generated: boolean, budget: number): void => {
    const end = emit(prev, 1 + randInt(rng, maxSeg), generated);
    const rest = budget - 1;
    if (rest <= 0) return;
    if (rest >= 2 && rng.next() < 0.4) {
      const first = 1 + randInt(rng, rest - 1);
      grow(end, !generated, first);
      grow(end, !generated, rest - first);
    } else {
      grow(end, !generated, rest);
    }
  };
  grow(-1, false, opts.segments ?? 8);
  return {
    rollout,
    task: "task",
    harness: "harness",
    tokens,
    parent,
    position,
    lossMask,
    rolloutLogprobs,
    advantages,
    branch: tokens.map(() => -1),
  };
}

export function treeBatch(trees: PackedTree[], algorithm: TrainingBatch["algorithm"] = ALGORITHM, step = 0): TrainingBatch {
  return { formatVersion: 1, step, layout: "tree", trees, algorithm, composition: { pairs: [], harnesses: {} } };
}

export function pathsBatch(trees: PackedTree[], algorithm: TrainingBatch["algorithm"] = ALGORITHM, step = 0): TrainingBatch {
  return { formatVersion: 1, step, layout: "paths", paths: trees.flatMap((t) => unpackPaths(t)), algorithm, composition: { pairs: [], harnesses: {} } };
}

export function randomTrees(seed: number, count: number, vocab: number, opts: { segments?: number; maxSeg?: number } = {}): PackedTree[] {
  const rng = createRng(seed);
  return Array.from({ length: count }, (_, k) => randomTree(rng, `r${k}`, vocab, opts));
}

export type Correction = ResolvedAlgorithm["correction"];
