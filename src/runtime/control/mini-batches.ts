/**
 * Mini-batches (PPO's minibatching): a training step's rollouts split into `n` batches, one
 * optimizer step each, and the trainer's per-batch metrics merged back into one step's (pure).
 */
import type { TrainingBatch } from "../trajectories/batch.js";

/** Split a batch's trees (or paths) round-robin into at most `n` non-empty batches. */
export function splitMiniBatches(batch: TrainingBatch, n: number): TrainingBatch[] {
  const parts = Math.max(1, Math.floor(n));
  const items = batch.layout === "tree" ? (batch.trees ?? []) : (batch.paths ?? []);
  if (parts === 1 || items.length <= 1) return [batch];
  const buckets: (typeof items)[number][][] = Array.from({ length: Math.min(parts, items.length) }, () => []);
  items.forEach((item, i) => buckets[i % buckets.length]!.push(item));
  return buckets.map((b) =>
    batch.layout === "tree" ? { ...batch, trees: b as NonNullable<TrainingBatch["trees"]> } : { ...batch, paths: b as NonNullable<TrainingBatch["paths"]> },
  );
}

type Metrics = Record<string, unknown>;

/**
 * One step's metrics from its mini-batches': numbers are averaged, except extremes (`…Max`/`…Min`,
 * kept as the max/min) and counts of tokens (summed); nested objects merge the same way.
 */
export function mergeTrainMetrics(parts: readonly Metrics[]): Metrics {
  if (parts.length === 1) return parts[0]!;
  const out: Metrics = {};
  const keys = new Set(parts.flatMap((p) => Object.keys(p)));
  for (const k of keys) {
    const values = parts.map((p) => p[k]).filter((v) => v !== undefined);
    if (values.every((v) => typeof v === "number")) out[k] = combine(k, values as number[]);
    else if (values.every((v) => v !== null && typeof v === "object" && !Array.isArray(v))) out[k] = mergeTrainMetrics(values as Metrics[]);
    else out[k] = values[values.length - 1];
  }
  return out;
}

function combine(key: string, values: number[]): number {
  if (/Max$/.test(key)) return Math.max(...values);
  if (/Min$/.test(key)) return Math.min(...values);
  if (/^tokens$|Tokens$/.test(key)) return values.reduce((s, v) => s + v, 0);
  return values.reduce((s, v) => s + v, 0) / values.length;
}
