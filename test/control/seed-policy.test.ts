/**
 * Where each seed of a multi-seed run finds its initial policy: its own `<policy>-seed-<s>` when
 * reins creates the policy (an empty directory, or one holding only the untrained initial policy an
 * earlier run created with its own seed), the shared directory when it holds trained weights.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan } from "../../src/compiler/index.js";
import { policyFor } from "../../src/runtime/control/seeds.js";
import { tempDir } from "../executor/helpers.js";
import { experiment } from "./helpers.js";

function multiSeedPlan() {
  const dir = tempDir("reins-seed-policy-");
  const plan = compilePlan([experiment(dir)], { env: {}, seeds: [1, 2] }).value!;
  const engine = plan.model!.engine as { modelPath: string };
  return { plan, policy: engine.modelPath };
}

describe("a seed's initial policy", () => {
  it("is its own when the policy directory is empty", () => {
    const { plan, policy } = multiSeedPlan();
    expect(policyFor(plan, 2)).toEqual({ policyDir: { from: policy, to: `${policy}-seed-2` } });
  });

  it("is its own when the directory holds only an untrained initial policy of an earlier run", () => {
    const { plan, policy } = multiSeedPlan();
    mkdirSync(policy, { recursive: true });
    writeFileSync(join(policy, "READY"), "abc\n");
    expect(policyFor(plan, 1)).toEqual({ policyDir: { from: policy, to: `${policy}-seed-1` } });
  });

  it("is the shared directory when it holds trained weights", () => {
    const { plan, policy } = multiSeedPlan();
    mkdirSync(policy, { recursive: true });
    writeFileSync(join(policy, "READY"), "abc\n");
    writeFileSync(join(policy, "trained.json"), JSON.stringify({ optimizerSteps: 12 }));
    expect(policyFor(plan, 1)).toEqual({});
  });
});
