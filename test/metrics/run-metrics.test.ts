/**
 * A researcher turns on TensorBoard and W&B in a tiny experiment (2 GRPO steps after 3 SFT steps,
 * held-out evaluation before and after) and runs it as they would, `reins run spec --json`:
 * - stderr shows each phase live with counts, rate and ETA (the reference replays, the SFT steps,
 *   each step's rollouts, training, publishing, the held-out evaluation), and `reins view <run dir>`
 *   at the start and at the end; stdout is still the JSON outcome;
 * - metrics.jsonl has the new per-step fields (timing per phase, branches, dead leaves, fidelity, the
 *   breakdown per family and harness);
 * - the TensorBoard event files, read back with tensorboard's own reader, and the W&B offline run,
 *   read back from its .wandb file, hold exactly metrics.jsonl's values (and the held-out events'),
 *   under the conventional names;
 * - the sink process ran in a network namespace of its own, with no network at all: W&B offline
 *   needs none.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { metricsPython } from "../../src/runtime/metrics/sink.js";
import { stepScalars } from "../../src/runtime/metrics/names.js";
import { editSpec, events, experiment, jsonl } from "../control/helpers.js";
import { reins, type ReinsResult } from "../reins-cli.js";
import { tempDir } from "../temp.js";

let dir: string;
let out: string;
let run: ReinsResult;

beforeAll(() => {
  dir = tempDir("reins-run-metrics-");
  const file = experiment(dir);
  editSpec(file, [
    [/ {2}steps: 3\n/, "  steps: 2\n"],
    // Every group trains (zero-variance groups too), in 2 mini-batches: the trainer's metrics exist at every step.
    [/dropZeroVariance: true, positiveOnly: true/, "dropZeroVariance: false, positiveOnly: false"],
    // A KL penalty to the frozen reference, so that kl is measured.
    [/ {4}miniBatches: \d+\n/, "    miniBatches: 2\n    klCoef: 0.01\n"],
    [/ {2}seed: 7\n/, "  seed: 7\n  metrics: {tensorboard: true, wandb: {project: reins-test}}\n"],
  ]);
  // The sink's interpreter, run in a new network namespace (no interface up, nowhere to connect);
  // it notes which namespace it ran in.
  const wrapper = join(dir, "python-without-network");
  writeFileSync(
    wrapper,
    `#!/bin/sh\nMARK=${join(dir, "sink.netns")} exec unshare --net -- sh -c 'readlink /proc/self/ns/net > "$MARK"; exec "$@"' sh ${metricsPython({})} "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  out = join(dir, "run");
  run = reins(["run", file, "--out", out, "--json"], {
    timeout: 1_500_000, // generous: a loaded 2-core machine
    env: { REINS_METRICS_PYTHON: wrapper },
  });
}, 1_560_000);

function readSinks(): { tensorboard: Record<string, [number, number][]>; wandb: { runs: number; history: Record<string, number>[] } } {
  const r = spawnSync(metricsPython({}), ["test/metrics/read_sinks.py", out], { encoding: "utf8", timeout: 590_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe("reins run with spec.metrics", () => {
  it("shows live progress with counts, rate and ETA, and the reins view command first and last; stdout stays JSON", () => {
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ steps: 2, runDir: out });
    const lines = run.stderr.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^\[\s+0s\] run directory .*; watch it: reins view /);
    expect(lines[0]!.endsWith(`reins view ${out}`)).toBe(true);
    expect(lines.at(-1)).toMatch(new RegExp(`^\\[\\s*\\d+s\\] see the run: reins view ${out}$`));
    const has = (re: RegExp) =>
      expect(
        lines.some((l) => re.test(l)),
        `${re} in\n${run.stderr}`,
      ).toBe(true);
    has(/\] SFT reference replays: 1\/4 rollouts, [\d.]+ rollouts\/(s|min), ETA \S+, \S+ elapsed/);
    has(/\] SFT reference replays: 4\/4 rollouts in \S+, [\d.]+ rollouts\/(s|min) \(pass \d+%\)$/);
    has(/\] SFT: 1\/3 steps, [\d.]+ steps\/(s|min), ETA \S+, \S+ elapsed$/);
    has(/\] SFT: 3\/3 steps in \S+, [\d.]+ steps\/(s|min)$/);
    has(/\] SFT publishing: done in \S+$/);
    has(/\] held-out evaluation: 1\/8 rollouts, [\d.]+ rollouts\/(s|min), ETA \S+/);
    for (const step of [1, 2]) {
      has(new RegExp(`\\] step ${step}/2 rollouts: 1/4 rollouts, [\\d.]+ rollouts/(s|min), ETA \\S+`));
      has(new RegExp(`\\] step ${step}/2 rollouts: 4/4 rollouts in \\S+`));
      has(new RegExp(`\\] step ${step}/2 training: 1/2 mini-batches, [\\d.]+ mini-batches/(s|min), ETA \\S+`));
      has(new RegExp(`\\] step ${step}/2 training: 2/2 mini-batches in \\S+`));
      has(new RegExp(`\\] step ${step}/2 publishing: done in \\S+`));
    }
    // A log file, not a terminal: plain lines, never a redrawn one.
    expect(run.stderr).not.toContain("\r");
  });

  it("records each step's timing per phase, branches, dead leaves, fidelity and the per-(family, harness) breakdown in metrics.jsonl", () => {
    const metrics = jsonl(out, "metrics.jsonl");
    expect(metrics.map((m) => m.trainingStep)).toEqual([1, 2]);
    for (const m of metrics) {
      const t = m.timingSeconds;
      for (const phase of ["rollouts", "training", "publishing", "step"]) expect(t[phase], phase).toBeGreaterThan(0);
      expect(t.step).toBeGreaterThanOrEqual(t.rollouts + t.training + t.publishing - 0.01);
      expect(m.branches).toBeGreaterThanOrEqual(m.rollouts);
      expect(m.deadLeaves).toBeGreaterThanOrEqual(0);
      expect(m.fidelity).toMatchObject({ mismatchedTokens: 0, prefixBreaks: 0 });
      expect(m.fidelity.checkedTokens).toBe(m.trainedTokens);
      expect(m.fidelity.calls).toBeGreaterThanOrEqual(m.rollouts);
      const cell = m.byFamilyHarness["write-word"]["reins-agent"];
      expect(cell).toMatchObject({ rollouts: m.rollouts, meanReward: m.meanReward, passRate: m.passRate, branches: m.branches, deadLeaves: m.deadLeaves });
    }
  });

  it("writes TensorBoard event files and a W&B offline run whose scalars are metrics.jsonl's, under the conventional names", () => {
    const metrics = jsonl(out, "metrics.jsonl");
    const heldOut = events(out).filter((e) => e.type === "held-out");
    const { tensorboard: tb, wandb } = readSinks();
    const tbAt = (tag: string, step: number) => tb[tag]?.find(([s]) => s === step)?.[1];
    const wbAt = (tag: string, step: number) => wandb.history.find((h) => h._step === step)?.[tag];
    // The names a researcher looks for, straight from metrics.jsonl's fields.
    for (const m of metrics) {
      const s = m.trainingStep;
      const expected: Record<string, number> = {
        "reward/mean": m.meanReward,
        pass_rate: m.passRate,
        loss: m.loss,
        kl: m.kl,
        mismatch_kl: m.mismatchKl,
        entropy: m.entropy,
        clip_frac: m.clipFraction,
        grad_norm: m.gradNorm,
        "timing_s/rollouts": m.timingSeconds.rollouts,
        "timing_s/training": m.timingSeconds.training,
        "timing_s/publishing": m.timingSeconds.publishing,
        "timing_s/step": m.timingSeconds.step,
        num_branches: m.branches,
        num_dead_leaves: m.deadLeaves,
        "fidelity/mismatched_tokens": m.fidelity.mismatchedTokens,
        "fidelity/prefix_breaks": m.fidelity.prefixBreaks,
        "reward/mean/write-word/reins-agent": m.byFamilyHarness["write-word"]["reins-agent"].meanReward,
        "num_branches/write-word/reins-agent": m.byFamilyHarness["write-word"]["reins-agent"].branches,
      };
      for (const [tag, v] of Object.entries(expected)) {
        expect(typeof v, tag).toBe("number");
        expect(tbAt(tag, s), `TensorBoard ${tag} at step ${s}`).toBe(Math.fround(v)); // event files hold float32
        expect(wbAt(tag, s), `W&B ${tag} at step ${s}`).toBe(v);
      }
      // And every scalar of the step, as the sink was given it.
      for (const [tag, v] of Object.entries(stepScalars(m))) {
        expect(tbAt(tag, s), tag).toBe(Math.fround(v));
        expect(wbAt(tag, s), tag).toBe(v);
      }
    }
    // Held-out pass rate: before RL at step 0, after RL at the last step.
    expect(heldOut.map((e) => e.trainedSteps)).toEqual([0, 2]);
    for (const e of heldOut) {
      expect(tbAt("held_out/pass_rate", e.trainedSteps)).toBe(Math.fround(e.passRate));
      expect(wbAt("held_out/pass_rate", e.trainedSteps)).toBe(e.passRate);
      expect(wbAt("held_out/reward/mean/reins-agent", e.trainedSteps)).toBe(e.byHarness["reins-agent"].meanReward);
      expect(wbAt("timing_s/evaluation", e.trainedSteps)).toBe(e.seconds);
    }
    expect(wandb.runs).toBe(1);
  }, 600_000);

  it("ran the sink with no network at all (a network namespace of its own)", () => {
    const sinkNs = readFileSync(join(dir, "sink.netns"), "utf8").trim();
    expect(sinkNs).toMatch(/^net:\[\d+\]$/);
    expect(sinkNs).not.toBe(readlinkSync("/proc/self/ns/net"));
  });
});
