/**
 * Trained tokens checked against the records: every token a batch trains (loss mask 1) is
 * compared with the id the engine sampled, read from the generating call's `completionIds`. Pure.
 *
 * Where each trained token comes from is worked out from the records alone: the rollout's prefix
 * tree is rebuilt from its calls with the filters the batch was built with, and its kept nodes
 * are walked in the packed order (DFS; for the per-path layout, root to each kept leaf). A
 * generated node names the call that generated it (`genSeq`) and the position its completion
 * starts at, so the expected id of a packed token is `completionIds[position - promptLength]` of
 * that call. A trained token counts as mismatched when its id differs, when the batch puts it at
 * another position than the records do, or when the records have no generated token there (a
 * trained context token, a tree longer than the records', a rollout the records do not hold).
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { CallRecord } from "../records/index.js";
import type { PackedTree, PathSample, TrainingBatch } from "./batch.js";
import { analyzeRollout, type RolloutAnalysis } from "./rollout.js";
import { nodeChain, type TreeNode } from "./tree.js";

export interface TokenCheck {
  /** Trained tokens compared. */
  checked: number;
  /** Trained tokens whose id (or place) differs from the engine-sampled id in the records. */
  mismatched: number;
}

export interface BatchCheck extends TokenCheck {
  /** Per harness (the harness of the generating call when known, else the tree's). */
  byHarness: Record<string, TokenCheck>;
}

export interface CheckSources {
  /** The calls of each rollout the batch names (by the batch's rollout id). */
  records: ReadonlyMap<string, readonly CallRecord[]>;
  /** The filters the batch was built with. */
  filters: ResolvedAlgorithm["filters"];
  /** The harness of the call that generated a token (default: the tree's harness). */
  harnessOf?: (rollout: string, seq: number) => string | undefined;
}

/** Per packed index: the generating call's seq (-1: context), the offset in its completion, the position. */
interface Provenance {
  gen: Int32Array;
  offset: Int32Array;
  position: Int32Array;
}

function nodeProvenance(tree: RolloutAnalysis["tree"], nodes: readonly TreeNode[]): Provenance {
  const promptLength = new Map(tree.calls.map((c) => [c.seq, c.promptLength]));
  let total = 0;
  for (const n of nodes) total += n.tokens.length;
  const gen = new Int32Array(total);
  const offset = new Int32Array(total);
  const position = new Int32Array(total);
  let i = 0;
  for (const node of nodes) {
    const start = node.generated ? node.depth - (promptLength.get(node.genSeq) ?? 0) : 0;
    for (let k = 0; k < node.tokens.length; k++, i++) {
      gen[i] = node.generated ? node.genSeq : -1;
      offset[i] = start + k;
      position[i] = node.depth + k;
    }
  }
  return { gen, offset, position };
}

/** Kept nodes in the packed tree's order. */
function packedNodes(a: RolloutAnalysis): TreeNode[] {
  return a.tree.nodes.filter((n) => a.filter.kept[n.id] === 1);
}

function compare(
  sample: { rollout: string; harness: string; tokens: readonly number[]; lossMask: readonly number[]; position?: readonly number[] },
  prov: Provenance | null,
  bySeq: ReadonlyMap<number, CallRecord>,
  sources: CheckSources,
  out: BatchCheck,
): void {
  for (let i = 0; i < sample.tokens.length; i++) {
    if (sample.lossMask[i] !== 1) continue;
    const seq = prov && i < prov.gen.length ? prov.gen[i]! : -1;
    const harness = (seq >= 0 ? sources.harnessOf?.(sample.rollout, seq) : undefined) ?? sample.harness;
    const h = (out.byHarness[harness] ??= { checked: 0, mismatched: 0 });
    out.checked++;
    h.checked++;
    const position = sample.position ? sample.position[i] : i;
    const expected = seq >= 0 && prov!.position[i] === position ? bySeq.get(seq)?.completionIds[prov!.offset[i]!] : undefined;
    if (expected === undefined || expected !== sample.tokens[i]) {
      out.mismatched++;
      h.mismatched++;
    }
  }
}

/** Compare every trained token of `batch` with the engine-sampled ids in the records. */
export function checkTrainedTokens(batch: TrainingBatch, sources: CheckSources): BatchCheck {
  const out: BatchCheck = { checked: 0, mismatched: 0, byHarness: {} };
  const analyses = new Map<string, { analysis: RolloutAnalysis; bySeq: Map<number, CallRecord> } | null>();
  const analysisOf = (rollout: string) => {
    if (!analyses.has(rollout)) {
      const records = sources.records.get(rollout);
      analyses.set(rollout, records ? { analysis: analyzeRollout(rollout, records, sources.filters), bySeq: new Map(records.map((r) => [r.seq, r])) } : null);
    }
    return analyses.get(rollout)!;
  };
  for (const tree of batch.trees ?? []) {
    const a = analysisOf(tree.rollout);
    compare(tree as PackedTree, a ? nodeProvenance(a.analysis.tree, packedNodes(a.analysis)) : null, a?.bySeq ?? new Map(), sources, out);
  }
  for (const path of batch.paths ?? []) {
    const a = analysisOf(path.rollout);
    const leaf = a?.analysis.filter.keptLeaves[(path as PathSample).leaf];
    compare(path, a && leaf ? nodeProvenance(a.analysis.tree, nodeChain(leaf)) : null, a?.bySeq ?? new Map(), sources, out);
  }
  return out;
}
