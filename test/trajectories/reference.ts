/**
 * Brute-force reference for the trajectory rules: every token is identified by its full prefix
 * (the token sequence from the root to it, as a string key), and every rule is evaluated directly
 * from its definition over the call list. Quadratic and slow on purpose; only for small inputs.
 */
import type { CallClass } from "../../src/compiler/contract/plan.js";
import type { CallRecord } from "../../src/runtime/records/index.js";

export const key = (seq: readonly number[], len = seq.length): string => seq.slice(0, len).join(",");

export function isPrefix(a: readonly number[], b: readonly number[]): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const failed = (r: CallRecord) => r.error !== undefined || r.finishReason === "error" || r.finishReason === "aborted";

export interface ReferenceFilters {
  dropDeadLeaves: boolean;
  dropClasses: CallClass[];
  maxBranches: number;
}

export interface ReferenceResult {
  /** Every prefix key of every call. */
  all: Set<string>;
  /** Generated prefix keys -> logprob of the first (lowest seq) generating call. */
  generated: Map<string, number>;
  continued: Map<number, boolean>;
  dead: Map<number, boolean>;
  kept: Set<string>;
  keptLeaves: string[];
  leavesBefore: number;
  droppedDeadLeaves: number;
  droppedBranches: number;
  rolloutDropped: boolean;
}

export function referenceRollout(records: readonly CallRecord[], filters: ReferenceFilters): ReferenceResult {
  const calls = [...records].sort((a, b) => a.seq - b.seq);
  const S = calls.map((c) => [...c.promptIds, ...c.completionIds]);
  const all = new Set<string>();
  const generated = new Map<string, number>();
  calls.forEach((c, k) => {
    for (let i = 1; i <= S[k].length; i++) all.add(key(S[k], i));
    for (let i = c.promptIds.length; i < S[k].length; i++) {
      const kk = key(S[k], i + 1);
      if (!generated.has(kk)) generated.set(kk, c.completionLogprobs[i - c.promptIds.length]);
    }
  });
  const continued = new Map<number, boolean>();
  const parentLen: number[] = [];
  calls.forEach((c, k) => {
    continued.set(
      c.seq,
      calls.some((d) => d.seq > c.seq && isPrefix(S[k], d.promptIds)),
    );
    let best = 0;
    calls.forEach((p, j) => {
      if (p.seq < c.seq && isPrefix(S[j], c.promptIds) && S[j].length > best) best = S[j].length;
    });
    parentLen.push(best);
  });
  const siblings = (k: number, j: number) =>
    k !== j &&
    calls[k].callClass === calls[j].callClass &&
    parentLen[k] === parentLen[j] &&
    key(calls[k].promptIds, parentLen[k]) === key(calls[j].promptIds, parentLen[j]);
  const dead = new Map<number, boolean>();
  calls.forEach((c, k) => {
    let d = false;
    if (!continued.get(c.seq)) {
      for (let j = 0; j < calls.length; j++) {
        if (!siblings(k, j)) continue;
        const samePrompt = key(calls[k].promptIds) === key(calls[j].promptIds) && calls[k].promptIds.length === calls[j].promptIds.length;
        if (continued.get(calls[j].seq) && (parentLen[k] > 0 || samePrompt)) d = true;
        if (failed(c) && calls[j].seq > c.seq) d = true;
      }
    }
    dead.set(c.seq, d);
  });
  const dropClass = (k: number) => filters.dropClasses.includes(calls[k].callClass);
  const keptCall = (k: number) => !dropClass(k) && !(filters.dropDeadLeaves && dead.get(calls[k].seq));
  const kept = new Set<string>();
  calls.forEach((_, k) => {
    if (keptCall(k)) for (let i = 1; i <= S[k].length; i++) kept.add(key(S[k], i));
  });
  // Leaves: keys that are not a proper prefix of another key (keys of sequences ending there).
  const leavesOf = (keys: Set<string>) => {
    const parents = new Set<string>();
    for (const k of keys) {
      const cut = k.lastIndexOf(",");
      if (cut >= 0) parents.add(k.slice(0, cut));
    }
    return [...keys].filter((k) => !parents.has(k));
  };
  const fullLeaves = leavesOf(all);
  let droppedDeadLeaves = 0;
  let droppedBranches = 0;
  for (const leaf of fullLeaves) {
    if (kept.has(leaf)) continue;
    const ending = calls.map((_, k) => k).filter((k) => key(S[k]) === leaf && S[k].length > 0);
    if (ending.some(dropClass)) droppedBranches++;
    else droppedDeadLeaves++;
  }
  const keptLeaves = leavesOf(kept);
  return {
    all,
    generated,
    continued,
    dead,
    kept,
    keptLeaves,
    leavesBefore: fullLeaves.length,
    droppedDeadLeaves,
    droppedBranches,
    rolloutDropped: filters.maxBranches > 0 && keptLeaves.length > filters.maxBranches,
  };
}

/** GRPO/RLOO advantages straight from the group formula. */
export function referenceGroupAdvantage(rewards: readonly number[], i: number, estimator: "GRPO" | "RLOO", normalizeStd: boolean, eps = 1e-6): number {
  const n = rewards.length;
  if (n < 2 || Math.max(...rewards) - Math.min(...rewards) <= 1e-12) return 0;
  if (estimator === "RLOO") {
    const others = rewards.filter((_, j) => j !== i);
    return rewards[i] - others.reduce((a, b) => a + b, 0) / others.length;
  }
  const mean = rewards.reduce((a, b) => a + b, 0) / n;
  const variance = rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1);
  return normalizeStd ? (rewards[i] - mean) / (Math.sqrt(variance) + eps) : rewards[i] - mean;
}
