/**
 * The difficulty gate: a baseline Model (a hosted model, the current policy…) tries every task of
 * a candidate `attempts` times through its harness, in fresh sandboxes; the candidate is kept only
 * when the baseline's pass rate lies within [min, max] — too easy teaches nothing, never solved
 * gives no signal. Infrastructure failures are not tries: they are left out of the rate.
 */
import { join } from "node:path";
import type { Plan, PlanRollout, ResolvedDifficultyGate } from "../../compiler/index.js";
import type { RolloutResult } from "../records/index.js";
import { runGateRollouts } from "./replays.js";
import type { GateResult } from "./sandbox-gates.js";

export async function runDifficultyGate(plan: Plan, d: ResolvedDifficultyGate, dir: string, signal?: AbortSignal): Promise<GateResult> {
  const rollouts: PlanRollout[] = plan.tasks.flatMap((task, i) =>
    Array.from({ length: d.attempts }, (_, a) => ({
      id: `base-${i}-${a}`,
      pair: `${task.name}@${d.harness}`,
      task: task.name,
      harness: d.harness,
      attempt: a,
      seed: a,
    })),
  );
  const baseline: Plan = { ...plan, model: d.model };
  const results = await runGateRollouts(baseline, rollouts, join(dir, "baseline-run"), signal ? { signal } : {});
  return judgeDifficulty(d, results);
}

/** The verdict from the baseline's results. Pure. */
export function judgeDifficulty(d: Pick<ResolvedDifficultyGate, "model" | "min" | "max">, results: readonly RolloutResult[]): GateResult {
  const tries = results.filter((r) => r.status !== "infra-failed");
  const name = d.model.name;
  if (tries.length === 0) {
    const first = results[0]?.error;
    return {
      gate: "difficulty",
      passed: false,
      reason: `the baseline ${name} could not try any task${first ? `: ${first.code} (${first.message.slice(0, 160)})` : ""}`,
    };
  }
  const passed = tries.filter((r) => r.status === "ok" && r.passed).length;
  const rate = passed / tries.length;
  const within = rate >= d.min && rate <= d.max;
  const where = within ? "within" : rate < d.min ? "below" : "above";
  return {
    gate: "difficulty",
    passed: within,
    reason: `the baseline ${name} passed ${passed}/${tries.length} tries (${rate.toFixed(2)}), ${where} the band [${d.min}, ${d.max}]`,
  };
}
