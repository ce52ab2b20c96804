/**
 * A run directory's summary.json: the run's outcome, its plan's hash, its seed and the seconds it
 * took (this invocation's). Written at the end of `reins run`, interrupted or not; a run is finished once
 * its summary.json says it was not interrupted.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Plan } from "../../compiler/index.js";
import type { RunOutcome } from "./experiment.js";

/** The outcome, the plan's hash, the seed the run sampled with (its plan's), and this invocation's seconds. */
export type RunSummary = RunOutcome & { planHash: string; seed: number; seconds: number };

export function runSummary(outcome: RunOutcome, plan: Plan, started: number): RunSummary {
  return { ...outcome, planHash: plan.hash, seed: plan.seed, seconds: Math.round((Date.now() - started) / 1000) };
}

/** The summary of a finished run in `dir`; undefined while it has none, or an interrupted one. */
export function readFinishedSummary(dir: string): RunSummary | undefined {
  const file = join(dir, "summary.json");
  if (!existsSync(file)) return undefined;
  let summary: RunSummary;
  try {
    summary = JSON.parse(readFileSync(file, "utf8")) as RunSummary;
  } catch {
    return undefined;
  }
  return summary && typeof summary === "object" && summary.interrupted === false ? summary : undefined;
}
