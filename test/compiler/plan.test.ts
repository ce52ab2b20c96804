import { readFileSync, writeFileSync, cpSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { describe, expect, it } from "vitest";
import { compilePlan, diffPlans } from "../../src/compiler/index.js";
import { canonicalJson } from "../../src/compiler/contract/hash.js";
import { dealHarnesses } from "../../src/compiler/plan/harness-mix.js";
import { tempDir } from "../temp.js";

const CONTRACT = "test/fixtures/valid/contract.yaml";

function planOf(file: string) {
  const r = compilePlan([file], { env: {} });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return r.value!;
}

describe("plan", () => {
  it("expands the contract evaluation: 4 tasks × 1 harness × 3 attempts", () => {
    const plan = planOf(CONTRACT);
    expect(plan.kind).toBe("Evaluation");
    expect(plan.tasks.length).toBe(4);
    expect(plan.steps.length).toBe(1);
    expect(plan.steps[0]!.rollouts.length).toBe(12);
    expect(new Set(plan.steps[0]!.rollouts.map((r) => r.id)).size).toBe(12);
    expect(plan.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const t of plan.tasks) for (const f of t.files) expect(f.digest).toMatch(/^sha256:/);
  });

  it("gives the same hash for the same inputs, from another directory too", () => {
    const a = planOf(CONTRACT);
    const dir = tempDir("reins-plan-");
    cpSync(CONTRACT, join(dir, "x.yaml"));
    const b = planOf(join(dir, "x.yaml"));
    expect(b.hash).toBe(a.hash);
    expect(canonicalJson(b.steps)).toBe(canonicalJson(a.steps));
  });

  it("does not change the hash when only concurrency or retries change, but does for attempts", () => {
    const base = readFileSync(CONTRACT, "utf8");
    const dir = tempDir("reins-plan-");
    const write = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    const a = planOf(write("a.yaml", base));
    const b = planOf(write("b.yaml", base.replace("concurrency: 8", "concurrency: 64, retries: 5")));
    const c = planOf(write("c.yaml", base.replace("attempts: 3", "attempts: 4")));
    const d = planOf(write("d.yaml", `# a comment changes nothing\n${base}`));
    expect(b.hash).toBe(a.hash);
    expect(d.hash).toBe(a.hash);
    expect(c.hash).not.toBe(a.hash);
    const diff = diffPlans(a, c);
    expect(diff.same).toBe(false);
    expect(diff.rollouts).toEqual({ before: 12, after: 16 });
    expect(diff.changes).toContainEqual({ path: "attempts", before: 3, after: 4 });
  });

  it("changes a task's digest and the step hash when a workspace file changes", () => {
    const base = readFileSync(CONTRACT, "utf8");
    const dir = tempDir("reins-plan-");
    writeFileSync(join(dir, "a.yaml"), base);
    writeFileSync(join(dir, "b.yaml"), base.replace('content: "# notes\\n"', 'content: "# other\\n"'));
    const a = planOf(join(dir, "a.yaml"));
    const b = planOf(join(dir, "b.yaml"));
    const diff = diffPlans(a, b);
    expect(diff.tasks.changed).toEqual(["hello"]);
    expect(diff.steps.changed).toEqual([0]);
  });

  it("plans the quickstart experiment with eval steps before and after training", () => {
    const plan = planOf("examples/quickstart/experiment.yaml");
    expect(plan.kind).toBe("Experiment");
    const kinds = plan.steps.map((s) => s.kind);
    expect(kinds[0]).toBe("eval");
    expect(kinds[kinds.length - 1]).toBe("eval");
    const spec = parseDocument(readFileSync("examples/quickstart/experiment.yaml", "utf8")).toJS().spec;
    expect(kinds.filter((k) => k === "sample").length).toBe(spec.steps);
    const held = new Set(plan.heldOutTasks);
    expect(held.size).toBe(8);
    for (const s of plan.steps.filter((x) => x.kind === "sample")) {
      expect(s.rollouts.length).toBe(spec.tasksPerStep * plan.algorithm!.groupSize);
      for (const r of s.rollouts) expect(held.has(r.task)).toBe(false);
    }
    expect(plan.model?.engine.type).toBe("onnx");
    expect(plan.harnesses.map((h) => h.name)).toEqual(["reins-agent"]);
  });

  it("carries the Experiment's bad-step policy (default: stop; skip allows 3 in a row) outside the plan hash", () => {
    const dir = tempDir("reins-plan-");
    const experiment = (extra: string, name: string) => {
      const file = join(dir, name);
      writeFileSync(
        file,
        `apiVersion: reins/v1alpha1
kind: Experiment
metadata: {name: x}
spec:
  model: {name: qwen3}
  tasks: [{name: t}]
  harnesses: [{name: reins-agent}]
  algorithm: {name: grpo}
  steps: 1
${extra}---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`,
      );
      return planOf(file);
    };
    const a = experiment("", "a.yaml");
    const b = experiment("  onBadStep: {action: skip, maxSkips: 5}\n", "b.yaml");
    const c = experiment("  onBadStep: {action: skip}\n", "c.yaml");
    expect(a.onBadStep).toEqual({ action: "stop", maxSkips: 3 });
    expect(b.onBadStep).toEqual({ action: "skip", maxSkips: 5 });
    expect(c.onBadStep).toEqual({ action: "skip", maxSkips: 3 });
    // Changing it does not change the hash, so a stopped run can be resumed with another policy.
    expect(b.hash).toBe(a.hash);
    expect(diffPlans(a, b).changes).toContainEqual({ path: "onBadStep.action", before: "stop", after: "skip" });
    expect(planOf(CONTRACT).onBadStep).toBeUndefined();
  });

  it("deals each training step's tasks to harnesses by weight: one harness per task, groups of groupSize", () => {
    const plan = planOf(
      writeSpec(`apiVersion: reins/v1alpha1
kind: Experiment
metadata: {name: mix}
spec:
  model: {name: qwen3}
  tasks: [{labels: {set: mix}}]
  heldOut: [{name: held}]
  harnesses: [{name: reins-agent, weight: 3}, {name: codex}]
  algorithm: {type: GRPO, groupSize: 2}
  steps: 5
  tasksPerStep: 4
  seed: 11
${tasks(["a", "b", "c", "d", "e", "f"], "{set: mix}")}${tasks(["held"], "{}")}`),
    );
    const sample = plan.steps.filter((s) => s.kind === "sample");
    const harnessOf = (r: { harness: string }) => r.harness;
    for (const step of sample) {
      expect(step.rollouts).toHaveLength(4 * 2);
      const groups = new Map<string, string[]>();
      for (const r of step.rollouts) groups.set(r.pair, [...(groups.get(r.pair) ?? []), harnessOf(r)]);
      expect([...groups.values()].every((g) => g.length === 2)).toBe(true); // groupSize rollouts of one pair
      expect(new Set(step.rollouts.map((r) => r.task)).size).toBe(4); // each task through one harness
    }
    // 20 groups, weights 3:1 → 15 and 5.
    const count = (h: string) => sample.flatMap((s) => s.rollouts).filter((r) => r.harness === h).length / 2;
    expect([count("reins-agent"), count("codex")]).toEqual([15, 5]);
    // Evaluations run every held-out task through every harness.
    for (const e of plan.steps.filter((s) => s.kind === "eval")) expect(e.rollouts.map(harnessOf).sort()).toEqual(["codex", "reins-agent"]);
    // Deterministic from the seed; another seed deals differently.
    expect(canonicalJson(planOf(writeSpec(readFileSync(lastSpec, "utf8"))).steps)).toBe(canonicalJson(plan.steps));
    const other = planOf(writeSpec(readFileSync(lastSpec, "utf8").replace("seed: 11", "seed: 12")));
    expect(canonicalJson(other.steps)).not.toBe(canonicalJson(plan.steps));
  });

  it("keeps one-harness plans as they were: every sampled task through that harness", () => {
    const plan = planOf("examples/quickstart/experiment.yaml");
    for (const s of plan.steps.filter((x) => x.kind === "sample")) expect(s.rollouts.every((r) => r.harness === "reins-agent")).toBe(true);
    expect(dealHarnesses([2], 3, 2, 5)).toEqual([
      [0, 0, 0],
      [0, 0, 0],
    ]);
  });

  it("gives every harness its share of the run's groups: never a whole group ahead, under two behind", () => {
    let random = 7;
    const next = () => (random = (random * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let trial = 0; trial < 300; trial++) {
      const weights = Array.from({ length: 1 + Math.floor(next() * 6) }, () => 0.05 + next() * 5);
      const perStep = 1 + Math.floor(next() * 7);
      const steps = dealHarnesses(weights, perStep, 12, trial);
      const total = weights.reduce((a, b) => a + b, 0);
      const dealt = weights.map(() => 0);
      steps.forEach((slots, s) => {
        expect(slots).toHaveLength(perStep);
        for (const h of slots) dealt[h]!++;
        const groups = (s + 1) * perStep;
        weights.forEach((w, h) => {
          expect(dealt[h]! - (groups * w) / total).toBeLessThan(1);
          expect((groups * w) / total - dealt[h]!).toBeLessThan(2);
        });
      });
    }
  });

  it("does not change the hash when only the proxy's processes change, but does for its limits", () => {
    const spec = (proxy: string) => `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: served}
spec:
  model: {name: pol}
  tasks: [{name: plain}]
  harnesses: [{name: reins-agent}]
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: pol}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: done}]}
${proxy}
${tasks(["plain"], "{}")}`;
    const none = planOf(writeSpec(spec("")));
    const four = planOf(writeSpec(spec("  proxy: {processes: 4}")));
    const limited = planOf(writeSpec(spec("  proxy: {processes: 4, maxRequestsPerRollout: 8}")));
    const limitedAlone = planOf(writeSpec(spec("  proxy: {maxRequestsPerRollout: 8}")));
    expect(four.model?.proxy?.processes).toBe(4);
    expect(four.hash).toBe(none.hash);
    expect(limited.hash).not.toBe(none.hash);
    expect(limited.hash).toBe(limitedAlone.hash);
  });

  it("states the judge of every rubric: the Model it names, else the policy", () => {
    const plan = planOf(
      writeSpec(`apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: judged}
spec:
  model: {name: qwen3}
  tasks: [{name: named}, {name: policy}, {name: plain}]
  harnesses: [{name: reins-agent}]
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: grader}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: '{"a": 1}'}]}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: named}
spec:
  instruction: x
  verifier: {rubric: {judge: grader, items: [{id: a, criterion: Clear.}]}}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: policy}
spec:
  instruction: x
  verifier: {rubric: {items: [{id: a, criterion: Clear.}]}}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: plain}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`),
    );
    const judgeOf = (name: string) => plan.tasks.find((t) => t.name === name)!.verifier.rubric?.judge;
    expect(judgeOf("named")).toBe("grader");
    expect(judgeOf("policy")).toBe("qwen3");
    expect(judgeOf("plain")).toBeUndefined();
    expect(plan.judges?.map((m) => m.name)).toEqual(["grader"]);
    expect(plan.judges?.[0]?.engine).toEqual({ type: "scripted", script: [{ text: '{"a": 1}' }] });
  });
});

let lastSpec = "";
function writeSpec(text: string): string {
  const dir = tempDir("reins-plan-");
  lastSpec = join(dir, "spec.yaml");
  writeFileSync(lastSpec, text);
  return lastSpec;
}

function tasks(names: string[], labels: string): string {
  return names
    .map(
      (n) => `---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: ${n}, labels: ${labels}}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`,
    )
    .join("");
}
