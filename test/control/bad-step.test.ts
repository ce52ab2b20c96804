/**
 * A training step whose loss or gradient is not finite (here for a realistic reason: an absurd
 * learning rate makes the weights diverge after the first step) is detected and reported in plain
 * words. By default the run stops (exit 1, the worker's code, resumable) and nothing is published
 * after it; with `onBadStep: {action: skip}` the step is recorded as skipped, the same weights keep
 * serving, and more than `maxSkips` bad steps in a row stop the run. A skipped step counts as done
 * on resume, and the policy may be changed to resume (it is not part of the plan hash).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../executor/helpers.js";
import { reins as launch } from "../reins-cli.js";
import { STACK_TRACE, editSpec, events, experiment, jsonl } from "./helpers.js";

function reins(args: string[]) {
  return launch(args, { timeout: 300_000 });
}

/**
 * The tiny quickstart copy without held-out evaluations, whose RL learning rate is absurd. The
 * short SFT leaves every reward at 0, so zero-variance groups are kept and an entropy bonus gives
 * the first step a gradient: that step is applied, and the weights diverge.
 */
function divergingExperiment(dir: string, onBadStep?: string): string {
  const file = experiment(dir);
  editSpec(file, [
    [/ {2}heldOut:\n {4}- labels: \{[^}]*\}\n/, ""],
    [/ {4}learningRate: [^\n]+\n/, "    learningRate: 1e30\n    entropyCoef: 0.01\n"],
    [/dropZeroVariance: true/, "dropZeroVariance: false"],
    // One optimizer step per training step, so that step 1 is applied whole and step 2 meets the diverged weights.
    [/ {4}miniBatches: \d+\n/, ""],
    ...(onBadStep ? ([[/ {2}seed: /, `  onBadStep: ${onBadStep}\n  seed: `]] as [RegExp, string][]) : []),
  ]);
  return file;
}

function publishedVersions(runDir: string): string[] {
  return readdirSync(join(runDir, "trainer", "weights"))
    .filter((d) => !d.startsWith("."))
    .sort();
}

