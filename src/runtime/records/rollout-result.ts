/**
 * The rollout result: one per finished rollout, the run store's `rollouts.jsonl` line and the
 * source of truth for resume. Written by ./write-records.ts, read back by ./read-rollouts.ts.
 * `id` is the plan's rollout id, the same `rolloutId` its calls carry.
 */

export type RolloutStatus = "ok" | "timeout" | "infra-failed" | "verifier-error" | "harness-error";

export const ROLLOUT_STATUSES: readonly RolloutStatus[] = ["ok", "timeout", "infra-failed", "verifier-error", "harness-error"];

export interface RolloutResult {
  id: string;
  step: number;
  task: string;
  harness: string;
  pair: string;
  attempt: number;
  category: string;
  status: RolloutStatus;
  /** null when no trustworthy reward exists (infrastructure or verifier error). */
  reward: number | null;
  passed: boolean;
  /** Infrastructure tries used (1 = first try succeeded); the stored calls are those of the last try. */
  tries: number;
  durationMs: number;
  /** Phase timings of the final try, ms. */
  phases: Record<string, number>;
  calls: number;
  harnessExit: { code: number | null; signal: string | null; timedOut: boolean } | null;
  verifier: unknown;
  error?: { code: string; message: string };
  /** Infrastructure failures of earlier tries. */
  retries: { code: string; message: string }[];
  weightsVersion?: string;
  finishedAt: string;
  /** The final try's MCP servers and every tools/call the harness made of them; absent when the rollout had none. */
  mcp?: RolloutMcp;
}

/** One tools/call, as reins relayed it between the harness and the server. */
export interface McpCallRecord {
  server: string;
  tool: string;
  arguments: unknown;
  /** ms from the try's start to the request. */
  atMs: number;
  latencyMs: number;
  /** The server's result (content, structuredContent, isError), as it answered. */
  result?: unknown;
  /**
   * A JSON-RPC error, or reins's refusal: a tool outside the allow-list (ToolNotAllowed), arguments
   * or an answer over the server's limits (McpArgumentsTooLarge, McpResultTooLarge), a server that
   * does not read (McpServerNotReading) or that ended first (McpServerCrashed).
   */
  error?: { code: string | number; message: string };
  /**
   * The original size (JSON, UTF-8 bytes) of the arguments or the result when the record keeps
   * them cut (src/runtime/mcp/limits.ts): long strings shortened, or `{truncated, bytes, start}`.
   */
  truncated?: { arguments?: number; result?: number };
}

export interface RolloutMcp {
  servers: { name: string; where: "sandbox" | "beside"; tools: string[]; exit?: { code: number | null; signal: string | null } }[];
  calls: McpCallRecord[];
}
