/**
 * A multi-seed run directory as the viewer shows it: each seed's numbers from its own run
 * directory's summary.json (<dir>/seed-<s>), read as they are now, so a run still going shows the
 * seeds finished so far and the ones pending; the spread over the finished seeds; and, for two
 * such directories (two recipes), the difference of their mean gains with Welch's interval. Each
 * seed's summary.json is read through the run directory's RunRoot, like every file of the run.
 */
import type { RunSummary } from "../control/run-summary.js";
import { compareGains, summarizeSeeds, type GainDifference, type SeedsSummary } from "../control/seed-summary.js";
import type { RunData } from "./run-data.js";
import { VIEW_LIMITS } from "./run-root.js";

export interface SeedRuns {
  dir: string;
  name: string;
  /** Every seed of the plan, in order. */
  seeds: number[];
  /** Seeds whose run has not finished (yet). */
  pending: number[];
  /** Over the finished seeds. */
  summary: SeedsSummary;
}

/** The seeds of the run's plan.json; null when it is not a multi-seed run directory. */
export function readPlanSeeds(run: RunData): { name: string; hash: string; seeds: number[] } | null {
  const plan = run.plan();
  return plan.seeds ? { name: plan.name, hash: plan.hash, seeds: plan.seeds } : null;
}

export function readSeedRuns(run: RunData): SeedRuns | null {
  const plan = readPlanSeeds(run);
  if (!plan) return null;
  const finished = plan.seeds.flatMap((seed) => {
    const summary = finishedSummary(run, seed);
    return summary ? [{ ...summary, seed, evaluations: Array.isArray(summary.evaluations) ? summary.evaluations : [] }] : [];
  });
  const done = new Set(finished.map((f) => f.seed));
  return {
    dir: run.dir,
    name: plan.name,
    seeds: plan.seeds,
    pending: plan.seeds.filter((s) => !done.has(s)),
    summary: summarizeSeeds(finished, { runDir: run.dir, planHash: plan.hash }),
  };
}

/** A seed's summary.json when its run finished (not interrupted), as readFinishedSummary reads it. */
function finishedSummary(run: RunData, seed: number): RunSummary | undefined {
  const read = run.root.readText(`seed-${seed}/summary.json`, VIEW_LIMITS.jsonBytes);
  if (!read.ok) return undefined;
  let summary: RunSummary;
  try {
    summary = JSON.parse(read.value) as RunSummary;
  } catch {
    return undefined;
  }
  return summary && typeof summary === "object" && summary.interrupted === false ? summary : undefined;
}

/** Two recipes over their seeds: the second's mean gain minus the first's, overall and per harness both ran. */
export function compareSeedRuns(first: SeedRuns, second: SeedRuns): GainDifference & { byHarness: Record<string, GainDifference> } {
  const a = first.summary.heldOut;
  const b = second.summary.heldOut;
  const harnesses = Object.keys(a.byHarness)
    .filter((h) => h in b.byHarness)
    .sort();
  return {
    ...compareGains({ ...a.gain, n: a.n }, { ...b.gain, n: b.n }),
    byHarness: Object.fromEntries(
      harnesses.map((h) => [h, compareGains({ ...a.byHarness[h]!.gain, n: a.byHarness[h]!.n }, { ...b.byHarness[h]!.gain, n: b.byHarness[h]!.n })]),
    ),
  };
}
