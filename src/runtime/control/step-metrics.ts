/**
 * The parts of a training step's metrics record (metrics.jsonl) that describe its rollouts and
 * trees rather than the trainer: branches and dead leaves, the fidelity of the step's calls and
 * trained tokens, and the breakdown per (task family, harness). Pure: from the step's results,
 * its batch report and its trained-token check.
 *
 * A task's family is the TaskFamily it was expanded from; a Task written on its own is a family
 * of its own, under its name.
 */
import type { Plan } from "../../compiler/contract/plan.js";
import type { CallRecord, RolloutResult } from "../records/index.js";
import type { BatchCheck } from "../trajectories/batch-check.js";
import type { RolloutReport } from "../trajectories/batch-builder.js";
import { summarizeFidelity } from "../trajectories/fidelity.js";

/** One (family, harness) cell of a step. */
export interface GroupMetrics {
  rollouts: number;
  /** Mean reward over the cell's rollouts that have a reward (0 when none has). */
  meanReward: number;
  passRate: number;
  /** Leaves of the cell's prefix trees (before the filters), summed. */
  branches: number;
  /** Calls that are dead leaves, summed. */
  deadLeaves: number;
}

/** The step's fidelity, over every harness: its calls, their prefix breaks, its trained tokens checked. */
export interface StepFidelity {
  calls: number;
  prefixBreaks: number;
  checkedTokens: number;
  mismatchedTokens: number;
}

/** Seconds spent in each phase of a step. */
export interface StepTiming {
  rollouts: number;
  training: number;
  publishing: number;
  /** From the first rollout to the step's record (the phases above and building trees). */
  step: number;
}

/** The family of each task of the plan: its TaskFamily's name, or its own name. */
export function familyOf(plan: Plan): (task: string) => string {
  const families = new Map(plan.tasks.map((t) => [t.name, t.provenance?.family ?? t.name]));
  return (task) => families.get(task) ?? task;
}

/**
 * The step's infrastructure failures: rollouts that ended infra-failed (every try failed for the
 * sandbox, the engine, the cluster; no reward, never in a group's statistics), their share of the
 * step's rollouts (open-instruct's infra_failed_rate), and the tries retried for such failures,
 * recovered ones included.
 */
export function infraFailures(results: readonly RolloutResult[]): { infraFailed: number; infraFailedRate: number; infraRetries: number } {
  const infraFailed = results.filter((r) => r.status === "infra-failed").length;
  return {
    infraFailed,
    infraFailedRate: results.length > 0 ? infraFailed / results.length : 0,
    infraRetries: results.reduce((n, r) => n + (r.retries?.length ?? 0), 0),
  };
}

/** Branches and dead leaves of the step's prefix trees. */
export function treeCounts(reports: readonly RolloutReport[]): { branches: number; deadLeaves: number } {
  return { branches: reports.reduce((n, r) => n + r.leavesBefore, 0), deadLeaves: reports.reduce((n, r) => n + r.deadLeaves, 0) };
}

/** family → harness → the cell's metrics. */
export function breakdownByFamilyHarness(
  plan: Plan,
  results: readonly RolloutResult[],
  reports: readonly RolloutReport[],
): Record<string, Record<string, GroupMetrics>> {
  const family = familyOf(plan);
  const reportOf = new Map(reports.map((r) => [r.rollout, r]));
  const cells = new Map<string, { family: string; harness: string; results: RolloutResult[] }>();
  for (const r of results) {
    const f = family(r.task);
    const key = JSON.stringify([f, r.harness]);
    let cell = cells.get(key);
    if (!cell) cells.set(key, (cell = { family: f, harness: r.harness, results: [] }));
    cell.results.push(r);
  }
  const out: Record<string, Record<string, GroupMetrics>> = {};
  for (const cell of [...cells.values()].sort((a, b) => (`${a.family}\0${a.harness}` < `${b.family}\0${b.harness}` ? -1 : 1))) {
    const scored = cell.results.filter((r) => r.reward !== null);
    const trees = treeCounts(cell.results.flatMap((r) => reportOf.get(r.id) ?? []));
    (out[cell.family] ??= {})[cell.harness] = {
      rollouts: cell.results.length,
      meanReward: scored.length > 0 ? scored.reduce((s, r) => s + r.reward!, 0) / scored.length : 0,
      passRate: scored.length > 0 ? scored.filter((r) => r.passed).length / scored.length : 0,
      ...trees,
    };
  }
  return out;
}

/** The step's calls and trained tokens, as the run's fidelity report counts them, summed over harnesses. */
export function stepFidelity(results: readonly RolloutResult[], calls: readonly CallRecord[], check: BatchCheck, dropClasses: readonly string[]): StepFidelity {
  const report = summarizeFidelity({ rollouts: results, calls, dropClasses, trained: [check.byHarness] });
  const out: StepFidelity = { calls: 0, prefixBreaks: 0, checkedTokens: check.checked, mismatchedTokens: check.mismatched };
  for (const h of Object.values(report.byHarness)) {
    out.calls += h.calls;
    out.prefixBreaks += h.prefixBreaks;
  }
  return out;
}

/** Seconds since `start` (a performance.now() reading), to the millisecond. */
export function secondsSince(start: number): number {
  return Math.round(performance.now() - start) / 1000;
}
