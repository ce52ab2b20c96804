/**
 * The fidelity report of a run, per harness: how faithfully the recorded calls and the trained
 * tokens follow what the engine saw and sampled. Pure: from rollout results, call records, the
 * filters' dropped classes and the trained-token checks of the batches (batch-check.ts).
 *
 *   calls                    recorded model calls of the harness's rollouts
 *   storedPromptTokens       prompt tokens taken from stored ids (earlier prompts of the rollout,
 *                            its stored completions, segments another rollout tokenized)
 *   freshPromptTokens        prompt tokens the tokenizer produced for the call
 *   reusedCompletionTokens   of the stored ones, raw completion ids of earlier calls spliced back
 *   prefixBreaks             calls that do not extend the previous call (prefix-breaks.ts), with
 *                            `prefixBreakCauses` and up to three `prefixBreakExamples`
 *   mismatchedTrainedTokens  trained tokens whose id differs from the engine-sampled one, of
 *                            `checkedTrainedTokens` compared
 *   templateChecked / templateMismatches
 *                            first calls whose prompt was compared with the chat template's own
 *                            rendering of the request, and those that differ
 *   droppedByClass           calls the filters drop for their class, per class
 *   proxyAddedMs             the proxy's time per call beyond the engine's, p50 and p99 (null
 *                            without calls that reached the engine)
 */
import type { CallRecord } from "../records/index.js";
import type { TokenCheck } from "./batch-check.js";
import { findPrefixBreaks, PREFIX_BREAK_CAUSES, type PrefixBreak, type PrefixBreakCause } from "./prefix-breaks.js";

export interface HarnessFidelity {
  rollouts: number;
  calls: number;
  prefixBreaks: number;
  prefixBreakCauses: Record<PrefixBreakCause, number>;
  prefixBreakExamples: PrefixBreak[];
  mismatchedTrainedTokens: number;
  checkedTrainedTokens: number;
  freshPromptTokens: number;
  storedPromptTokens: number;
  reusedCompletionTokens: number;
  droppedByClass: Record<string, number>;
  templateChecked: number;
  templateMismatches: number;
  proxyAddedMs: { p50: number | null; p99: number | null };
}

export interface FidelityReport {
  byHarness: Record<string, HarnessFidelity>;
}

export interface FidelityInput {
  /** The run's rollouts: which harness each ran through. */
  rollouts: readonly { id: string; harness: string }[];
  calls: readonly CallRecord[];
  /** The call classes the trajectory filters drop. */
  dropClasses: readonly string[];
  /** Trained-token checks of the batches trained (or that would be), per harness. */
  trained: readonly Record<string, TokenCheck>[];
}

const EXAMPLES = 3;

function emptyHarness(): HarnessFidelity {
  return {
    rollouts: 0,
    calls: 0,
    prefixBreaks: 0,
    prefixBreakCauses: Object.fromEntries(PREFIX_BREAK_CAUSES.map((c) => [c, 0])) as Record<PrefixBreakCause, number>,
    prefixBreakExamples: [],
    mismatchedTrainedTokens: 0,
    checkedTrainedTokens: 0,
    freshPromptTokens: 0,
    storedPromptTokens: 0,
    reusedCompletionTokens: 0,
    droppedByClass: {},
    templateChecked: 0,
    templateMismatches: 0,
    proxyAddedMs: { p50: null, p99: null },
  };
}

/** Nearest-rank percentile of sorted values (null when empty). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** The proxy's own time for a call: its whole time minus the engine's; null when the engine was not asked. */
export function proxyAddedMs(call: CallRecord): number | null {
  const t = call.timings;
  if (t.engineStartMs === undefined || t.engineDoneMs === undefined) return null;
  return Math.max(0, t.doneMs - t.receivedMs - (t.engineDoneMs - t.engineStartMs));
}

export function summarizeFidelity(input: FidelityInput): FidelityReport {
  const harnessOf = new Map(input.rollouts.map((r) => [r.id, r.harness]));
  const byHarness: Record<string, HarnessFidelity> = {};
  const of = (harness: string) => (byHarness[harness] ??= emptyHarness());
  for (const r of input.rollouts) of(r.harness).rollouts++;
  const dropped = new Set(input.dropClasses);
  const completionLength = new Map<string, number>();
  for (const c of input.calls) completionLength.set(`${c.rolloutId}\u0000${c.try}\u0000${c.seq}`, c.completionIds.length);
  const latencies = new Map<string, number[]>();
  const calls = input.calls.filter((c) => harnessOf.has(c.rolloutId));
  for (const c of calls) {
    const harness = harnessOf.get(c.rolloutId)!;
    const h = of(harness);
    h.calls++;
    const prompt = c.promptIds.length;
    const fresh = Math.min(prompt, c.tokenizedPromptTokens);
    h.freshPromptTokens += fresh;
    h.storedPromptTokens += prompt - fresh;
    for (const s of c.reused) h.reusedCompletionTokens += completionLength.get(`${c.rolloutId}\u0000${c.try}\u0000${s}`) ?? 0;
    if (dropped.has(c.callClass)) h.droppedByClass[c.callClass] = (h.droppedByClass[c.callClass] ?? 0) + 1;
    if (c.templateCheck) {
      h.templateChecked++;
      if (!c.templateCheck.match) h.templateMismatches++;
    }
    const added = proxyAddedMs(c);
    if (added !== null) {
      let list = latencies.get(harness);
      if (!list) latencies.set(harness, (list = []));
      list.push(added);
    }
  }
  for (const b of findPrefixBreaks(calls)) {
    const h = of(harnessOf.get(b.rolloutId)!);
    h.prefixBreaks++;
    h.prefixBreakCauses[b.cause]++;
    if (h.prefixBreakExamples.length < EXAMPLES) h.prefixBreakExamples.push(b);
  }
  for (const [harness, list] of latencies) {
    list.sort((a, b) => a - b);
    of(harness).proxyAddedMs = { p50: percentile(list, 0.5), p99: percentile(list, 0.99) };
  }
  for (const check of input.trained) {
    for (const [harness, t] of Object.entries(check)) {
      const h = of(harness);
      h.checkedTrainedTokens += t.checked;
      h.mismatchedTrainedTokens += t.mismatched;
    }
  }
  const sorted = Object.keys(byHarness).sort();
  return { byHarness: Object.fromEntries(sorted.map((k) => [k, byHarness[k]!])) };
}
