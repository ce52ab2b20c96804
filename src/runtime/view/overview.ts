/**
 * The viewer's overview of a run (pure: rows and records in, JSON out): mean reward and pass@k per
 * category, harness and task for each phase of the run (SFT references, training steps, held-out
 * evaluations), reward and pass rate per step, the trainer's metrics per step, step timing, and
 * the summary's held-out and fidelity reports as they are.
 */
import type { RolloutRow, PlanFacts } from "./run-data.js";

export type Phase = "sft" | "train" | "held-out" | "eval";

export interface Breakdown {
  key: string;
  rollouts: number;
  meanReward: number | null;
  passRate: number;
  /** Unbiased pass@k over (step, task, harness) groups of at least k rollouts; null when none. */
  passAtK: number | null;
  tasks: number;
}

export interface PhaseOverview {
  phase: Phase;
  rollouts: number;
  k: number;
  byCategory: Breakdown[];
  byHarness: Breakdown[];
  byTask: (Breakdown & { category: string })[];
}

export interface StepPoint {
  step: number;
  rollouts: number;
  meanReward: number | null;
  passRate: number;
}

/** The phase a rollout belongs to. */
export function phaseOf(row: RolloutRow, plan: PlanFacts): Phase {
  if (row.step < 0) return "sft";
  if (plan.kind === "Evaluation") return "eval";
  if (plan.heldOut.has(row.task)) return "held-out";
  return "train";
}

