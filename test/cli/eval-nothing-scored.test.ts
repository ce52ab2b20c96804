/**
 * An evaluation in which no rollout got a reward measured nothing: `reins eval` still prints its
 * summary (stdout is data), then says why on stderr as a catalogued problem and exits 1, so a script
 * or CI step that runs it cannot mistake a broken setup for a score of 0. One rollout scored is enough
 * for exit 0 (a low score is a result, not a failure).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

function evaluation(verifier: string): string {
  return `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: note}
spec:
  instruction: Write note.txt
  verifier:
${verifier}
  timeoutSeconds: 60
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: writer}
spec:
  command: [sh, -c, "printf hi > note.txt"]
---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: unscored}
spec:
  tasks: [{name: note}]
  harnesses: [{name: writer}]
  attempts: 2
  sandbox: {provider: local, concurrency: 2}
`;
}

function evalOf(verifier: string) {
  const dir = tempDir("reins-unscored-");
  const file = join(dir, "eval.yaml");
  writeFileSync(file, evaluation(verifier));
  return reins(["eval", file, "--out", join(dir, "run"), "--json", "--quiet"], { timeout: 180_000, env: { REINS_DEBUG: "" } });
}

describe("reins eval when no rollout got a reward", () => {
  it("prints the summary, names the cause as NothingScored and exits 1", () => {
    // A verifier script that prints no reward: a verifier error on every rollout.
    const r = evalOf(`    script: {command: "echo no reward here"}`);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout);
    expect(summary.rollouts).toBe(2);
    expect(summary.errors).toBe(2);
    expect(r.stderr).toContain("error[NothingScored]: None of the 2 rollouts got a reward");
    expect(r.stderr).toContain("ScriptOutputInvalid ×2");
    expect(r.stderr).toMatch(/\n\s+hint: \S/);
    expect(r.stderr).not.toMatch(/^\s+at .+/m);
  }, 200_000);

  it("exits 0 when the rollouts were scored, even at 0", () => {
    const r = evalOf(`    checks: [{fileEquals: {path: note.txt, content: "something else"}}]`);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect([summary.rollouts, summary.errors, summary.meanReward]).toEqual([2, 0, 0]);
    expect(r.stderr).not.toContain("NothingScored");
  }, 200_000);
});
