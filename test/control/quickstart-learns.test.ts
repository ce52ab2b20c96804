/**
 * The quickstart learns, pooled over seeds: the shipped examples/quickstart recipe, run end to end
 * with `reins run --seeds` from an isolated copy (each seed its own initial policy, SFT, GRPO and
 * held-out evaluations before and after), shortened to keep the suite's time: STEPS GRPO steps
 * instead of 10, with the quickstart's 32 held-out attempts per task. The test asserts the pooled
 * held-out gain — the mean over the seeds of after − before — above three standard errors of that
 * mean (each seed's pass rates binomial proportions over its own rollouts), so one unlucky sampled
 * stream cannot fail it, while a recipe that does not learn does (quickstart-broken-lr.test.ts, a
 * file of its own so that the two run side by side). The multi-seed summary, its `--json` and
 * `reins view`'s seeds table agree.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startViewServer } from "../../src/runtime/index.js";
import { ATTEMPTS, pooledGain, runSeeds, STEPS, type SeedRow } from "./quickstart.js";

const SEEDS = [1, 2, 3];

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
  }, 5_100_000);
});
