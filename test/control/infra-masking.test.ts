/**
 * Infrastructure failures never enter GRPO statistics (open-instruct's mask_infra_failed_completions):
 * a rollout that ended infra-failed has no reward, so the step's reward table (the batch's only
 * source of rewards) leaves it out, and its group's mean and std are those of the rollouts that
 * were scored — not biased toward 0 as a fake zero would. The step reports the infra-failed rate.
 */
import { describe, expect, it } from "vitest";
import { rewardTable } from "../../src/runtime/control/batches.js";
import { infraFailures } from "../../src/runtime/control/step-metrics.js";
import type { RolloutResult } from "../../src/runtime/records/index.js";
import { computeGroupAdvantages } from "../../src/runtime/trajectories/advantages.js";

function result(id: string, status: RolloutResult["status"], reward: number | null, retries = 0): RolloutResult {
  return {
    id,
    step: 0,
    task: "t",
    harness: "h",
    pair: "t@h",
    attempt: 0,
    category: "c",
    status,
    reward,
    passed: reward === 1,
    tries: retries + 1,
    durationMs: 1,
    phases: {},
    calls: 0,
    harnessExit: null,
    verifier: null,
    retries: Array.from({ length: retries }, () => ({ code: "SandboxDied", message: "the pod was deleted" })),
    finishedAt: "2026-01-01T00:00:00Z",
  };
}

const GRPO = { estimator: "GRPO", normalizeStd: true, dropZeroVariance: true } as const;

describe("infra-failed rollouts and group statistics", () => {
  const results = [result("a", "ok", 1), result("b", "ok", 0), result("c", "ok", 1, 1), result("d", "infra-failed", null, 2)];

  it("leave the reward table, so the group's mean and std are over the scored rollouts only", () => {
    const table = rewardTable(results, 0);
    expect([...table.keys()]).toEqual(["a", "b", "c"]);
    const { groups, advantages } = computeGroupAdvantages(
      [...table].map(([rollout, e]) => ({ rollout, ...e })),
      GRPO,
    );
    expect(groups).toHaveLength(1);
    expect(groups[0]!.rollouts).toEqual(["a", "b", "c"]);
    expect(groups[0]!.mean).toBeCloseTo(2 / 3, 12);
    expect(groups[0]!.std).toBeCloseTo(Math.sqrt(1 / 3), 12);
    expect(advantages.has("d")).toBe(false);
    // A fake zero for "d" would have moved the mean to 0.5 and every advantage with it.
    const biased = computeGroupAdvantages(
      [...[...table].map(([rollout, e]) => ({ rollout, ...e })), { rollout: "d", task: "t", harness: "h", reward: 0, step: 0 }],
      GRPO,
    );
    expect(biased.groups[0]!.mean).toBe(0.5);
    expect(biased.advantages.get("a")).not.toBeCloseTo(advantages.get("a")!, 3);
  });

  it("a group left with one scored rollout is zero-variance, not a comparison with infrastructure", () => {
    const table = rewardTable([result("x", "ok", 1), result("y", "infra-failed", null, 3)], 0);
    const { groups, advantages } = computeGroupAdvantages(
      [...table].map(([rollout, e]) => ({ rollout, ...e })),
      GRPO,
    );
    expect(groups[0]).toMatchObject({ rollouts: ["x"], zeroVariance: true, dropped: true });
    expect(advantages.size).toBe(0);
  });

  it("the step reports them: infra_failed_rate, their count, and every infrastructure retry", () => {
    expect(infraFailures(results)).toEqual({ infraFailed: 1, infraFailedRate: 0.25, infraRetries: 3 });
    expect(infraFailures([])).toEqual({ infraFailed: 0, infraFailedRate: 0, infraRetries: 0 });
  });
});
