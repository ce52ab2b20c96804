/** Structural diff of two plans: what changed, by path, with task/step summaries. Pure. */
import type { Plan } from "../contract/plan.js";
import { canonicalJson } from "../contract/hash.js";
import { portablePlan } from "./paths.js";

export interface PlanDiff {
  same: boolean;
  hashes: { before: string; after: string };
  tasks: { added: string[]; removed: string[]; changed: string[] };
  steps: { before: number; after: number; changed: number[] };
  rollouts: { before: number; after: number };
  /** Changed leaf paths outside tasks/steps (e.g. algorithm.clip.high), capped. */
  changes: { path: string; before: unknown; after: unknown }[];
}

const MAX_CHANGES = 200;

/** Host paths are compared relative to each plan's root (as the hash sees them); the roots themselves are not compared. */
export function diffPlans(before: Plan, after: Plan): PlanDiff {
  const a = portablePlan(before);
  const b = portablePlan(after);
  const ta = new Map(a.tasks.map((t) => [t.name, t.digest]));
  const tb = new Map(b.tasks.map((t) => [t.name, t.digest]));
  const added = [...tb.keys()].filter((n) => !ta.has(n)).sort();
  const removed = [...ta.keys()].filter((n) => !tb.has(n)).sort();
  const changed = [...ta.keys()].filter((n) => tb.has(n) && ta.get(n) !== tb.get(n)).sort();
  const stepsChanged: number[] = [];
  const n = Math.max(a.steps.length, b.steps.length);
  for (let i = 0; i < n; i++) if (a.steps[i]?.hash !== b.steps[i]?.hash) stepsChanged.push(i);
  const changes: PlanDiff["changes"] = [];
  const skip = new Set(["tasks", "steps", "hash", "sources", "pairs", "root"]);
  const strip = (p: Plan) => Object.fromEntries(Object.entries(p).filter(([k]) => !skip.has(k)));
  walk(strip(a), strip(b), "", changes);
  const count = (p: Plan) => p.steps.reduce((s, x) => s + x.rollouts.length, 0);
  return {
    same: a.hash === b.hash,
    hashes: { before: a.hash, after: b.hash },
    tasks: { added, removed, changed },
    steps: { before: a.steps.length, after: b.steps.length, changed: stepsChanged },
    rollouts: { before: count(a), after: count(b) },
    changes,
  };
}

function walk(a: unknown, b: unknown, path: string, out: PlanDiff["changes"]): void {
  if (out.length >= MAX_CHANGES) return;
  const isObj = (v: unknown) => v !== null && typeof v === "object";
  if (isObj(a) && isObj(b) && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
    for (const k of [...keys].sort()) {
      const sub = Array.isArray(a) ? `${path}[${k}]` : path ? `${path}.${k}` : k;
      walk((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], sub, out);
    }
    return;
  }
  if (canonicalJson(a) !== canonicalJson(b)) out.push({ path, before: a ?? null, after: b ?? null });
}
