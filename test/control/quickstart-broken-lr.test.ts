/**
 * The quickstart's learning check can fail: with RL's learning rate broken (0.1 without warm-up:
 * the weights move, and what SFT taught is lost) the pooled held-out gain of quickstart-learns.test.ts
 * does not pass the same three-standard-error check. One seed, one GRPO step of 8 tasks (the step's
 * size is beside the point: one Adam step at 0.1 moves every weight by ~0.1 whatever its batch).
 */
import { describe, expect, it } from "vitest";
import { ATTEMPTS, pooledGain, runSeeds } from "./quickstart.js";

describe("the quickstart with RL's learning rate broken", () => {
  it("does not pass the same check when RL's learning rate is broken (0.1, a hundred times the recipe's)", () => {
    // One seed, one step, no warm-up: Adam then moves every weight by ~0.1 at once, the policy's
    // weights change (unlike a learning rate of 0, whose "after" would repeat the "before"), and
    // what it learned is destroyed. SFT is cut to 50 steps (its fit is beside the point here).
    const { rows } = runSeeds(
      [1],
      [
        [/ {4}learningRate: [^\n]+\n/, "    learningRate: 0.1\n"],
        [/ {4}warmupSteps: \d+\n/, "    warmupSteps: 0\n"],
        [/ {2}steps: \d+\n/, "  steps: 1\n"],
        [/ {2}tasksPerStep: \d+\n/, "  tasksPerStep: 8\n"],
        [/ {2}sft: \{steps: \d+, targetLoss: [^,]+,/, "  sft: {steps: 50,"],
      ],
    );
    const { gain, se, text } = pooledGain(rows);
    console.error(`quickstart held-out with RL's learning rate at 0.1, ${text}`);
    expect(rows[0]!.heldOut.n).toBe(8 * ATTEMPTS);
    expect(gain).toBeLessThanOrEqual(3 * se);
  }, 1_800_000);
});
