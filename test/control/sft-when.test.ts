/**
 * `sft.when`: `if-untrained` (the default) skips SFT when the policy's directory holds trained
 * weights — a trained.json the trainer writes next to weights it saved after ≥ 1 optimizer step —
 * and `always` runs it anyway. Three real runs: A trains a fresh policy (SFT runs), B starts from
 * A's last weights (SFT skipped), C starts from them with `when: always` (SFT runs).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decideSft } from "../../src/runtime/control/sft.js";
import { tempDir } from "../executor/helpers.js";
import { reins } from "../reins-cli.js";
import { editSpec, events, experiment, jsonl } from "./helpers.js";

const SFT = { steps: 2, learningRate: 3e-3, batchSize: 4, adamBetas: [0.9, 0.999] as [number, number], optimizerState: "reset" as const };

describe("sft.when", () => {
  it("decides from the policy directory's trained.json, and never redoes a finished SFT", () => {
    const fresh = tempDir("reins-policy-");
    const trained = tempDir("reins-policy-");
    writeFileSync(join(trained, "trained.json"), JSON.stringify({ optimizerSteps: 3, version: "abc" }));
    const zero = tempDir("reins-policy-");
    writeFileSync(join(zero, "trained.json"), JSON.stringify({ optimizerSteps: 0 }));
    const untrainedSft = { ...SFT, when: "if-untrained" as const };
    expect(decideSft(undefined, { policyDir: trained, sftDone: false })).toEqual({ action: "none" });
    expect(decideSft(untrainedSft, { policyDir: fresh, sftDone: false })).toEqual({ action: "run" });
    expect(decideSft(untrainedSft, { policyDir: zero, sftDone: false })).toEqual({ action: "run" });
    expect(decideSft(untrainedSft, { policyDir: join(fresh, "missing"), sftDone: false })).toEqual({ action: "run" });
    const skip = decideSft(untrainedSft, { policyDir: trained, sftDone: false });
    expect(skip).toMatchObject({ action: "skip" });
    expect((skip as { reason: string }).reason).toContain("3 optimizer steps");
    expect(decideSft({ ...SFT, when: "always" }, { policyDir: trained, sftDone: false })).toEqual({ action: "run" });
    expect(decideSft({ ...SFT, when: "always" }, { policyDir: trained, sftDone: true })).toEqual({ action: "done" });
  });

  it("reins run: SFT on a fresh policy, skipped on trained weights (if-untrained), run again with always", () => {
    const dir = tempDir("reins-sft-when-");
    const file = experiment(dir);
    editSpec(file, [
      [/ {2}heldOut:\n {4}- .*\n/, ""],
      [/ {2}sft: \{[^}]*\}/, `  sft: {steps: ${SFT.steps}, learningRate: ${SFT.learningRate}, batchSize: ${SFT.batchSize}}`],
      [/ {2}steps: 3\n/, "  steps: 1\n"],
      [/ {2}tasksPerStep: 2\n/, "  tasksPerStep: 1\n"],
    ]);
    const run = (spec: string, out: string) => {
      // The project holds the specs and the runs: B and C name the tokenizer of A's weights, in A's run directory.
      const r = reins(["run", spec, "--out", out, "--json", "--quiet", "--project-root", dir], { timeout: 600_000 });
      expect(r.code, r.stderr).toBe(0);
      const last = events(out)
        .filter((e) => e.type === "checkpoint")
        .pop();
      return {
        outcome: JSON.parse(r.stdout),
        weightsDir: last.weightsDir as string,
        trained: JSON.parse(readFileSync(join(last.weightsDir, "trained.json"), "utf8")),
      };
    };
    const sftRollouts = (out: string) => jsonl(out, "rollouts.jsonl").filter((x) => String(x.id).startsWith("sft-"));

    const a = run(file, join(dir, "a"));
    expect(a.outcome.sft).not.toBeNull();
    expect(a.trained.optimizerSteps).toBeGreaterThanOrEqual(SFT.steps);

    // B and C: the same experiment, its policy the weights A ended with.
    const from = (name: string, when: string) => {
      const spec = join(dir, name);
      mkdirSync(spec);
      writeFileSync(join(spec, "family.yaml"), readFileSync(join(dir, "spec", "family.yaml")));
      writeFileSync(
        join(spec, "model.yaml"),
        readFileSync(join(dir, "spec", "model.yaml"), "utf8")
          .replace("path: policy/tokenizer.json", `path: ${join(a.weightsDir, "tokenizer.json")}`)
          .replace("modelPath: policy", `modelPath: ${a.weightsDir}`),
      );
      writeFileSync(join(spec, "experiment.yaml"), readFileSync(file, "utf8").replace(/ {2}sft: \{([^}]*)\}/, `  sft: {$1${when}}`));
      return join(spec, "experiment.yaml");
    };
    const version = readFileSync(join(a.weightsDir, "READY"), "utf8").trim();

    const b = run(from("b-spec", ""), join(dir, "b"));
    expect(b.outcome.sft).toBeNull();
    const skipped = events(join(dir, "b")).filter((e) => e.type === "sft-skipped");
    expect(skipped).toHaveLength(1);
    expect(skipped[0].reason).toContain(`the policy in ${a.weightsDir} has trained weights`);
    expect(events(join(dir, "b")).filter((e) => e.type === "sft")).toEqual([]);
    expect(sftRollouts(join(dir, "b"))).toEqual([]);
    // B sampled with A's weights, and its own weights count A's optimizer steps too.
    expect(jsonl(join(dir, "b"), "rollouts.jsonl")[0].weightsVersion).toBe(version);
    expect(b.trained.optimizerSteps).toBeGreaterThanOrEqual(a.trained.optimizerSteps);

    const c = run(from("c-spec", ", when: always"), join(dir, "c"));
    expect(c.outcome.sft).not.toBeNull();
    expect(events(join(dir, "c")).filter((e) => e.type === "sft")).toHaveLength(1);
    expect(sftRollouts(join(dir, "c")).length).toBeGreaterThan(0);
    expect(c.trained.optimizerSteps).toBeGreaterThanOrEqual(a.trained.optimizerSteps + SFT.steps);
  }, 1_200_000);
});
