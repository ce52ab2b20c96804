/**
 * Prefix breaks: within one try of a rollout, a call whose prompt does not extend the previous
 * call's prompt + completion (what the harness received). With token-in-token-out every call of
 * a harness that appends to its conversation extends the one before; a break starts a new branch
 * of the prefix tree, and its cause says why. Pure.
 *
 * Causes, decided from the two token sequences and the call classes (first that applies):
 *   side-call              the calls are of different classes (a title, summary or subagent call
 *                          between main turns), and the call extends the last call of its own
 *                          class (or is the first of it): the side call explains the break.
 *   retry                  the same prompt again after a call that answered (the harness asked
 *                          once more; after a failed call the same prompt is no break).
 *   completion-not-reused  the prompt carries the previous prompt, then differs inside or right
 *                          after its completion: the harness's echo of the answer was rendered
 *                          afresh (re-serialized, edited or truncated), so the ids differ there.
 *   context-rewritten      the prompt differs inside the previous prompt and is shorter: the
 *                          context was cut or summarized (compaction) or a new conversation began.
 *   history-reserialized   the prompt differs inside the previous prompt and is not shorter: the
 *                          harness re-serialized or edited earlier text, or inserted the new turn
 *                          before a trailing message (OpenClaw's chat dialect keeps its internal
 *                          context last), so the ids differ at position `at`.
 * On the captures of the real harnesses (test-output/harness/): Claude Code, Codex and reins-agent
 * have no break on plain turns; a subagent or compaction call breaks as side-call, the main turn
 * after a compaction as context-rewritten; OpenClaw's chat dialect breaks every turn as
 * history-reserialized.
 * A call refused before its prompt was tokenized (no prompt ids) takes no part.
 */
import type { CallRecord } from "../records/index.js";
import { isFailedCall } from "./tree.js";

export const PREFIX_BREAK_CAUSES = ["side-call", "retry", "completion-not-reused", "context-rewritten", "history-reserialized"] as const;
export type PrefixBreakCause = (typeof PREFIX_BREAK_CAUSES)[number];

export interface PrefixBreak {
  rolloutId: string;
  try: number;
  /** The call that breaks the prefix. */
  seq: number;
  /** The call it was compared with (the previous call, or the last one of its class). */
  previousSeq: number;
  cause: PrefixBreakCause;
  /** First position where the prompt differs from the previous call's prompt + completion. */
  at: number;
}

/** The token sequence a later call of the same conversation should start with. */
function heldOf(call: CallRecord): { length: number; at(k: number): number } {
  const p = call.promptIds;
  const c = isFailedCall(call) ? [] : call.completionIds;
  return { length: p.length + c.length, at: (k) => (k < p.length ? p[k]! : c[k - p.length]!) };
}

/** Length of the common prefix of `call`'s prompt and `previous`'s prompt + completion. */
export function commonPrefix(call: CallRecord, previous: CallRecord): number {
  const held = heldOf(previous);
  const prompt = call.promptIds;
  const n = Math.min(prompt.length, held.length);
  let k = 0;
  while (k < n && prompt[k] === held.at(k)) k++;
  return k;
}

/** True when `call`'s prompt starts with everything `previous` held (its prompt and, if answered, its completion). */
export function extendsCall(call: CallRecord, previous: CallRecord): boolean {
  const held = heldOf(previous);
  return call.promptIds.length >= held.length && commonPrefix(call, previous) === held.length;
}

function samePrompt(a: CallRecord, b: CallRecord): boolean {
  if (a.promptIds.length !== b.promptIds.length) return false;
  for (let k = 0; k < a.promptIds.length; k++) if (a.promptIds[k] !== b.promptIds[k]) return false;
  return true;
}

/** Why `call` does not extend `previous` (same class, or compared with the last call of its class). */
export function classifyBreak(call: CallRecord, previous: CallRecord): { cause: PrefixBreakCause; at: number } {
  const at = commonPrefix(call, previous);
  if (samePrompt(call, previous)) return { cause: "retry", at };
  if (at >= previous.promptIds.length) return { cause: "completion-not-reused", at };
  if (call.promptIds.length < previous.promptIds.length) return { cause: "context-rewritten", at };
  return { cause: "history-reserialized", at };
}

/** The prefix breaks of one try's calls (any order; compared in seq order). */
function breaksOfTry(calls: readonly CallRecord[]): PrefixBreak[] {
  const sorted = calls.filter((c) => c.promptIds.length > 0).sort((a, b) => a.seq - b.seq);
  const out: PrefixBreak[] = [];
  const lastOfClass = new Map<string, CallRecord>();
  let previous: CallRecord | undefined;
  for (const call of sorted) {
    if (previous && !extendsCall(call, previous)) {
      const id = { rolloutId: call.rolloutId, try: call.try, seq: call.seq };
      if (call.callClass !== previous.callClass) {
        const own = lastOfClass.get(call.callClass);
        if (!own || extendsCall(call, own)) out.push({ ...id, previousSeq: previous.seq, cause: "side-call", at: commonPrefix(call, previous) });
        else out.push({ ...id, previousSeq: own.seq, ...classifyBreak(call, own) });
      } else {
        out.push({ ...id, previousSeq: previous.seq, ...classifyBreak(call, previous) });
      }
    }
    lastOfClass.set(call.callClass, call);
    previous = call;
  }
  return out;
}

/** Every prefix break of a set of records, per (rollout, try), in record order of the tries. */
export function findPrefixBreaks(records: readonly CallRecord[]): PrefixBreak[] {
  const tries = new Map<string, CallRecord[]>();
  for (const r of records) {
    const key = `${r.rolloutId}\u0000${r.try}`;
    let list = tries.get(key);
    if (!list) tries.set(key, (list = []));
    list.push(r);
  }
  return [...tries.values()].flatMap(breaksOfTry);
}
