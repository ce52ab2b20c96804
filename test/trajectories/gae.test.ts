/** PPO per-branch GAE on packed trees against a per-path brute force. */
import { describe, expect, it } from "vitest";
import { computeBranchGae, packedPaths } from "../../src/runtime/trajectories/gae.js";
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
        const expected = episodeGae(steps.map((i) => values[i]), reward, gamma, lambda);
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
    const changed = computeBranchGae(tree, values.map((v, i) => (i >= 6 ? v + 10 : v)), 1, { gamma: 1, lambda: 0.95 });
    // Tokens owned by branch A (the shared prefix and A itself) are unaffected by B's values.
    for (const i of [1, 2, 4, 5]) expect(changed[i]).toBeCloseTo(base[i], 12);
    expect(changed[7]).not.toBeCloseTo(base[7], 3);
  });
});
