/**
 * The named seeds (src/compiler/contract/seeds.ts): each purpose's formula pinned to the numbers
 * reins has always derived, since runs (and the README's per-seed table) depend on the exact
 * streams, and the plans hash the rollout seeds.
 */
import { describe, expect, it } from "vitest";
import { seedOf } from "../../src/compiler/contract/hash.js";
import { rng } from "../../src/compiler/contract/rng.js";
import { deriveSeed, seededStream } from "../../src/compiler/contract/seeds.js";

describe("derived seeds", () => {
  it("keeps every purpose's numbers", () => {
    expect(deriveSeed(5, "sft-replay-order")).toBe(1540483472);
    expect(deriveSeed(5, "sft-subsets")).toBe(2654435772);
    expect(deriveSeed(5, "synthesis-order")).toBe(625341588);
    expect(deriveSeed(5, "task-order")).toBe(2192519024);
    expect([0, 1, 2].map((s) => deriveSeed(5, "harness-mix", s))).toEqual([2524675891, 2588762465, 4024135302]);
    expect(deriveSeed(5, "family-cell", "fam", '{"a":1}', 2)).toBe(2821938225);
    expect([1, 2, 3].map((t) => deriveSeed(5, "sampling", "s1-p0-a3", 4, t))).toEqual([4070110182, 2205344715, 2420493082]);
  });

  it("is what the formulas it names give, for negative seeds too (unsigned 32-bit)", () => {
    for (const base of [-1, 0, 7, 2 ** 31 + 5]) {
      expect(deriveSeed(base, "sft-replay-order")).toBe((base ^ 0x5bd1e995) >>> 0);
      expect(deriveSeed(base, "sft-subsets")).toBe((base ^ 0x9e3779b9) >>> 0);
      expect(deriveSeed(base, "synthesis-order")).toBe((base ^ 0x2545f491) >>> 0);
      expect(deriveSeed(base, "task-order")).toBe(seedOf("task-order", base));
      expect(deriveSeed(base, "sampling", "r", 2, 1)).toBe(seedOf(base, "r", 2));
      expect(deriveSeed(base, "sampling", "r", 2, 2)).toBe(seedOf(base, "r", 2, 2));
    }
  });

  it("streams mulberry32 on the derived seed", () => {
    const a = seededStream(3, "sft-subsets");
    const b = rng(deriveSeed(3, "sft-subsets"));
    expect([a(), a(), a()]).toEqual([b(), b(), b()]);
  });
});
