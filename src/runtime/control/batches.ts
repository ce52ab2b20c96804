/** From a step's stored results and calls to a training batch (pure). */
import type { Plan, ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { CallRecord, RolloutResult } from "../records/index.js";
import { analyzeRollout, buildTrainingBatch, type BatchReport, type RewardTable, type TrainingBatch } from "../trajectories/index.js";

/** Calls grouped by the plan's rollout id, in seq order. */
export function callsByRollout(calls: readonly CallRecord[], ids: ReadonlySet<string>): Map<string, CallRecord[]> {
  const out = new Map<string, CallRecord[]>();
  for (const c of calls) {
    if (!ids.has(c.rolloutId)) continue;
    let list = out.get(c.rolloutId);
    if (!list) out.set(c.rolloutId, (list = []));
    list.push(c);
  }
  for (const list of out.values()) list.sort((a, b) => a.seq - b.seq);
  return out;
}

export function rewardTable(results: readonly RolloutResult[], step: number): RewardTable {
  const t: RewardTable = new Map();
  for (const r of results) if (r.reward !== null) t.set(r.id, { task: r.task, harness: r.harness, reward: r.reward, step });
  return t;
}

export function buildStepBatch(
  plan: Plan,
  algorithm: ResolvedAlgorithm,
  step: number,
  results: readonly RolloutResult[],
  calls: readonly CallRecord[],
): { batch: TrainingBatch; report: BatchReport } {
  const ids = new Set(results.map((r) => r.id));
  const grouped = callsByRollout(calls, ids);
  const analyses = [...grouped].map(([id, recs]) => analyzeRollout(id, recs, algorithm.filters));
  const pairWeights = Object.fromEntries(plan.pairs.map((p) => [p.id, p.weight]));
  return buildTrainingBatch(analyses, { algorithm, rewards: rewardTable(results, step), step, layout: "tree", pairWeights });
}

/**
 * Above this many tokens, an SFT batch's one prefix tree costs more than its rollouts apart: the
 * tree's attention is quadratic in its whole size, while rows share only their common prefix
 * (computed once by the trainer). Short harness prompts (reins-agent) stay one tree; a real
 * harness's thousand-token prompt makes one row per rollout.
 */
export const SFT_TREE_MAX_TOKENS = 4096;

/**
 * SFT batch: the reference rollouts that passed, environment tokens masked, trained with objective
 * "sft". All in ONE prefix tree (their shared system prompt and tools processed once) while that
 * tree has at most SFT_TREE_MAX_TOKENS tokens; else one tree per rollout.
 */
export function buildSftBatch(algorithm: ResolvedAlgorithm, results: readonly RolloutResult[], calls: readonly CallRecord[]): TrainingBatch {
  const merged = mergeSftCalls(results, calls);
  const filters = sftFilters(algorithm);
  const sftAlgorithm: ResolvedAlgorithm = { ...algorithm, filters, advantage: { ...algorithm.advantage, normalizeStd: false, dropZeroVariance: false } };
  const sftBatch = (analyses: ReturnType<typeof analyzeRollout>[]) => {
    // Each rollout is a group of its own with reward 1: the "sft" objective reads no advantage.
    const rewards: RewardTable = new Map(analyses.map((a) => [a.rollout, { task: a.rollout, harness: "sft", reward: 1, step: -1 }]));
    const { batch } = buildTrainingBatch(analyses, { algorithm: sftAlgorithm, rewards, step: -1, layout: "tree" });
    batch.algorithm = { ...batch.algorithm, klCoef: 0, entropyCoef: 0, correction: { type: "none" } };
    return batch;
  };
  const one = sftBatch([analyzeRollout("sft", merged, filters)]);
  if ((one.trees?.[0]?.tokens.length ?? 0) <= SFT_TREE_MAX_TOKENS) return one;
  const passed = new Set(results.filter((r) => r.passed).map((r) => r.id));
  return sftBatch([...callsByRollout(calls, passed)].map(([id, recs]) => analyzeRollout(id, recs, filters)));
}

/** The SFT rollout "sft": the calls of the passed reference rollouts, in rollout order, renumbered. */
export function mergeSftCalls(results: readonly RolloutResult[], calls: readonly CallRecord[]): CallRecord[] {
  const passed = results.filter((r) => r.passed);
  const grouped = callsByRollout(calls, new Set(passed.map((r) => r.id)));
  let seq = 0;
  const merged: CallRecord[] = [];
  for (const recs of grouped.values()) for (const r of recs) merged.push({ ...r, rolloutId: "sft", try: 1, seq: seq++ });
  return merged;
}

/** The filters of the SFT tree: every sequence kept (no dead-leaf or branch limit), side classes dropped. */
export function sftFilters(algorithm: ResolvedAlgorithm): ResolvedAlgorithm["filters"] {
  return { ...algorithm.filters, dropDeadLeaves: false, maxBranches: 0 };
}
