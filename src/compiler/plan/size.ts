/**
 * How large a plan is (pure): its rollouts counted from the target's numbers before a single one is
 * made (PlanTooLarge past MAX_PLAN_ROLLOUTS, over every target of one compile), and the rough
 * estimate of sandbox time and tokens the plan summary shows.
 */
import { makeDiagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { Plan, PlanStep, ResolvedHarness, ResolvedTask } from "../contract/plan.js";
import { MAX_PLAN_ROLLOUTS } from "../resolve/limits.js";
import { DEFAULT_TASK_TIMEOUT_SECONDS } from "../resolve/tasks.js";
import type { PlanTarget, TargetParts } from "./target.js";

/**
 * The plan's rollouts (every seed's), counted up in `planned` (the rollouts of the other targets
 * of the same compile); undefined with PlanTooLarge when the total passes the limit.
 */
export function checkPlanSize(target: PlanTarget, parts: TargetParts, planned?: { count: number }): Result<number | undefined> {
  const rollouts = countRollouts(target, parts) * (parts.seeds?.length ?? 1);
  const before = planned?.count ?? 0;
  if (before + rollouts > MAX_PLAN_ROLLOUTS) {
    const others = before > 0 ? `, and the other plans compiled with it ${before.toLocaleString("en-US")}` : "";
    const message = `The plan would have ${rollouts.toLocaleString("en-US")} rollouts${others}; the limit is ${MAX_PLAN_ROLLOUTS.toLocaleString("en-US")}.`;
    return {
      value: undefined,
      diagnostics: [makeDiagnostic("PlanTooLarge", parts.at(target.kind === "Experiment" ? "steps" : "attempts"), message, CODES.PlanTooLarge)],
    };
  }
  if (planned) planned.count += rollouts;
  return { value: rollouts, diagnostics: [] };
}

/** Rollouts of one seed's plan (mirrors the steps schedule.ts makes). */
function countRollouts(target: PlanTarget, parts: TargetParts): number {
  const harnesses = parts.harnesses.length;
  if (target.kind === "Evaluation") return parts.selected.length * harnesses * (target.spec.attempts ?? 1);
  const spec = target.spec;
  const training = parts.training.length;
  const heldOut = parts.heldOut.length;
  const perStep = Math.min(spec.tasksPerStep ?? training, training);
  const evalEvery = spec.eval?.everySteps ?? 0;
  const evals = heldOut > 0 ? 2 + (evalEvery > 0 ? Math.floor(spec.steps / evalEvery) : 0) : 0;
  const attempts = spec.harnesses.slice(0, harnesses).reduce((n, h) => n + (h.heldOutAttempts ?? spec.eval?.attempts ?? 1), 0);
  return spec.steps * perStep * (parts.algorithm?.groupSize ?? 1) + evals * heldOut * attempts;
}

/**
 * A rough estimate over the steps of each seed: documented as such in the plan summary. A task's
 * own timeout counts (not the Sandbox's that stands in for a task without one).
 */
export function estimatePlan(
  stepsPerSeed: readonly (readonly PlanStep[])[],
  tasks: readonly ResolvedTask[],
  harnesses: readonly ResolvedHarness[],
): Plan["estimate"] {
  const taskByName = new Map(tasks.map((t) => [t.name, t]));
  const harnessByName = new Map(harnesses.map((h) => [h.name, h]));
  let rollouts = 0;
  let seconds = 0;
  let tokens = 0;
  for (const s of stepsPerSeed.flat()) {
    for (const r of s.rollouts) {
      rollouts++;
      const h = harnessByName.get(r.harness);
      const t = taskByName.get(r.task);
      const timeout = t ? (t.timeoutDefaulted ? DEFAULT_TASK_TIMEOUT_SECONDS : t.timeoutSeconds) : DEFAULT_TASK_TIMEOUT_SECONDS;
      seconds += (h?.startupSeconds ?? 0) + Math.min(timeout, h?.dialect ? 60 : 5);
      if (h?.dialect) tokens += 16_000;
    }
  }
  return { rollouts, sandboxMinutes: Math.round((seconds / 60) * 10) / 10, tokens };
}
