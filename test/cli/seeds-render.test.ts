/** The printed summary of `reins run --seeds`: a line per seed, then the gain over the seeds with its spread. */
import { describe, expect, it } from "vitest";
import { renderSeeds } from "../../src/cli/render/seeds.js";
import type { Plan } from "../../src/compiler/index.js";
import { summarizeSeeds, type SeedRunSummary } from "../../src/runtime/control/seed-summary.js";

function run(seed: number, before: number, after: number, harnesses = ["reins-agent"]): SeedRunSummary {
  const change = { before, after, n: 64, gainStdErrors: (after - before) / Math.sqrt((before * (1 - before) + after * (1 - after)) / 64) };
  return {
    seed,
    runDir: `runs/q/seed-${seed}`,
    steps: 10,
    seconds: 300 + seed,
    planHash: `sha256:${seed}`,
    heldOut: { before, after, byHarness: Object.fromEntries(harnesses.map((h) => [h, change])) },
    evaluations: [
      { passRate: before, rollouts: 64 },
      { passRate: after, rollouts: 64 },
    ],
  };
}

const plan = { name: "quickstart" } as Plan;

describe("renderSeeds", () => {
  it("prints each seed and the gain with its sd and t interval", () => {
    const text = renderSeeds(plan, summarizeSeeds([run(1, 0.25, 0.5), run(2, 0.25, 0.3), run(3, 0.2, 0.6)], { runDir: "runs/q", planHash: "h" }));
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toBe("quickstart: 3 seeds");
    expect(lines[1]).toBe(
      "  seed 1: held-out 25.0% → 50.0% (+25.0 points, +3.0 standard errors; 64 rollouts each), 10 training steps in 301 s — runs/q/seed-1",
    );
    expect(lines[4]).toBe("held-out gain over 3 seeds: +23.3 points (sd 17.6, 95% CI [-20.3, +67.0]); 2 of 3 seeds above 3 standard errors");
    expect(lines[5]).toBe("run directory: runs/q");
  });

  it("says when one seed gives no spread, and breaks the gain down by harness when there are several", () => {
    const one = renderSeeds(plan, summarizeSeeds([run(7, 0.5, 0.75)], { runDir: "r", planHash: "h" }));
    expect(one).toContain("held-out gain over 1 seed: +25.0 points (one seed: no spread); 1 of 1 seed above 3 standard errors");
    const two = renderSeeds(plan, summarizeSeeds([run(1, 0.25, 0.5, ["a", "b"]), run(2, 0.25, 0.3, ["a", "b"])], { runDir: "r", planHash: "h" }));
    expect(two).toMatch(/\n {2}a over 2 seeds: \+15\.0 points/);
    expect(two).toMatch(/\n {2}b over 2 seeds: \+15\.0 points/);
  });
});
