// The SFT batch: each harness's reference rollouts in one prefix tree while it is small, one tree per
// rollout when a real harness's long shared prompt would make the one tree's quadratic attention the cost.
import { describe, expect, it } from "vitest";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import { buildSftBatch, SFT_TREE_MAX_TOKENS } from "../../src/runtime/control/batches.js";
import type { RolloutResult } from "../../src/runtime/records/index.js";
import { RolloutBuilder, seededRng } from "../trajectories/synthetic.js";

function references(count: number, promptTokens: number, harness = "h", seed = 3) {
  const rng = seededRng(seed);
  const shared = new RolloutBuilder("x", rng).tokens(promptTokens);
  const results: RolloutResult[] = [];
  const calls = [];
  for (let i = 0; i < count; i++) {
    const b = new RolloutBuilder(`sft-${i}-${harness}`, rng);
    const first = [...shared, ...b.tokens(12)];
    const answer = b.call(first, b.tokens(20));
    b.call([...first, ...answer, ...b.tokens(30)], b.tokens(3));
    calls.push(...b.records);
    results.push({ id: `sft-${i}-${harness}`, task: `t${i}`, harness, passed: true, reward: 1 } as RolloutResult);
  }
  return { results, calls };
}

describe("SFT batch", () => {
  const algorithm = defaultAlgorithm();

  it("keeps short references in one prefix tree, their shared prompt once", () => {
    const { results, calls } = references(8, 200);
    const batch = buildSftBatch(algorithm, results, calls);
    expect(batch.trees).toHaveLength(1);
    expect(batch.trees![0]!.tokens.length).toBe(200 + 8 * (12 + 20 + 30 + 3));
  });

  it("gives each rollout its own tree when one tree would pass SFT_TREE_MAX_TOKENS", () => {
    const { results, calls } = references(8, SFT_TREE_MAX_TOKENS);
    const batch = buildSftBatch(algorithm, results, calls);
    expect(batch.trees).toHaveLength(8);
    for (const t of batch.trees!) expect(t.tokens.length).toBe(SFT_TREE_MAX_TOKENS + 12 + 20 + 30 + 3);
    // The same tokens are trained either way: every completion token, once per rollout.
    const trained = batch.trees!.reduce((n, t) => n + t.lossMask.filter(Boolean).length, 0);
    expect(trained).toBe(8 * (20 + 3));
  });

  it("gives each harness its own tree: references of different harnesses share no prompt", () => {
    const a = references(6, 1200, "claude-code", 3);
    const b = references(2, 1500, "openclaw", 4);
    const batch = buildSftBatch(algorithm, [...a.results, ...b.results], [...a.calls, ...b.calls]);
    expect(batch.trees!.map((t) => t.rollout)).toEqual(["sft:claude-code", "sft:openclaw"]);
    expect(batch.trees!.map((t) => t.tokens.length)).toEqual([1200 + 6 * 65, 1500 + 2 * 65]);
  });

  it("splits only the harness whose tree would pass SFT_TREE_MAX_TOKENS", () => {
    const a = references(3, 500, "claude-code", 3);
    const b = references(2, SFT_TREE_MAX_TOKENS, "openclaw", 4);
    const batch = buildSftBatch(algorithm, [...a.results, ...b.results], [...a.calls, ...b.calls]);
    expect(batch.trees!.map((t) => t.rollout)).toEqual(["sft:claude-code", "sft-0-openclaw", "sft-1-openclaw"]);
  });

  it("merges references in the order of their calls, whatever order their results finished in", () => {
    // The tree's token order decides the trainer's arithmetic, so a run is reproducible from its seed.
    const { results, calls } = references(4, 100);
    const inOrder = buildSftBatch(algorithm, results, calls);
    const shuffled = buildSftBatch(algorithm, [results[2]!, results[0]!, results[3]!, results[1]!], calls);
    expect(shuffled.trees![0]!.tokens).toEqual(inOrder.trees![0]!.tokens);
  });
});
