import { readFileSync, writeFileSync, cpSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { describe, expect, it } from "vitest";
import { compilePlan, diffPlans } from "../../src/compiler/index.js";
import { canonicalJson } from "../../src/compiler/contract/hash.js";
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
});
