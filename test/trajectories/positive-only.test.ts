/** positiveOnly: negative group advantages become 0, positive ones are unchanged. */
import { describe, expect, it } from "vitest";
import { computeGroupAdvantages } from "../../src/runtime/trajectories/advantages.js";

const rows = [1, 0, 0, 1, 0].map((reward, i) => ({ rollout: `r${i}`, task: "t", harness: "h", reward, step: 0 }));

describe("positiveOnly advantages", () => {
  it("keeps the successes' advantages and zeroes the failures'", () => {
    const plain = computeGroupAdvantages(rows, { estimator: "GRPO", normalizeStd: true, dropZeroVariance: false });
    const pos = computeGroupAdvantages(rows, { estimator: "GRPO", normalizeStd: true, dropZeroVariance: false, positiveOnly: true });
    for (const r of rows) {
      const a = plain.advantages.get(r.rollout)!;
      expect(pos.advantages.get(r.rollout)).toBe(r.reward === 1 ? a : 0);
      expect(a > 0).toBe(r.reward === 1);
    }
  });
});
