/**
 * spec.metrics of an Experiment: how a researcher turns on TensorBoard and W&B. The plan carries
 * the resolved sinks outside the plan hash; what the sinks cannot do (an online W&B run, sinks on
 * an Evaluation) is refused with a position and a hint.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { tempDir } from "../temp.js";

const TASK = `---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: x
  verifier: {checks: [{fileExists: a.txt}]}
`;

/** The first error (an invalid document also reports that no plan target is left). */
function firstError(r: ReturnType<typeof compilePlan>) {
  return r.diagnostics.find((d) => d.severity === "error" && d.code !== "NoPlanTarget");
}

function compile(kind: "Experiment" | "Evaluation", extra: string) {
  const dir = tempDir("reins-metrics-spec-");
  const file = join(dir, "spec.yaml");
  const body =
    kind === "Experiment"
      ? `  model: {name: qwen3}\n  tasks: [{name: t}]\n  harnesses: [{name: reins-agent}]\n  algorithm: {name: grpo}\n  steps: 1\n`
      : `  model: {name: qwen3}\n  tasks: [{name: t}]\n  harnesses: [{name: reins-agent}]\n`;
  writeFileSync(file, `apiVersion: reins/v1alpha1\nkind: ${kind}\nmetadata: {name: x}\nspec:\n${body}${extra}${TASK}`);
  return compilePlan([file], { env: {} });
}

describe("spec.metrics", () => {
  it("turns on TensorBoard and an offline W&B run; absent, the plan has no sinks; the plan hash ignores it", () => {
    const none = compile("Experiment", "");
    const tb = compile("Experiment", "  metrics: {tensorboard: true}\n");
    const both = compile("Experiment", "  metrics: {tensorboard: true, wandb: {project: my-project}}\n");
    const wandbOnly = compile("Experiment", "  metrics: {wandb: {project: p, mode: offline}}\n");
    for (const r of [none, tb, both, wandbOnly]) expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(none.value!.metrics).toBeUndefined();
    expect(tb.value!.metrics).toEqual({ tensorboard: true });
    expect(both.value!.metrics).toEqual({ tensorboard: true, wandb: { project: "my-project", mode: "offline" } });
    expect(wandbOnly.value!.metrics).toEqual({ tensorboard: false, wandb: { project: "p", mode: "offline" } });
    expect(new Set([none, tb, both, wandbOnly].map((r) => r.value!.hash)).size).toBe(1);
  });

  it("refuses an online W&B run, an unknown sink and sinks on an Evaluation, with the line", () => {
    const online = compile("Experiment", "  metrics: {wandb: {project: p, mode: online}}\n");
    expect(online.value).toBeUndefined();
    expect(firstError(online)).toMatchObject({ code: "InvalidValue", line: 10 });
    const unknown = compile("Experiment", "  metrics: {tensorbord: true}\n");
    expect(firstError(unknown)).toMatchObject({ code: "UnknownField", line: 10 });
    expect(firstError(unknown)!.message + firstError(unknown)!.hint).toContain("tensorboard");
    const noProject = compile("Experiment", "  metrics: {wandb: {}}\n");
    expect(firstError(noProject)).toMatchObject({ code: "MissingField" });
    const evaluation = compile("Evaluation", "  metrics: {tensorboard: true}\n");
    expect(evaluation.value).toBeUndefined();
    expect(firstError(evaluation)).toMatchObject({ code: "UnknownField" });
  });
});