/** pass@k from n attempts with c passes (Chen et al. 2021's unbiased estimator). */
export function passAtK(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

interface Acc {
  rollouts: number;
  rewarded: number;
  rewardSum: number;
  passed: number;
  tasks: Set<string>;
  groups: Map<string, { n: number; c: number }>;
}

function newAcc(): Acc {
  return { rollouts: 0, rewarded: 0, rewardSum: 0, passed: 0, tasks: new Set(), groups: new Map() };
}

function add(acc: Acc, row: RolloutRow): void {
  acc.rollouts++;
  if (row.reward !== null) {
    acc.rewarded++;
    acc.rewardSum += row.reward;
  }
  if (row.passed) acc.passed++;
  acc.tasks.add(row.task);
  const g = `${row.step}\u0000${row.task}\u0000${row.harness}`;
  const group = acc.groups.get(g) ?? { n: 0, c: 0 };
  group.n++;
  if (row.passed) group.c++;
  acc.groups.set(g, group);
}

function finish(key: string, acc: Acc, k: number): Breakdown {
  let sum = 0;
  let count = 0;
  for (const g of acc.groups.values()) {
    if (g.n < k) continue;
    sum += passAtK(g.n, g.c, k);
    count++;
  }
  return {
    key,
    rollouts: acc.rollouts,
    meanReward: acc.rewarded > 0 ? acc.rewardSum / acc.rewarded : null,
    passRate: acc.rollouts > 0 ? acc.passed / acc.rollouts : 0,
    passAtK: count > 0 ? sum / count : null,
    tasks: acc.tasks.size,
  };
}

/** k for pass@k: the plan's group size (attempts per pair), else the smallest group seen. */
function chooseK(rows: readonly RolloutRow[], plan: PlanFacts): number {
  if (plan.groupSize && plan.groupSize > 0) return plan.groupSize;
  const groups = new Map<string, number>();
  for (const r of rows) {
    const g = `${r.step}\u0000${r.task}\u0000${r.harness}`;
    groups.set(g, (groups.get(g) ?? 0) + 1);
  }
  return Math.max(1, Math.min(...groups.values()));
}

export function buildPhaseOverview(phase: Phase, rows: readonly RolloutRow[], plan: PlanFacts): PhaseOverview {
  const k = rows.length > 0 ? chooseK(rows, plan) : 1;
  const by = (keyOf: (r: RolloutRow) => string) => {
    const map = new Map<string, Acc>();
    for (const r of rows) {
      const key = keyOf(r);
      let acc = map.get(key);
      if (!acc) map.set(key, (acc = newAcc()));
      add(acc, r);
    }
    return [...map].sort((a, b) => a[0].localeCompare(b[0])).map(([key, acc]) => finish(key, acc, k));
  };
  const categoryOf = new Map<string, string>();
  for (const r of rows) categoryOf.set(r.task, r.category || plan.categories.get(r.task) || "");
  return {
    phase,
    rollouts: rows.length,
    k,
    byCategory: by((r) => r.category || plan.categories.get(r.task) || "(none)"),
    byHarness: by((r) => r.harness),
    byTask: by((r) => r.task).map((b) => ({ ...b, category: categoryOf.get(b.key) ?? "" })),
  };
}

export function buildStepPoints(rows: readonly RolloutRow[]): StepPoint[] {
  const map = new Map<number, Acc>();
  for (const r of rows) {
    let acc = map.get(r.step);
    if (!acc) map.set(r.step, (acc = newAcc()));
    add(acc, r);
  }
  return [...map]
    .sort((a, b) => a[0] - b[0])
    .map(([step, acc]) => ({
      step,
      rollouts: acc.rollouts,
      meanReward: acc.rewarded > 0 ? acc.rewardSum / acc.rewarded : null,
      passRate: acc.rollouts > 0 ? acc.passed / acc.rollouts : 0,
    }));
}

/** Seconds per step from the step-started / step-finished events. */
export function buildStepTiming(events: readonly { t: string; type: string; [k: string]: unknown }[]): { step: number; seconds: number }[] {
  const started = new Map<number, number>();
  const out: { step: number; seconds: number }[] = [];
  for (const e of events) {
    const step = typeof e.step === "number" ? e.step : undefined;
    const t = Date.parse(e.t);
    if (step === undefined || Number.isNaN(t)) continue;
    if (e.type === "step-started" && !started.has(step)) started.set(step, t);
    if (e.type === "step-finished" && started.has(step)) out.push({ step, seconds: (t - started.get(step)!) / 1000 });
  }
  return out;
}

const METRIC_FIELDS = [
  "loss",
  "kl",
  "entropy",
  "clipFraction",
  "gradNorm",
  "tokensPerSecond",
  "trainedTokens",
  "meanReward",
  "passRate",
  "zeroVarianceGroups",
  "trainedRollouts",
] as const;

/**
 * The step-metrics lines, reduced to their numeric series. A step redone on resume (killed after
 * its metrics, before its checkpoint) has a line from each try: the last one counts.
 */
export function buildMetricSeries(metrics: readonly Record<string, unknown>[]): Record<string, { step: number; value: number }[]> {
  const latest = new Map<number, Record<string, unknown>>();
  for (const m of metrics) {
    if (m.type !== undefined && m.type !== "step-metrics") continue;
    if (typeof m.step === "number") latest.set(m.step, m);
  }
  const out: Record<string, { step: number; value: number }[]> = {};
  for (const [step, m] of latest) {
    for (const f of METRIC_FIELDS) {
      const v = m[f];
      if (typeof v === "number" && Number.isFinite(v)) (out[f] ??= []).push({ step, value: v });
    }
  }
  return out;
}

/** Held-out pass rates per step (overall and per harness) from the held-out events. */
export function buildHeldOut(
  events: readonly { type: string; [k: string]: unknown }[],
): { step: number; passRate: number; byHarness: Record<string, number> }[] {
  const out: { step: number; passRate: number; byHarness: Record<string, number> }[] = [];
  for (const e of events) {
    if (e.type !== "held-out" || typeof e.step !== "number" || typeof e.passRate !== "number") continue;
    const byHarness: Record<string, number> = {};
    for (const [h, v] of Object.entries((e.byHarness as Record<string, { passRate?: unknown }>) ?? {}))
      if (typeof v?.passRate === "number") byHarness[h] = v.passRate;
    out.push({ step: e.step, passRate: e.passRate, byHarness });
  }
  return out;
}
