/**
 * Multi-seed plans: `seeds` (or the --seeds override) plans every seed; planForSeed re-derives one
 * seed's plan from the multi-seed plan alone, and that plan is exactly the plan of the spec with
 * `seed: s` (and the onnx engine's seed s).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deriveSeed } from "../../src/compiler/contract/seeds.js";
import { compilePlan, planForSeed, relocatedPolicy, type Plan } from "../../src/compiler/index.js";
import { experiment, editSpec } from "../control/helpers.js";
import { tempDir } from "../temp.js";

function compiled(file: string, seeds?: number[]): Plan {
  const r = compilePlan([file], { env: {}, ...(seeds ? { seeds } : {}) });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return r.value!;
}

/** The tiny quickstart copy (2 of 56 training tasks per step, 3 steps) with `seedLine` for the Experiment's seed(s) and `engineSeed` for the onnx engine. */
function spec(seedLine: string, engineSeed: number): string {
  const dir = tempDir("reins-seeds-plan-");
  const file = experiment(dir);
  editSpec(file, [[/\n {2}seed: \d+\n?/, `\n  ${seedLine}\n`]]);
  // The shipped Model leaves the engine's seed to the Experiment; these tests give it one of its own.
  editSpec(join(dir, "spec", "model.yaml"), [[/ {4}threads: 1\n/, `    threads: 1\n    seed: ${engineSeed}\n`]]);
  return file;
}

const sampled = (p: Plan) => p.steps.filter((s) => s.kind === "sample").flatMap((s) => s.rollouts.map((r) => r.task));

describe("multi-seed plans", () => {
  it("plans every seed: the first seed's steps and engine seed, every seed's tasks, the estimate of all", () => {
    const multi = compiled(spec("seeds: [3, 5, 11]", 7));
    expect(multi.seeds).toEqual([3, 5, 11]);
    expect(multi.seed).toBe(3);
    expect(multi.model!.engine.type === "onnx" && multi.model!.engine.seed).toBe(3);
    expect(multi.schedule).toMatchObject({ steps: 3, tasksPerStep: 2, groupSize: 2, evalEverySteps: 0, heldOut: multi.heldOutTasks });
    const perSeed = multi.seeds!.map((s) => planForSeed(multi, s));
    expect(multi.estimate.rollouts).toBe(perSeed.reduce((n, p) => n + p.estimate.rollouts, 0));
    const names = new Set(multi.tasks.map((t) => t.name));
    for (const p of perSeed) for (const t of p.tasks) expect(names.has(t.name)).toBe(true);
    expect(canonicalSteps(perSeed[0]!)).toEqual(canonicalSteps(multi));
  });

  it("one seed's plan is the plan of the spec with that seed, hash and all", () => {
    const file = spec("seeds: [3, 5]", 7);
    const multi = compiled(file);
    editSpec(file, [[/seeds: \[3, 5\]/, "seed: 5"]]);
    editSpec(join(file, "..", "model.yaml"), [[/ {4}seed: 7/, "    seed: 5"]]);
    const single = compiled(file);
    const five = planForSeed(multi, 5);
    expect(five.seeds).toBeUndefined();
    expect(five.schedule).toBeUndefined();
    expect(five.seed).toBe(5);
    expect(five.tasks.map((t) => t.name)).toEqual(single.tasks.map((t) => t.name));
    expect(five.steps).toEqual(single.steps);
    expect(five.estimate).toEqual(single.estimate);
    expect(five.hash).toBe(single.hash);
  });

  it("the seeds differ: task order, every rollout's sampling seeds, engine seed, hash", () => {
    const multi = compiled(spec("seeds: [1, 2]", 7));
    const [a, b] = [planForSeed(multi, 1), planForSeed(multi, 2)];
    expect(sampled(a)).not.toEqual(sampled(b));
    // The seed of each rollout's first call, as the onnx engine derives it from the plan's engine seed.
    const seedsOf = (p: Plan) =>
      new Set(p.steps.flatMap((s) => s.rollouts.map((r) => deriveSeed(p.model!.engine.type === "onnx" ? p.model!.engine.seed! : -1, "sampling", r.id, 1, 1))));
    const shared = [...seedsOf(a)].filter((s) => seedsOf(b).has(s));
    expect(shared).toEqual([]);
    expect(a.model!.engine.type === "onnx" && a.model!.engine.seed).toBe(1);
    expect(b.model!.engine.type === "onnx" && b.model!.engine.seed).toBe(2);
    expect(a.hash).not.toBe(b.hash);
  });

  it("--seeds overrides the spec's seed; a single `seed` plans as before", () => {
    const file = spec("seed: 7", 7);
    const single = compiled(file);
    expect(single.seeds).toBeUndefined();
    expect(single.schedule).toBeUndefined();
    const multi = compiled(file, [4, 9]);
    expect(multi.seeds).toEqual([4, 9]);
    expect(multi.seed).toBe(4);
    expect(multi.hash).not.toBe(single.hash);
  });

  it("the Experiment's seed is the onnx engine's: the Model need not repeat it", () => {
    const file = spec("seed: 5", 7);
    const given = compiled(file);
    expect(given.model!.engine.type === "onnx" && given.model!.engine.seed).toBe(5);
    editSpec(join(file, "..", "model.yaml"), [[/ {4}seed: 7/, "    seed: 0"]]);
    expect(compiled(file).hash).toBe(given.hash);
    // Without a seed of its own the Experiment leaves the Model's.
    const none = compiled(spec("", 7));
    expect(none.seed).toBe(0);
    expect(none.model!.engine.type === "onnx" && none.model!.engine.seed).toBe(7);
  });

  it("moves the policy directory (model and tokenizer) and hashes the plan again", () => {
    const multi = compiled(spec("seeds: [1, 2]", 7));
    const onnx = multi.model!.engine.type === "onnx" ? multi.model!.engine : undefined;
    const from = onnx!.modelPath;
    const moved = planForSeed(multi, 2, { policyDir: { from, to: `${from}-seed-2` } });
    expect(moved.model!.engine.type === "onnx" && moved.model!.engine.modelPath).toBe(`${from}-seed-2`);
    expect(moved.model!.tokenizer).toEqual({ type: "file", path: join(`${from}-seed-2`, "tokenizer.json") });
    expect(moved.hash).not.toBe(planForSeed(multi, 2).hash);
    // A file outside the directory stays where it is.
    const other = relocatedPolicy({ ...multi.model!, tokenizer: { type: "file", path: "/elsewhere/tokenizer.json" } }, from, "/x");
    expect(other.tokenizer).toEqual({ type: "file", path: "/elsewhere/tokenizer.json" });
  });
});

function canonicalSteps(p: Plan) {
  return p.steps.map((s) => s.rollouts.map((r) => [r.id, r.task, r.harness]));
}
