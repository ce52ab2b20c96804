/** Algorithm: GRPO / PPO / RLOO settings, corrections, trajectory filters. */
import { z } from "zod";
import { CallClassSchema } from "./harness.js";
import { LooseNumber, NonNegativeInt, PositiveInt, documentSchema } from "./common.js";

/** Adam's (beta1, beta2): each in [0, 1). */
export const AdamBetas = z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]);

export const AlgorithmSpecSchema = z
  .strictObject({
    type: z.enum(["GRPO", "PPO", "RLOO"]),
    groupSize: PositiveInt.optional().describe("Rollouts per (task, harness) pair per step (default 8)."),
    advantage: z
      .strictObject({
        normalizeStd: z
          .boolean()
          .optional()
          .describe("GRPO: divide by the group's reward std. PPO: whiten the step's GAE advantages (mean 0, std 1 over its trained tokens). Default true."),
        dropZeroVariance: z
          .boolean()
          .optional()
          .describe("GRPO/RLOO: drop groups whose rewards are all equal (default false). Not for PPO: its critic learns from every rollout."),
        positiveOnly: z
          .boolean()
          .optional()
          .describe(
            "Clamp negative advantages to 0: only rollouts better than their group's mean (PPO: tokens better than the critic expected) are reinforced, none pushed down (learning from successes; steadier for small models; default false).",
          ),
        gamma: z.number().min(0).max(1).optional().describe("PPO: GAE discount per generated token (default 1)."),
        lambda: z.number().min(0).max(1).optional().describe("PPO: GAE lambda (default 1)."),
      })
      .optional(),
    clip: z.strictObject({ low: z.number().min(0).max(1).optional(), high: z.number().min(0).optional() }).optional(),
    klCoef: LooseNumber.optional(),
    entropyCoef: LooseNumber.optional(),
    learningRate: LooseNumber.optional(),
    correction: z
      .strictObject({
        type: z.enum(["none", "TIS", "MIS"]),
        level: z.enum(["token", "sequence", "geometric"]).optional(),
        cap: z.number().positive().optional().describe("TIS cap C."),
        low: z.number().nonnegative().optional().describe("MIS lower bound."),
        high: z.number().positive().optional().describe("MIS upper bound."),
      })
      .optional()
      .describe("Rollout/trainer mismatch correction."),
    filters: z
      .strictObject({
        dropDeadLeaves: z.boolean().optional(),
        dropClasses: z.array(CallClassSchema).optional().describe("Call classes whose branches are dropped (default: every class but main)."),
        maxBranches: NonNegativeInt.optional().describe("Drop rollouts with more kept leaves (0 = no limit)."),
      })
      .optional(),
    lossAggregation: z.enum(["token-mean", "sequence-mean", "sequence-sum"]).optional(),
    valueCoef: z
      .number()
      .nonnegative()
      .optional()
      .describe("PPO: weight of the critic's value loss (squared error to the GAE returns) in the objective (default 0.5). Only for PPO."),
    adamBetas: AdamBetas.optional().describe(
      "Adam's (beta1, beta2) for RL's optimizer steps (default [0.9, 0.999]). beta2 is how long Adam remembers gradient sizes: 0.999 averages over ~1,000 steps, longer than most runs here, so early large gradients keep later steps small; 0.95 (~20 steps) follows the current ones.",
    ),
    warmupSteps: NonNegativeInt.max(1_000_000)
      .optional()
      .describe(
        "RL optimizer steps (mini-batches) over which the learning rate rises linearly to learningRate: the k-th step uses learningRate·k/warmupSteps (default 0: none). A fresh Adam (after SFT, see the Experiment's sft.optimizerState) otherwise moves every parameter by about the learning rate in its first steps, noise included.",
      ),
    miniBatches: PositiveInt.optional().describe(
      "Optimizer steps per training step: the step's rollouts are split into this many mini-batches, one optimizer step each (PPO's minibatching; default 1).",
    ),
  })
  .describe("An RL algorithm.");

export const AlgorithmDocument = documentSchema("Algorithm", AlgorithmSpecSchema, "An Algorithm: advantages, clipping, corrections, filters.");
export type AlgorithmSpec = z.input<typeof AlgorithmSpecSchema>;
