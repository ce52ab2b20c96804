/**
 * Trajectory filters: which calls, nodes and leaves survive, and why the others do not.
 *
 * A call is dropped when its class is in `dropClasses` (checked first), or when it is a dead
 * leaf (see lineage.ts) and `dropDeadLeaves` is on. The kept tree is the union of the paths of
 * the kept calls: a node stays when some kept call's sequence passes through it, so the prefix a
 * dropped branch shares with kept calls stays. A leaf of the full tree that no kept call reaches
 * is counted once: as a dropped branch when one of the calls ending there has a dropped class,
 * otherwise as a dropped dead leaf. A rollout whose kept tree has more than `maxBranches` leaves
 * (0 = no limit) is dropped as a whole.
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { CallLineage } from "./lineage.js";
import type { PrefixTree, TreeNode } from "./tree.js";

export type CallDrop = "class" | "dead-leaf";
export type RolloutDrop = "MaxBranches";

export interface FilterResult {
  /** Per call (tree.calls order): why it was dropped, or null when kept. */
  callDrop: (CallDrop | null)[];
  /** Per node id: 1 when the node is in the kept tree. */
  kept: Uint8Array;
  /** Leaves of the full tree. */
  leavesBefore: number;
  /** Leaves of the kept tree, in DFS order (their index is the leaf index in exports). */
  keptLeaves: TreeNode[];
  droppedDeadLeaves: number;
  droppedBranches: number;
  /** Set when the whole rollout is dropped. */
  rolloutDrop: RolloutDrop | null;
}

export function applyFilters(tree: PrefixTree, lineage: readonly CallLineage[], filters: ResolvedAlgorithm["filters"]): FilterResult {
  const dropClasses = new Set(filters.dropClasses);
  const callDrop: (CallDrop | null)[] = tree.calls.map((call, k) => {
    if (dropClasses.has(call.callClass)) return "class";
    if (filters.dropDeadLeaves && lineage[k].dead) return "dead-leaf";
    return null;
  });
  const dropBySeq = new Map<number, CallDrop | null>();
  tree.calls.forEach((call, k) => dropBySeq.set(call.seq, callDrop[k]));

  const kept = new Uint8Array(tree.nodes.length);
  tree.calls.forEach((call, k) => {
    if (callDrop[k] !== null) return;
    for (let n = call.endNode; n && kept[n.id] === 0; n = n.parent) kept[n.id] = 1;
  });

  let leavesBefore = 0;
  let droppedDeadLeaves = 0;
  let droppedBranches = 0;
  const keptLeaves: TreeNode[] = [];
  for (const node of tree.nodes) {
    if (node.children.length === 0) {
      leavesBefore++;
      if (kept[node.id] === 0) {
        if (node.ends.some((s) => dropBySeq.get(s) === "class")) droppedBranches++;
        else droppedDeadLeaves++;
      }
    }
    if (kept[node.id] === 1 && !node.children.some((c) => kept[c.id] === 1)) keptLeaves.push(node);
  }
  const rolloutDrop: RolloutDrop | null = filters.maxBranches > 0 && keptLeaves.length > filters.maxBranches ? "MaxBranches" : null;
  return { callDrop, kept, leavesBefore, keptLeaves, droppedDeadLeaves, droppedBranches, rolloutDrop };
}
