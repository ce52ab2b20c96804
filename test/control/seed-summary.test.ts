/** The spread over seeds: Student-t quantiles, the per-seed and pooled numbers, Welch's interval. */
import { describe, expect, it } from "vitest";
import { compareGains, summarizeSeeds, type SeedRunSummary } from "../../src/runtime/control/seed-summary.js";
import { studentTCdf, studentTQuantile } from "../../src/runtime/control/student-t.js";

describe("Student t", () => {
  it("has the textbook 97.5% quantiles", () => {
    const known: [number, number][] = [
      [1, 12.706],
      [2, 4.303],
      [3, 3.182],
      [4, 2.776],
      [9, 2.262],
      [30, 2.042],
      [63, 1.998],
      [1000, 1.962],
    ];
    for (const [df, t] of known) expect(studentTQuantile(0.975, df)).toBeCloseTo(t, 3);
    expect(studentTQuantile(0.995, 4)).toBeCloseTo(4.604, 3);
    expect(studentTQuantile(0.025, 4)).toBeCloseTo(-2.776, 3);
    expect(studentTQuantile(0.5, 7)).toBe(0);
  });

  it("takes fractional degrees of freedom (Welch) between the integer ones", () => {
    const t = studentTQuantile(0.975, 4.5);
    expect(t).toBeLessThan(2.776);
    expect(t).toBeGreaterThan(2.571);
    expect(studentTCdf(t, 4.5)).toBeCloseTo(0.975, 9);
  });

  it("refuses what has no answer", () => {
    expect(() => studentTQuantile(1, 3)).toThrow(RangeError);
    expect(() => studentTQuantile(0.9, 0)).toThrow(RangeError);
  });
});

/** A seed's summary: held-out `before` → `after` over `n` rollouts each, one harness. */
function run(seed: number, before: number, after: number, n = 100): SeedRunSummary {
  const change = { before, after, n, gainStdErrors: (after - before) / Math.sqrt((before * (1 - before)) / n + (after * (1 - after)) / n) };
  return {
    seed,
    runDir: `/runs/x/seed-${seed}`,
    steps: 3,
    seconds: 10 + seed,
    planHash: `sha256:${seed}`,
    heldOut: { before, after, byHarness: { "reins-agent": change } },
    evaluations: [
      { passRate: before, rollouts: n },
      { passRate: after, rollouts: n },
    ],
  };
}

describe("summarizeSeeds", () => {
  it("reports each seed and the mean, sd, range and t interval of the gain", () => {
    const s = summarizeSeeds([run(1, 0.1, 0.4), run(2, 0.2, 0.3), run(3, 0.1, 0.2), run(4, 0.3, 0.6), run(5, 0.2, 0.2)], {
      runDir: "/runs/x",
      planHash: "sha256:all",
    });
    expect(s.seeds.map((x) => x.seed)).toEqual([1, 2, 3, 4, 5]);
    expect(s.seeds[0]).toMatchObject({ seed: 1, runDir: "/runs/x/seed-1", steps: 3, seconds: 11, heldOut: { before: 0.1, after: 0.4, n: 100 } });
    expect(s.seeds[0]!.heldOut.gain).toBeCloseTo(0.3, 12);
    expect(s.seeds[0]!.heldOut.gainStdErrors).toBeCloseTo(0.3 / Math.sqrt(0.0009 + 0.0024), 9);
    const gains = [0.3, 0.1, 0.1, 0.3, 0];
    const mean = gains.reduce((a, b) => a + b) / 5;
    const sd = Math.sqrt(gains.reduce((a, g) => a + (g - mean) ** 2, 0) / 4);
    const h = s.heldOut;
    expect(h.n).toBe(5);
    expect(h.gain.mean).toBeCloseTo(mean, 12);
    expect(h.gain.sd).toBeCloseTo(sd, 12);
    expect(h.gain.min).toBeCloseTo(0, 12);
    expect(h.gain.max).toBeCloseTo(0.3, 12);
    expect(h.gain.ci95![0]).toBeCloseTo(mean - (2.776445 * sd) / Math.sqrt(5), 5);
    expect(h.gain.ci95![1]).toBeCloseTo(mean + (2.776445 * sd) / Math.sqrt(5), 5);
    expect(h.before.mean).toBeCloseTo(0.18, 12);
    expect(h.after.mean).toBeCloseTo(0.34, 12);
    // Seeds 1 and 4 gained more than 3 standard errors (5.1 and 4.4); seeds 2 and 3 about 1.6 and 2.0.
    expect(h.seedsAbove3SE).toBe(2);
    const { byHarness, ...overall } = h;
    expect(byHarness["reins-agent"]).toEqual(overall);
    expect(s.planHashes).toEqual({ 1: "sha256:1", 2: "sha256:2", 3: "sha256:3", 4: "sha256:4", 5: "sha256:5" });
    expect(s.planHash).toBe("sha256:all");
  });

  it("one seed: a mean, no sd, no interval", () => {
    const h = summarizeSeeds([run(7, 0.25, 0.5)], { runDir: "/r", planHash: "h" }).heldOut;
    expect(h.n).toBe(1);
    expect(h.gain).toEqual({ mean: 0.25, sd: null, min: 0.25, max: 0.25, ci95: null });
  });

  it("leaves out seeds without both evaluations", () => {
    const noAfter: SeedRunSummary = {
      ...run(2, 0.1, 0.1),
      heldOut: { before: 0.1, after: null, byHarness: {} },
      evaluations: [{ passRate: 0.1, rollouts: 100 }],
    };
    const s = summarizeSeeds([run(1, 0.1, 0.3), noAfter], { runDir: "/r", planHash: "h" });
    expect(s.seeds[1]!.heldOut).toEqual({ before: 0.1, after: null, gain: null, n: 100, gainStdErrors: null });
    expect(s.heldOut.n).toBe(1);
    expect(s.heldOut.byHarness["reins-agent"]!.n).toBe(1);
  });
});

describe("compareGains", () => {
  it("is the difference of the mean gains with Welch's interval", () => {
    const a = { n: 5, mean: 0.1, sd: 0.05, min: 0, max: 0.2, ci95: null };
    const b = { n: 4, mean: 0.25, sd: 0.1, min: 0, max: 0.4, ci95: null };
    const d = compareGains(a, b);
    const va = 0.0025 / 5;
    const vb = 0.01 / 4;
    const df = (va + vb) ** 2 / (va ** 2 / 4 + vb ** 2 / 3);
    expect(d.difference).toBeCloseTo(0.15, 12);
    expect(d.df).toBeCloseTo(df, 9);
    const half = studentTQuantile(0.975, df) * Math.sqrt(va + vb);
    expect(d.ci95![0]).toBeCloseTo(0.15 - half, 9);
    expect(d.ci95![1]).toBeCloseTo(0.15 + half, 9);
    // df ≈ 4.27 here: the interval is wider than with the normal 1.96.
    expect(half).toBeGreaterThan(1.96 * Math.sqrt(va + vb) * 1.3);
  });

  it("has no interval with a single seed on either side", () => {
    const one = { n: 1, mean: 0.2, sd: null, min: 0.2, max: 0.2, ci95: null };
    const many = { n: 3, mean: 0.1, sd: 0.05, min: 0, max: 0.2, ci95: null };
    expect(compareGains(many, one)).toEqual({ difference: 0.1, ci95: null, df: null });
  });
});
