/**
 * The quickstart as the learning tests run it: a shortened copy of examples/quickstart (STEPS GRPO
 * steps instead of 10, ATTEMPTS held-out attempts per task), `reins run --seeds` on it, and the
 * pooled held-out gain over its seeds with its standard error.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec } from "./helpers.js";

export const STEPS = 5;
export const ATTEMPTS = 32;

export function quickstartCopy(dir: string, edits: [RegExp, string][] = []): string {
  mkdirSync(join(dir, "spec"), { recursive: true });
  for (const f of ["family.yaml", "experiment.yaml"]) cpSync(join("examples/quickstart", f), join(dir, "spec", f));
  const model = readFileSync("examples/quickstart/model.yaml", "utf8").replace(/\.\.\/\.\.\/\.reins\/quickstart\/policy/g, "policy");
  writeFileSync(join(dir, "spec", "model.yaml"), model);
  const file = join(dir, "spec", "experiment.yaml");
  editSpec(file, [
    [/ {2}steps: \d+\n/, `  steps: ${STEPS}\n`],
    [/ {2}eval: \{everySteps: 0, attempts: \d+\}/, `  eval: {everySteps: 0, attempts: ${ATTEMPTS}}`],
    ...edits,
  ]);
  return file;
}

export interface SeedRow {
  seed: number;
  runDir: string;
  heldOut: { before: number; after: number; gain: number; n: number; gainStdErrors: number | null };
}

/** `reins run --seeds` on a shortened copy of the quickstart: the multi-seed --json outcome. */
export function runSeeds(seeds: readonly number[], edits: [RegExp, string][] = []): { out: string; res: any; rows: SeedRow[] } {
  const dir = tempDir("reins-quickstart-learns-");
  const out = join(dir, "run");
  const r = reins(["run", quickstartCopy(dir, edits), "--seeds", seeds.join(","), "--out", out, "--json", "--quiet"], { timeout: 4_800_000 });
  expect(r.code, r.stderr).toBe(0);
  const res = JSON.parse(r.stdout);
  return { out, res, rows: res.seeds as SeedRow[] };
}

/**
 * The pooled gain: the mean of the seeds' gains (after − before), and the standard error of that
 * mean from each seed's two binomial pass rates.
 */
export function pooledGain(rows: readonly SeedRow[]): { gain: number; se: number; text: string } {
  const k = rows.length;
  const gain = rows.reduce((a, s) => a + (s.heldOut.after - s.heldOut.before), 0) / k;
  const variance = rows.reduce((a, { heldOut: h }) => a + (h.before * (1 - h.before)) / h.n + (h.after * (1 - h.after)) / h.n, 0) / (k * k);
  const se = Math.sqrt(variance);
  const perSeed = rows.map((s) => `seed ${s.seed} ${(100 * s.heldOut.before).toFixed(1)}% → ${(100 * s.heldOut.after).toFixed(1)}%`).join(", ");
  return { gain, se, text: `${perSeed}; pooled gain ${(100 * gain).toFixed(1)} points, ${(gain / se).toFixed(1)} standard errors` };
}
