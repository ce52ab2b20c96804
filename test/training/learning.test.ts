/**
 * The whole loop learns: onnx engine sampling, GRPO in the torch worker, publish, hot reload.
 * About 15 s on an idle 2-core machine (deterministic: seeded sampling, CPU training).
 * REINS_FAST=1 skips it.
 */
import { describe, expect, it } from "vitest";
import { runLearningSmoke } from "../../bench/learning-smoke.js";

describe.skipIf(Boolean(process.env.REINS_FAST))("learning smoke check", () => {
  it("raises the toy reward well beyond its starting level within a dozen GRPO steps", async () => {
    const r = await runLearningSmoke({ steps: 12, prompts: 4, groupSize: 8, maxTokens: 16, learningRate: 3e-3, threads: 1, seed: 0 });
    expect(r.versions).toHaveLength(13);
    expect(new Set(r.versions).size).toBe(13);
    const before = r.rewards[0];
    const after = r.rewards[r.rewards.length - 1];
    expect(after).toBeGreaterThan(before + 0.2);
  }, 300_000);
});
