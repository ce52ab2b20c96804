/**
 * `reins eval` on the starter library, end to end in local sandboxes: a baseline harness applies
 * reference solutions to some tasks and mistakes to others (solve.mjs decides from a hash of the
 * instruction), and the printed pass@k / pass^k must match what was actually submitted.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

function comb(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

describe("reins eval on the starter library", () => {
  it("reports pass@k and pass^k that match the submitted solutions", () => {
    const out = join(tempDir("reins-starter-"), "run");
    const r = reins(["eval", "examples/tasks/evaluation.yaml", "--out", out, "--json", "--quiet"], { timeout: 300_000 });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    const plan = JSON.parse(readFileSync(join(out, "plan.json"), "utf8"));
    const results = readFileSync(join(out, "rollouts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(results.length).toBe(plan.tasks.length * 3);
    expect(summary.rollouts).toBe(results.length);
    expect(summary.errors).toBe(0);
    expect(Object.keys(summary.categories).length).toBe(6);

    const instruction = new Map<string, string>(plan.tasks.map((t: { name: string; instruction: string }) => [t.name, t.instruction]));
    let always = 0;
    let never = 0;
    for (const [task, m] of Object.entries(summary.tasks) as [string, any][]) {
      const rs = results.filter((x) => x.task === task);
      const c = rs.filter((x) => x.passed).length;
      // solve.mjs: kind 0 always submits the reference, kind 1 always a mistake, kind 2 flips a coin.
      const kind = createHash("sha256").update(instruction.get(task)!).digest()[0]! % 3;
      if (kind === 0) {
        expect(c, task).toBe(3);
        always++;
      }
      if (kind === 1) {
        expect(c, task).toBe(0);
        never++;
      }
      expect(m.passAt["1"]).toBeCloseTo(c / 3, 10);
      expect(m.passAt["3"]).toBeCloseTo(1 - comb(3 - c, 3) / comb(3, 3), 10);
      expect(m.passHat["3"]).toBeCloseTo(comb(c, 3) / comb(3, 3), 10);
      const mean = rs.reduce((s, x) => s + x.reward, 0) / rs.length;
      expect(m.meanReward).toBeCloseTo(mean, 10);
    }
    expect(always).toBeGreaterThan(0);
    expect(never).toBeGreaterThan(0);
    const tasks = Object.values(summary.tasks) as any[];
    expect(summary.passAt["1"]).toBeCloseTo(tasks.reduce((s, m) => s + m.passAt["1"], 0) / tasks.length, 10);
    expect(summary.passHat["3"]).toBeCloseTo(tasks.reduce((s, m) => s + m.passHat["3"], 0) / tasks.length, 10);
    expect(summary.topFailures.length).toBeGreaterThan(0);
  }, 400_000);
});
