/**
 * `reins run` reports fidelity per harness: a tiny copy of the quickstart (SFT on reference
 * solutions replayed through reins-agent, one GRPO step with the onnx engine). Every batch it
 * trains is checked against the engine-sampled ids as it is built (a `trained-tokens` event each,
 * SFT and the step), and the report in summary.json and --json adds them up: 0 mismatched. The
 * printed summary of the same run (resumed with nothing left to do) shows the fidelity table.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../temp.js";
import { editSpec, events, experiment, jsonl } from "./helpers.js";

describe("reins run reports fidelity per harness", () => {
  it("checks every trained batch against the records: 0 mismatched trained tokens", () => {
    const dir = tempDir("reins-fidelity-run-");
    const file = experiment(dir);
    editSpec(file, [
      [/  steps: 3\n/, "  steps: 1\n"],
      [/  sft: \{[^}]*\}/, "  sft: {steps: 1, learningRate: 3e-3, batchSize: 4}"],
      // Every rollout's tokens in the step's batch, whatever the rewards.
      [/advantage: \{[^}]*\}/, "advantage: {normalizeStd: true, dropZeroVariance: false, positiveOnly: false}"],
    ]);
    const out = join(dir, "run");
    const r = spawnSync(process.execPath, ["bin/reins.js", "run", file, "--out", out, "--json", "--quiet"], { encoding: "utf8", timeout: 600_000 });
    expect(r.status, r.stderr).toBe(0);
    const printed = JSON.parse(r.stdout);
    const written = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(printed.fidelity).toEqual(written.fidelity);
    expect(Object.keys(printed.fidelity.byHarness)).toEqual(["reins-agent"]);
    const f = printed.fidelity.byHarness["reins-agent"];

    const checks = events(out).filter((e) => e.type === "trained-tokens");
    expect(checks.map((c) => c.phase).sort()).toEqual(["sft", "step"]);
    for (const c of checks) {
      expect(c.checked, c.phase).toBeGreaterThan(0);
      expect(c.mismatched, c.phase).toBe(0);
    }
    expect(f.checkedTrainedTokens).toBe(checks.reduce((s, c) => s + c.checked, 0));
    expect(f.mismatchedTrainedTokens).toBe(0);
    const calls = jsonl(out, "calls.jsonl");
    expect(f.calls).toBe(calls.length);
    expect(f.storedPromptTokens + f.freshPromptTokens).toBe(calls.reduce((s, c) => s + c.promptIds.length, 0));
    expect(f.templateChecked).toBeGreaterThan(0);
    expect(f.templateMismatches).toBe(0);
    expect(f.proxyAddedMs.p99).toBeGreaterThanOrEqual(f.proxyAddedMs.p50);

    const again = spawnSync(process.execPath, ["bin/reins.js", "run", "--resume", out, "--quiet"], { encoding: "utf8", timeout: 300_000 });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/Fidelity\nharness +calls +prompt stored/);
    expect(again.stdout).toMatch(new RegExp(`reins-agent +${f.calls} +${f.storedPromptTokens} +${f.freshPromptTokens} +${f.prefixBreaks} +0 of ${f.checkedTrainedTokens} `));
  }, 900_000);
});
