/**
 * One rollout for the viewer: its calls read back from their byte spans in calls.jsonl (only that
 * rollout's lines), the prefix tree, lineage and filters from src/runtime/trajectories (the same
 * analysis `reins trajectories` and the training loop use), its GRPO group's advantages, and
 * token pages of one call (ids, text, trained/context/dropped mask, rollout logprob, advantage).
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import { parseCallRecord, type CallRecord } from "../records/index.js";
import { analyzeRollout, computeGroupAdvantages, nodeChain, renderTreeSvg, type RolloutAnalysis } from "../trajectories/index.js";
import { parseJsonLine } from "./line-index.js";
import type { CallRef, RolloutRow, RunData } from "./run-data.js";

const DEFAULT_FILTERS: ResolvedAlgorithm["filters"] = { dropDeadLeaves: true, dropClasses: ["subagent", "compaction", "title", "auxiliary"], maxBranches: 0 };

/** The calls of the rollout's last try (earlier tries' calls, if a writer kept them, are not its trajectory). */
export function lastTry(refs: readonly CallRef[]): CallRef[] {
  const last = refs.reduce((m, r) => Math.max(m, r.try), 0);
  return refs.filter((r) => r.try === last);
}

export function readCalls(run: RunData, refs: readonly CallRef[]): CallRecord[] {
  const out: CallRecord[] = [];
  for (const ref of refs) {
    // A damaged line is left out; the call list still shows its span.
    try {
      out.push(parseCallRecord(parseJsonLine(run.calls.readLine(ref.span))));
    } catch {
      // left out
    }
  }
  // One seq once (a hand-concatenated file may repeat one): the first wins, as the reader does.
  const seen = new Set<number>();
  return out.filter((c) => {
    if (seen.has(c.seq)) return false;
    seen.add(c.seq);
    return true;
  });
}

export interface Analyzed {
  analysis: RolloutAnalysis;
  records: CallRecord[];
  advantage: number | null;
}

/** The advantage of one rollout within its (step, task, harness) group, as the trainer computes it. */
export function groupAdvantages(rows: readonly RolloutRow[], algorithm: ResolvedAlgorithm | null): Map<string, number> {
  const rewards = rows
    .filter((r) => r.reward !== null)
    .map((r) => ({ rollout: r.id, task: r.task, harness: r.harness, step: r.step, reward: r.reward as number }));
  if (rewards.length === 0) return new Map();
  const a = algorithm?.advantage;
  const result = computeGroupAdvantages(rewards, {
    estimator: algorithm?.type === "RLOO" ? "RLOO" : "GRPO",
    normalizeStd: a?.normalizeStd ?? true,
    positiveOnly: a?.positiveOnly ?? false,
    dropZeroVariance: false,
  });
  return result.advantages;
}

export function siblingsOf(run: RunData, row: RolloutRow): RolloutRow[] {
  return run.rolloutRows().filter((r) => r.step === row.step && r.task === row.task && r.harness === row.harness);
}

export function analyze(run: RunData, row: RolloutRow): Analyzed {
  const refs = lastTry(run.callRefs(row.id));
  const records = readCalls(run, refs);
  const algorithm = run.plan().algorithm;
  const analysis = analyzeRollout(row.id, records, algorithm?.filters ?? DEFAULT_FILTERS);
  const advantage = groupAdvantages(siblingsOf(run, row), algorithm).get(row.id) ?? null;
  return { analysis, records, advantage };
}

/** The tree as JSON: nodes with their marks, calls with lineage and filter verdicts. */
export function treeJson(a: Analyzed) {
  const { tree, filter } = a.analysis;
  const dropOfNode = new Map<number, string>();
  tree.calls.forEach((call, k) => {
    const drop = filter.callDrop[k];
    if (drop && call.endNode) dropOfNode.set(call.endNode.id, drop);
  });
  return {
    rollout: tree.rollout,
    advantage: a.advantage,
    dropped: a.analysis.dropped,
    stats: a.analysis.stats,
    nodes: tree.nodes.map((n) => ({
      id: n.id,
      parent: n.parent ? n.parent.id : -1,
      depth: n.depth,
      tokens: n.tokens.length,
      generated: n.generated,
      seq: n.generated ? n.genSeq : n.firstSeq,
      kept: filter.kept[n.id] === 1,
      leaf: n.children.length === 0,
      ends: n.ends,
      drop: dropOfNode.get(n.id) ?? null,
    })),
    calls: tree.calls.map((_, k) => callJson(a, k)),
  };
}

