/**
 * The spread over seeds of a multi-seed run (pure): each seed's held-out pass rate before and after
 * training and its gain, then over the seeds the mean and sample standard deviation of each, the
 * gain's range and its Student-t 95% confidence interval (of the mean per-seed gain, n − 1 degrees
 * of freedom; none for one seed), and how many seeds gained more than 3 standard errors of their
 * own evaluations. Overall and per harness. Two recipes compare by the difference of their mean
 * gains with a Welch 95% interval. Rates and gains are fractions (0.25 is 25 points).
 */
import { heldOutChange, type HeldOutChange, type HeldOutOutcome } from "./held-out.js";
import { studentTQuantile } from "./student-t.js";

/** What a seed's run directory says about it (its summary.json, the single-run shape). */
export interface SeedRunSummary {
  seed: number;
  runDir: string;
  steps: number;
  seconds: number;
  planHash: string;
  heldOut: HeldOutOutcome;
  /** Its held-out evaluations in order (the first before training, the last after). */
  evaluations: readonly { passRate: number; rollouts: number }[];
}

export interface SeedHeldOut {
  before: number | null;
  after: number | null;
  /** after − before; null without both. */
  gain: number | null;
  /** Rollouts of an evaluation. */
  n: number;
  /** The gain in standard errors of the two evaluations (binomial); null without both, or when both rates are 0 or 1. */
  gainStdErrors: number | null;
}

export interface SeedEntry {
  seed: number;
  runDir: string;
  heldOut: SeedHeldOut;
  steps: number;
  seconds: number;
}

export interface Spread {
  mean: number | null;
  /** Sample standard deviation (n − 1); null for fewer than 2 seeds. */
  sd: number | null;
}

export interface GainSpread extends Spread {
  min: number | null;
  max: number | null;
  /** Student-t 95% interval of the mean gain; null for fewer than 2 seeds. */
  ci95: [number, number] | null;
}

export interface OverSeeds {
  /** Seeds with both a before and an after evaluation. */
  n: number;
  before: Spread;
  after: Spread;
  gain: GainSpread;
  /** Seeds whose gain was more than 3 standard errors of their own evaluations. */
  seedsAbove3SE: number;
}

export interface SeedsSummary {
  seeds: SeedEntry[];
  heldOut: OverSeeds & { byHarness: Record<string, OverSeeds> };
  runDir: string;
  /** The multi-seed plan's hash, and each seed's plan's. */
  planHash: string;
  planHashes: Record<string, string>;
}

/** Two recipes' mean gains: second − first, with a Welch 95% interval (null unless both have 2 or more seeds). */
export interface GainDifference {
  difference: number | null;
  ci95: [number, number] | null;
  /** Welch–Satterthwaite degrees of freedom. */
  df: number | null;
}

export function summarizeSeeds(runs: readonly SeedRunSummary[], o: { runDir: string; planHash: string }): SeedsSummary {
  const seeds = runs.map(
    (r): SeedEntry => ({ seed: r.seed, runDir: r.runDir, heldOut: withGain(heldOutChange(r.evaluations)), steps: r.steps, seconds: r.seconds }),
  );
  const harnesses = [...new Set(runs.flatMap((r) => Object.keys(r.heldOut.byHarness)))].sort();
  const byHarness = Object.fromEntries(
    harnesses.map((h) => [h, overSeeds(runs.flatMap((r) => (r.heldOut.byHarness[h] ? [withGain(r.heldOut.byHarness[h])] : [])))]),
  );
  return {
    seeds,
    heldOut: { ...overSeeds(seeds.map((s) => s.heldOut)), byHarness },
    runDir: o.runDir,
    planHash: o.planHash,
    planHashes: Object.fromEntries(runs.map((r) => [String(r.seed), r.planHash])),
  };
}

/** second − first of the mean gains, with Welch's 95% interval. */
export function compareGains(first: GainSpread & { n: number }, second: GainSpread & { n: number }): GainDifference {
  if (first.mean === null || second.mean === null) return { difference: null, ci95: null, df: null };
  const difference = second.mean - first.mean;
  if (first.sd === null || second.sd === null || first.n < 2 || second.n < 2) return { difference, ci95: null, df: null };
  const va = (first.sd * first.sd) / first.n;
  const vb = (second.sd * second.sd) / second.n;
  const se = Math.sqrt(va + vb);
  if (se === 0) return { difference, ci95: [difference, difference], df: null };
  const df = (va + vb) ** 2 / (va ** 2 / (first.n - 1) + vb ** 2 / (second.n - 1));
  const half = studentTQuantile(0.975, df) * se;
  return { difference, ci95: [difference - half, difference + half], df };
}

function gainOf(before: number | null, after: number | null): number | null {
  return before === null || after === null ? null : after - before;
}

function withGain(c: HeldOutChange): SeedHeldOut {
  return { before: c.before, after: c.after, gain: gainOf(c.before, c.after), n: c.n, gainStdErrors: c.gainStdErrors };
}

function overSeeds(list: readonly SeedHeldOut[]): OverSeeds {
  const both = list.filter((s) => s.before !== null && s.after !== null);
  const gains = both.map((s) => s.gain!);
  const gain = spread(gains);
  const n = both.length;
  return {
    n,
    before: spread(both.map((s) => s.before!)),
    after: spread(both.map((s) => s.after!)),
    gain: {
      ...gain,
      min: n > 0 ? Math.min(...gains) : null,
      max: n > 0 ? Math.max(...gains) : null,
      ci95: gain.mean !== null && gain.sd !== null ? interval(gain.mean, gain.sd, n) : null,
    },
    seedsAbove3SE: both.filter((s) => s.gainStdErrors !== null && s.gainStdErrors > 3).length,
  };
}

function spread(values: readonly number[]): Spread {
  const n = values.length;
  if (n === 0) return { mean: null, sd: null };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, sd: null };
  return { mean, sd: Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1)) };
}

/** mean ± t(0.975, n − 1) · sd / √n. */
function interval(mean: number, sd: number, n: number): [number, number] {
  const half = (studentTQuantile(0.975, n - 1) * sd) / Math.sqrt(n);
  return [mean - half, mean + half];
}
