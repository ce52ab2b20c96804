/**
 * Property tests: the tree, filters, exactly-once masks and group advantages against the
 * brute-force reference on random call sets (seeded, tiny vocabulary so prefixes collide often).
 */
import { describe, expect, it } from "vitest";
import { CALL_CLASSES, type CallClass } from "../../src/compiler/contract/plan.js";
import { computeGroupAdvantages } from "../../src/runtime/trajectories/advantages.js";
import { analyzeRollout } from "../../src/runtime/trajectories/rollout.js";
import { packTree, unpackPaths } from "../../src/runtime/trajectories/samples.js";
import { nodeSequence } from "../../src/runtime/trajectories/tree.js";
import { key, referenceGroupAdvantage, referenceRollout } from "./reference.js";
import { pick, randInt, randomCallSet, seededRng } from "./synthetic.js";

const CASES = 300;
const ALL_CLASSES: CallClass[] = [...CALL_CLASSES];

function randomFilters(rng: () => number) {
  return {
    dropDeadLeaves: rng() < 0.7,
    dropClasses: ALL_CLASSES.filter(() => rng() < 0.3),
    maxBranches: rng() < 0.3 ? randInt(rng, 1, 4) : 0,
  };
}

/** Prefix key of every token of a packed tree, via parent pointers. */
function packedKeys(tokens: readonly number[], parent: readonly number[]): string[] {
  const keys: string[] = [];
  for (let i = 0; i < tokens.length; i++) keys.push(parent[i] < 0 ? String(tokens[i]) : `${keys[parent[i]]},${tokens[i]}`);
  return keys;
}

describe("prefix tree against the brute-force reference", () => {
  it("reproduces every recorded call exactly and marks exactly the generated tokens", () => {
    const rng = seededRng(1234);
    for (let c = 0; c < CASES; c++) {
      const records = randomCallSet(rng, `r${c}`, randInt(rng, 1, 14));
      const a = analyzeRollout(`r${c}`, records, { dropDeadLeaves: false, dropClasses: [], maxBranches: 0 });
      const ref = referenceRollout(records, { dropDeadLeaves: false, dropClasses: [], maxBranches: 0 });
      for (const r of records) {
        const call = a.tree.calls.find((x) => x.seq === r.seq);
        const expected = [...r.promptIds, ...r.completionIds];
        if (expected.length === 0) {
          expect(call?.endNode).toBeNull();
          continue;
        }
        expect(nodeSequence(call!.endNode!)).toEqual(expected);
        // Its completion tokens are generated nodes on that path.
        let pos = expected.length;
        for (let n = call!.endNode; n && pos > r.promptIds.length; n = n.parent) {
          expect(n.generated).toBe(true);
          pos -= n.tokens.length;
        }
        if (r.promptIds.length > 0) expect(nodeSequence(call!.promptEndNode!)).toEqual(r.promptIds);
      }
      // Token set: each distinct prefix exactly once; generated flag and logprob as the rules say.
      const seen = new Set<string>();
      let tokens = 0;
      for (const node of a.tree.nodes) {
        const base = node.parent ? nodeSequence(node.parent) : [];
        for (let k = 0; k < node.tokens.length; k++) {
          const kk = key([...base, ...node.tokens.subarray(0, k + 1)]);
          expect(seen.has(kk)).toBe(false);
          seen.add(kk);
          tokens++;
          expect(node.generated).toBe(ref.generated.has(kk));
          if (node.generated) expect(node.logprobs![k]).toBe(ref.generated.get(kk));
        }
      }
      expect(seen).toEqual(ref.all);
      expect(tokens).toBe(ref.all.size);
      const continued = new Map(a.lineage.map((l) => [l.seq, l.continued]));
      expect(continued).toEqual(ref.continued);
    }
  });

  it("keeps exactly what the filter rules say and trains each generated token once", () => {
    const rng = seededRng(99);
    let deadSeen = 0;
    let branchSeen = 0;
    let droppedRollouts = 0;
    for (let c = 0; c < CASES; c++) {
      const records = randomCallSet(rng, `r${c}`, randInt(rng, 1, 14));
      const filters = randomFilters(rng);
      const a = analyzeRollout(`r${c}`, records, filters);
      const ref = referenceRollout(records, filters);
      expect(new Map(a.lineage.map((l) => [l.seq, l.dead]))).toEqual(ref.dead);
      expect(a.stats.leavesBefore).toBe(ref.leavesBefore);
      expect(a.stats.droppedDeadLeaves).toBe(ref.droppedDeadLeaves);
      expect(a.stats.droppedBranches).toBe(ref.droppedBranches);
      expect(a.stats.leaves).toBe(ref.keptLeaves.length);
      expect(a.dropped !== null).toBe(ref.rolloutDropped);
      deadSeen += ref.droppedDeadLeaves;
      branchSeen += ref.droppedBranches;
      if (ref.rolloutDropped) droppedRollouts++;

      const packed = packTree(a.tree, a.filter, { rollout: `r${c}`, task: "t", harness: "h" }, 0.5, a.ownership);
      const keys = packedKeys(packed.tokens, packed.parent);
      expect(new Set(keys)).toEqual(ref.kept);
      expect(keys.length).toBe(ref.kept.size);
      const keptGenerated = [...ref.kept].filter((k) => ref.generated.has(k));
      keys.forEach((k, i) => {
        expect(packed.lossMask[i]).toBe(ref.generated.has(k) ? 1 : 0);
        expect(packed.position[i]).toBe(k.split(",").length - 1);
        expect(packed.advantages[i]).toBe(packed.lossMask[i] ? 0.5 : 0);
        if (packed.lossMask[i]) expect(packed.rolloutLogprobs[i]).toBeCloseTo(ref.generated.get(k)!, 12);
      });
      expect(packed.lossMask.reduce((s, m) => s + m, 0)).toBe(keptGenerated.length);
      if (!a.dropped) expect(packed.tokens.length).toBe(a.stats.trainedTokens + a.stats.contextTokens);

      // Per-path form: one path per kept leaf; each generated token trained on exactly one path.
      const paths = unpackPaths(packed);
      expect(new Set(paths.map((p) => key(p.tokens)))).toEqual(new Set(ref.keptLeaves));
      expect(paths.length).toBe(ref.keptLeaves.length);
      const trainedCount = new Map<string, number>();
      const onEarlierPath = new Set<string>();
      for (const p of paths) {
        const here: string[] = [];
        p.tokens.forEach((_, i) => {
          const kk = key(p.tokens, i + 1);
          here.push(kk);
          expect(ref.kept.has(kk)).toBe(true);
          // Owner = the first path (leaf order) that contains the token.
          expect(p.lossMask[i]).toBe(ref.generated.has(kk) && !onEarlierPath.has(kk) ? 1 : 0);
          if (p.lossMask[i]) {
            expect(ref.generated.has(kk)).toBe(true);
            trainedCount.set(kk, (trainedCount.get(kk) ?? 0) + 1);
          }
        });
        for (const kk of here) onEarlierPath.add(kk);
      }
      for (const k of keptGenerated) expect(trainedCount.get(k)).toBe(1);
      expect(trainedCount.size).toBe(keptGenerated.length);
    }
    // The random generator exercises every rule.
    expect(deadSeen).toBeGreaterThan(20);
    expect(branchSeen).toBeGreaterThan(20);
    expect(droppedRollouts).toBeGreaterThan(5);
  });
});

