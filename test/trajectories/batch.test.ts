/** Batch building (mix-harness groups, drops, PPO), binary/JSONL exports and the SFT export. */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ResolvedAlgorithm } from "../../src/compiler/contract/plan.js";
import type { CallRecord } from "../../src/runtime/records/index.js";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import type { RewardTable } from "../../src/runtime/trajectories/batch-builder.js";
import { buildReport, buildTrainingBatch } from "../../src/runtime/trajectories/batch-builder.js";
import { batchToJsonl } from "../../src/runtime/trajectories/binary.js";
import { readBatchDirectory, writeBatchDirectory } from "../../src/runtime/trajectories/io.js";
import { analyzeRollouts } from "../../src/runtime/trajectories/rollout.js";
import { buildSftSamples } from "../../src/runtime/trajectories/sft.js";
import { appendOnlyChain, DEFAULT_SHAPE, RolloutBuilder, seededRng, trailingContextChain } from "./synthetic.js";

const DEFAULT_ALGORITHM = defaultAlgorithm();

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Six rollouts: task t1 with two harnesses (claude chain / openclaw branches), task t2 zero-variance. */
function fixture(): { records: CallRecord[]; rewards: RewardTable } {
  const rng = seededRng(31);
  const records: CallRecord[] = [];
  const rewards: RewardTable = new Map();
  const add = (id: string, task: string, harness: string, reward: number, branches: boolean) => {
    const b = new RolloutBuilder(id, rng);
    if (branches) trailingContextChain(b, { ...DEFAULT_SHAPE, turns: 3, system: 50 });
    else appendOnlyChain(b, { ...DEFAULT_SHAPE, turns: 3, system: 50 });
    records.push(...b.records);
    rewards.set(id, { task, harness, reward });
  };
  add("a1", "t1", "claude-code", 1, false);
  add("a2", "t1", "claude-code", 0, false);
  add("b1", "t1", "openclaw", 0.5, true);
  add("b2", "t1", "openclaw", 1, true);
  add("c1", "t2", "claude-code", 1, false);
  add("c2", "t2", "claude-code", 1, false);
  return { records, rewards };
}

const algo = (over: Partial<ResolvedAlgorithm> = {}): ResolvedAlgorithm => ({ ...DEFAULT_ALGORITHM, ...over });

