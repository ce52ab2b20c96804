/**
 * The training batch contract between trajectories (builder) and the trainer worker (consumer).
 * Serialized as JSON (small batches, tests) or as a directory of little-endian binary arrays
 * plus `batch.json` metadata (layout: src/runtime/trajectories/README.md). Both sides are tested against this.
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";

/** One rollout's tree, packed: tokens in DFS order; each token's parent is an earlier index (or -1). */
export interface PackedTree {
  rollout: string;
  task: string;
  harness: string;
  /** Token ids in DFS order. */
  tokens: number[];
  /** Index of the previous token on the path from the root, -1 for a root token. */
  parent: number[];
  /** Position id = depth in the tree (0 at roots). */
  position: number[];
  /** 1 where the token is generated and trained (exactly once per rollout), 0 for context. */
  lossMask: number[];
  /** Rollout-policy logprob for trained tokens, 0 elsewhere. */
  rolloutLogprobs: number[];
  /** Advantage per token (broadcast per rollout for GRPO, per branch for PPO), 0 for context. */
  advantages: number[];
  /** Index of the leaf each token's branch belongs to (for sequence-level corrections); -1 shared. */
  branch: number[];
  /**
   * Optional. Owner leaf of each trained token (the first kept leaf below it in DFS order; the
   * path that trains it in the per-path layout), -1 for context. Sequence-level corrections group
   * trained tokens by this index.
   */
  ownerLeaf?: number[];
  /** Optional. Number of kept leaves (root-to-leaf paths) of the tree. */
  leaves?: number;
  /** Optional. The rollout's reward. */
  reward?: number;
  /**
   * PPO only: the critic's regression target per token (the branch's GAE advantage plus the
   * critic value it was computed from, before any advantage normalization), 0 for context.
   */
  returns?: number[];
}

/** One root-to-leaf path: a plain causal sequence. */
export interface PathSample {
  rollout: string;
  task: string;
  harness: string;
  leaf: number;
  tokens: number[];
  /** Exactly-once mask: a generated token shared by several paths is trained on one of them only. */
  lossMask: number[];
  rolloutLogprobs: number[];
  advantages: number[];
  /** Optional. The rollout's reward. */
  reward?: number;
}

export interface BatchComposition {
  pairs: { task: string; harness: string; rollouts: number; weight: number; meanReward: number }[];
  harnesses: Record<string, number>;
}

export interface TrainingBatch {
  formatVersion: 1;
  step: number;
  layout: "tree" | "paths";
  trees?: PackedTree[];
  paths?: PathSample[];
  algorithm: Pick<ResolvedAlgorithm, "type" | "clip" | "klCoef" | "entropyCoef" | "correction" | "lossAggregation" | "valueCoef">;
  composition: BatchComposition;
}
