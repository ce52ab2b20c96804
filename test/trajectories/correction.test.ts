/** Rollout-correction weights: each setting against its formula, on random inputs. */
import { describe, expect, it } from "vitest";
import { computeCorrectionWeights } from "../../src/runtime/trajectories/correction.js";
import { randInt, seededRng } from "./synthetic.js";

function randomInput(seed: number, n = 200) {
  const rng = seededRng(seed);
  const rolloutLogprobs = Array.from({ length: n }, () => -rng() * 3);
  const trainLogprobs = rolloutLogprobs.map((l) => l + (rng() - 0.5) * 1.6);
  const lossMask = Array.from({ length: n }, () => (rng() < 0.7 ? 1 : 0));
  const sequence = Array.from({ length: n }, () => randInt(rng, 0, 5));
  return { trainLogprobs, rolloutLogprobs, lossMask, sequence };
}

const ratio = (x: ReturnType<typeof randomInput>, i: number) => Math.exp(x.trainLogprobs[i] - x.rolloutLogprobs[i]);

function seqLogRatio(x: ReturnType<typeof randomInput>, id: number): { sum: number; count: number } {
  let sum = 0;
  let count = 0;
  x.sequence.forEach((s, i) => {
    if (s === id && x.lossMask[i]) {
      sum += x.trainLogprobs[i] - x.rolloutLogprobs[i];
      count++;
    }
  });
  return { sum, count };
}

describe("computeCorrectionWeights", () => {
  it("token TIS: w_t = min(exp(logp_train - logp_rollout), C); 0 off the loss mask", () => {
    const x = randomInput(1);
    const { weights, mask, stats } = computeCorrectionWeights(x, { type: "TIS", level: "token", cap: 1.2 });
    let capped = 0;
    x.lossMask.forEach((m, i) => {
      if (!m) return expect([weights[i], mask[i]]).toEqual([0, 0]);
      expect(weights[i]).toBeCloseTo(Math.min(ratio(x, i), 1.2), 12);
      expect(mask[i]).toBe(1);
      if (ratio(x, i) > 1.2) capped++;
    });
    expect(capped).toBeGreaterThan(0);
    expect(stats.affectedTokens).toBe(capped);
    expect(stats.trainedTokens).toBe(x.lossMask.filter(Boolean).length);
  });

  it("sequence TIS: w = min(prod rho, C), broadcast over the sequence's trained tokens", () => {
    const x = randomInput(2);
    const { weights } = computeCorrectionWeights(x, { type: "TIS", level: "sequence", cap: 1.5 });
    x.lossMask.forEach((m, i) => {
      if (!m) return expect(weights[i]).toBe(0);
      expect(weights[i]).toBeCloseTo(Math.min(Math.exp(seqLogRatio(x, x.sequence[i]).sum), 1.5), 12);
    });
  });

  it("MIS token (IcePop): rho inside [low, high] keeps w = rho, outside masks", () => {
    const x = randomInput(3);
    const { weights, mask } = computeCorrectionWeights(x, { type: "MIS", level: "token", low: 0.8, high: 1.25 });
    let masked = 0;
    x.lossMask.forEach((m, i) => {
      if (!m) return;
      const r = ratio(x, i);
      const inside = r >= 0.8 && r <= 1.25;
      if (!inside) masked++;
      expect(mask[i]).toBe(inside ? 1 : 0);
      expect(weights[i]).toBeCloseTo(inside ? r : 0, 12);
    });
    expect(masked).toBeGreaterThan(0);
  });

  it("MIS sequence rejects sequences whose product ratio leaves the bounds", () => {
    const x = randomInput(4);
    const { weights, mask, stats } = computeCorrectionWeights(x, { type: "MIS", level: "sequence", low: 0, high: 2 });
    const rejected = new Set<number>();
    x.lossMask.forEach((m, i) => {
      if (!m) return;
      const rho = Math.exp(seqLogRatio(x, x.sequence[i]).sum);
      const keep = rho <= 2;
      if (!keep) rejected.add(x.sequence[i]);
      expect(mask[i]).toBe(keep ? 1 : 0);
      expect(weights[i]).toBeCloseTo(keep ? rho : 0, 10);
    });
    expect(stats.rejectedSequences).toBe(rejected.size);
  });

  it("MIS geometric keeps a sequence when its per-token geometric mean ratio is within bounds", () => {
    const x = randomInput(5, 400);
    const { weights, mask, stats } = computeCorrectionWeights(x, { type: "MIS", level: "geometric", low: 0.97, high: 1.03 });
    let kept = 0;
    x.lossMask.forEach((m, i) => {
      if (!m) return;
      const { sum, count } = seqLogRatio(x, x.sequence[i]);
      const geo = Math.exp(sum / count);
      const keep = geo >= 0.97 && geo <= 1.03;
      if (keep) kept++;
      expect(mask[i]).toBe(keep ? 1 : 0);
      expect(weights[i]).toBe(keep ? 1 : 0);
    });
    expect(stats.sequences).toBe(6);
    expect(kept).toBeGreaterThan(0);
    expect(stats.rejectedSequences).toBeGreaterThan(0);
  });

  it("does not overflow on long sequences and treats `none` as weight 1", () => {
    const n = 5000;
    const x = { trainLogprobs: new Array(n).fill(0), rolloutLogprobs: new Array(n).fill(-0.5), lossMask: new Array(n).fill(1), sequence: new Array(n).fill(0) };
    expect(computeCorrectionWeights(x, { type: "TIS", level: "sequence", cap: 3 }).weights[0]).toBe(3);
    expect(computeCorrectionWeights(x, { type: "MIS", level: "sequence", low: 0, high: 3 }).mask[0]).toBe(0);
    expect(computeCorrectionWeights(x, { type: "none" }).weights.every((w) => w === 1)).toBe(true);
  });
});