describe("buildTrainingBatch", () => {
  it("normalizes per (task, harness) pair, broadcasts one advantage per rollout, reports the composition", () => {
    const { records, rewards } = fixture();
    const analyses = analyzeRollouts(records, DEFAULT_ALGORITHM.filters);
    const { batch, report } = buildTrainingBatch(analyses, {
      algorithm: algo({ advantage: { ...DEFAULT_ALGORITHM.advantage, dropZeroVariance: true } }),
      rewards,
      step: 3,
      layout: "tree",
      pairWeights: { "t1@openclaw": 0.5 },
    });
    expect(batch.step).toBe(3);
    expect(batch.trees!.map((t) => t.rollout)).toEqual(["a1", "a2", "b1", "b2"]);
    const adv = Object.fromEntries(report.rollouts.map((r) => [r.rollout, r.advantage]));
    // Pair (t1, claude-code): rewards 1, 0 -> mean 0.5, sample std sqrt(0.5).
    expect(adv.a1).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 9);
    expect(adv.a2).toBeCloseTo(-0.5 / (Math.SQRT1_2 + 1e-6), 9);
    // Pair (t1, openclaw) is its own group even though the task is the same.
    expect(adv.b1).toBeCloseTo(-0.25 / (Math.sqrt(0.125) + 1e-6), 9);
    expect(report.rollouts.find((r) => r.rollout === "c1")!.dropped).toBe("ZeroVariance");
    expect(report.groups!.filter((g) => g.zeroVariance).map((g) => g.task)).toEqual(["t2"]);
    for (const t of batch.trees!) {
      const a = adv[t.rollout]!;
      t.lossMask.forEach((m, i) => expect(t.advantages[i]).toBe(m ? a : 0));
    }
    expect(batch.composition.harnesses).toEqual({ "claude-code": 2, openclaw: 2 });
    expect(batch.composition.pairs).toEqual([
      { task: "t1", harness: "claude-code", rollouts: 2, weight: 1, meanReward: 0.5 },
      { task: "t1", harness: "openclaw", rollouts: 2, weight: 0.5, meanReward: 0.75 },
    ]);
    expect(batch.algorithm).toEqual({
      type: "GRPO",
      clip: DEFAULT_ALGORITHM.clip,
      klCoef: 0,
      entropyCoef: 0,
      correction: DEFAULT_ALGORITHM.correction,
      lossAggregation: "token-mean",
    });
    expect(report.totals.droppedRollouts).toBe(2);
    expect(report.totals.trainedTokens).toBe(batch.trees!.reduce((s, t) => s + t.lossMask.reduce((x, y) => x + y, 0), 0));
  });

  it("without rewards the report has counts but no advantages; a missing reward leaves the batch", () => {
    const { records, rewards } = fixture();
    const analyses = analyzeRollouts(records, DEFAULT_ALGORITHM.filters);
    const plain = buildReport(analyses, { algorithm: DEFAULT_ALGORITHM });
    expect(plain.rollouts.every((r) => r.advantage === undefined && r.dropped === null)).toBe(true);
    expect(plain.groups).toBeUndefined();
    rewards.delete("a2");
    const partial = buildReport(analyses, { algorithm: DEFAULT_ALGORITHM, rewards });
    const a2 = partial.rollouts.find((r) => r.rollout === "a2")!;
    expect(a2.dropped).toBe("NoReward");
    expect(a2.trainedTokens).toBe(0);
    // a1 is now alone in its group: zero variance, advantage 0.
    expect(partial.rollouts.find((r) => r.rollout === "a1")!.advantage).toBe(0);
  });

  it("PPO fills per-branch GAE from critic values aligned with the packed tree", () => {
    const { records, rewards } = fixture();
    const analyses = analyzeRollouts(records, DEFAULT_ALGORITHM.filters).slice(0, 4);
    const ppo = algo({ type: "PPO", advantage: { normalizeStd: false, dropZeroVariance: false, positiveOnly: false, gamma: 1, lambda: 1 } });
    const grpo = buildTrainingBatch(analyses, { algorithm: algo(), rewards, step: 0, layout: "tree" }).batch;
    const values = new Map(grpo.trees!.map((t) => [t.rollout, t.tokens.map(() => 0.25)]));
    const { batch, report } = buildTrainingBatch(analyses, { algorithm: ppo, rewards, step: 0, layout: "tree", values });
    expect(report.rollouts.every((r) => r.advantage === undefined)).toBe(true);
    // gamma = lambda = 1 and constant V: every trained token's advantage is R - V.
    for (const t of batch.trees!) t.lossMask.forEach((m, i) => expect(t.advantages[i]).toBeCloseTo(m ? t.reward! - 0.25 : 0, 12));
    // The value targets: advantage + value = R on every trained token.
    for (const t of batch.trees!) t.lossMask.forEach((m, i) => expect(t.returns![i]).toBeCloseTo(m ? t.reward! : 0, 12));
    // Without values the batch is the critic's query: the same trees, advantages 0, no returns.
    const query = buildTrainingBatch(analyses, { algorithm: ppo, rewards, step: 0, layout: "tree" }).batch;
    expect(query.trees!.map((t) => t.tokens)).toEqual(batch.trees!.map((t) => t.tokens));
    for (const t of query.trees!) {
      expect(t.advantages.every((a) => a === 0)).toBe(true);
      expect(t.returns).toBeUndefined();
    }
    const partial = new Map([...values].slice(1));
    expect(() => buildTrainingBatch(analyses, { algorithm: ppo, rewards, step: 0, layout: "tree", values: partial })).toThrow(/critic values/);
  });
});

