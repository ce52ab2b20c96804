/**
 * The trainer computes a prefix that the rows of a micro-batch share (a harness's system prompt
 * and tools across a step's rollouts) once — once for a run of consecutive micro-batches sharing
 * it — and gets the same losses and gradients as computing it in every row: tree rows with branches, per-path rows, a rollout whose trained tokens start
 * inside the common prefix (the shared part stops before them), and a batch with no common
 * prefix (exactly as before).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createRng } from "../../src/compiler/contract/rng.js";
import type { PackedTree } from "../../src/runtime/trajectories/batch.js";
import { makeTinyModel, pathsBatch, randomTrees, runCheck, treeBatch, type TinyModel } from "./helpers.js";

interface Case {
  sharedLoss: number;
  plainLoss: number;
  lossDiff: number;
  maxGradDiff: number;
  maxGrad: number;
  sharedTokens: number;
  plainTokens: number;
  sharedMicroBatches: number;
  plainMicroBatches: number;
}

let model: TinyModel;
beforeAll(() => {
  model = makeTinyModel(11);
});

/** `tree` with `prefix` prepended as a chain from the root (context tokens unless `trainedFrom`). */
function withPrefix(tree: PackedTree, prefix: number[], trainedFrom = Infinity): PackedTree {
  const p = prefix.length;
  return {
    ...tree,
    tokens: [...prefix, ...tree.tokens],
    parent: [...prefix.map((_, i) => i - 1), ...tree.parent.map((x) => (x < 0 ? p - 1 : x + p))],
    position: [...prefix.map((_, i) => i), ...tree.position.map((x) => x + p)],
    lossMask: [...prefix.map((_, i) => (i >= trainedFrom ? 1 : 0)), ...tree.lossMask],
    rolloutLogprobs: [...prefix.map((_, i) => (i >= trainedFrom ? -1.5 : 0)), ...tree.rolloutLogprobs],
    advantages: [...prefix.map((_, i) => (i >= trainedFrom ? 0.7 : 0)), ...tree.advantages],
    branch: [...prefix.map(() => -1), ...tree.branch],
  };
}

function check(batches: object[]): Case[] {
  return runCheck<{ cases: Case[] }>({ op: "prefix-sharing", modelDir: model.dir, cases: batches }).cases;
}

function expectSameTraining(c: Case): void {
  expect(c.lossDiff).toBeLessThan(1e-5 * Math.max(1, Math.abs(c.plainLoss)));
  expect(c.maxGradDiff).toBeLessThan(1e-5 * Math.max(1, c.maxGrad));
  expect(c.maxGrad).toBeGreaterThan(0);
}

describe("a prefix shared by a micro-batch's rows", () => {
  it("is computed once, with the same losses and gradients, for tree rows, path rows and a prefix holding trained tokens", () => {
    const rng = createRng(3);
    const prefix = Array.from({ length: 400 }, () => Math.floor(rng.next() * (model.vocabSize - 8)));
    const trees = randomTrees(21, 6, model.vocabSize, { segments: 10, maxSeg: 12 }).map((t) => withPrefix(t, prefix));
    // A rollout trained from position 250 on (inside what the others share): the shared part stops there.
    const early = withPrefix(randomTrees(22, 1, model.vocabSize, { segments: 6 })[0], prefix, 250);
    const [tree, paths, mixed] = check([treeBatch(trees), pathsBatch(trees), treeBatch([...trees.slice(0, 3), { ...early, rollout: "early" }])]);
    for (const c of [tree, paths, mixed]) expectSameTraining(c);
    // 6 rollouts in one micro-batch: the 400-token prefix goes through the model once, not 6 times.
    expect(tree.plainTokens - tree.sharedTokens).toBe(5 * 400);
    expect(paths.sharedTokens).toBeLessThan(paths.plainTokens / 2);
    expect(mixed.plainTokens - mixed.sharedTokens).toBeLessThanOrEqual(3 * 250);
    expect(mixed.plainTokens - mixed.sharedTokens).toBeGreaterThan(0);
  });

  it("leaves a batch with no common prefix as it was", () => {
    const [c] = check([treeBatch(randomTrees(31, 8, model.vocabSize, { segments: 8 }))]);
    expect(c.lossDiff).toBe(0);
    expect(c.maxGradDiff).toBe(0);
    expect(c.sharedTokens).toBe(c.plainTokens);
    expect(c.sharedMicroBatches).toBe(c.plainMicroBatches);
  });

  it("groups rollouts sharing a prefix into fewer micro-batches, counting the prefix once", () => {
    const rng = createRng(4);
    const prefix = Array.from({ length: 600 }, () => Math.floor(rng.next() * (model.vocabSize - 8)));
    const trees = randomTrees(41, 8, model.vocabSize, { segments: 4, maxSeg: 8 }).map((t) => withPrefix(t, prefix));
    const [c] = runCheck<{ cases: Case[] }>({ op: "prefix-sharing", modelDir: model.dir, microBatchTokens: 2048, cases: [treeBatch(trees)] }).cases;
    expectSameTraining(c);
    expect(c.plainMicroBatches).toBeGreaterThanOrEqual(3); // 8 rows of ~620 tokens, 2048 tokens a micro-batch
    expect(c.sharedMicroBatches).toBe(1); // 600 + 8 × ~20 suffix tokens
    // Few attention cells a micro-batch: several micro-batches, one prefix computed for all of them.
    const [few] = runCheck<{ cases: Case[] }>({ op: "prefix-sharing", modelDir: model.dir, microBatchCells: 40_000, cases: [treeBatch(trees)] }).cases;
    expectSameTraining(few);
    expect(few.plainMicroBatches).toBe(8);
    expect(few.sharedMicroBatches).toBeGreaterThanOrEqual(3);
    expect(few.plainTokens - few.sharedTokens).toBe(7 * 600);
  });

  it("gives the same losses and gradients with attention in query chunks (long rows on CPU) as with whole score matrices", () => {
    const rng = createRng(5);
    const prefix = Array.from({ length: 300 }, () => Math.floor(rng.next() * (model.vocabSize - 8)));
    const trees = randomTrees(51, 4, model.vocabSize, { segments: 10, maxSeg: 12 }).map((t) => withPrefix(t, prefix));
    const cases = runCheck<{ cases: { lossDiff: number; maxGradDiff: number; maxGrad: number; wholeLoss: number }[] }>({
      op: "chunked-attention",
      modelDir: model.dir,
      chunkCells: 50_000,
      cases: [treeBatch(trees), pathsBatch(trees)],
    }).cases;
    for (const c of cases) {
      expect(c.lossDiff).toBeLessThan(1e-5 * Math.max(1, Math.abs(c.wholeLoss)));
      expect(c.maxGradDiff).toBeLessThan(1e-5 * Math.max(1, c.maxGrad));
      expect(c.maxGrad).toBeGreaterThan(0);
    }
  });
});