describe("group advantages against the formula", () => {
  it("GRPO (std on/off) and RLOO equal the group formula per (step, task, harness)", () => {
    const rng = seededRng(7);
    for (let c = 0; c < 200; c++) {
      const tasks = ["a", "b", "c"].slice(0, randInt(rng, 1, 3));
      const harnesses = ["claude", "codex", "openclaw"].slice(0, randInt(rng, 1, 3));
      const rows = Array.from({ length: randInt(rng, 1, 30) }, (_, i) => ({
        rollout: `r${i}`,
        task: pick(rng, tasks),
        harness: pick(rng, harnesses),
        step: randInt(rng, 0, 1),
        reward: rng() < 0.3 ? pick(rng, [0, 1]) : Math.round(rng() * 100) / 100,
      }));
      const estimator = rng() < 0.5 ? "GRPO" : "RLOO";
      const normalizeStd = rng() < 0.5;
      const dropZeroVariance = rng() < 0.5;
      const result = computeGroupAdvantages(rows, { estimator, normalizeStd, dropZeroVariance });
      for (const row of rows) {
        const group = rows.filter((r) => r.task === row.task && r.harness === row.harness && r.step === row.step);
        const rewards = group.map((r) => r.reward);
        const zeroVar = group.length < 2 || Math.max(...rewards) - Math.min(...rewards) <= 1e-12;
        if (zeroVar && dropZeroVariance) {
          expect(result.advantages.has(row.rollout)).toBe(false);
          continue;
        }
        const expected = referenceGroupAdvantage(rewards, group.indexOf(row), estimator, normalizeStd);
        expect(result.advantages.get(row.rollout)).toBeCloseTo(expected, 10);
      }
      const zero = result.groups.filter((g) => g.zeroVariance);
      for (const g of zero) expect(g.dropped).toBe(dropZeroVariance);
      // Groups never mix harnesses or tasks.
      for (const g of result.groups) {
        for (const r of g.rollouts) {
          const row = rows.find((x) => x.rollout === r)!;
          expect([row.task, row.harness, row.step]).toEqual([g.task, g.harness, g.step]);
        }
      }
    }
  });
});