describe("exports", () => {
  it("binary tree and path batches round-trip through batch.json + little-endian arrays", async () => {
    const { records, rewards } = fixture();
    const analyses = analyzeRollouts(records, DEFAULT_ALGORITHM.filters);
    for (const layout of ["tree", "paths"] as const) {
      const { batch } = buildTrainingBatch(analyses, { algorithm: algo(), rewards, step: 1, layout });
      const dir = await mkdtemp(join(tmpdir(), "reins-batch-"));
      dirs.push(dir);
      const manifest = await writeBatchDirectory(dir, batch);
      const back = await readBatchDirectory(dir);
      const f32 = (xs: number[]) => Array.from(Float32Array.from(xs));
      const items = layout === "tree" ? batch.trees! : batch.paths!;
      const backItems = layout === "tree" ? back.trees! : back.paths!;
      expect(backItems).toHaveLength(items.length);
      items.forEach((item, k) => {
        const got = backItems[k];
        expect(got.tokens).toEqual(item.tokens);
        expect(got.lossMask).toEqual(item.lossMask);
        expect(got.rolloutLogprobs).toEqual(f32(item.rolloutLogprobs));
        expect(got.advantages).toEqual(f32(item.advantages));
        if (layout === "tree") {
          const t = item as NonNullable<typeof batch.trees>[number];
          const g = got as typeof t;
          expect([g.parent, g.position, g.branch, g.ownerLeaf]).toEqual([t.parent, t.position, t.branch, t.ownerLeaf]);
        }
      });
      // Raw bytes are little-endian int32: check the first token directly.
      const raw = await readFile(join(dir, manifest.arrays.tokens.file));
      expect(raw.length).toBe(manifest.tokens * 4);
      expect(raw.readInt32LE(0)).toBe(items[0].tokens[0]);
      expect((await readFile(join(dir, manifest.arrays.loss_mask.file))).length).toBe(manifest.tokens);
      const jsonl = (await readFile(join(dir, "batch.jsonl"), "utf8")).trim().split("\n");
      expect(jsonl).toHaveLength(items.length + 1);
      expect(JSON.parse(jsonl[0])).toMatchObject({ type: "batch", step: 1, layout });
      expect(batchToJsonl(batch).trim().split("\n")).toEqual(jsonl);
    }
  });

  it("SFT keeps paths of rollouts at or above the reward threshold and masks environment tokens", () => {
    const { records, rewards } = fixture();
    const analyses = analyzeRollouts(records, DEFAULT_ALGORITHM.filters);
    const samples = buildSftSamples(analyses, rewards, { minReward: 1 });
    expect([...new Set(samples.map((s) => s.rollout))]).toEqual(["a1", "b2", "c1", "c2"]);
    const b2 = samples.filter((s) => s.rollout === "b2");
    expect(b2).toHaveLength(3);
    for (const s of samples) {
      const a = analyses.find((x) => x.rollout === s.rollout)!;
      const generated = new Set<number>();
      // Each path's unmasked tokens are exactly the generated nodes on it.
      let pos = 0;
      const leaf = a.filter.keptLeaves[s.leaf];
      const chain = [];
      for (let n: typeof leaf | null = leaf; n; n = n.parent) chain.unshift(n);
      for (const node of chain) {
        for (let k = 0; k < node.tokens.length; k++, pos++) {
          expect(s.lossMask[pos]).toBe(node.generated ? 1 : 0);
          if (node.generated) generated.add(pos);
        }
      }
      expect(pos).toBe(s.tokens.length);
      expect(generated.size).toBeGreaterThan(0);
    }
    const once = buildSftSamples(analyses, rewards, { minReward: 1, exactlyOnce: true });
    const sum = (xs: typeof samples) => xs.reduce((t, s) => t + s.lossMask.reduce((a, b) => a + b, 0), 0);
    expect(sum(once)).toBeLessThanOrEqual(sum(samples));
    expect(sum(once)).toBe(["a1", "b2", "c1", "c2"].reduce((t, id) => t + analyses.find((a) => a.rollout === id)!.stats.trainedTokens, 0));
  });
});
