/**
 * Evaluation summaries: mean reward, pass@k and pass^k per (task, harness) group, averaged over
 * all groups, per category, per harness and per task, plus the most common failure reasons. Pure.
 */
import type { VerifierResult } from "../verifiers/verify.js";
import { defaultKs, passAtK, passHatK } from "./pass-at-k.js";

/** What eval needs to know about one finished rollout. */
export interface RolloutOutcome {
  task: string;
  category: string;
  harness: string;
  attempt?: number;
  /** null when the rollout has no reward (verifier error, infrastructure failure). */
  reward: number | null;
  passed: boolean;
  error?: { code: string; message: string };
  /** Why a rollout without a reward has none: its verifier failed, or the sandbox, harness or engine did. */
  cause?: "verifier" | "infrastructure";
  /** Reasons the rollout lost reward: failing checks, low rubric items, a partial script. */
  failures?: { name: string; type: string; reason: string }[];
}

export interface Metrics {
  rollouts: number;
  /** Rollouts without a reward; they count in no estimate. */
  errors: number;
  /** (task, harness) groups behind the estimates. */
  groups: number;
  meanReward: number | null;
  /** k → mean over groups with at least k scored attempts. */
  passAt: Record<string, number>;
  passHat: Record<string, number>;
}

export interface FailureCount {
  /** The check's name (or "rubric <item>", "script"). */
  name: string;
  type: string;
  count: number;
  /** Distinct tasks it failed in. */
  tasks: number;
  /** Up to three distinct reasons. */
  examples: string[];
}

export interface EvalSummary extends Metrics {
  ks: number[];
  categories: Record<string, Metrics>;
  harnesses: Record<string, Metrics>;
  tasks: Record<string, Metrics & { category: string }>;
  topFailures: FailureCount[];
  /** Rollouts without a reward because their verifier failed, by error code. */
  verifierErrors: { code: string; count: number; example: string }[];
  /** Rollouts without a reward because the sandbox, the harness or the engine failed, by error code. */
  infraErrors: { code: string; count: number; example: string }[];
}

interface Group {
  task: string;
  category: string;
  harness: string;
  n: number;
  c: number;
  rewards: number[];
  errors: number;
}

function groupOutcomes(outcomes: readonly RolloutOutcome[]): Group[] {
  const groups = new Map<string, Group>();
  for (const o of outcomes) {
    const key = `${o.task}\u0000${o.harness}`;
    let g = groups.get(key);
    if (!g) {
      g = { task: o.task, category: o.category, harness: o.harness, n: 0, c: 0, rewards: [], errors: 0 };
      groups.set(key, g);
    }
    if (o.reward === null) g.errors++;
    else {
      g.n++;
      g.rewards.push(o.reward);
      if (o.passed) g.c++;
    }
  }
  return [...groups.values()];
}

function mean(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length;
}

function metricsOf(groups: readonly Group[], ks: readonly number[]): Metrics {
  const rewards = groups.flatMap((g) => g.rewards);
  const passAt: Record<string, number> = {};
  const passHat: Record<string, number> = {};
  for (const k of ks) {
    const at = groups.map((g) => passAtK(g.n, g.c, k)).filter((v): v is number => v !== null);
    const hat = groups.map((g) => passHatK(g.n, g.c, k)).filter((v): v is number => v !== null);
    if (at.length > 0) passAt[String(k)] = mean(at)!;
    if (hat.length > 0) passHat[String(k)] = mean(hat)!;
  }
  return {
    rollouts: groups.reduce((s, g) => s + g.n + g.errors, 0),
    errors: groups.reduce((s, g) => s + g.errors, 0),
    groups: groups.length,
    meanReward: mean(rewards),
    passAt,
    passHat,
  };
}