describe("reins run with a non-finite training step", () => {
  it("stops by default: exit 1, the worker's code in plain words, nothing published after the bad step", () => {
    const dir = tempDir("reins-bad-step-stop-");
    const file = divergingExperiment(dir);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/error\[NonFinite(Loss|Batch|Gradient)\]: Training step 2\/3 failed: the trainer refused \w+: /);
    expect(r.stderr).toContain("algorithm.learningRate too high?");
    expect(r.stderr).toContain(`--resume ${out}`);
    expect(r.stderr).not.toMatch(STACK_TRACE);
    const ev = events(out);
    const checkpoints = ev.filter((e) => e.type === "checkpoint");
    expect(checkpoints.map((c) => `${c.phase}:${c.step}`)).toEqual(["sft:-1", "step:0"]);
    expect(ev.some((e) => e.type === "step-skipped")).toBe(false);
    expect(ev.at(-1)).toMatchObject({ type: "run-stopped", code: expect.stringMatching(/^NonFinite/) });
    // The bad step was sampled by the last published weights, and nothing was saved after it.
    const last = checkpoints.at(-1)!.version;
    expect(
      new Set(
        jsonl(out, "rollouts.jsonl")
          .filter((x) => x.step === 1)
          .map((x) => x.weightsVersion),
      ),
    ).toEqual(new Set([last]));
    expect(publishedVersions(out)).toEqual(checkpoints.map((c) => c.version).sort());
    const metrics = jsonl(out, "metrics.jsonl");
    expect(metrics.map((m) => m.step)).toEqual([0]);
    expect(Number.isFinite(metrics[0].loss) && Number.isFinite(metrics[0].gradNorm)).toBe(true);
  }, 300_000);

  it("skips with onBadStep: skip, stops after maxSkips bad steps in a row, and resumes without redoing a skipped step", () => {
    const dir = tempDir("reins-bad-step-skip-");
    const file = divergingExperiment(dir, "{action: skip, maxSkips: 1}");
    const out = join(dir, "run");
    const first = reins(["run", file, "--out", out]);
    expect(first.code, first.stderr).toBe(1);
    expect(first.stderr).toMatch(
      /warning: training step 2\/3 skipped \(NonFinite\w+\): .*the weights [0-9a-f]+ keep serving \(1 skipped in a row; onBadStep.maxSkips 1\)/,
    );
    expect(first.stderr).toMatch(
      /error\[TooManyBadSteps\]: Training step 3\/3 failed \(NonFinite\w+\): .* 2 bad steps in a row, more than onBadStep.maxSkips \(1\) allows/,
    );
    expect(first.stderr).toContain(`--resume ${out}`);
    expect(first.stderr).not.toMatch(STACK_TRACE);
    const served = events(out)
      .filter((e) => e.type === "checkpoint")
      .at(-1)!;
    expect(`${served.phase}:${served.step}`).toBe("step:0");
    const skipped = events(out).filter((e) => e.type === "step-skipped");
    expect(skipped).toMatchObject([
      { phase: "step", step: 1, code: expect.stringMatching(/^NonFinite/), version: served.version, consecutive: 1, maxSkips: 1 },
    ]);

    // Resume with a looser policy (not part of the plan hash): step 2 is not trained again, the
    // streak goes on from the run's events, and the run completes.
    editSpec(file, [[/maxSkips: 1\}/, "maxSkips: 2}"]]);
    const resumed = reins(["run", file, "--resume", out, "--json", "--quiet"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/warning: training step 3\/3 skipped \(NonFinite\w+\): .*\(2 skipped in a row; onBadStep.maxSkips 2\)/);
    expect(resumed.stderr).not.toContain("training step 2/3 skipped");
    const summary = JSON.parse(resumed.stdout);
    expect(summary.steps).toBe(3);
    expect(summary.skippedSteps).toEqual([1, 2]);
    const ev = events(out);
    expect(ev.filter((e) => e.type === "step-skipped").map((e) => [e.step, e.consecutive])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(ev.filter((e) => e.type === "checkpoint").map((e) => `${e.phase}:${e.step}`)).toEqual(["sft:-1", "step:0"]);
    // Across the skipped steps the same version kept serving, and no other was published.
    for (const step of [1, 2])
      expect(
        new Set(
          jsonl(out, "rollouts.jsonl")
            .filter((x) => x.step === step)
            .map((x) => x.weightsVersion),
        ),
      ).toEqual(new Set([served.version]));
    expect(publishedVersions(out)).toEqual(
      ev
        .filter((e) => e.type === "checkpoint")
        .map((e) => e.version)
        .sort(),
    );
    const metrics = jsonl(out, "metrics.jsonl");
    expect(metrics.map((m) => [m.step, m.version, m.skipped?.code ?? null, "loss" in m])).toEqual([
      [0, served.version, null, true],
      [1, served.version, expect.stringMatching(/^NonFinite/), false],
      [2, served.version, expect.stringMatching(/^NonFinite/), false],
    ]);
  }, 300_000);

  it("stops at a non-finite SFT step with the same plain words", () => {
    const dir = tempDir("reins-bad-step-sft-");
    const file = experiment(dir);
    editSpec(file, [[/ {2}sft: \{steps: 3, learningRate: [^,]+,/, "  sft: {steps: 3, learningRate: 1e30,"]]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/error\[NonFinite(Loss|Batch|Gradient)\]: SFT step [23]\/3 failed: the trainer refused \w+: /);
    expect(r.stderr).toContain("sft.learningRate too high?");
    expect(r.stderr).toContain(`--resume ${out}`);
    expect(r.stderr).not.toMatch(STACK_TRACE);
    expect(events(out).some((e) => e.type === "checkpoint")).toBe(false);
  }, 300_000);
});
