/**
 * A training step is done when its commit (the checkpoint event, or step-skipped) is recorded,
 * after its metrics. A run killed between the two redoes the step on resume: the loop state does
 * not count it, and the viewer shows the redone step's metrics, not both tries.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readLoopState } from "../../src/runtime/control/state.js";
import type { RunStore } from "../../src/runtime/store/run-store.js";
import { buildMetricSeries } from "../../src/runtime/view/overview.js";
import { tempDir } from "../temp.js";

const metrics = (step: number, loss: number) => ({
  type: "step-metrics",
  step,
  trainingStep: step + 1,
  meanReward: 0.5,
  rollouts: 4,
  version: `v${step}`,
  loss,
});
const checkpoint = (step: number) => ({ type: "checkpoint", phase: "step", step, path: `ckpt-${step}`, version: `w${step}`, weightsDir: `w${step}` });
const skipped = (step: number) => ({
  type: "step-skipped",
  phase: "step",
  step,
  code: "NonFiniteLoss",
  reason: "",
  version: "w0",
  consecutive: 1,
  maxSkips: 3,
});

function stateOf(lines: object[]) {
  const dir = tempDir("reins-step-commit-");
  writeFileSync(join(dir, "events.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
  return readLoopState({ dir } as RunStore);
}

describe("a training step's commit", () => {
  it("a step whose metrics are recorded but not its checkpoint is not done: resume redoes it from the checkpoint before", () => {
    const state = stateOf([
      { type: "checkpoint", phase: "sft", step: -1, path: "sft", version: "w-sft", weightsDir: "w-sft" },
      metrics(0, 0.4),
      checkpoint(0),
      metrics(1, 0.3), // killed here
    ]);
    expect([...state.trainedSteps]).toEqual([0]);
    expect(state.metrics.map((m) => m.step)).toEqual([0]);
    expect(state.lastCheckpoint?.step).toBe(0);
    expect(state.versions).toEqual(["w-sft", "w0"]);
  });

  it("the same for a skipped step: without its step-skipped event it is neither done nor counted in the streak", () => {
    const state = stateOf([metrics(0, 0.4), skipped(0), metrics(1, Number.NaN)]);
    expect([...state.skippedSteps]).toEqual([0]);
    expect(state.skipStreak).toBe(1);
    expect(state.metrics.map((m) => m.step)).toEqual([0]);
  });

  it("a redone step counts once, with the metrics of the try that committed", () => {
    const state = stateOf([metrics(0, 0.4), checkpoint(0), metrics(1, 0.3), metrics(1, 0.25), checkpoint(1)]);
    expect([...state.trainedSteps]).toEqual([0, 1]);
    expect(state.metrics.map((m) => [m.step, m.loss])).toEqual([
      [0, 0.4],
      [1, 0.25],
    ]);
  });

  it("SFT's summary is read back once its checkpoint is recorded, so a resumed run reports it", () => {
    const sft = { type: "sft", rollouts: 6, passed: 5, sequences: 5, steps: 20, skipped: 0, lastLoss: 0.1 };
    const ckpt = { type: "checkpoint", phase: "sft", step: -1, path: "sft", version: "w-sft", weightsDir: "w-sft" };
    expect(stateOf([sft, ckpt, metrics(0, 0.4), checkpoint(0)]).sft).toEqual({ rollouts: 6, passed: 5, sequences: 5, steps: 20 });
    expect(stateOf([sft]).sft).toBeUndefined(); // killed before SFT's commit: redone
  });

  it("the viewer's metric series show a redone step once, with its last line", () => {
    const series = buildMetricSeries([metrics(0, 0.4), metrics(1, 0.3), metrics(1, 0.25), metrics(2, 0.2)]);
    expect(series.loss).toEqual([
      { step: 0, value: 0.4 },
      { step: 1, value: 0.25 },
      { step: 2, value: 0.2 },
    ]);
  });
});
