/**
 * `reins run` with the model served by two proxy processes (`proxy: {processes: 2}`): the tiny
 * quickstart copy (SFT on reference solutions through reins-agent, one GRPO step with the onnx
 * engine in each process). The records reach the run from both processes — every call of every
 * rollout, later turns spliced from the stored completion ids — and every trained batch matches
 * the engine-sampled ids: 0 mismatched, as with one process.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { editSpec, events, experiment, jsonl } from "./helpers.js";

describe("reins run with two proxy processes", () => {
  it("trains from the records of both processes: every call kept, 0 mismatched trained tokens", () => {
    const dir = tempDir("reins-proxy-processes-");
    const file = experiment(dir);
    editSpec(file, [
      [/ {2}steps: 3\n/, "  steps: 1\n"],
      [/ {2}sft: \{[^}]*\}/, "  sft: {steps: 1, learningRate: 3e-3, batchSize: 4}"],
      [/advantage: \{[^}]*\}/, "advantage: {normalizeStd: true, dropZeroVariance: false, positiveOnly: false}"],
    ]);
    editSpec(join(dir, "spec", "model.yaml"), [[/\n {2}engine:\n/, "\n  proxy: {processes: 2}\n  engine:\n"]]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
    const f = JSON.parse(r.stdout).fidelity.byHarness["reins-agent"];
    const checks = events(out).filter((e) => e.type === "trained-tokens");
    expect(checks.map((c) => c.phase).sort()).toEqual(["sft", "step"]);
    for (const c of checks) {
      expect(c.checked, c.phase).toBeGreaterThan(0);
      expect(c.mismatched, c.phase).toBe(0);
    }
    const calls = jsonl(out, "calls.jsonl");
    const rollouts = jsonl(out, "rollouts.jsonl");
    expect(f.calls).toBe(calls.length);
    expect(f.templateMismatches).toBe(0);
    // Every rollout's calls came back (seq 0..n-1, none missing), and later turns were spliced.
    for (const ro of rollouts) {
      const mine = calls
        .filter((c) => c.rolloutId === ro.id)
        .map((c) => c.seq as number)
        .sort((a, b) => a - b);
      expect(mine.length, ro.id).toBeGreaterThan(0);
      expect(mine, ro.id).toEqual(mine.map((_, i) => i));
    }
    const later = calls.filter((c) => c.seq > 0);
    expect(later.length).toBeGreaterThan(0);
    for (const c of later) expect(c.reused.length, `${c.rolloutId} call ${c.seq}`).toBeGreaterThan(0);
  }, 900_000);
});
