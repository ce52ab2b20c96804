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
}
