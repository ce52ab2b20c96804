/**
 * Held-out evaluations of a run: pass rate and mean reward over the rollouts that have a reward,
 * overall and per harness, and the run's before/after with the gain in standard errors (binomial:
 * √(p(1−p)/n) for each rate, the two combined in quadrature). Pure.
 */
import type { RolloutResult } from "../records/index.js";
import type { EvalEvent } from "./state.js";

type Score = { passRate: number; meanReward: number; rollouts: number };

function score(results: readonly RolloutResult[]): Score {
  const scored = results.filter((r) => r.reward !== null);
  return {
    passRate: scored.length > 0 ? scored.filter((r) => r.passed).length / scored.length : 0,
    meanReward: scored.length > 0 ? scored.reduce((s, r) => s + r.reward!, 0) / scored.length : 0,
    rollouts: results.length,
  };
}

/** One held-out evaluation's numbers: overall, and per harness. */
export function scoreHeldOut(results: readonly RolloutResult[]): Score & { byHarness: Record<string, Score> } {
  const byHarness: Record<string, Score> = {};
  for (const h of [...new Set(results.map((r) => r.harness))].sort()) byHarness[h] = score(results.filter((r) => r.harness === h));
  return { ...score(results), byHarness };
}

export interface HeldOutChange {
  before: number | null;
  after: number | null;
  /** Rollouts per evaluation (of the first). */
  n: number;
  /** (after − before) / its standard error; null without both, or when both rates are 0 or 1. */
  gainStdErrors: number | null;
}

export interface HeldOutOutcome {
  before: number | null;
  after: number | null;
  byHarness: Record<string, HeldOutChange>;
}

function change(before: Pick<Score, "passRate" | "rollouts"> | undefined, after: Pick<Score, "passRate" | "rollouts"> | undefined): HeldOutChange {
  const out: HeldOutChange = {
    before: before?.passRate ?? null,
    after: after?.passRate ?? null,
    n: before?.rollouts ?? after?.rollouts ?? 0,
    gainStdErrors: null,
  };
  if (before && after && before.rollouts > 0 && after.rollouts > 0) {
    const v = (before.passRate * (1 - before.passRate)) / before.rollouts + (after.passRate * (1 - after.passRate)) / after.rollouts;
    if (v > 0) out.gainStdErrors = (after.passRate - before.passRate) / Math.sqrt(v);
  }
  return out;
}

/** The run's first and last held-out evaluations, overall and per harness. */
export function heldOutOutcome(evals: readonly EvalEvent[]): HeldOutOutcome {
  const first = evals[0];
  const last = evals.length > 1 ? evals[evals.length - 1] : undefined;
  const byHarness: Record<string, HeldOutChange> = {};
  const names = [...new Set([...Object.keys(first?.byHarness ?? {}), ...Object.keys(last?.byHarness ?? {})])].sort();
  for (const h of names) byHarness[h] = change(first?.byHarness?.[h], last?.byHarness?.[h]);
  return { before: first?.passRate ?? null, after: last?.passRate ?? null, byHarness };
}

/** The run's first and last held-out evaluations over every harness together, as one change. */
export function heldOutChange(evals: readonly Pick<Score, "passRate" | "rollouts">[]): HeldOutChange {
  return change(evals[0], evals.length > 1 ? evals[evals.length - 1] : undefined);
}
