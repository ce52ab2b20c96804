/**
 * A multi-seed run directory as the viewer shows it: each seed's numbers from its own run
 * directory's summary.json (<dir>/seed-<s>), read as they are now, so a run still going shows the
 * seeds finished so far and the ones pending; the spread over the finished seeds; and, for two
 * such directories (two recipes), the difference of their mean gains with Welch's interval.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readFinishedSummary } from "../control/run-summary.js";
import { compareGains, summarizeSeeds, type GainDifference, type SeedsSummary } from "../control/seed-summary.js";

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

/** The seeds of `dir`'s plan.json; null when it is not a multi-seed run directory. */
export function readPlanSeeds(dir: string): { name: string; hash: string; seeds: number[] } | null {
  try {
    const plan = JSON.parse(readFileSync(join(dir, "plan.json"), "utf8")) as { name?: unknown; hash?: unknown; seeds?: unknown };
    if (!Array.isArray(plan.seeds) || !plan.seeds.every((s) => Number.isInteger(s))) return null;
    return { name: typeof plan.name === "string" ? plan.name : "", hash: typeof plan.hash === "string" ? plan.hash : "", seeds: plan.seeds as number[] };
  } catch {
    return null;
  }
}

export function readSeedRuns(dir: string): SeedRuns | null {
  const plan = readPlanSeeds(dir);
  if (!plan) return null;
  const finished = plan.seeds.flatMap((seed) => {
    const seedDir = join(dir, `seed-${seed}`);
    const summary = existsSync(seedDir) ? readFinishedSummary(seedDir) : undefined;
    return summary ? [{ ...summary, seed, evaluations: Array.isArray(summary.evaluations) ? summary.evaluations : [] }] : [];
  });
  const done = new Set(finished.map((f) => f.seed));
  return {
    dir,
    name: plan.name,
    seeds: plan.seeds,
    pending: plan.seeds.filter((s) => !done.has(s)),
    summary: summarizeSeeds(finished, { runDir: dir, planHash: plan.hash }),
  };
}

/** Two recipes over their seeds: the second's mean gain minus the first's, overall and per harness both ran. */
export function compareSeedRuns(first: SeedRuns, second: SeedRuns): GainDifference & { byHarness: Record<string, GainDifference> } {
  const a = first.summary.heldOut;
  const b = second.summary.heldOut;
  const harnesses = Object.keys(a.byHarness).filter((h) => h in b.byHarness).sort();
  return {
    ...compareGains({ ...a.gain, n: a.n }, { ...b.gain, n: b.n }),
    byHarness: Object.fromEntries(harnesses.map((h) => [h, compareGains({ ...a.byHarness[h]!.gain, n: a.byHarness[h]!.n }, { ...b.byHarness[h]!.gain, n: b.byHarness[h]!.n })])),
  };
}
