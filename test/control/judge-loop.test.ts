/**
 * Rubric verifiers score during `reins run` with the judge each rubric names: a scripted judge
 * Model answering PASS for item A (weight 3) and FAIL for item B (weight 1) gives every rollout of
 * its task the reward 0.75, and a rubric that names no judge is graded by the policy itself, with
 * the weights serving at that step. The same run honours the Trainer's checkpointDir (relative:
 * under the run directory) and weightsFormat (onnx only: no safetensors are written).
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, jsonl } from "./helpers.js";

const JUDGED = `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: verdict}
spec:
  tokenizer: {type: qwen3}
  engine:
    type: scripted
    script: [{text: '{"A": "PASS", "B": "FAIL"}'}]
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: graded}
spec:
  instruction: Write "hi" into answer.txt
  verifier:
    rubric:
      judge: verdict
      items:
        - {id: A, criterion: answer.txt says hi., weight: 3}
        - {id: B, criterion: answer.txt has nothing else.}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: self-graded}
spec:
  instruction: Write "ok" into answer.txt
  verifier:
    rubric:
      items:
        - {id: A, criterion: answer.txt says ok.}
`;

describe("reins run with rubric verifiers", () => {
  it("scores each rubric with the judge it names (else the policy), and honours checkpointDir and weightsFormat", () => {
    const dir = tempDir("reins-judge-loop-");
    const file = experiment(dir);
    writeFileSync(join(dir, "spec", "judged.yaml"), JUDGED);
    editSpec(file, [
      [/ {2}imports: \[family.yaml, model.yaml\]/, "  imports: [model.yaml, judged.yaml]"],
      [/ {2}tasks:\n {4}- .*\n/, "  tasks: [{name: graded}, {name: self-graded}]\n"],
      [/ {2}heldOut:\n {4}- .*\n/, ""],
      [/ {2}algorithm:\n(?: {4}.*\n)+/, "  algorithm: {type: GRPO, groupSize: 2}\n"],
      [/ {2}sft: \{[^}]*\}\n/, ""],
      [/ {2}steps: 3\n/, "  steps: 1\n"],
      [/ {2}trainer: \{name: torch-cpu\}\n/, "  trainer: {checkpointDir: ckpts, weightsFormat: [onnx]}\n"],
    ]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    const rollouts = jsonl(out, "rollouts.jsonl");
    const graded = rollouts.filter((x) => x.task === "graded");
    const self = rollouts.filter((x) => x.task === "self-graded");
    expect(graded).toHaveLength(2);
    expect(self).toHaveLength(2);
    for (const x of graded) {
      expect(x.reward).toBeCloseTo(0.75, 12);
      const rubric = x.verifier.parts.rubric;
      expect(rubric.judge).toBe("verdict");
      expect(rubric.items.map((i: { id: string; score: number }) => [i.id, i.score])).toEqual([
        ["A", 1],
        ["B", 0],
      ]);
      expect(rubric.calls[0].record).toMatchObject({ model: "verdict", weightsVersion: "scripted" });
    }
    for (const x of self) {
      const rubric = x.verifier.parts.rubric;
      expect(rubric.judge).toBe("quickstart-policy");
      // The policy graded with the weights that served the rollout (what it said need not parse).
      expect(rubric.calls[0].record).toMatchObject({ model: "quickstart-policy", callClass: "auxiliary", weightsVersion: x.weightsVersion });
      expect(typeof x.weightsVersion).toBe("string");
    }
    // The judges' calls are not training data: none of them is among the run's recorded calls.
    expect(jsonl(out, "calls.jsonl").filter((c) => String(c.rollout).endsWith("/judge"))).toEqual([]);

    const ckpts = events(out).filter((e) => e.type === "checkpoint");
    expect(ckpts).toHaveLength(1);
    expect(ckpts[0].path).toBe(join(out, "ckpts", "step-0"));
    for (const f of ["checkpoint.json", "model.safetensors", "trainer.safetensors"]) expect(existsSync(join(ckpts[0].path, f)), f).toBe(true);
    expect(existsSync(join(ckpts[0].weightsDir, "model.onnx"))).toBe(true);
    expect(existsSync(join(ckpts[0].weightsDir, "model.safetensors"))).toBe(false);
  }, 900_000);
});