function by<K extends string>(groups: readonly Group[], key: (g: Group) => K): Map<K, Group[]> {
  const out = new Map<K, Group[]>();
  for (const g of groups) {
    const k = key(g);
    const list = out.get(k) ?? [];
    list.push(g);
    out.set(k, list);
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function topFailures(outcomes: readonly RolloutOutcome[], limit = 10): FailureCount[] {
  const counts = new Map<string, { f: FailureCount; tasks: Set<string> }>();
  for (const o of outcomes) {
    if (o.reward === null || o.passed) continue;
    for (const f of o.failures ?? []) {
      const key = `${f.type}\u0000${f.name}`;
      let e = counts.get(key);
      if (!e) {
        e = { f: { name: f.name, type: f.type, count: 0, tasks: 0, examples: [] }, tasks: new Set() };
        counts.set(key, e);
      }
      e.f.count++;
      e.tasks.add(o.task);
      if (e.f.examples.length < 3 && !e.f.examples.includes(f.reason)) e.f.examples.push(f.reason);
    }
  }
  return [...counts.values()]
    .map(({ f, tasks }) => ({ ...f, tasks: tasks.size }))
    .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name))
    .slice(0, limit);
}

function unscored(outcomes: readonly RolloutOutcome[], cause: NonNullable<RolloutOutcome["cause"]>): EvalSummary["verifierErrors"] {
  const m = new Map<string, { code: string; count: number; example: string }>();
  for (const o of outcomes) {
    if (o.reward !== null || (o.cause ?? "verifier") !== cause) continue;
    const code = o.error?.code ?? "NoReward";
    const e = m.get(code) ?? { code, count: 0, example: o.error?.message ?? "the rollout has no reward" };
    e.count++;
    m.set(code, e);
  }
  return [...m.values()].sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}

export function summarizeEval(outcomes: readonly RolloutOutcome[], opts: { ks?: number[]; failureLimit?: number } = {}): EvalSummary {
  const groups = groupOutcomes(outcomes);
  const maxN = groups.reduce((m, g) => Math.max(m, g.n), 0);
  const ks = opts.ks ? [...new Set(opts.ks)].sort((a, b) => a - b) : defaultKs(maxN);
  const record = <T>(m: Map<string, Group[]>, f: (gs: Group[]) => T) => Object.fromEntries([...m.entries()].map(([k, gs]) => [k, f(gs)]));
  return {
    ...metricsOf(groups, ks),
    ks,
    categories: record(
      by(groups, (g) => g.category),
      (gs) => metricsOf(gs, ks),
    ),
    harnesses: record(
      by(groups, (g) => g.harness),
      (gs) => metricsOf(gs, ks),
    ),
    tasks: record(
      by(groups, (g) => g.task),
      (gs) => ({ category: gs[0].category, ...metricsOf(gs, ks) }),
    ),
    topFailures: topFailures(outcomes, opts.failureLimit),
    verifierErrors: unscored(outcomes, "verifier"),
    infraErrors: unscored(outcomes, "infrastructure"),
  };
}

/** A rollout outcome from a verifier result: failing checks, rubric items below 1, a partial script. */
export function outcomeOf(rollout: { task: string; category: string; harness: string; attempt?: number }, result: VerifierResult): RolloutOutcome {
  const failures: RolloutOutcome["failures"] = [];
  for (const r of result.parts.checks?.results ?? []) if (!r.pass) failures.push({ name: r.name, type: r.type, reason: r.reason });
  const script = result.parts.script;
  if (script && !script.error && script.score < 1) failures.push({ name: "script", type: "script", reason: `the script's reward is ${script.score}.` });
  for (const it of result.parts.rubric?.items ?? []) {
    if (!result.parts.rubric?.error && it.score < 1)
      failures.push({ name: `rubric ${it.id}`, type: "rubric", reason: `the judge scored "${it.criterion}" ${it.score}.` });
  }
  const out: RolloutOutcome = { ...rollout, reward: result.reward, passed: result.passed, failures };
  if (result.error) out.error = { code: result.error.code, message: result.error.message };
  return out;
}
