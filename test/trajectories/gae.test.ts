/** PPO per-branch GAE on packed trees against a per-path brute force. */
import { describe, expect, it } from "vitest";
import type { PackedTree, TrainingBatch } from "../../src/runtime/trajectories/batch.js";
import { applyCritic, computeBranchGae, packedPaths } from "../../src/runtime/trajectories/gae.js";
import { analyzeRollout } from "../../src/runtime/trajectories/rollout.js";
import { packTree } from "../../src/runtime/trajectories/samples.js";
import { randInt, randomCallSet, seededRng } from "./synthetic.js";

/** Textbook GAE over one episode's steps. */
function episodeGae(values: number[], reward: number, gamma: number, lambda: number): number[] {
  const T = values.length;
  const adv = new Array<number>(T);
  let next = 0;
  for (let t = T - 1; t >= 0; t--) {
    const r = t === T - 1 ? reward : 0;
    const vNext = t === T - 1 ? 0 : values[t + 1];
    const delta = r + gamma * vNext - values[t];
    next = delta + gamma * lambda * next;
    adv[t] = next;
  }
  return adv;
}

describe("computeBranchGae", () => {
  it("each trained token gets the GAE of its owner path, computed over that path's generated tokens", () => {
    const rng = seededRng(21);
    let multiLeaf = 0;
    for (let c = 0; c < 150; c++) {
      const records = randomCallSet(rng, "r", randInt(rng, 1, 10));
      const a = analyzeRollout("r", records, { dropDeadLeaves: false, dropClasses: [], maxBranches: 0 });
      const tree = packTree(a.tree, a.filter, { rollout: "r", task: "t", harness: "h" }, 0, a.ownership);
      const values = tree.tokens.map(() => rng() - 0.5);
      const reward = rng();
      const gamma = 0.99;
      const lambda = 0.9;
      const adv = computeBranchGae(tree, values, reward, { gamma, lambda });
      const paths = packedPaths(tree);
      if (paths.length > 1) multiLeaf++;
      paths.forEach((path, leaf) => {
        const steps = [...path].filter((i) => tree.lossMask[i] === 1);
        const expected = episodeGae(
          steps.map((i) => values[i]),
          reward,
          gamma,
          lambda,
        );
        steps.forEach((i, k) => {
          if (tree.ownerLeaf![i] === leaf) expect(adv[i]).toBeCloseTo(expected[k], 10);
        });
      });
      tree.lossMask.forEach((m, i) => {
        if (!m) expect(adv[i]).toBe(0);
      });
    }
    expect(multiLeaf).toBeGreaterThan(20);
  });

  it("nothing propagates between siblings: changing one branch's values leaves the other branch alone", () => {
    // Two branches after a shared prefix: tokens 0-2 shared, 3-5 branch A, 6-8 branch B.
    const tree = {
      parent: [-1, 0, 1, 2, 3, 4, 2, 6, 7],
      lossMask: [0, 1, 1, 0, 1, 1, 0, 1, 1],
    };
    const values = [0, 0.1, 0.2, 0, 0.3, 0.4, 0, 0.5, 0.6];
    const base = computeBranchGae(tree, values, 1, { gamma: 1, lambda: 0.95 });
    const changed = computeBranchGae(
      tree,
      values.map((v, i) => (i >= 6 ? v + 10 : v)),
      1,
      { gamma: 1, lambda: 0.95 },
    );
    // Tokens owned by branch A (the shared prefix and A itself) are unaffected by B's values.
    for (const i of [1, 2, 4, 5]) expect(changed[i]).toBeCloseTo(base[i], 12);
    expect(changed[7]).not.toBeCloseTo(base[7], 3);
  });
});

