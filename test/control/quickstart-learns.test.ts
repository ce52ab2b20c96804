/**
 * The quickstart learns: the shipped examples/quickstart experiment, run end to end exactly as the
 * README's main command runs it (seed 7, its own policy directory), ends with a held-out pass rate
 * well above the one before RL: the gain must exceed three standard errors of the difference of
 * the two measured pass rates (each a binomial proportion over the held-out rollouts). The gain
 * depends on the seed and the CPU (the README's table: seeds that do not learn in 10 steps, and an
 * Intel Xeon where the shipped seed does not); this checks the shipped one. About 8 minutes alone
 * on 2 cores, longer beside the rest of the suite.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startViewServer } from "../../src/runtime/index.js";
import { tempDir } from "../executor/helpers.js";

function quickstartCopy(dir: string): string {
  mkdirSync(join(dir, "spec"), { recursive: true });
  for (const f of ["family.yaml", "experiment.yaml"]) cpSync(join("examples/quickstart", f), join(dir, "spec", f));
  const model = readFileSync("examples/quickstart/model.yaml", "utf8").replace(/\.\.\/\.\.\/\.reins\/quickstart\/policy/g, "policy");
  writeFileSync(join(dir, "spec", "model.yaml"), model);
  return join(dir, "spec", "experiment.yaml");
}

describe("the quickstart", () => {
  it("improves the held-out pass rate well beyond noise (fixed seed), and reins view shows it", async () => {
    const dir = tempDir("reins-quickstart-learns-");
    const out = join(dir, "run");
    const r = spawnSync(process.execPath, ["bin/reins.js", "run", quickstartCopy(dir), "--out", out, "--json", "--quiet"], { encoding: "utf8", timeout: 2_400_000 });
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout);
    expect(res.runDir).toBe(out);
    expect(existsSync(join(out, "reward-curve.svg"))).toBe(true);
    const [first, last] = [res.evaluations[0], res.evaluations[res.evaluations.length - 1]];
    expect(res.heldOut).toMatchObject({ before: first.passRate, after: last.passRate });
    // One harness: its own figures are the run's, with the same gain in standard errors as below.
    expect(Object.keys(res.heldOut.byHarness)).toEqual(["reins-agent"]);
    expect(res.heldOut.byHarness["reins-agent"]).toMatchObject({ before: first.passRate, after: last.passRate, n: first.rollouts });
    expect(res.steps).toBe(last.trainedSteps);
    const se = Math.sqrt((first.passRate * (1 - first.passRate)) / first.rollouts + (last.passRate * (1 - last.passRate)) / last.rollouts);
    const gain = res.heldOut.after - res.heldOut.before;
    console.error(`quickstart held-out pass rate ${res.heldOut.before} → ${res.heldOut.after} (gain ${gain.toFixed(3)}, ${(gain / se).toFixed(1)} standard errors)`);
    expect(gain).toBeGreaterThan(3 * se);
    expect(res.heldOut.byHarness["reins-agent"].gainStdErrors).toBeCloseTo(gain / se, 6);
    // `reins view` on this run directory: its overview shows the same held-out figures.
    const view = await startViewServer({ runDirs: [out] });
    try {
      const o = (await (await fetch(`${view.url}api/runs/0/overview`)).json()) as { finished: boolean; summary: { heldOut: unknown }; heldOut: { passRate: number }[] };
      expect(o.finished).toBe(true);
      expect(o.summary.heldOut).toEqual(res.heldOut);
      expect([o.heldOut[0].passRate, o.heldOut.at(-1)!.passRate]).toEqual([res.heldOut.before, res.heldOut.after]);
    } finally {
      await view.close();
    }
  }, 2_700_000);
});
