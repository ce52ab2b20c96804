/**
 * `reins run` with the shipped `ppo` Algorithm on a small copy of the quickstart (real sandboxes,
 * reins-agent, the onnx engine, the torch worker on CPU): the critic is asked for values on each
 * step's trees before the update, each branch gets its GAE, and the value head trains — its loss is
 * in the step metrics, and the critic that answered 0 everywhere at step 1 (a fresh head starts at
 * zero) answers otherwise at step 2. An untrained policy almost never writes the right word, so
 * every reward would be 0 and the critic would learn nothing: this copy of the family gives half
 * credit for leaving a workspace file in place (returns of 0.5 or 1).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, jsonl } from "./helpers.js";

describe("reins run with PPO", () => {
  it("trains the policy and its value head for 2 steps; the value loss is reported and changes", () => {
    const dir = tempDir("reins-ppo-loop-");
    const file = experiment(dir);
    editSpec(file, [
      [/ {2}heldOut:\n {4}- .*\n/, ""],
      [/ {2}algorithm:\n(?: {4}.*\n)+/, "  algorithm: {name: ppo}\n"],
      [/ {2}sft: \{[^}]*\}\n/, ""],
      [/ {2}steps: 3\n/, "  steps: 2\n"],
    ]);
    editSpec(join(dir, "spec", "family.yaml"), [
      [/ {4}instruction: (.*)\n/, '    instruction: $1\n    workspace: {files: [{path: notes.md, content: "keep me\\n"}]}\n'],
      [/ {6}checks:\n(\s+- fileEquals: .*\n)/, "      checks:\n$1        - fileExists: notes.md\n"],
    ]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    const outcome = JSON.parse(r.stdout);
    expect(outcome.steps).toBe(2);
    const metrics = jsonl(out, "metrics.jsonl");
    expect(metrics).toHaveLength(2);
    for (const m of metrics) {
      expect(m.rollouts).toBe(8); // 2 tasks × groupSize 4 of the shipped ppo
      expect(m.trainedRollouts).toBe(8);
      expect(m.valueLoss).toBeGreaterThan(0);
      expect(Number.isFinite(m.critic.explainedVariance)).toBe(true);
      expect(m.critic.returnMean).toBeGreaterThan(0);
    }
    expect(metrics[1].valueLoss).not.toBe(metrics[0].valueLoss);
    expect(metrics[0].critic.valueMean).toBe(0);
    expect(metrics[1].critic.valueMean).not.toBe(0);
    const rewards = jsonl(out, "rollouts.jsonl").map((x) => x.reward);
    expect(rewards.every((x: number) => x === 0.5 || x === 1)).toBe(true);
    expect(events(out).filter((e) => e.type === "checkpoint" && e.phase === "step")).toHaveLength(2);
  }, 900_000);
});