describe("applyCritic", () => {
  // Two rollouts; the first has two branches after a shared prefix.
  const tree = (rollout: string, parent: number[], lossMask: number[], reward: number): PackedTree => ({
    rollout,
    task: "t",
    harness: "h",
    tokens: parent.map((_, i) => i + 1),
    parent,
    position: parent.map((_p, i, all) => {
      let d = 0;
      for (let k = i; all[k]! >= 0; k = all[k]!) d++;
      return d;
    }),
    lossMask,
    rolloutLogprobs: lossMask.map((m) => (m ? -1 : 0)),
    advantages: lossMask.map(() => 0),
    branch: lossMask.map(() => -1),
    reward,
  });
  const batch: TrainingBatch = {
    formatVersion: 1,
    step: 0,
    layout: "tree",
    trees: [tree("r0", [-1, 0, 1, 2, 3, 4, 2, 6, 7], [0, 1, 1, 0, 1, 1, 0, 1, 1], 1), tree("r1", [-1, 0, 1, 2], [0, 1, 0, 1], 0)],
    algorithm: {
      type: "PPO",
      clip: { low: 0.2, high: 0.2 },
      klCoef: 0,
      entropyCoef: 0,
      correction: { type: "none" },
      lossAggregation: "token-mean",
      valueCoef: 0.5,
    },
    composition: { pairs: [], harnesses: {} },
  };
  const values = [
    [0, 0.1, 0.2, 0, 0.3, 0.4, 0, 0.5, 0.6],
    [0, 0.7, 0, -0.2],
  ];
  const trained = (t: PackedTree, xs: number[]) => xs.filter((_, i) => t.lossMask[i]);

  it("gives each branch its GAE, returns = advantage + value, and whitens the advantages over the step", () => {
    const raw = applyCritic(batch, values, { gamma: 1, lambda: 0.95, normalize: false, positiveOnly: false });
    raw.batch.trees!.forEach((t, k) => {
      expect(t.advantages).toEqual(Array.from(computeBranchGae(t, values[k]!, t.reward!, { gamma: 1, lambda: 0.95 })));
      t.returns!.forEach((r, i) => expect(r).toBeCloseTo(t.lossMask[i] ? t.advantages[i]! + values[k]![i]! : 0, 12));
    });
    const all = raw.batch.trees!.flatMap((t) => trained(t, t.advantages));
    const white = applyCritic(batch, values, { gamma: 1, lambda: 0.95, normalize: true, positiveOnly: false });
    const w = white.batch.trees!.flatMap((t) => trained(t, t.advantages));
    expect(w.reduce((a, b) => a + b, 0) / w.length).toBeCloseTo(0, 10);
    const mean = all.reduce((a, b) => a + b, 0) / all.length;
    const std = Math.sqrt(all.reduce((a, b) => a + (b - mean) ** 2, 0) / (all.length - 1));
    w.forEach((x, i) => expect(x).toBeCloseTo((all[i]! - mean) / (std + 1e-6), 10));
    // Whitening changes the advantages, never the value targets.
    expect(white.batch.trees!.map((t) => t.returns)).toEqual(raw.batch.trees!.map((t) => t.returns));
    expect(white.stats).toMatchObject({ advantageMean: mean });
    expect(white.stats.valueMean).toBeCloseTo((0.1 + 0.2 + 0.3 + 0.4 + 0.5 + 0.6 + 0.7 - 0.2) / 8, 12);
    const pos = applyCritic(batch, values, { gamma: 1, lambda: 0.95, normalize: true, positiveOnly: true });
    pos.batch.trees!.forEach((t, k) => t.advantages.forEach((a, i) => expect(a).toBe(Math.max(white.batch.trees![k]!.advantages[i]!, 0))));
    // Context tokens stay at 0; the input batch is left as it was.
    for (const t of white.batch.trees!) t.lossMask.forEach((m, i) => m || expect(t.advantages[i]).toBe(0));
    expect(batch.trees![0]!.advantages.every((a) => a === 0)).toBe(true);
  });

  it("refuses a critic answer that does not fit the batch", () => {
    expect(() => applyCritic(batch, values.slice(0, 1), { gamma: 1, lambda: 1, normalize: false, positiveOnly: false })).toThrow(/1 rows for 2 trees/);
  });
});
