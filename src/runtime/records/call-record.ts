/**
 * The call record: one per model call that reached the proxy with a valid credential.
 * Written as one JSON line per call (`reins proxy --record FILE`, the run store's `calls.jsonl`)
 * by ./write-records.ts, read back by ./read-calls.ts. Consumed by trajectories (prefix trees), the
 * run store, the training loop and `reins view`.
 *
 * Identity: a call belongs to the plan's rollout `rolloutId` (the id its RolloutResult carries)
 * and to one infrastructure `try` of it; `seq` counts the calls of that try. The proxy sets all
 * three when it records the call, from what the executor registered — nothing downstream derives
 * them from URL paths or other ids.
 *
 * Versions: 1 had `rollout` (the proxy's per-try path id, e.g. "3-0-1.t2") and no `try`; the run
 * store tagged its lines with `rolloutId`. 2 has `rolloutId` + `try`. The reader accepts both.
 */
import type { Code } from "../../compiler/contract/codes.js";
import { CALL_CLASSES, type CallClass, type Dialect } from "../../compiler/contract/plan.js";

export { CALL_CLASSES };

export const CALL_RECORD_VERSION = 2;

export type FinishReason = "stop" | "tool_calls" | "length" | "error" | "aborted";

export const FINISH_REASONS: readonly FinishReason[] = ["stop", "tool_calls", "length", "error", "aborted"];

export interface CallRecord {
  /** Record format version. */
  v: typeof CALL_RECORD_VERSION;
  /**
   * The plan's rollout id (PlanRollout.id, RolloutResult.id). For `reins proxy` (shared key, no
   * plan) the id on the URL path; for judge calls "<rollout>/judge".
   */
  rolloutId: string;
  /** The rollout's infrastructure try this call belongs to, 1-based (1 when nothing retried). */
  try: number;
  /** 0-based sequence number of the call within the try (arrival order). */
  seq: number;
  dialect: Dialect;
  /** Model name the harness asked for. */
  model: string;
  /** Whether the harness asked for streaming. */
  stream: boolean;
  /** Full prompt token ids the engine saw (empty for a call refused before generating: see `promptTokens`). */
  promptIds: number[];
  /** Prompt tokens of a call refused after tokenizing (its ids are not kept). */
  promptTokens?: number;
  /** Request body bytes (after decompression), once the body was read. */
  bodyBytes?: number;
  /** Token ids the engine generated (raw, including reasoning and tool-call markup and the stop token). */
  completionIds: number[];
  /** One logprob per completion id (rollout policy). */
  completionLogprobs: number[];
  finishReason: FinishReason;
  /** How the raw completion parsed: ok, or which malformation. */
  parse: { ok: boolean; error?: "invalid-tool-json" | "unterminated-tool-call" | "truncated"; detail?: string };
  /** Classification from the harness's callClasses (default "main"). */
  callClass: CallClass;
  /** seq numbers of earlier calls whose stored completion ids were reused to render this prompt. */
  reused: number[];
  /** Number of prompt tokens newly tokenized (the rest came from cache / stored completions). */
  tokenizedPromptTokens: number;
  /** Weights version that produced the completion (engine-defined; "scripted" for the scripted engine). */
  weightsVersion: string;
  /**
   * Unix ms timestamps: arrival, first engine token, record handed over (answer written); and,
   * when the engine was asked, when it was asked and when it returned (the proxy's added latency
   * is the call's time minus the engine's).
   */
  timings: { receivedMs: number; firstTokenMs?: number; doneMs: number; engineStartMs?: number; engineDoneMs?: number };
  /**
   * The first call of a try only: its prompt ids compared with the model's own chat template
   * rendering of the same request (one `apply_chat_template` of the whole conversation, tokenized
   * at once). `at`: the first differing position, when they differ.
   */
  templateCheck?: { match: boolean; templateTokens: number; at?: number };
  /**
   * A call passed through to a hosted policy (no token ids): the API and model asked, its HTTP
   * status and the token usage it reported.
   */
  hosted?: { api: string; model: string; status?: number; inputTokens?: number; outputTokens?: number };
  /** Set when the engine failed, the client went away or the proxy refused the call (`code`: which limit). */
  error?: { kind: "engine" | "client-disconnect" | "bad-request" | "internal"; message: string; code?: Code };
}
