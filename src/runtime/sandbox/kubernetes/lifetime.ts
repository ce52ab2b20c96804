/**
 * How long a rollout's sandbox may live on the cluster (pure): the sum of its stage deadlines —
 * starting (until Ready), the try (workspace, harness; the task's timeoutSeconds) and finishing
 * (stopping it and copying the workspace out) — so the cluster reaps it at that time even when
 * reins died without deleting it (verifiers PR #2605's rule). A claim states it as
 * `lifecycle.shutdownTime`.
 */

export interface StageDeadlines {
  startSeconds: number;
  runSeconds: number;
  finishSeconds: number;
}

export function lifetimeSeconds(d: StageDeadlines): number {
  return Math.ceil(d.startSeconds + d.runSeconds + d.finishSeconds);
}

/** RFC 3339 at whole seconds, `seconds` after `now`. */
export function shutdownTime(now: Date, seconds: number): string {
  return new Date(now.getTime() + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}
