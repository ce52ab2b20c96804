/**
 * The call record: one per model call that reached the proxy with a valid credential.
 * Written as one JSON line per call (`--record FILE`, run store `calls.jsonl`).
 * Consumed by trajectories (prefix trees), the run store and `reins view`.
 */
import type { CallClass, Dialect } from "../../compiler/contract/plan.js";

export type FinishReason = "stop" | "tool_calls" | "length" | "error" | "aborted";

export interface CallRecord {
  /** Record format version. */
  v: 1;
  rollout: string;
  /** 0-based sequence number of the call within the rollout (arrival order). */
  seq: number;
  dialect: Dialect;
  /** Model name the harness asked for. */
  model: string;
  /** Whether the harness asked for streaming. */
  stream: boolean;
  /** Full prompt token ids the engine saw. */
  promptIds: number[];
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
  /** Unix ms timestamps. */
  timings: { receivedMs: number; firstTokenMs?: number; doneMs: number };
  /** Set when the engine failed or the client went away. */
  error?: { kind: "engine" | "client-disconnect" | "bad-request" | "internal"; message: string };
}
