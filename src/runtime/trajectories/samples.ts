/**
 * Training samples from a filtered tree: the tree-packed form and the per-path form.
 *
 * Exactly-once: every kept generated node has one **owner leaf**, the first kept leaf below it
 * in DFS order. The packed tree holds every kept token once (loss mask 1 on generated tokens).
 * In the per-path form a generated token shared by several paths has loss mask 1 only on its
 * owner leaf's path. In both forms `rolloutLogprobs` and `advantages` are non-zero only where
 * the loss mask is 1, and a sequence (for sequence-level corrections) is the set of trained
 * tokens one leaf owns, so both forms give the same per-token weights.
 */
import type { PackedTree, PathSample } from "./batch.js";
import type { FilterResult } from "./filters.js";
import type { PrefixTree, TreeNode } from "./tree.js";

export interface RolloutMeta {
  rollout: string;
  task: string;
  harness: string;
}

export interface Ownership {
  /** Per node id: index of the owner leaf in `keptLeaves`, -1 when the node is not kept. */
  owner: Int32Array;
  /** Per node id: number of kept leaves below (inclusive). */
  leafCount: Int32Array;
}

/** Owner leaf and leaf count of every kept node. */
export function computeOwnership(tree: PrefixTree, filter: FilterResult): Ownership {
  const owner = new Int32Array(tree.nodes.length).fill(-1);
  const leafCount = new Int32Array(tree.nodes.length);
  const leafIndex = new Map<TreeNode, number>();
  filter.keptLeaves.forEach((leaf, i) => leafIndex.set(leaf, i));
  for (let id = tree.nodes.length - 1; id >= 0; id--) {
    if (filter.kept[id] === 0) continue;
    const node = tree.nodes[id];
    const li = leafIndex.get(node);
    if (li !== undefined) {
      owner[id] = li;
      leafCount[id] = 1;
      continue;
    }
    let first = -1;
    let count = 0;
    for (const child of node.children) {
      if (filter.kept[child.id] === 0) continue;
      if (first < 0) first = owner[child.id];
      count += leafCount[child.id];
    }
    owner[id] = first;
    leafCount[id] = count;
  }
  return { owner, leafCount };
}

/** Pack the kept tree in DFS order. `advantage` is broadcast to every trained token. */
export function packTree(
  tree: PrefixTree,
  filter: FilterResult,
  meta: RolloutMeta,
  advantage: number,
  ownership: Ownership = computeOwnership(tree, filter),
): PackedTree {
  let total = 0;
  for (const node of tree.nodes) if (filter.kept[node.id] === 1) total += node.tokens.length;
  const tokens = new Array<number>(total);
  const parent = new Array<number>(total);
  const position = new Array<number>(total);
  const lossMask = new Array<number>(total);
  const rolloutLogprobs = new Array<number>(total);
  const advantages = new Array<number>(total);
  const branch = new Array<number>(total);
  const ownerLeaf = new Array<number>(total);
  const lastIndex = new Int32Array(tree.nodes.length).fill(-1);
  let index = 0;
  for (const node of tree.nodes) {
    if (filter.kept[node.id] === 0) continue;
    let prev = node.parent ? lastIndex[node.parent.id] : -1;
    const own = ownership.owner[node.id];
    const br = ownership.leafCount[node.id] === 1 ? own : -1;
    const gen = node.generated;
    for (let k = 0; k < node.tokens.length; k++, index++) {
      tokens[index] = node.tokens[k];
      parent[index] = prev;
      position[index] = node.depth + k;
      lossMask[index] = gen ? 1 : 0;
      rolloutLogprobs[index] = gen ? (node.logprobs as Float64Array)[k] : 0;
      advantages[index] = gen ? advantage : 0;
      branch[index] = br;
      ownerLeaf[index] = gen ? own : -1;
      prev = index;
    }
    lastIndex[node.id] = prev;
  }
  return {
    rollout: meta.rollout,
    task: meta.task,
    harness: meta.harness,
    tokens,
    parent,
    position,
    lossMask,
    rolloutLogprobs,
    advantages,
    branch,
    ownerLeaf,
    leaves: filter.keptLeaves.length,
  };
}

/**
 * One sample per root-to-leaf path of a packed tree, leaves in DFS order, with exactly-once loss
 * masks: a trained token is trained on its owner leaf's path (`ownerLeaf`, or when absent the
 * first path that contains it). Logprobs and advantages are copied where the mask is 1.
 */
export function unpackPaths(tree: PackedTree): PathSample[] {
  const n = tree.tokens.length;
  const hasChild = new Uint8Array(n);
  for (let i = 0; i < n; i++) if (tree.parent[i] >= 0) hasChild[tree.parent[i]] = 1;
  const owner = tree.ownerLeaf;
  const assigned = new Uint8Array(n);
  const samples: PathSample[] = [];
  for (let end = 0; end < n; end++) {
    if (hasChild[end]) continue;
    const leaf = samples.length;
    const indices: number[] = [];
    for (let k = end; k >= 0; k = tree.parent[k]) indices.push(k);
    indices.reverse();
    const tokens: number[] = new Array(indices.length);
    const lossMask: number[] = new Array(indices.length);
    const rolloutLogprobs: number[] = new Array(indices.length);
    const advantages: number[] = new Array(indices.length);
    indices.forEach((i, p) => {
      const trained = tree.lossMask[i] === 1 && (owner ? owner[i] === leaf : assigned[i] === 0);
      if (trained) assigned[i] = 1;
      tokens[p] = tree.tokens[i];
      lossMask[p] = trained ? 1 : 0;
      rolloutLogprobs[p] = trained ? tree.rolloutLogprobs[i] : 0;
      advantages[p] = trained ? tree.advantages[i] : 0;
    });
    const sample: PathSample = { rollout: tree.rollout, task: tree.task, harness: tree.harness, leaf, tokens, lossMask, rolloutLogprobs, advantages };
    if (tree.reward !== undefined) sample.reward = tree.reward;
    samples.push(sample);
  }
  return samples;
}

/** Token counts of a filtered tree: all generated, kept generated (trained) and kept context. */
export function countTokens(tree: PrefixTree, filter: FilterResult): { generated: number; trained: number; context: number } {
  let generated = 0;
  let trained = 0;
  let context = 0;
  for (const node of tree.nodes) {
    const len = node.tokens.length;
    if (node.generated) generated += len;
    if (filter.kept[node.id] === 1) {
      if (node.generated) trained += len;
      else context += len;
    }
  }
  return { generated, trained, context };
}
