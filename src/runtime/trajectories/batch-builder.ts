/**
 * From analyzed rollouts and rewards to a report (per rollout and totals) and a TrainingBatch.
 *
 * Rollouts dropped by the filters (MaxBranches) leave before grouping. With rewards, groups are
 * the (step, task, harness) pairs; zero-variance groups are reported and, with
 * `dropZeroVariance` (GRPO/RLOO), leave the batch. A rollout without a reward leaves the batch (NoReward).
 * GRPO/RLOO advantages are one number per rollout; PPO advantages come per branch from critic
 * values (see gae.ts), so the report has no single PPO advantage. A PPO batch is built in two
 * passes: without `values` it is the critic's query (every tree with advantages 0 and no
 * returns, which the trainer refuses to train on); with them, or through `applyCritic`, it
 * carries each branch's GAE and the value targets.
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { GroupStats, RolloutReward } from "./advantages.js";
import { computeGroupAdvantages } from "./advantages.js";
import type { BatchComposition, PackedTree, PathSample, TrainingBatch } from "./batch.js";
import { applyBranchGae } from "./gae.js";
import type { RolloutAnalysis, RolloutStats } from "./rollout.js";
import { packTree, unpackPaths } from "./samples.js";

export type RewardEntry = Omit<RolloutReward, "rollout">;
export type RewardTable = Map<string, RewardEntry>;

export type ReportDrop = "MaxBranches" | "ZeroVariance" | "NoReward";

export interface RolloutReport extends RolloutStats {
  task?: string;
  harness?: string;
  reward?: number;
  /** GRPO/RLOO advantage broadcast to every kept branch (absent without rewards, or for PPO). */
  advantage?: number;
  dropped: ReportDrop | null;
}

export interface BatchTotals {
  rollouts: number;
  keptRollouts: number;
  droppedRollouts: number;
  calls: number;
  leaves: number;
  droppedDeadLeaves: number;
  droppedBranches: number;
  generatedTokens: number;
  trainedTokens: number;
  contextTokens: number;
  naiveTokens: number;
  /** trainedTokens + contextTokens: what the tree-packed batch processes. */
  treeTokens: number;
  /** naiveTokens / treeTokens (0 when the batch is empty). */
  naiveOverTree: number;
  /** naiveTokens / trainedTokens (0 when nothing is trained). */
  naiveOverTrained: number;
}

export interface BatchReport {
  rollouts: RolloutReport[];
  /** Present when rewards were given. */
  groups?: GroupStats[];
  composition?: BatchComposition;
  totals: BatchTotals;
}

export interface ReportOptions {
  algorithm: ResolvedAlgorithm;
  rewards?: RewardTable;
  /** Mix weight per pair, keyed "<task>@<harness>" (default 1). */
  pairWeights?: Record<string, number>;
}

/** Per-rollout report with advantages (when rewards are given) and batch totals. */
export function buildReport(analyses: readonly RolloutAnalysis[], options: ReportOptions): BatchReport {
  const { algorithm, rewards } = options;
  const reports: RolloutReport[] = analyses.map((a) => {
    const r: RolloutReport = { ...a.stats, dropped: a.dropped };
    const entry = rewards?.get(a.rollout);
    if (entry) {
      r.task = entry.task;
      r.harness = entry.harness;
      r.reward = entry.reward;
    } else if (rewards && !r.dropped) {
      r.dropped = "NoReward";
    }
    return r;
  });
  let groups: GroupStats[] | undefined;
  if (rewards) {
    const eligible: RolloutReward[] = [];
    for (const r of reports) {
      if (r.dropped) continue;
      const e = rewards.get(r.rollout) as RewardEntry;
      eligible.push({ rollout: r.rollout, ...e });
    }
    const estimator = algorithm.type === "RLOO" ? "RLOO" : "GRPO";
    const result = computeGroupAdvantages(eligible, {
      estimator,
      normalizeStd: algorithm.advantage.normalizeStd,
      positiveOnly: algorithm.advantage.positiveOnly,
      // A critic still learns from equal rewards, so PPO keeps zero-variance groups.
      dropZeroVariance: algorithm.advantage.dropZeroVariance && algorithm.type !== "PPO",
    });
    groups = result.groups;
    const droppedGroup = new Set(groups.filter((g) => g.dropped).flatMap((g) => g.rollouts));
    for (const r of reports) {
      if (r.dropped) continue;
      if (droppedGroup.has(r.rollout)) r.dropped = "ZeroVariance";
      else if (algorithm.type !== "PPO") r.advantage = result.advantages.get(r.rollout);
    }
  }
  for (const r of reports) {
    if (r.dropped) {
      r.trainedTokens = 0;
      r.contextTokens = 0;
    }
  }
  const report: BatchReport = { rollouts: reports, totals: sumTotals(reports) };
  if (groups) {
    report.groups = groups;
    report.composition = composeBatch(reports, options.pairWeights ?? {});
  }
  return report;
}

