/**
 * `reins run --seeds` end to end on a tiny experiment (real sandboxes, reins-agent, the proxy, the
 * onnx engine, the torch worker on CPU): a run directory per seed whose plan has that seed, a
 * policy created per seed with its seed (the second seed's tokenizer learning from the first's
 * corpus), the spread over the seeds in summary.json, and `--resume` running only the seed that
 * has not finished. A malformed --seeds is a usage error.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, STACK_TRACE } from "./helpers.js";

const json = (file: string) => JSON.parse(readFileSync(file, "utf8"));

/** The tiny experiment on two training and two held-out tasks (every seed samples the same two, in its own order). */
function tinyExperiment(dir: string): string {
  const file = experiment(dir);
  const plan = compilePlan([file], { env: {} }).value!;
  const held = plan.heldOutTasks.slice(0, 2);
  const training = plan.tasks
    .map((t) => t.name)
    .filter((n) => !plan.heldOutTasks.includes(n))
    .slice(0, 2);
  editSpec(file, [
    [/ {2}tasks:\n {4}- labels: \{[^}]*\}\n/, `  tasks: [${training.map((n) => `{name: ${n}}`).join(", ")}]\n`],
    [/ {2}heldOut:\n {4}- labels: \{[^}]*\}\n/, `  heldOut: [${held.map((n) => `{name: ${n}}`).join(", ")}]\n`],
    [/ {2}steps: 3\n/, "  steps: 1\n"],
    [/ {2}eval: \{[^}]*\}/, "  eval: {everySteps: 0, attempts: 2}"],
  ]);
  return file;
}

describe("reins run --seeds", () => {
  it("refuses a malformed seed list as a usage error", () => {
    const file = experiment(tempDir("reins-seeds-usage-"));
    for (const seeds of ["1,two", "1,1"]) {
      const r = reins(["run", file, "--seeds", seeds]);
      expect(r.code, seeds).toBe(2);
      expect(r.stderr).toContain("--seeds takes a comma-separated list of distinct integers");
      expect(r.stderr).not.toMatch(STACK_TRACE);
    }
  });

  it("runs each seed in its own directory from its own policy, reports the spread, and resumes only an unfinished seed", () => {
    const dir = tempDir("reins-seeds-run-");
    const file = tinyExperiment(dir);
    const out = join(dir, "out");
    const r = reins(["run", file, "--seeds", "1,2", "--out", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(json(join(out, "summary.json"))).toEqual(s);
    expect(s.runDir).toBe(out);
    expect(s.seeds.map((x: any) => x.seed)).toEqual([1, 2]);

    // A plan per seed: its seed, the engine's sampling seed, its hash.
    const plans = [1, 2].map((seed) => json(join(out, `seed-${seed}`, "plan.json")));
    expect(plans.map((p) => [p.seed, p.model.engine.seed])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(plans[0].hash).not.toBe(plans[1].hash);
    expect(s.planHashes).toEqual({ 1: plans[0].hash, 2: plans[1].hash });
    expect(json(join(out, "plan.json")).seeds).toEqual([1, 2]);

    // The spec's policy directory was empty: each seed created its own, from its own seed.
    const policy = join(dir, "spec", "policy");
    expect(existsSync(policy)).toBe(false);
    const initial = [1, 2].map((seed) => readFileSync(join(`${policy}-seed-${seed}`, "READY"), "utf8").trim());
    expect(initial[0]).not.toBe(initial[1]);
    const summaries = [1, 2].map((seed) => json(join(out, `seed-${seed}`, "summary.json")));
    expect(summaries.map((x) => x.versions[0])).toEqual(initial);
    expect(plans.map((p) => p.model.engine.modelPath)).toEqual([`${policy}-seed-1`, `${policy}-seed-2`]);
    // The two seeds replay the same references: the second's tokenizer learned from the first's corpus.
    expect(existsSync(`${policy}-seed-1.corpus.txt`)).toBe(true);
    expect(existsSync(`${policy}-seed-2.corpus.txt`)).toBe(false);
    expect(readdirSync(join(out, "tokenizer-corpus"))).toHaveLength(1);
    expect(readFileSync(join(`${policy}-seed-1`, "tokenizer.json"), "utf8")).toBe(readFileSync(join(`${policy}-seed-2`, "tokenizer.json"), "utf8"));

    // The aggregate is what the seeds' own summaries say.
    const gains = summaries.map((x) => x.heldOut.after - x.heldOut.before);
    summaries.forEach((x, i) => {
      expect(s.seeds[i]).toMatchObject({
        runDir: join(out, `seed-${i + 1}`),
        steps: x.steps,
        seconds: x.seconds,
        heldOut: { before: x.heldOut.before, after: x.heldOut.after, n: x.evaluations[0].rollouts },
      });
      expect(s.seeds[i].heldOut.gain).toBeCloseTo(gains[i]!, 12);
    });
    const mean = (gains[0]! + gains[1]!) / 2;
    const sd = Math.abs(gains[0]! - gains[1]!) / Math.SQRT2;
    expect(s.heldOut.n).toBe(2);
    expect(s.heldOut.gain.mean).toBeCloseTo(mean, 12);
    expect(s.heldOut.gain.sd).toBeCloseTo(sd, 12);
    expect(s.heldOut.gain.ci95[0]).toBeCloseTo(mean - (12.7062 * sd) / Math.SQRT2, 3);
    expect(s.heldOut.gain.ci95[1]).toBeCloseTo(mean + (12.7062 * sd) / Math.SQRT2, 3);
    expect(Object.keys(s.heldOut.byHarness)).toEqual(["reins-agent"]);

    // --resume: the finished seed is skipped, the one without its summary runs (resumes) again.
    rmSync(join(out, "seed-2", "summary.json"));
    const before = events(join(out, "seed-1")).length;
    const resumed = reins(["run", "--resume", out, "--json"], { timeout: 600_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain("seed 1 (1 of 2): finished before; skipped");
    expect(resumed.stderr).toContain("seed 2 (2 of 2): resuming");
    expect(events(join(out, "seed-1")).length).toBe(before);
    expect(events(join(out, "seed-2")).some((e) => e.type === "resumed")).toBe(true);
    const again = JSON.parse(resumed.stdout);
    expect(again.seeds.map((x: any) => x.heldOut)).toEqual(s.seeds.map((x: any) => x.heldOut));
    expect(existsSync(join(out, "seed-2", "summary.json"))).toBe(true);
  }, 900_000);
});
