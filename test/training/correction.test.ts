import { describe, expect, it } from "vitest";
import { createRng } from "../../src/compiler/contract/rng.js";
import { computeCorrectionWeights } from "../../src/runtime/trajectories/correction.js";
import type { Correction } from "./helpers.js";
import { runCheck } from "./helpers.js";

interface Case {
  trainLogprobs: number[];
  rolloutLogprobs: number[];
  lossMask: number[];
  sequence: number[];
  correction: Correction;
}

const CORRECTIONS: Correction[] = [
  { type: "none" },
  { type: "TIS", level: "token", cap: 2 },
  { type: "TIS", level: "sequence", cap: 1.5 },
  { type: "MIS", level: "token", low: 0.5, high: 2 },
  { type: "MIS", level: "sequence", low: 0.2, high: 5 },
  { type: "MIS", level: "geometric", low: 0.9, high: 1.1 },
];

/** Random token sets: trainer and rollout logprobs that mostly agree, sometimes far apart. */
function makeCases(seed: number, perCorrection: number): Case[] {
  const rng = createRng(seed);
  const cases: Case[] = [];
  for (const correction of CORRECTIONS) {
    for (let c = 0; c < perCorrection; c++) {
      const n = 1 + Math.floor(rng.next() * 40);
      const spread = [0.01, 0.3, 2][c % 3];
      const trainLogprobs: number[] = [];
      const rolloutLogprobs: number[] = [];
      const lossMask: number[] = [];
      const sequence: number[] = [];
      for (let i = 0; i < n; i++) {
        const lp = -rng.next() * 6;
        trainLogprobs.push(lp);
        rolloutLogprobs.push(lp + (rng.next() - 0.5) * spread);
        lossMask.push(rng.next() < 0.8 ? 1 : 0);
        sequence.push(Math.floor(rng.next() * 4));
      }
      cases.push({ trainLogprobs, rolloutLogprobs, lossMask, sequence, correction });
    }
  }
  return cases;
}

describe("rollout-correction weights", () => {
  it("match the reference implementation for token/sequence TIS and token/sequence/geometric MIS", () => {
    const cases = makeCases(2024, 12);
    const { weights } = runCheck<{ weights: number[][] }>({ op: "correction", cases });
    expect(weights).toHaveLength(cases.length);
    let capped = 0;
    let rejected = 0;
    cases.forEach((c, k) => {
      const ref = computeCorrectionWeights(c, c.correction);
      capped += c.correction.type === "TIS" ? ref.stats.affectedTokens : 0;
      rejected += c.correction.type === "MIS" ? ref.stats.affectedTokens : 0;
      for (let i = 0; i < c.lossMask.length; i++) {
        const want = c.lossMask[i] ? ref.weights[i] : 0;
        expect(Math.abs(weights[k][i] - want)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(want)));
      }
    });
    // The generated cases exercise the caps and the rejections, not only the pass-through.
    expect(capped).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
  });
});
