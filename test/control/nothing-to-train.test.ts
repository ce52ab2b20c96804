/**
 * A step with nothing to train: every group's rewards are equal and dropZeroVariance drops them all
 * (here no rollout can pass). The run does not call the trainer for it (which would refuse an empty
 * batch), says why, checkpoints the weights it sampled with, and a resumed run samples nothing again.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, jsonl, STACK_TRACE } from "./helpers.js";

describe("a step with nothing to train", () => {
  it("skips the trainer, says why, checkpoints the step, and is not sampled again on resume", () => {
    const dir = tempDir("reins-nothing-to-train-");
    const file = experiment(dir);
    editSpec(file, [
      [/ {2}steps: 3\n/, "  steps: 2\n"],
      [/ {2}sft: \{[^}]*\}\n/, ""],
    ]);
    // No answer can pass: every group of the step has the same reward, 0.
    editSpec(join(dir, "spec", "family.yaml"), [[/content: "\{\{word\}\}"/, 'content: "{{word}} and never this"']]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out, "--json"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(STACK_TRACE);
    expect(r.stderr).toMatch(/nothing to train \(\d+ dropped ZeroVariance\) → weights \S+/);
    expect(JSON.parse(r.stdout).steps).toBe(2);
    const ev = events(out);
    expect(ev.filter((e) => e.type === "checkpoint" && e.phase === "step").length).toBe(2);
    const metrics = jsonl(out, "metrics.jsonl");
    expect(metrics.map((m) => [m.step, m.trainedRollouts, m.passRate])).toEqual([
      [metrics[0].step, 0, 0],
      [metrics[1].step, 0, 0],
    ]);
    // The trainer saw no batch: it wrote no per-token logprobs.
    expect(existsSync(join(out, "trainer-logprobs")) ? readdirSync(join(out, "trainer-logprobs")) : []).toEqual([]);
    const rollouts = jsonl(out, "rollouts.jsonl").length;

    const resumed = reins(["run", "--resume", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(jsonl(out, "rollouts.jsonl").length).toBe(rollouts);
    expect(jsonl(out, "metrics.jsonl").length).toBe(2);
  }, 300_000);
});
