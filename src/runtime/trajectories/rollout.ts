/**
 * Per-rollout analysis: tree, lineage, filters, ownership and the counts the summary reports.
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { CallRecord } from "../records/index.js";
import type { FilterResult, RolloutDrop } from "./filters.js";
import { applyFilters } from "./filters.js";
import type { CallLineage } from "./lineage.js";
import { computeLineage } from "./lineage.js";
import type { Ownership } from "./samples.js";
import { computeOwnership, countTokens } from "./samples.js";
import type { PrefixTree } from "./tree.js";
import { buildPrefixTree, groupByRollout } from "./tree.js";

export interface RolloutStats {
  rollout: string;
  calls: number;
  nodes: number;
  /** Leaves of the full tree (before the filters). */
  leavesBefore: number;
  /** Leaves kept after the call filters (counted even when the rollout is then dropped). */
  leaves: number;
  droppedDeadLeaves: number;
  droppedBranches: number;
  /** Calls that are dead leaves (lineage.ts), whether or not the filters drop them. */
  deadLeaves: number;
  /** Distinct generated tokens in the full tree. */
  generatedTokens: number;
  /** Generated tokens in the kept tree (0 when the rollout is dropped). */
  trainedTokens: number;
  /** Context tokens in the kept tree (0 when the rollout is dropped). */
  contextTokens: number;
  /** Sum over calls of prompt + completion lengths. */
  naiveTokens: number;
  weightsVersions: string[];
}

export interface RolloutAnalysis {
  rollout: string;
  tree: PrefixTree;
  lineage: CallLineage[];
  filter: FilterResult;
  ownership: Ownership;
  /** Set when the filters drop the whole rollout. */
  dropped: RolloutDrop | null;
  stats: RolloutStats;
}

export function analyzeRollout(rollout: string, records: readonly CallRecord[], filters: ResolvedAlgorithm["filters"]): RolloutAnalysis {
  const tree = buildPrefixTree(rollout, records);
  const lineage = computeLineage(tree);
  const filter = applyFilters(tree, lineage, filters);
  const ownership = computeOwnership(tree, filter);
  const counts = countTokens(tree, filter);
  const dropped = filter.rolloutDrop;
  const stats: RolloutStats = {
    rollout,
    calls: tree.calls.length,
    nodes: tree.nodes.length,
    leavesBefore: filter.leavesBefore,
    leaves: filter.keptLeaves.length,
    droppedDeadLeaves: filter.droppedDeadLeaves,
    droppedBranches: filter.droppedBranches,
    deadLeaves: lineage.filter((l) => l.dead).length,
    generatedTokens: counts.generated,
    trainedTokens: dropped ? 0 : counts.trained,
    contextTokens: dropped ? 0 : counts.context,
    naiveTokens: tree.naiveTokens,
    weightsVersions: [...new Set(tree.calls.map((c) => c.weightsVersion))],
  };
  return { rollout, tree, lineage, filter, ownership, dropped, stats };
}

/** Analyze every rollout in a set of records (rollouts in first-appearance order). */
export function analyzeRollouts(records: readonly CallRecord[], filters: ResolvedAlgorithm["filters"]): RolloutAnalysis[] {
  return [...groupByRollout(records)].map(([rollout, list]) => analyzeRollout(rollout, list, filters));
}
