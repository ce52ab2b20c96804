/**
 * The content addresses of a plan (pure): each step's hash and the plan hash. They cover everything
 * that changes results; settings that only pace, retry or route the work (concurrency, retries,
 * the proxy's processes, the bad-step policy, the metric sinks) stay out. Host paths count
 * relative to Plan.root (paths.ts), so the hashes are machine-independent.
 */
import { digestOf } from "../contract/hash.js";
import type { Plan, PlanStep, ResolvedSandbox } from "../contract/plan.js";
import { portableHarness, portableModel, portablePlan } from "./paths.js";

/**
 * The steps with their hashes: each covers what its rollouts depend on — the model, algorithm,
 * harnesses, sandbox and judges (host paths relative to Plan.root), the step's rollouts and the
 * digests of its tasks.
 */
export function hashSteps(plan: Plan): PlanStep[] {
  const common = {
    model: plan.model ? hashedModel(portableModel(plan.model, plan.root)) : null,
    algorithm: plan.algorithm ?? null,
    harnesses: plan.harnesses.map((h) => portableHarness(h, plan.root)),
    sandbox: hashedSandbox(plan.sandbox),
    ...(plan.judges && plan.judges.length > 0 ? { judges: plan.judges.map((j) => portableModel(j, plan.root)) } : {}),
  };
  const commonDigest = digestOf(common);
  const taskDigest = new Map(plan.tasks.map((t) => [t.name, t.digest]));
  return plan.steps.map((step) => ({
    ...step,
    hash: digestOf({
      common: commonDigest,
      kind: step.kind,
      rollouts: step.rollouts,
      tasks: [...new Set(step.rollouts.map((r) => r.task))].map((t) => [t, taskDigest.get(t)]),
    }),
  }));
}

/**
 * The plan hash: everything that changes results; not concurrency, retries, the proxy's processes,
 * sources, manifests or the bad-step policy (it only decides what a failure does, and may be
 * changed to resume a run), or the metric sinks (where metrics are copied to).
 * Host paths count relative to Plan.root (portablePlan), so the hash is machine-independent.
 */
export function hashPlan(plan: Plan): string {
  const { hash: _h, sources: _s, manifests: _m, root: _r, onBadStep: _b, metrics: _x, sandbox, model, ...rest } = portablePlan(plan);
  return digestOf({ ...rest, model: model ? hashedModel(model) : model, sandbox: hashedSandbox(sandbox) });
}

/** The plan with its steps' hashes and its own filled in. */
export function hashedPlan(plan: Plan): Plan {
  const out: Plan = { ...plan, steps: hashSteps(plan) };
  out.hash = hashPlan(out);
  return out;
}

/** The model without how many proxy processes serve it (they serve the same calls). */
function hashedModel(m: NonNullable<Plan["model"]>): NonNullable<Plan["model"]> {
  if (m.proxy?.processes === undefined) return m;
  const { processes: _p, ...proxy } = m.proxy;
  const { proxy: _x, ...rest } = m;
  return Object.keys(proxy).length > 0 ? { ...rest, proxy } : rest;
}

/** The sandbox without what only paces or retries rollouts (concurrency, retries, admission, the start deadline). */
function hashedSandbox(s: ResolvedSandbox): Omit<ResolvedSandbox, "concurrency" | "retries"> {
  const { concurrency: _c, retries: _r, ...rest } = s;
  if (!rest.kubernetes) return rest;
  const { maxStarting: _m, createsPerSecond: _p, createBurst: _b, startTimeoutSeconds: _t, ...kubernetes } = rest.kubernetes;
  return { ...rest, kubernetes: kubernetes as ResolvedSandbox["kubernetes"] };
}
