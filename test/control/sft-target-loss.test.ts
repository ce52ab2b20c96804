/**
 * `sft.targetLoss`: SFT stops once its loss per trained token, averaged over the last 10 applied
 * steps, falls below the target (`steps` is then the most it runs), so every seed starts RL from the
 * same fit. The window itself, the plan field, and a real run that stops early and says so.
 */
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { createLossWindow, reachedTargetLoss, SFT_LOSS_WINDOW } from "../../src/runtime/control/sft-stop.js";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment } from "./helpers.js";

describe("sft.targetLoss", () => {
  it("reads the mean of the last 10 applied steps, and only once 10 have run", () => {
    const w = createLossWindow();
    const means = Array.from({ length: 12 }, (_, i) => w.add(i + 1));
    expect(means.slice(0, SFT_LOSS_WINDOW - 1).every((m) => m === undefined)).toBe(true);
    expect(means.slice(SFT_LOSS_WINDOW - 1)).toEqual([5.5, 6.5, 7.5]);
    expect(reachedTargetLoss(undefined, 100)).toBe(false);
    expect(reachedTargetLoss(0.02, undefined)).toBe(false);
    expect(reachedTargetLoss(0.02, 0.03)).toBe(true);
    expect(reachedTargetLoss(0.03, 0.03)).toBe(false);
  });

  it("reaches the plan only when set (other plans hash as before)", () => {
    const file = experiment(tempDir("reins-target-loss-"));
    const plain = compilePlan([file], { env: {} }).value!;
    expect(plain.sft?.targetLoss).toBeUndefined();
    editSpec(file, [[/ {2}sft: \{steps: 3,/, "  sft: {steps: 3, targetLoss: 0.03,"]]);
    const target = compilePlan([file], { env: {} }).value!;
    expect(target.sft?.targetLoss).toBe(0.03);
    expect(target.hash).not.toBe(plain.hash);
    editSpec(file, [[/targetLoss: 0\.03/, "targetLoss: 0"]]);
    const bad = compilePlan([file], { env: {} });
    expect(bad.value).toBeUndefined();
    const error = bad.diagnostics.find((d) => d.message.includes("sft.targetLoss"));
    expect(error).toMatchObject({ severity: "error", code: "InvalidValue" });
    expect(error!.line).toBeGreaterThan(0);
  });

  it("reins run: stops SFT at the target, records the steps it ran, and RL goes on from there", () => {
    const dir = tempDir("reins-target-loss-run-");
    const file = experiment(dir);
    // A loss far above any SFT loss: SFT stops as soon as the window is full, after 10 of at most 40 steps.
    editSpec(file, [
      [/ {2}heldOut:\n {4}- .*\n/, ""],
      [/ {2}sft: \{[^}]*\}/, "  sft: {steps: 40, targetLoss: 100, learningRate: 3e-3, batchSize: 4}"],
      [/ {2}steps: 3\n/, "  steps: 1\n"],
    ]);
    const out = `${dir}/run`;
    const r = reins(["run", file, "--out", out, "--json"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/below sft\.targetLoss 100: stopping after 10 of at most 40 steps/);
    const sft = events(out).find((e) => e.type === "sft");
    expect(sft).toMatchObject({ steps: 10, targetLoss: 100 });
    expect(sft.windowLoss).toBeLessThan(100);
    expect(JSON.parse(r.stdout).sft).toMatchObject({ steps: 10 });
    expect(events(out).filter((e) => e.type === "step-metrics")).toHaveLength(1);
  }, 700_000);
});
