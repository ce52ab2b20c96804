/**
 * The quickstart learns, pooled over seeds: the shipped examples/quickstart recipe, run end to end
 * with `reins run --seeds` from an isolated copy (each seed its own initial policy, SFT, GRPO and
 * held-out evaluations before and after), shortened to keep the suite's time: STEPS GRPO steps
 * instead of 10, with the quickstart's 32 held-out attempts per task. The test asserts the pooled
 * held-out gain — the mean over the seeds of after − before — above three standard errors of that
 * mean (each seed's pass rates binomial proportions over its own rollouts), so one unlucky sampled
 * stream cannot fail it, while a recipe that does not learn does: the second test breaks RL's
 * learning rate (0.1 without warm-up: the weights move, and what SFT taught is lost) and shows the
 * same check does not pass. The multi-seed summary, its `--json` and `reins view`'s seeds table agree.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startViewServer } from "../../src/runtime/index.js";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec } from "./helpers.js";

const SEEDS = [1, 2, 3];
const STEPS = 5;
const ATTEMPTS = 32;

function quickstartCopy(dir: string, edits: [RegExp, string][] = []): string {
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

interface SeedRow {
  seed: number;
  runDir: string;
  heldOut: { before: number; after: number; gain: number; n: number; gainStdErrors: number | null };
}

/** `reins run --seeds` on a shortened copy of the quickstart: the multi-seed --json outcome. */
function runSeeds(seeds: readonly number[], edits: [RegExp, string][] = []): { out: string; res: any; rows: SeedRow[] } {
  const dir = tempDir("reins-quickstart-learns-");
  const out = join(dir, "run");
  const r = reins(["run", quickstartCopy(dir, edits), "--seeds", seeds.join(","), "--out", out, "--json", "--quiet"], { timeout: 3_000_000 });
  expect(r.code, r.stderr).toBe(0);
  const res = JSON.parse(r.stdout);
  return { out, res, rows: res.seeds as SeedRow[] };
}

/**
 * The pooled gain: the mean of the seeds' gains (after − before), and the standard error of that
 * mean from each seed's two binomial pass rates.
 */
function pooledGain(rows: readonly SeedRow[]): { gain: number; se: number; text: string } {
  const k = rows.length;
  const gain = rows.reduce((a, s) => a + (s.heldOut.after - s.heldOut.before), 0) / k;
  const variance = rows.reduce((a, { heldOut: h }) => a + (h.before * (1 - h.before)) / h.n + (h.after * (1 - h.after)) / h.n, 0) / (k * k);
  const se = Math.sqrt(variance);
  const perSeed = rows.map((s) => `seed ${s.seed} ${(100 * s.heldOut.before).toFixed(1)}% → ${(100 * s.heldOut.after).toFixed(1)}%`).join(", ");
  return { gain, se, text: `${perSeed}; pooled gain ${(100 * gain).toFixed(1)} points, ${(gain / se).toFixed(1)} standard errors` };
}

describe("the quickstart", () => {
  it(`improves the held-out pass rate beyond noise, pooled over ${SEEDS.length} seeds, and reins view shows each seed`, async () => {
    const { out, res, rows } = runSeeds(SEEDS);
    expect(JSON.parse(readFileSync(join(out, "summary.json"), "utf8"))).toEqual(res);
    expect(rows.map((s) => s.seed)).toEqual(SEEDS);
    for (const s of rows) {
      expect(existsSync(join(s.runDir, "reward-curve.svg"))).toBe(true);
      const own = JSON.parse(readFileSync(join(s.runDir, "summary.json"), "utf8"));
      expect(own.seed).toBe(s.seed);
      expect(own.steps).toBe(STEPS);
      expect([own.heldOut.before, own.heldOut.after]).toEqual([s.heldOut.before, s.heldOut.after]);
      expect(s.heldOut.n).toBe(8 * ATTEMPTS);
    }
    const { gain, se, text } = pooledGain(rows);
    console.error(`quickstart held-out, ${text}`);
    expect(gain).toBeGreaterThan(3 * se);
    expect(res.heldOut.n).toBe(rows.length);
    expect(res.heldOut.gain.mean).toBeCloseTo(gain, 9);
    expect(res.heldOut.gain.ci95).toHaveLength(2);

    // `reins view` on the multi-seed directory: its seeds table holds the same figures.
    const view = await startViewServer({ runDirs: [out] });
    try {
      const api = (await (await fetch(`${view.url}api/seeds`)).json()) as { runs: { pending: number[]; summary: { seeds: SeedRow[] } }[] };
      expect(api.runs).toHaveLength(1);
      expect(api.runs[0]!.pending).toEqual([]);
      expect(api.runs[0]!.summary.seeds.map((s) => [s.seed, s.heldOut.before, s.heldOut.after])).toEqual(
        rows.map((s) => [s.seed, s.heldOut.before, s.heldOut.after]),
      );
    } finally {
      await view.close();
    }
  }, 3_300_000);

  it("does not pass the same check when RL's learning rate is broken (0.1, a hundred times the recipe's)", () => {
    // One seed, one step, no warm-up: Adam then moves every weight by ~0.1 at once, the policy's
    // weights change (unlike a learning rate of 0, whose "after" would repeat the "before"), and
    // what it learned is destroyed. SFT is cut to 50 steps (its fit is beside the point here).
    const { rows } = runSeeds(
      [SEEDS[0]!],
      [
        [/ {4}learningRate: [^\n]+\n/, "    learningRate: 0.1\n"],
        [/ {4}warmupSteps: \d+\n/, "    warmupSteps: 0\n"],
        [/ {2}steps: \d+\n/, "  steps: 1\n"],
        [/ {2}sft: \{steps: \d+, targetLoss: [^,]+,/, "  sft: {steps: 50,"],
      ],
    );
    const { gain, se, text } = pooledGain(rows);
    console.error(`quickstart held-out with RL's learning rate at 0.1, ${text}`);
    expect(rows[0]!.heldOut.n).toBe(8 * ATTEMPTS);
    expect(gain).toBeLessThanOrEqual(3 * se);
  }, 1_800_000);
});
