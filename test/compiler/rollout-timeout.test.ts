// The Sandbox's timeoutSeconds is the default rollout timeout: every task that gives none of its
// own runs under it; a task's own timeoutSeconds wins.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { tempDir } from "../temp.js";

const spec = (sandbox: string) => `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: quick}
spec:
  instruction: Write hi to a.txt
  verifier: {checks: [{fileExists: a.txt}]}
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: slow}
spec:
  instruction: Write hi to b.txt
  timeoutSeconds: 900
  verifier: {checks: [{fileExists: b.txt}]}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: sh}
spec:
  command: [sh, -c, "echo hi > a.txt"]
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
  tasks: [{name: quick}, {name: slow}]
  harnesses: [{name: sh}]
${sandbox}`;

function timeouts(sandbox: string): Record<string, number> {
  const dir = tempDir("reins-timeout-");
  const file = join(dir, "e.yaml");
  writeFileSync(file, spec(sandbox));
  const r = compilePlan([file], { env: {}, cwd: dir });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return Object.fromEntries(r.value!.tasks.map((t) => [t.name, t.timeoutSeconds]));
}

describe("rollout timeout", () => {
  it("is the Sandbox's timeoutSeconds for a task without its own", () => {
    expect(timeouts("  sandbox: {provider: local, timeoutSeconds: 45}\n")).toEqual({ quick: 45, slow: 900 });
  });

  it("is 600 seconds when neither says", () => {
    expect(timeouts("")).toEqual({ quick: 600, slow: 900 });
  });
});