/** One call of the tree (index k in seq order) with its lineage and filter verdict. */
export function callJson(a: Analyzed, k: number) {
  const { tree, filter, lineage } = a.analysis;
  const call = tree.calls[k];
  const record = a.records.find((r) => r.seq === call.seq);
  return {
    seq: call.seq,
    callClass: call.callClass,
    promptLength: call.promptLength,
    completionLength: call.length - call.promptLength,
    failed: call.failed,
    weightsVersion: call.weightsVersion,
    endNode: call.endNode ? call.endNode.id : -1,
    drop: filter.callDrop[k],
    dead: lineage[k].dead,
    deadReason: lineage[k].deadReason ?? null,
    continued: lineage[k].continued,
    parentLength: lineage[k].parentLength,
    finishReason: record?.finishReason ?? "stop",
    dialect: record?.dialect ?? "",
    error: record?.error ?? null,
    parse: record?.parse ?? null,
    durationMs: record ? Math.max(0, record.timings.doneMs - record.timings.receivedMs) : 0,
  };
}

export function treeSvg(a: Analyzed): string {
  return renderTreeSvg(a.analysis.tree, a.analysis.filter, a.analysis.lineage, { title: `rollout ${a.analysis.rollout}` });
}

export type TokenMark = "trained" | "context" | "dropped";

export interface TokenPage {
  seq: number;
  total: number;
  promptLength: number;
  from: number;
  ids: number[];
  marks: TokenMark[];
  /** Rollout (sampler) logprob of generated tokens; null for context. */
  logprobs: (number | null)[];
  /** Which call generated each token (-1: context). */
  genSeq: number[];
  advantage: number | null;
  /** The trainer's logprob of each trained token (trainer-logprobs/), null elsewhere or when not recorded. */
  trainerLogprobs: (number | null)[];
  /** Why there are no trainer logprobs (absent when there are). */
  trainerNote?: string;
}

/**
 * Where each kept generated node's tokens start in the trainer's logprobs of the rollout (the
 * packed tree's trained tokens, depth-first: trajectories/samples.ts packTree); null when the
 * count differs from what the trainer recorded.
 */
export function trainedOffsets(a: Analyzed, recorded: number): Map<number, number> | null {
  const kept = a.analysis.filter.kept;
  const offsets = new Map<number, number>();
  let at = 0;
  for (const node of a.analysis.tree.nodes) {
    if (kept[node.id] !== 1 || !node.generated) continue;
    offsets.set(node.id, at);
    at += node.tokens.length;
  }
  return at === recorded ? offsets : null;
}

/** Tokens [from, from+limit) of one call's full sequence (prompt + completion), with their marks. */
export function tokenPage(a: Analyzed, seq: number, from: number, limit: number, trainer: readonly number[] | null = null): TokenPage | undefined {
  const call = a.analysis.tree.calls.find((c) => c.seq === seq);
  if (!call) return undefined;
  const chain = call.endNode ? nodeChain(call.endNode) : [];
  const total = call.length;
  const start = Math.max(0, Math.min(from, total));
  const end = Math.min(total, start + limit);
  const page: TokenPage = {
    seq,
    total,
    promptLength: call.promptLength,
    from: start,
    ids: [],
    marks: [],
    logprobs: [],
    genSeq: [],
    advantage: a.advantage,
    trainerLogprobs: [],
  };
  const kept = a.analysis.filter.kept;
  const droppedRollout = a.analysis.dropped !== null;
  const offsets = trainer && !droppedRollout ? trainedOffsets(a, trainer.length) : null;
  if (!trainer) page.trainerNote = "The trainer recorded no logprobs for this rollout (not trained, an evaluation, or a run from before they were kept).";
  else if (!offsets) page.trainerNote = "The trainer's logprobs of this rollout do not match its tree as read now; they are not shown.";
  for (const node of chain) {
    const nStart = node.depth;
    const nEnd = node.depth + node.tokens.length;
    if (nEnd <= start || nStart >= end) continue;
    const mark: TokenMark = kept[node.id] !== 1 || droppedRollout ? "dropped" : node.generated ? "trained" : "context";
    for (let p = Math.max(nStart, start); p < Math.min(nEnd, end); p++) {
      const i = p - nStart;
      page.ids.push(node.tokens[i]);
      page.marks.push(mark);
      page.logprobs.push(node.generated && node.logprobs ? node.logprobs[i] : null);
      page.genSeq.push(node.generated ? node.genSeq : -1);
      const o = offsets?.get(node.id);
      page.trainerLogprobs.push(o !== undefined && trainer ? trainer[o + i] : null);
    }
  }
  return page;
}
