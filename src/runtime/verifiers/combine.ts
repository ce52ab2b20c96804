/**
 * How part scores make a reward. Parts are named `checks`, `script`, `rubric`; the weight `code`
 * stands for checks and script together (their mean) and, when given, replaces their own weights.
 * Pure.
 */
import type { ResolvedVerifier } from "../../compiler/contract/plan.js";

export type PartName = "checks" | "script" | "rubric";
export type PartScores = Partial<Record<PartName, number>>;

export interface Combined {
  reward: number;
  /** Effective weight of each present part (normalized to sum 1 for `weighted`). */
  weights: Partial<Record<PartName, number>>;
}

function effectiveWeights(parts: PartScores, weights: Record<string, number>): Partial<Record<PartName, number>> {
  const present = (Object.keys(parts) as PartName[]).filter((p) => parts[p] !== undefined);
  const raw: Partial<Record<PartName, number>> = {};
  const given = Object.keys(weights).length > 0;
  const codeParts = present.filter((p) => p !== "rubric");
  for (const p of present) {
    if (!given) raw[p] = 1;
    else if (weights.code !== undefined && p !== "rubric") raw[p] = weights.code / codeParts.length;
    else raw[p] = weights[p] ?? 0;
  }
  let sum = present.reduce((s, p) => s + (raw[p] ?? 0), 0);
  if (sum <= 0) {
    for (const p of present) raw[p] = 1;
    sum = present.length;
  }
  const out: Partial<Record<PartName, number>> = {};
  for (const p of present) out[p] = (raw[p] ?? 0) / sum;
  return out;
}

export function combineScores(parts: PartScores, combine: ResolvedVerifier["combine"], passThreshold: number): Combined {
  const present = (Object.keys(parts) as PartName[]).filter((p) => parts[p] !== undefined);
  const scores = present.map((p) => parts[p]!);
  if (present.length === 0) return { reward: 0, weights: {} };
  switch (combine.mode) {
    case "all":
      return { reward: scores.every((s) => s >= passThreshold) ? 1 : 0, weights: {} };
    case "any":
      return { reward: scores.some((s) => s >= passThreshold) ? 1 : 0, weights: {} };
    case "min":
      return { reward: Math.min(...scores), weights: {} };
    case "weighted": {
      const w = effectiveWeights(parts, combine.weights);
      const reward = present.reduce((s, p) => s + (w[p] ?? 0) * parts[p]!, 0);
      // Float sums such as 0.7 + 0.3 land a hair below 1.
      return { reward: Math.min(1, Math.max(0, Math.abs(reward - 1) < 1e-9 ? 1 : reward)), weights: w };
    }
  }
}
