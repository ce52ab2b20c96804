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
 */
import type { PackedTree } from "./batch.js";

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
export function pathGae(
  path: ArrayLike<number>,
  generated: ArrayLike<number>,
  values: ArrayLike<number>,
  reward: number,
  options: GaeOptions,
): Float64Array {
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
export function computeBranchGae(
  tree: Pick<PackedTree, "parent" | "lossMask">,
  values: ArrayLike<number>,
  reward: number,
  options: GaeOptions,
): Float64Array {
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

/** A copy of `tree` with PPO advantages from the critic values. */
export function applyBranchGae(tree: PackedTree, values: ArrayLike<number>, reward: number, options: GaeOptions): PackedTree {
  return { ...tree, advantages: Array.from(computeBranchGae(tree, values, reward, options)) };
}
