/**
 * PPO advantages: generalized advantage estimation per branch.
 *
 * A value depends only on the prefix, so the critic gives one value per packed tree token (DFS
 * order). Each root-to-leaf path is an independent episode: its steps are the generated tokens on
 * the path in order (context tokens are environment transitions, not steps), the reward R comes
 * at the path's last generated token and the value after it is 0:
 *   delta_k = gamma * V(g_{k+1}) - V(g_k)   (k < T),   delta_T = R - V(g_T)
 *   A_k     = delta_k + gamma * lambda * A_{k+1}
 * Nothing propagates between siblings: a token shared by several paths has one advantage per path,
 * and the tree carries the one of its owner path (the path that trains it exactly once).
 *
 * In `reins run` the values come from the trainer's value head (`compute_values`) on the step's
 * packed trees, with the weights that sampled the step, before any update (`applyCritic`): the
 * value head's regression target is the return A + V of each trained token, fixed for the step;
 * with `normalizeStd` the advantages (not the returns) are then whitened over the step's trained
 * tokens, and with `positiveOnly` negative ones become 0.
 */
import { ADVANTAGE_EPSILON } from "./advantages.js";
import type { PackedTree, TrainingBatch } from "./batch.js";

export interface GaeOptions {
  gamma: number;
  lambda: number;
}

/** Token indices of each root-to-leaf path of a packed tree, root first, leaves in DFS order. */
export function packedPaths(tree: Pick<PackedTree, "parent">): Int32Array[] {
  const n = tree.parent.length;
  const hasChild = new Uint8Array(n);
  for (let i = 0; i < n; i++) if (tree.parent[i] >= 0) hasChild[tree.parent[i]] = 1;
  const paths: Int32Array[] = [];
  for (let i = 0; i < n; i++) {
    if (hasChild[i]) continue;
    let len = 0;
    for (let k = i; k >= 0; k = tree.parent[k]) len++;
    const path = new Int32Array(len);
    for (let k = i, p = len - 1; k >= 0; k = tree.parent[k], p--) path[p] = k;
    paths.push(path);
  }
  return paths;
}

/** GAE along one path; returns advantages for the path's generated tokens (others 0). */
export function pathGae(path: ArrayLike<number>, generated: ArrayLike<number>, values: ArrayLike<number>, reward: number, options: GaeOptions): Float64Array {
  const out = new Float64Array(path.length);
  let nextValue = 0;
  let nextAdvantage = 0;
  let last = true;
  for (let p = path.length - 1; p >= 0; p--) {
    const i = path[p];
    if (!generated[i]) continue;
    const v = values[i];
    const delta = (last ? reward : options.gamma * nextValue) - v;
    const a = delta + (last ? 0 : options.gamma * options.lambda * nextAdvantage);
    out[p] = a;
    nextValue = v;
    nextAdvantage = a;
    last = false;
  }
  return out;
}

/**
 * Per-token PPO advantages for a packed tree: each trained token gets the GAE of its owner path
 * (the first leaf below it in DFS order). `values[i]` is the critic value of packed token i.
 */
export function computeBranchGae(tree: Pick<PackedTree, "parent" | "lossMask">, values: ArrayLike<number>, reward: number, options: GaeOptions): Float64Array {
  if (values.length !== tree.parent.length) {
    throw new Error(`values has ${values.length} entries for ${tree.parent.length} tokens`);
  }
  const out = new Float64Array(tree.parent.length);
  const assigned = new Uint8Array(tree.parent.length);
  for (const path of packedPaths(tree)) {
    const a = pathGae(path, tree.lossMask, values, reward, options);
    for (let p = 0; p < path.length; p++) {
      const i = path[p];
      if (tree.lossMask[i] && !assigned[i]) {
        out[i] = a[p];
        assigned[i] = 1;
      }
    }
  }
  return out;
}

/** A copy of `tree` with PPO advantages from the critic values, and the returns (advantage + value) they imply. */
export function applyBranchGae(tree: PackedTree, values: ArrayLike<number>, reward: number, options: GaeOptions): PackedTree {
  const advantages = Array.from(computeBranchGae(tree, values, reward, options));
  return { ...tree, advantages, returns: advantages.map((a, i) => (tree.lossMask[i] ? a + values[i]! : 0)) };
}

export interface CriticOptions extends GaeOptions {
  /** Whiten the advantages over all trained tokens of the batch (mean 0, std 1). */
  normalize: boolean;
  /** Negative advantages (after whitening) become 0. */
  positiveOnly: boolean;
}

/** What the critic said about a step (over its trained tokens). */
export interface CriticStats {
  /** Mean critic value. */
  valueMean: number;
  /** Mean return (the value head's target). */
  returnMean: number;
  /** 1 - Var(return - value) / Var(return); 0 when the returns do not vary. */
  explainedVariance: number;
  /** Mean and std of the GAE advantages before normalization. */
  advantageMean: number;
  advantageStd: number;
}

/**
 * A PPO tree batch (built without values: advantages 0, no returns) with each tree's per-branch
 * GAE from the critic's `values` (one list per tree, one value per packed token, as the trainer's
 * `compute_values` answers), its returns, and the advantages normalized as asked. Pure.
 */
export function applyCritic(batch: TrainingBatch, values: readonly ArrayLike<number>[], options: CriticOptions): { batch: TrainingBatch; stats: CriticStats } {
  const trees = batch.trees;
  if (batch.layout !== "tree" || !trees) throw new Error("applyCritic needs a tree-layout batch");
  if (values.length !== trees.length) throw new Error(`the critic answered ${values.length} rows for ${trees.length} trees`);
  const out: PackedTree[] = trees.map((tree, k) => {
    if (tree.reward === undefined) throw new Error(`PPO tree ${tree.rollout} has no reward`);
    return applyBranchGae(tree, values[k]!, tree.reward, options);
  });
  const adv: number[] = [];
  const ret: number[] = [];
  const val: number[] = [];
  out.forEach((t, k) =>
    t.lossMask.forEach((m, i) => {
      if (!m) return;
      adv.push(t.advantages[i]!);
      ret.push(t.returns![i]!);
      val.push(values[k]![i]!);
    }),
  );
  const a = meanStd(adv);
  const r = meanStd(ret);
  const residual = meanStd(ret.map((x, i) => x - val[i]!));
  const stats: CriticStats = {
    valueMean: meanStd(val).mean,
    returnMean: r.mean,
    explainedVariance: r.std > 0 ? 1 - residual.std ** 2 / r.std ** 2 : 0,
    advantageMean: a.mean,
    advantageStd: a.std,
  };
  if (options.normalize || options.positiveOnly) {
    for (const t of out) {
      t.advantages = t.advantages.map((x, i) => {
        if (!t.lossMask[i]) return 0;
        const y = options.normalize ? (x - a.mean) / (a.std + ADVANTAGE_EPSILON) : x;
        return options.positiveOnly ? Math.max(y, 0) : y;
      });
    }
  }
  return { batch: { ...batch, trees: out }, stats };
}

/** Mean and sample standard deviation (divisor n-1, as torch.std; 0 for fewer than two values). */
function meanStd(xs: readonly number[]): { mean: number; std: number } {
  const n = xs.length;
  if (n === 0) return { mean: 0, std: 0 };
  const mean = xs.reduce((s, x) => s + x, 0) / n;
  const std = n > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1)) : 0;
  return { mean, std };
}
