/**
 * Call lineage: which calls were continued, each call's parent path, retry siblings, dead leaves.
 *
 * Definitions (token level; S_c = prompt_c ++ completion_c):
 * - c is **continued** when some later call d (seq_d > seq_c) has a prompt that starts with S_c.
 * - c's **parent path** is the longest S_p of an earlier call p (seq_p < seq_c) that is a prefix of
 *   prompt_c; the empty path (the root) when there is none.
 * - c and d are **siblings** when they have the same call class and the same parent path.
 * - c is a **dead leaf** when it is not continued and either
 *   (a) a sibling d was continued, and the parent path is non-empty or prompt_d = prompt_c, or
 *   (b) c failed (engine error or client gone: the harness never received it) and a later
 *       sibling exists (the harness retried).
 * At the root, (a) asks for identical prompts: a fresh subagent, a post-compaction restart or a
 * title call share only a system prompt with the main conversation and are not retries of it.
 */
import type { PrefixTree, TreeCall, TreeNode } from "./tree.js";
import { nodeEnd } from "./tree.js";

export type DeadReason = "continued-sibling" | "failed-retried";

export interface CallLineage {
  seq: number;
  continued: boolean;
  /** Node whose end is the end of the parent path; null = root. */
  parentNode: TreeNode | null;
  /** Length of the parent path in tokens (0 = root). */
  parentLength: number;
  dead: boolean;
  deadReason?: DeadReason;
}

/** Per node: the highest seq of a call whose prompt covers the whole node (-1 if none). */
function maxPromptSeqBelow(tree: PrefixTree): Int32Array {
  const max = new Int32Array(tree.nodes.length).fill(-1);
  for (const call of tree.calls) {
    const n = call.promptEndNode;
    if (n && call.seq > max[n.id]) max[n.id] = call.seq;
  }
  for (let id = tree.nodes.length - 1; id >= 0; id--) {
    const parent = tree.nodes[id].parent;
    if (parent && max[id] > max[parent.id]) max[parent.id] = max[id];
  }
  return max;
}

function isContinued(tree: PrefixTree, call: TreeCall, maxPrompt: Int32Array): boolean {
  if (call.endNode) return maxPrompt[call.endNode.id] > call.seq;
  // An empty call is a prefix of every prompt.
  return tree.calls.some((d) => d.seq > call.seq);
}

/** Lowest seq among calls ending at each node (Infinity if none). */
function minEndSeq(tree: PrefixTree): Float64Array {
  const min = new Float64Array(tree.nodes.length).fill(Infinity);
  for (const node of tree.nodes) for (const s of node.ends) if (s < min[node.id]) min[node.id] = s;
  return min;
}

function findParent(call: TreeCall, minEnd: Float64Array): TreeNode | null {
  for (let n = call.promptEndNode; n; n = n.parent) if (minEnd[n.id] < call.seq) return n;
  return null;
}

/** Compute the lineage of every call of the tree, in the tree's call order. */
export function computeLineage(tree: PrefixTree): CallLineage[] {
  const maxPrompt = maxPromptSeqBelow(tree);
  const minEnd = minEndSeq(tree);
  const lineage: CallLineage[] = tree.calls.map((call) => {
    const parentNode = findParent(call, minEnd);
    return {
      seq: call.seq,
      continued: isContinued(tree, call, maxPrompt),
      parentNode,
      parentLength: parentNode ? nodeEnd(parentNode) : 0,
      dead: false,
    };
  });
  // Sibling groups: same class and same parent path.
  const groups = new Map<string, number[]>();
  tree.calls.forEach((call, k) => {
    const key = `${call.callClass}\u0000${lineage[k].parentNode?.id ?? -1}`;
    let list = groups.get(key);
    if (!list) groups.set(key, (list = []));
    list.push(k);
  });
  for (const members of groups.values()) {
    if (members.length < 2) continue;
    for (const k of members) {
      const me = lineage[k];
      if (me.continued) continue;
      const call = tree.calls[k];
      const atRoot = me.parentNode === null;
      let reason: DeadReason | undefined;
      for (const o of members) {
        if (o === k || !lineage[o].continued) continue;
        if (!atRoot || samePrompt(call, tree.calls[o])) {
          reason = "continued-sibling";
          break;
        }
      }
      if (!reason && call.failed && members.some((o) => tree.calls[o].seq > call.seq)) reason = "failed-retried";
      if (reason) {
        me.dead = true;
        me.deadReason = reason;
      }
    }
  }
  return lineage;
}

function samePrompt(a: TreeCall, b: TreeCall): boolean {
  if (a.promptLength !== b.promptLength) return false;
  return a.promptEndNode === b.promptEndNode;
}
