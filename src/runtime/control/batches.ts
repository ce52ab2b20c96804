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
 * Above this many tokens, an SFT prefix tree costs more than its rollouts apart: the tree's
 * attention is quadratic in its whole size, while rows share only their common prefix (computed once
 * by the trainer). Short harness prompts (reins-agent) stay one tree; a real harness's thousand-token
 * prompt makes one tree per harness while that fits, else one row per rollout.
 */
export const SFT_TREE_MAX_TOKENS = 4096;

/** The rollout id of the merged SFT tree of one harness's references. */
export function sftTreeId(harness: string): string {
  return `sft:${harness}`;
}

/**
 * SFT batch: the reference rollouts that passed, environment tokens masked, trained with objective
 * "sft". The references of each harness share that harness's system prompt and tools, so each
 * harness's references make ONE prefix tree (rollout `sft:<harness>`, the shared prompt processed
 * once) while it has at most SFT_TREE_MAX_TOKENS tokens; else one tree per rollout.
 */
export function buildSftBatch(algorithm: ResolvedAlgorithm, results: readonly RolloutResult[], calls: readonly CallRecord[]): TrainingBatch {
  const filters = sftFilters(algorithm);
  const sftAlgorithm: ResolvedAlgorithm = { ...algorithm, filters, advantage: { ...algorithm.advantage, normalizeStd: false, dropZeroVariance: false } };
  const sftBatch = (analyses: ReturnType<typeof analyzeRollout>[]) => {
    // Each rollout is a group of its own with reward 1: the "sft" objective reads no advantage.
    const rewards: RewardTable = new Map(analyses.map((a) => [a.rollout, { task: a.rollout, harness: "sft", reward: 1, step: -1 }]));
    const { batch } = buildTrainingBatch(analyses, { algorithm: sftAlgorithm, rewards, step: -1, layout: "tree" });
    batch.algorithm = { ...batch.algorithm, klCoef: 0, entropyCoef: 0, correction: { type: "none" } };
    return batch;
  };
  const analyses: ReturnType<typeof analyzeRollout>[] = [];
  for (const [harness, group] of sftGroups(results, calls)) {
    const merged = analyzeRollout(sftTreeId(harness), group.merged, filters);
    if (treeTokens(sftBatch([merged])) <= SFT_TREE_MAX_TOKENS) analyses.push(merged);
    else for (const [id, recs] of group.byRollout) analyses.push(analyzeRollout(id, recs, filters));
  }
  return sftBatch(analyses);
}

function treeTokens(batch: TrainingBatch): number {
  return (batch.trees ?? []).reduce((n, t) => n + t.tokens.length, 0);
}

/**
 * The passed reference rollouts per harness (in the order of their first calls): their calls by rollout,
 * and merged into one rollout (`sft:<harness>`, in rollout order, renumbered).
 */
export function sftGroups(
  results: readonly RolloutResult[],
  calls: readonly CallRecord[],
): Map<string, { byRollout: Map<string, CallRecord[]>; merged: CallRecord[] }> {
  const passed = results.filter((r) => r.passed);
  const grouped = callsByRollout(calls, new Set(passed.map((r) => r.id)));
  const out = new Map<string, { byRollout: Map<string, CallRecord[]>; merged: CallRecord[] }>();
  const harnessOf = new Map(passed.map((r) => [r.id, r.harness]));
  // In the order of the calls (the order the references were sampled), not of their results.
  for (const [id, recs] of grouped) {
    const harness = harnessOf.get(id)!;
    let group = out.get(harness);
    if (!group) out.set(harness, (group = { byRollout: new Map(), merged: [] }));
    group.byRollout.set(id, recs);
    for (const c of recs) group.merged.push({ ...c, rolloutId: sftTreeId(harness), try: 1, seq: group.merged.length });
  }
  return out;
}

/** The filters of the SFT tree: every sequence kept (no dead-leaf or branch limit), side classes dropped. */
export function sftFilters(algorithm: ResolvedAlgorithm): ResolvedAlgorithm["filters"] {
  return { ...algorithm.filters, dropDeadLeaves: false, maxBranches: 0 };
}
