/** The bad-step policy's pieces: which errors are bad steps, the decision, the state read back on resume. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { badStepOf, decideBadStep, findNonFinite } from "../../src/runtime/control/bad-step.js";
import { readLoopState } from "../../src/runtime/control/state.js";
import type { RunStore } from "../../src/runtime/store/run-store.js";
import { TrainerError } from "../../src/runtime/training/trainer-error.js";
import { tempDir } from "../temp.js";

describe("bad steps", () => {
  it("are the trainer's non-finite refusals, nothing else", () => {
    const refused = (code: string) => new TrainerError("TrainerRefused", `the trainer refused optim_step: ${code}`, "", code);
    expect(badStepOf(refused("NonFiniteGradient"))).toEqual({ code: "NonFiniteGradient", reason: "the trainer refused optim_step: NonFiniteGradient" });
    expect(badStepOf(refused("NonFiniteLoss"))?.code).toBe("NonFiniteLoss");
    expect(badStepOf(refused("NonFiniteBatch"))?.code).toBe("NonFiniteBatch");
    expect(badStepOf(refused("BadBatch"))).toBeNull();
    expect(badStepOf(new TrainerError("TrainerDied", "died", ""))).toBeNull();
    expect(badStepOf(new Error("NonFiniteLoss"))).toBeNull();
  });

  it("stop at once by default; with skip, after maxSkips in a row", () => {
    expect(decideBadStep({ action: "stop", maxSkips: 3 }, 0)).toBe("stop");
    expect(decideBadStep({ action: "skip", maxSkips: 2 }, 0)).toBe("skip");
    expect(decideBadStep({ action: "skip", maxSkips: 2 }, 1)).toBe("skip");
    expect(decideBadStep({ action: "skip", maxSkips: 2 }, 2)).toBe("stop");
    expect(decideBadStep({ action: "skip", maxSkips: 0 }, 0)).toBe("stop");
  });

  it("finds the numbers JSON would silently write as null", () => {
    expect(findNonFinite({ loss: 0.5, kl: null, correction: { weightMax: Infinity, type: "TIS" }, gradNorm: NaN })).toEqual([
      "correction.weightMax",
      "gradNorm",
    ]);
    expect(findNonFinite({ loss: -1, entropy: 0 })).toEqual([]);
  });

  it("count as done on resume, and the streak of skips since the last checkpoint carries over", () => {
    const dir = tempDir("reins-loop-state-");
    const lines = [
      { type: "checkpoint", phase: "sft", step: -1, path: "a", version: "v0", weightsDir: "a" },
      { type: "step-skipped", phase: "step", step: 0, code: "NonFiniteLoss", reason: "", version: "v0", consecutive: 1, maxSkips: 3 },
      { type: "checkpoint", phase: "step", step: 1, path: "b", version: "v1", weightsDir: "b" },
      { type: "step-skipped", phase: "step", step: 2, code: "NonFiniteGradient", reason: "", version: "v1", consecutive: 1, maxSkips: 3 },
      { type: "step-skipped", phase: "sft", step: 2, code: "NonFiniteGradient", reason: "", version: "v0", consecutive: 1, maxSkips: 3 },
      { type: "step-skipped", phase: "step", step: 4, code: "NonFiniteGradient", reason: "", version: "v1", consecutive: 2, maxSkips: 3 },
    ];
    writeFileSync(join(dir, "events.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    const state = readLoopState({ dir } as RunStore);
    expect([...state.trainedSteps]).toEqual([1]);
    expect([...state.skippedSteps].sort()).toEqual([0, 2, 4]);
    expect(state.skipStreak).toBe(2);
    expect(state.lastCheckpoint?.version).toBe("v1");
  });
});
