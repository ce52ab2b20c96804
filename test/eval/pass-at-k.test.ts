import { describe, expect, it } from "vitest";
import { defaultKs, passAtK, passHatK } from "../../src/runtime/eval/pass-at-k.js";

function binom(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let r = 1n;
  for (let i = 1; i <= k; i++) r = (r * BigInt(n - k + i)) / BigInt(i);
  return r;
}
const ratio = (a: bigint, b: bigint) => Number((a * 10n ** 15n) / b) / 1e15;

describe("pass@k and pass^k", () => {
  it("match the binomial definitions exactly for every n ≤ 12", () => {
    for (let n = 1; n <= 12; n++) {
      for (let c = 0; c <= n; c++) {
        for (let k = 1; k <= n; k++) {
          expect(passAtK(n, c, k)!).toBeCloseTo(1 - ratio(binom(n - c, k), binom(n, k)), 12);
          expect(passHatK(n, c, k)!).toBeCloseTo(ratio(binom(c, k), binom(n, k)), 12);
        }
      }
    }
  });
  it("match enumeration of all k-subsets (the meaning, not the formula)", () => {
    const n = 7;
    for (let c = 0; c <= n; c++) {
      const passed = Array.from({ length: n }, (_, i) => i < c);
      for (let k = 1; k <= n; k++) {
        let subsets = 0;
        let some = 0;
        let all = 0;
        for (let mask = 0; mask < 1 << n; mask++) {
          const members = passed.filter((_, i) => mask & (1 << i));
          if (members.length !== k) continue;
          subsets++;
          if (members.some(Boolean)) some++;
          if (members.every(Boolean)) all++;
        }
        expect(passAtK(n, c, k)!).toBeCloseTo(some / subsets, 12);
        expect(passHatK(n, c, k)!).toBeCloseTo(all / subsets, 12);
      }
    }
  });
  it("pass@1 and pass^1 are the pass rate; pass@k is unbiased, not 1-(1-p)^k", () => {
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
    expect(passHatK(10, 3, 1)).toBeCloseTo(0.3, 12);
    expect(passAtK(4, 2, 2)).toBeCloseTo(5 / 6, 12);
    expect(1 - (1 - 0.5) ** 2).not.toBeCloseTo(5 / 6, 3);
  });
  it("are undefined when there are fewer attempts than k, and stable for large n", () => {
    expect(passAtK(2, 1, 3)).toBeNull();
    expect(passHatK(2, 1, 3)).toBeNull();
    expect(passAtK(100_000, 1, 1)).toBeCloseTo(1e-5, 12);
    expect(passAtK(10_000, 5_000, 100)).toBeCloseTo(1, 12);
    expect(passHatK(10_000, 9_999, 100)).toBeCloseTo(0.99, 12);
  });
  it("defaultKs", () => {
    expect(defaultKs(1)).toEqual([1]);
    expect(defaultKs(3)).toEqual([1, 3]);
    expect(defaultKs(8)).toEqual([1, 3, 8]);
    expect(defaultKs(0)).toEqual([1]);
  });
});
