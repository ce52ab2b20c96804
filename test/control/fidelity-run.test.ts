/**
 * `reins run` reports fidelity per harness: a tiny copy of the quickstart (SFT on reference
 * solutions replayed through reins-agent, one GRPO step with the onnx engine). Every batch it
 * trains is checked against the engine-sampled ids as it is built (a `trained-tokens` event each,
 * SFT and the step), and the report in summary.json and --json adds them up: 0 mismatched. The
 * printed summary of the same run (resumed with nothing left to do) shows the fidelity table.
 * The trainer's per-token logprobs and the workspace diffs it keeps reach the run viewer.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startViewServer } from "../../src/runtime/index.js";
import { analyzeRollout, packTree } from "../../src/runtime/trajectories/index.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { editSpec, events, experiment, jsonl } from "./helpers.js";

describe("reins run reports fidelity per harness", () => {
  it("checks every trained batch against the records: 0 mismatched trained tokens", async () => {
    const dir = tempDir("reins-fidelity-run-");
    const file = experiment(dir);
    editSpec(file, [
      [/ {2}steps: 3\n/, "  steps: 1\n"],
      [/ {2}sft: \{[^}]*\}/, "  sft: {steps: 1, learningRate: 3e-3, batchSize: 4}"],
      // Every rollout's tokens in the step's batch, whatever the rewards.
      [/advantage: \{[^}]*\}/, "advantage: {normalizeStd: true, dropZeroVariance: false, positiveOnly: false}"],
    ]);
    const out = join(dir, "run");
    const r = reins(["run", file, "--out", out, "--json", "--quiet"], { timeout: 600_000 });
    expect(r.code, r.stderr).toBe(0);
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

    await checkTrainerSide(out, checks.find((c) => c.phase === "step").checked);

    const again = reins(["run", "--resume", out, "--quiet"], { timeout: 300_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/Fidelity\nharness +calls +prompt stored/);
    expect(again.stdout).toMatch(
      new RegExp(`reins-agent +${f.calls} +${f.storedPromptTokens} +${f.freshPromptTokens} +${f.prefixBreaks} +0 of ${f.checkedTrainedTokens} `),
    );
  }, 900_000);
});

/**
 * What the run keeps beside its records, read back as `reins view` reads it: the trainer's logprob
 * of every token the step trained (one per checked token; close to the sampler's, the same model
 * at the same weights) on the token view, and a workspace diff for every rollout.
 */
async function checkTrainerSide(out: string, trainedInStep: number): Promise<void> {
  const files = readdirSync(join(out, "trainer-logprobs"));
  expect(files).toHaveLength(1);
  const rows = readFileSync(join(out, "trainer-logprobs", files[0]), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { rollout: string; optimizerSteps: number; logprobs: number[] });
  expect(rows.reduce((s, r) => s + r.logprobs.length, 0)).toBe(trainedInStep);
  const plan = JSON.parse(readFileSync(join(out, "plan.json"), "utf8"));
  const calls = jsonl(out, "calls.jsonl");
  // The first mini-batch is trained at the weights that sampled it; later ones after its update.
  const first = Math.min(...rows.map((r) => r.optimizerSteps));
  expect(new Set(rows.map((r) => r.optimizerSteps)).size).toBe(plan.algorithm.miniBatches);
  const gap = { first: [0, 0], later: [0, 0] };
  for (const row of rows) {
    const a = analyzeRollout(
      row.rollout,
      calls.filter((c) => c.rolloutId === row.rollout),
      plan.algorithm.filters,
    );
    const packed = packTree(a.tree, a.filter, { rollout: row.rollout, task: "", harness: "" }, 0);
    const sampled = packed.rolloutLogprobs.filter((_, i) => packed.lossMask[i] === 1);
    expect(row.logprobs.length).toBe(sampled.length);
    const g = row.optimizerSteps === first ? gap.first : gap.later;
    row.logprobs.forEach((x, i) => {
      g[0] += Math.abs(x - sampled[i]);
      g[1] += 1;
    });
  }
  const [atSampling, afterUpdates] = [gap.first[0] / gap.first[1], gap.later[0] / gap.later[1]];
  console.info(
    `trainer vs sampler, mean |log ratio|: ${atSampling.toFixed(5)} at the sampling weights (${gap.first[1]} tokens), ${afterUpdates.toFixed(5)} after the step's earlier mini-batches (${gap.later[1]} tokens)`,
  );
  // The engine (onnx) and the trainer (torch) agree on the same weights up to float rounding.
  expect(atSampling).toBeLessThan(1e-4);
  const ids = jsonl(out, "rollouts.jsonl").map((r) => r.id as string);
  expect(readdirSync(join(out, "workspace-diff")).sort()).toEqual(ids.map((id) => `${id}.json`).sort());
  const view = await startViewServer({ runDirs: [out] });
  try {
    const id = rows[0].rollout;
    const get = async (path: string) => (await (await fetch(`${view.url}api/runs/0/rollouts/${id}${path}`)).json()) as any;
    const tree = await get("/tree");
    const page = await get(`/calls/${tree.calls.at(-1).seq}`);
    expect(page.trainerNote).toBeUndefined();
    expect(page.trainerLogprobs.map((x: number | null) => x !== null)).toEqual(page.marks.map((m: string) => m === "trained"));
    expect((await get("/diff")).recorded).toBe(true);
  } finally {
    await view.close();
  }
}
