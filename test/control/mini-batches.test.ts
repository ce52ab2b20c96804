/** Mini-batches: a step's trees split round-robin, every tree in exactly one; metrics merged back. */
import { describe, expect, it } from "vitest";
import { mergeTrainMetrics, splitMiniBatches } from "../../src/runtime/control/mini-batches.js";
import type { TrainingBatch } from "../../src/runtime/trajectories/batch.js";

function batchOf(n: number): TrainingBatch {
  const trees = Array.from({ length: n }, (_, i) => ({ rollout: `r${i}` })) as unknown as NonNullable<TrainingBatch["trees"]>;
  return {
    formatVersion: 1,
    step: 3,
    layout: "tree",
    trees,
    algorithm: {} as TrainingBatch["algorithm"],
    composition: { pairs: [], harnesses: {} },
  } as unknown as TrainingBatch;
}

const ids = (b: TrainingBatch) => (b.trees ?? []).map((t) => (t as unknown as { rollout: string }).rollout);

describe("splitMiniBatches", () => {
  it("puts every tree in exactly one of n batches, sizes within one of each other", () => {
    const parts = splitMiniBatches(batchOf(10), 4);
    expect(parts).toHaveLength(4);
    expect(parts.flatMap(ids).sort()).toEqual(ids(batchOf(10)).sort());
    const sizes = parts.map((p) => p.trees!.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    for (const p of parts) expect(p.step).toBe(3);
  });
  it("makes no empty batch when there are fewer trees than mini-batches", () => {
    expect(splitMiniBatches(batchOf(2), 4).map((p) => p.trees!.length)).toEqual([1, 1]);
  });
  it("returns the batch itself for one mini-batch", () => {
    const b = batchOf(5);
    expect(splitMiniBatches(b, 1)[0]).toBe(b);
  });
});

describe("mergeTrainMetrics", () => {
  it("averages, keeps extremes, sums token counts, and merges nested objects", () => {
    const m = mergeTrainMetrics([
      { loss: 1, gradNorm: 2, tokens: 10, kl: null, correction: { weightMean: 1, weightMax: 1.5, weightMin: 0.5 } },
      { loss: 3, gradNorm: 4, tokens: 30, kl: null, correction: { weightMean: 2, weightMax: 1.2, weightMin: 0.1 } },
    ]);
    expect(m).toEqual({ loss: 2, gradNorm: 3, tokens: 40, kl: null, correction: { weightMean: 1.5, weightMax: 1.5, weightMin: 0.1 } });
  });
});
