/** The RL learning rate per optimizer step: linear warmup over the Algorithm's warmupSteps, then flat. */
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { warmupLearningRate } from "../../src/runtime/control/learning-rate.js";
import { tempDir } from "../executor/helpers.js";
import { editSpec, experiment } from "./helpers.js";

describe("the RL learning rate", () => {
  it("rises linearly over warmupSteps, then stays at learningRate", () => {
    const alg = { learningRate: 8e-4, warmupSteps: 4 };
    const rates = [1, 2, 3, 4, 5, 40].map((k) => warmupLearningRate(alg, k)!);
    [2e-4, 4e-4, 6e-4, 8e-4, 8e-4, 8e-4].forEach((want, i) => expect(rates[i]).toBeCloseTo(want, 12));
  });

  it("is the worker's own (learningRate) without warmup", () => {
    expect(warmupLearningRate({ learningRate: 1e-3, warmupSteps: 0 }, 1)).toBeUndefined();
  });

  it("comes from the spec: warmupSteps, sft.optimizerState and sft.adamBetas reach the plan, with their defaults", () => {
    const file = experiment(tempDir("reins-lr-"));
    const plan = compilePlan([file], { env: {} }).value!;
    expect(plan.sft?.optimizerState).toBe("reset");
    expect(plan.sft?.adamBetas).toEqual([0.9, 0.999]);
    editSpec(file, [
      [/ {4}warmupSteps: \d+\n/, "    warmupSteps: 6\n"],
      [
        / {2}sft: \{steps: 3, learningRate: 3e-3, batchSize: 4\}/,
        "  sft: {steps: 3, learningRate: 3e-3, batchSize: 4, optimizerState: keep, adamBetas: [0.9, 0.95]}",
      ],
    ]);
    const edited = compilePlan([file], { env: {} }).value!;
    expect(edited.algorithm?.warmupSteps).toBe(6);
    expect(edited.sft?.optimizerState).toBe("keep");
    expect(edited.sft?.adamBetas).toEqual([0.9, 0.95]);
    expect(edited.algorithm?.adamBetas).toEqual([0.9, 0.99]); // the quickstart's
    expect(edited.hash).not.toBe(plan.hash);
  });
});
