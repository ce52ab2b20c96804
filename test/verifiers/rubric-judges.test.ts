/**
 * A run's judges come from the plan: each rubric is graded by the Model it names, or by the
 * policy when it names none (scripted engines, real tokenizers, the real verifier).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import type { Plan } from "../../src/compiler/contract/plan.js";
import type { Engine, GenerateRequest, GenerateResult } from "../../src/runtime/engines/engine.js";
import { createJudges } from "../../src/runtime/executor/judge.js";
import { loadModelRuntime } from "../../src/runtime/model/model-runtime.js";
import { DirectoryReader } from "../../src/runtime/verifiers/directory-reader.js";
import { verifyTask } from "../../src/runtime/verifiers/verify.js";
import { makeWorkspace } from "./fixture.js";
import { tempDir } from "../temp.js";

function plan(): Plan {
  const dir = tempDir("reins-judges-");
  const file = join(dir, "spec.yaml");
  writeFileSync(
    file,
    `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: judged}
spec:
  model: {name: policy}
  tasks: [{name: by-grader}, {name: by-policy}]
  harnesses: [{name: reins-agent}]
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: policy}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: '{"a": 0.5, "b": 0.5}'}]}
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: grader}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: '{"a": "PASS", "b": "FAIL"}'}]}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: by-grader}
spec:
  instruction: Write report.md
  verifier: {rubric: {judge: grader, items: [{id: a, criterion: Clear., weight: 3}, {id: b, criterion: Short.}]}}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: by-policy}
spec:
  instruction: Write report.md
  verifier: {rubric: {items: [{id: a, criterion: Clear., weight: 3}, {id: b, criterion: Short.}]}}
`,
  );
  const r = compilePlan([file], { env: {} });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return r.value!;
}

describe("run judges", () => {
  it("grade each rubric with the Model it names, else the policy (reins eval: the policy's own engine)", async () => {
    const p = plan();
    const judges = await createJudges(p);
    try {
      expect(judges.names.sort()).toEqual(["grader", "policy"]);
      const ws = await makeWorkspace({ "report.md": "# Report\n" });
      const task = (n: string) => p.tasks.find((t) => t.name === n)!;
      const graded = await verifyTask(task("by-grader"), { reader: new DirectoryReader(ws), judge: judges.judge!, rollout: "r1" });
      expect(graded.reward).toBeCloseTo(0.75, 12); // PASS (weight 3), FAIL (weight 1)
      expect(graded.parts.rubric).toMatchObject({ judge: "grader" });
      expect(graded.parts.rubric!.calls[0]!.record).toMatchObject({ model: "grader", rolloutId: "r1/judge" });
      const self = await verifyTask(task("by-policy"), { reader: new DirectoryReader(ws), judge: judges.judge!, rollout: "r2" });
      expect(self.reward).toBeCloseTo(0.5, 12);
      expect(self.parts.rubric).toMatchObject({ judge: "policy" });
      expect(self.parts.rubric!.calls[0]!.record).toMatchObject({ model: "policy" });
    } finally {
      await judges.close();
    }
  });

  it("reins run: the policy grades with the live engine it is given", async () => {
    const p = plan();
    const model = p.model!;
    const seen: GenerateRequest[] = [];
    const runtime = await loadModelRuntime(model);
    const live: Engine = {
      type: "live",
      async generate(req): Promise<GenerateResult> {
        seen.push(req);
        const ids = [...runtime.tokenizer.encode('{"a": 1, "b": 1}'), ...runtime.stopIds];
        return { ids, logprobs: ids.map(() => -0.1), finish: "stop", weightsVersion: "serving-v7" };
      },
    };
    const judges = await createJudges(p, { policy: { engine: live, model, runtime } });
    try {
      const ws = await makeWorkspace({ "report.md": "# Report\n" });
      const self = await verifyTask(p.tasks.find((t) => t.name === "by-policy")!, { reader: new DirectoryReader(ws), judge: judges.judge!, rollout: "r3" });
      expect(self.reward).toBe(1);
      expect(self.parts.rubric!.calls[0]!.record).toMatchObject({ weightsVersion: "serving-v7", rolloutId: "r3/judge" });
      const other = await verifyTask(p.tasks.find((t) => t.name === "by-grader")!, { reader: new DirectoryReader(ws), judge: judges.judge!, rollout: "r4" });
      expect(other.reward).toBeCloseTo(0.75, 12);
      expect(seen).toHaveLength(1); // the named judge did not go to the policy
    } finally {
      await judges.close();
    }
  });
});
