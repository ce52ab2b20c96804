/**
 * The fidelity report of `reins eval` and `reins run` (trajectories/fidelity.ts computes it).
 *
 * `reins run` checks every batch it trains, when it builds it: the SFT tree (sft.ts) and each RL
 * step's batch (step.ts), as it goes to the trainer; each check is a `trained-tokens` event in the
 * run's journal, so a resumed run reports the steps trained before the crash too (a step redone
 * after a crash counts once, with its last check). The rest of the report comes from the run
 * directory's rollouts and calls.
 *
 * `reins eval` trains nothing: it builds the batch a training step would build from the same
 * rollouts (the Experiment's algorithm, or GRPO defaults for an Evaluation), with every scored
 * rollout in it (zero-variance groups are kept, so every rollout's tokens are checked), and
 * checks that.
 */
import { join } from "node:path";
import type { Plan, ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import { defaultAlgorithm } from "../../compiler/index.js";
import type { CallRecord, RolloutResult } from "../records/index.js";
import type { RunStore } from "../store/run-store.js";
import { readJsonl } from "../store/run-store.js";
import { checkTrainedTokens, type BatchCheck, type TokenCheck } from "../trajectories/batch-check.js";
import type { TrainingBatch } from "../trajectories/batch.js";
import { summarizeFidelity, type FidelityReport } from "../trajectories/fidelity.js";
import { buildStepBatch, callsByRollout, sftFilters, sftGroups, sftTreeId } from "./batches.js";

export interface TrainedTokensEvent {
  type: "trained-tokens";
  phase: "sft" | "step";
  step: number;
  checked: number;
  mismatched: number;
  byHarness: Record<string, TokenCheck>;
}

/** Check an RL step's batch against its calls. */
export function checkStepBatch(
  algorithm: ResolvedAlgorithm,
  batch: TrainingBatch,
  results: readonly RolloutResult[],
  calls: readonly CallRecord[],
): BatchCheck {
  return checkTrainedTokens(batch, { records: callsByRollout(calls, new Set(results.map((r) => r.id))), filters: algorithm.filters });
}

/** Check the SFT batch (per harness one tree of its passed references' calls, merged, or one tree each) against the calls, per harness. */
export function checkSftBatch(algorithm: ResolvedAlgorithm, batch: TrainingBatch, results: readonly RolloutResult[], calls: readonly CallRecord[]): BatchCheck {
  const records = new Map<string, CallRecord[]>();
  const harnessOf = new Map<string, string>();
  for (const [harness, group] of sftGroups(results, calls)) {
    records.set(sftTreeId(harness), group.merged);
    harnessOf.set(sftTreeId(harness), harness);
    for (const [id, recs] of group.byRollout) {
      records.set(id, recs);
      harnessOf.set(id, harness);
    }
  }
  return checkTrainedTokens(batch, { records, filters: sftFilters(algorithm), harnessOf: (r) => harnessOf.get(r) });
}

/** Journal a batch's check (read back by runFidelity). */
export function recordCheck(store: RunStore, phase: "sft" | "step", step: number, check: BatchCheck): void {
  const e: TrainedTokensEvent = { type: "trained-tokens", phase, step, checked: check.checked, mismatched: check.mismatched, byHarness: check.byHarness };
  store.event({ ...e });
}

/** A warning for a check that found trained tokens the engine did not sample (none expected). */
export function describeMismatch(check: BatchCheck, what: string): string | null {
  if (check.mismatched === 0) return null;
  return `${what}: ${check.mismatched} of ${check.checked} trained tokens differ from the ids the engine sampled (see fidelity in summary.json).`;
}

/** The fidelity report of a training run, from its run directory. */
export function runFidelity(plan: Plan, store: RunStore): FidelityReport {
  const checks = new Map<string, TrainedTokensEvent>();
  for (const e of readJsonl<{ type: string }>(join(store.dir, "events.jsonl"))) {
    if (e.type === "trained-tokens") {
      const t = e as TrainedTokensEvent;
      checks.set(`${t.phase}:${t.step}`, t);
    }
  }
  const rollouts = store.results();
  return summarizeFidelity({
    rollouts,
    calls: store.calls(),
    dropClasses: plan.algorithm?.filters.dropClasses ?? [],
    trained: [...checks.values()].map((c) => c.byHarness),
  });
}

/** The fidelity report of an evaluation: its rollouts' calls and the batch a training step would build of them. */
export function evalFidelity(plan: Plan, results: readonly RolloutResult[], calls: readonly CallRecord[]): FidelityReport {
  const base = plan.algorithm ?? defaultAlgorithm("GRPO");
  const algorithm: ResolvedAlgorithm = { ...base, advantage: { ...base.advantage, dropZeroVariance: false } };
  const { batch } = buildStepBatch(plan, algorithm, 0, results, calls);
  const check = checkStepBatch(algorithm, batch, results, calls);
  return summarizeFidelity({ rollouts: results, calls, dropClasses: algorithm.filters.dropClasses, trained: [check.byHarness] });
}
