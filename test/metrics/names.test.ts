/**
 * The scalar names the sinks log (src/runtime/metrics/names.ts): a metrics.jsonl record of a
 * trained step and a held-out event, as TensorBoard and W&B show them; records written before
 * the newer fields, and values that are not finite numbers, give no scalar rather than a wrong one.
 */
import { describe, expect, it } from "vitest";
import { heldOutScalars, stepScalars } from "../../src/runtime/metrics/names.js";

describe("metric names", () => {
  it("names a step's record by the common RL conventions, per family and harness too", () => {
    const record = {
      type: "step-metrics",
      step: 3,
      trainingStep: 2,
      meanReward: 0.5,
      passRate: 0.25,
      rollouts: 8,
      trainedRollouts: 8,
      zeroVarianceGroups: 1,
      infraFailed: 1,
      infraFailedRate: 0.125,
      infraRetries: 3,
      trainedTokens: 120,
      naiveTokens: 400,
      version: "abc",
      loss: 0.1,
      kl: 0.002,
      mismatchKl: 0.0001,
      entropy: 2.5,
      clipFraction: 0.05,
      gradNorm: 1.5,
      tokensPerSecond: 900,
      correction: { type: "TIS", level: "token", weightMean: 0.98, fractionCapped: 0.01 },
      critic: { explainedVariance: 0.3 },
      branches: 10,
      deadLeaves: 2,
      timingSeconds: { rollouts: 4, training: 2, publishing: 1, step: 7.5 },
      fidelity: { calls: 20, prefixBreaks: 1, checkedTokens: 120, mismatchedTokens: 0 },
      byFamilyHarness: {
        "write-word": { "reins-agent": { rollouts: 4, meanReward: 0.75, passRate: 0.5, branches: 6, deadLeaves: 1 } },
        solo: { codex: { rollouts: 4, meanReward: 0.25, passRate: 0, branches: 4, deadLeaves: 1 } },
      },
    };
    expect(stepScalars(record)).toEqual({
      "reward/mean": 0.5,
      pass_rate: 0.25,
      loss: 0.1,
      kl: 0.002,
      mismatch_kl: 0.0001,
      entropy: 2.5,
      clip_frac: 0.05,
      grad_norm: 1.5,
      num_rollouts: 8,
      num_trained_rollouts: 8,
      num_zero_variance_groups: 1,
      num_infra_failed: 1,
      infra_failed_rate: 0.125,
      num_infra_retries: 3,
      "tokens/trained": 120,
      "tokens/naive": 400,
      "perf/tokens_per_s": 900,
      num_branches: 10,
      num_dead_leaves: 2,
      step_skipped: 0,
      "timing_s/rollouts": 4,
      "timing_s/training": 2,
      "timing_s/publishing": 1,
      "timing_s/step": 7.5,
      "fidelity/calls": 20,
      "fidelity/prefix_breaks": 1,
      "fidelity/checked_tokens": 120,
      "fidelity/mismatched_tokens": 0,
      "fidelity/token_match_rate": 1,
      "fidelity/prefix_break_rate": 0.05,
      "critic/explained_variance": 0.3,
      "rollout_corr/weight_mean": 0.98,
      "rollout_corr/fraction_capped": 0.01,
      "reward/mean/write-word/reins-agent": 0.75,
      "pass_rate/write-word/reins-agent": 0.5,
      "num_rollouts/write-word/reins-agent": 4,
      "num_branches/write-word/reins-agent": 6,
      "num_dead_leaves/write-word/reins-agent": 1,
      "reward/mean/solo/codex": 0.25,
      "pass_rate/solo/codex": 0,
      "num_rollouts/solo/codex": 4,
      "num_branches/solo/codex": 4,
      "num_dead_leaves/solo/codex": 1,
    });
  });

  it("an older record (no timing, trees or breakdown) and a skipped step give what they have", () => {
    const old = { trainingStep: 1, meanReward: 0, rollouts: 4, kl: null, loss: Number.NaN, skipped: { code: "NonFiniteLoss", reason: "nan" } };
    expect(stepScalars(old)).toEqual({ "reward/mean": 0, num_rollouts: 4, step_skipped: 1 });
  });

  it("names a held-out evaluation's pass rate and reward, per harness, and its time", () => {
    expect(
      heldOutScalars({
        trainedSteps: 0,
        passRate: 0.4,
        meanReward: 0.5,
        rollouts: 10,
        seconds: 12.5,
        byHarness: { codex: { passRate: 0.2, meanReward: 0.3, rollouts: 5 } },
      }),
    ).toEqual({
      "held_out/pass_rate": 0.4,
      "held_out/reward/mean": 0.5,
      "held_out/num_rollouts": 10,
      "timing_s/evaluation": 12.5,
      "held_out/pass_rate/codex": 0.2,
      "held_out/reward/mean/codex": 0.3,
    });
  });
});