function sumTotals(reports: readonly RolloutReport[]): BatchTotals {
  const t: BatchTotals = {
    rollouts: reports.length,
    keptRollouts: 0,
    droppedRollouts: 0,
    calls: 0,
    leaves: 0,
    droppedDeadLeaves: 0,
    droppedBranches: 0,
    generatedTokens: 0,
    trainedTokens: 0,
    contextTokens: 0,
    naiveTokens: 0,
    treeTokens: 0,
    naiveOverTree: 0,
    naiveOverTrained: 0,
  };
  for (const r of reports) {
    if (r.dropped) t.droppedRollouts++;
    else {
      t.keptRollouts++;
      t.leaves += r.leaves;
    }
    t.calls += r.calls;
    t.droppedDeadLeaves += r.droppedDeadLeaves;
    t.droppedBranches += r.droppedBranches;
    t.generatedTokens += r.generatedTokens;
    t.trainedTokens += r.trainedTokens;
    t.contextTokens += r.contextTokens;
    t.naiveTokens += r.naiveTokens;
  }
  t.treeTokens = t.trainedTokens + t.contextTokens;
  t.naiveOverTree = t.treeTokens > 0 ? t.naiveTokens / t.treeTokens : 0;
  t.naiveOverTrained = t.trainedTokens > 0 ? t.naiveTokens / t.trainedTokens : 0;
  return t;
}

function composeBatch(reports: readonly RolloutReport[], pairWeights: Record<string, number>): BatchComposition {
  const pairs = new Map<string, BatchComposition["pairs"][number] & { sum: number }>();
  const harnesses: Record<string, number> = {};
  for (const r of reports) {
    if (r.dropped || r.task === undefined || r.harness === undefined) continue;
    const key = `${r.task}@${r.harness}`;
    let p = pairs.get(key);
    if (!p) pairs.set(key, (p = { task: r.task, harness: r.harness, rollouts: 0, weight: pairWeights[key] ?? 1, meanReward: 0, sum: 0 }));
    p.rollouts++;
    p.sum += r.reward ?? 0;
    harnesses[r.harness] = (harnesses[r.harness] ?? 0) + 1;
  }
  return {
    pairs: [...pairs.values()].map(({ sum, ...p }) => ({ ...p, meanReward: sum / p.rollouts })),
    harnesses,
  };
}

export interface BatchOptions extends ReportOptions {
  rewards: RewardTable;
  step: number;
  layout: "tree" | "paths";
  /** PPO: critic values per rollout, one per packed tree token (DFS order); absent: the critic query. */
  values?: Map<string, ArrayLike<number>>;
}

/** The algorithm settings that travel with the batch. */
export function batchAlgorithm(algorithm: ResolvedAlgorithm): TrainingBatch["algorithm"] {
  const { type, clip, klCoef, entropyCoef, correction, lossAggregation, valueCoef } = algorithm;
  return { type, clip, klCoef, entropyCoef, correction, lossAggregation, ...(type === "PPO" ? { valueCoef: valueCoef ?? 0.5 } : {}) };
}

/** Build the training batch of one step. Rollouts the report marks as dropped are left out. */
export function buildTrainingBatch(analyses: readonly RolloutAnalysis[], options: BatchOptions): { batch: TrainingBatch; report: BatchReport } {
  const report = buildReport(analyses, options);
  const trees: PackedTree[] = [];
  analyses.forEach((a, k) => {
    const r = report.rollouts[k];
    if (r.dropped) return;
    const meta = { rollout: a.rollout, task: r.task as string, harness: r.harness as string };
    let tree = packTree(a.tree, a.filter, meta, r.advantage ?? 0, a.ownership);
    tree.reward = r.reward;
    if (options.algorithm.type === "PPO" && options.values) {
      const values = options.values.get(a.rollout);
      if (!values) throw new Error(`PPO batch needs critic values for rollout ${a.rollout}`);
      const { gamma, lambda } = options.algorithm.advantage;
      tree = applyBranchGae(tree, values, r.reward as number, { gamma, lambda });
    }
    trees.push(tree);
  });
  const batch: TrainingBatch = {
    formatVersion: 1,
    step: options.step,
    layout: options.layout,
    algorithm: batchAlgorithm(options.algorithm),
    composition: report.composition ?? { pairs: [], harnesses: {} },
  };
  if (options.layout === "tree") batch.trees = trees;
  else batch.paths = trees.flatMap((t): PathSample[] => unpackPaths(t));
  return { batch, report };
}
