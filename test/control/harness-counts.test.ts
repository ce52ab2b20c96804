// A harness ten times slower to start than another can be held-out evaluated on fewer attempts
// (`harnesses[].heldOutAttempts`) and replay fewer SFT references (`harnesses[].sftReferences`).
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { tempDir } from "../temp.js";

/** The quickstart's eval.attempts: each held-out task's attempts through a harness without heldOutAttempts. */
function quickstartAttempts(): number {
  return Number(/ {2}eval: \{[^}]*attempts: (\d+)/.exec(readFileSync("examples/quickstart/experiment.yaml", "utf8"))![1]);
}

function plan(harnesses: string) {
  const dir = tempDir("reins-held-out-");
  cpSync("examples/quickstart/family.yaml", join(dir, "family.yaml"));
  // The copy's policy lives beside it: a Model's files must be inside the project.
  writeFileSync(join(dir, "model.yaml"), readFileSync("examples/quickstart/model.yaml", "utf8").replace(/\.\.\/\.\.\/\.reins\/quickstart\/policy/g, "policy"));
  const text = readFileSync("examples/quickstart/experiment.yaml", "utf8").replace(/ {2}harnesses:\n( {4}.*\n)+/, `  harnesses:\n${harnesses}`);
  writeFileSync(join(dir, "experiment.yaml"), text);
  const r = compilePlan([join(dir, "experiment.yaml")], { env: {}, cwd: dir });
  expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return r.value!;
}

describe("held-out attempts per harness", () => {
  it("runs each held-out task heldOutAttempts times through its harness, eval.attempts through the others", () => {
    const p = plan("    - {name: reins-agent}\n    - {name: claude-code, heldOutAttempts: 3}\n");
    const evals = p.steps.filter((s) => s.kind === "eval");
    expect(evals).toHaveLength(2);
    for (const s of evals) {
      const count = (h: string) => s.rollouts.filter((r) => r.harness === h).length;
      expect(count("reins-agent")).toBe(8 * quickstartAttempts());
      expect(count("claude-code")).toBe(8 * 3);
    }
    expect(p.estimate.rollouts).toBe(p.steps.reduce((n, s) => n + s.rollouts.length, 0));
  });

  it("changes the plan's hash", () => {
    const a = plan("    - {name: reins-agent}\n    - {name: claude-code, heldOutAttempts: 3}\n");
    const b = plan("    - {name: reins-agent}\n    - {name: claude-code, heldOutAttempts: 4}\n");
    expect(a.hash).not.toBe(b.hash);
  });
});

describe("SFT references per harness", () => {
  it("replays a seeded sample of that many training tasks through the harness, all through the others", async () => {
    const { sftRollouts } = await import("../../src/runtime/control/loop.js");
    const p = plan("    - {name: reins-agent}\n    - {name: claude-code, sftReferences: 5}\n");
    const { rollouts } = sftRollouts(p);
    const of = (h: string) => rollouts.filter((r) => r.harness === h).map((r) => r.task);
    expect(of("reins-agent")).toHaveLength(56);
    expect(of("claude-code")).toHaveLength(5);
    expect(new Set(of("claude-code")).size).toBe(5);
    expect(sftRollouts(plan("    - {name: reins-agent}\n    - {name: claude-code, sftReferences: 5}\n")).rollouts).toEqual(rollouts);
  });
});
