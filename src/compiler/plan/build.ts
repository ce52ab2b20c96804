/**
 * Plan building (pure): an Experiment or Evaluation over the resolved world → Plan, in four
 * stages — the parts the target names (parts.ts), the plan's size (size.ts), the steps of each
 * seed (schedule.ts), then the assembly here: the tasks and judges the steps use (tasks.ts), every
 * task × harness pair's MCP servers checked, and the plan, content-addressed (hash.ts).
 */
import type { Diagnostic, Result } from "../contract/diagnostics.js";
import type { Plan } from "../contract/plan.js";
import { checkPairMcpServers } from "../resolve/mcp-servers.js";
import { resolveBadStepPolicy, resolveMetricsSinks } from "../resolve/defaults.js";
import type { PythonEnv } from "../resolve/python-path.js";
import type { World } from "../resolve/world.js";
import type { DocumentOf } from "../schema/kinds.js";
import type { TypedDocument } from "../schema/validate.js";
import { hashedPlan } from "./hash.js";
import { applyUse } from "./knobs.js";
import { resolveTarget } from "./parts.js";
import { scheduleTarget, type TargetSchedule } from "./schedule.js";
import { withSamplingSeed } from "./seeds.js";
import { checkPlanSize, estimatePlan } from "./size.js";
import { planTasks, type PlanTasks } from "./tasks.js";
import { targetOf, type PlanTarget, type TargetParts } from "./target.js";

export interface BuildOptions {
  /** The caller's cwd (absolute): recorded as Plan.root; the hash sees host paths relative to it. */
  cwd: string;
  sources?: Plan["sources"];
  /** Rollouts planned so far by other targets of the same compile (counted up by buildPlan). */
  rollouts?: { count: number };
  /** An Experiment's seeds, in place of its spec's `seed`/`seeds` (`reins run --seeds`): distinct, checked by the caller. */
  seeds?: readonly number[];
  /** Where the allow-list of interpreters an inline Trainer's `python` may name is read (resolve/python-path.ts). */
  env?: PythonEnv;
}

export function buildPlan(world: World, document: TypedDocument, opts: BuildOptions): Result<Plan | undefined> {
  const target = targetOf(document);
  if (!target) throw new Error(`buildPlan: ${document.kind} ${document.name} is not an Experiment or Evaluation`);
  const diagnostics: Diagnostic[] = [];
  const parts = resolveTarget(world, target, { ...(opts.seeds ? { seeds: opts.seeds } : {}), ...(opts.env ? { env: opts.env } : {}) });
  diagnostics.push(...parts.diagnostics);
  if (!parts.value) return { value: undefined, diagnostics };
  const size = checkPlanSize(target, parts.value, opts.rollouts);
  diagnostics.push(...size.diagnostics);
  if (size.value === undefined) return { value: undefined, diagnostics };
  const schedule = scheduleTarget(target, parts.value);
  const tasks = planTasks(world, schedule.scheduled, {
    model: parts.value.model,
    sandbox: parts.value.sandbox,
    mcpServers: parts.value.mcpServers,
    at: parts.value.at,
  });
  diagnostics.push(...tasks.diagnostics);
  if (tasks.diagnostics.some((d) => d.severity === "error")) return { value: undefined, diagnostics };
  const plan = assemblePlan(world, target, parts.value, schedule, tasks.value, opts);
  diagnostics.push(...plan.diagnostics);
  return { value: plan.value, diagnostics };
}

/** The plan from its parts, steps and tasks; undefined when a task × harness pair's MCP servers clash. */
function assemblePlan(
  world: World,
  target: PlanTarget,
  parts: TargetParts,
  s: TargetSchedule,
  planned: PlanTasks,
  opts: BuildOptions,
): Result<Plan | undefined> {
  const { tasks, judges } = planned;
  const { seeds, at } = parts;
  const harnesses = parts.harnesses.map(({ use }) => applyUse(world.harnesses.get(use.name)!.value, use));
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const everyPair = [...new Map(s.scheduled.flatMap((x) => x.pairs).map((p) => [p.id, p])).values()];
  const pairMcp = checkPairMcpServers(
    everyPair.map((p) => {
      const hi = parts.harnesses.findIndex((h) => h.use.name === p.harness);
      return { task: byName.get(p.task)!, harness: harnesses[hi]!, at: at("harnesses", hi, "name") };
    }),
  );
  if (pairMcp.length > 0) return { value: undefined, diagnostics: pairMcp };
  const { steps, pairs } = s.scheduled[0]!;
  // The onnx engine samples with the Experiment's seed when it gives one (or several: the first).
  const carried = target.kind === "Experiment" && (seeds !== undefined || target.spec.seed !== undefined);
  const model = parts.model && carried ? withSamplingSeed(parts.model, s.seed) : parts.model;

  const plan: Plan = {
    planVersion: 1,
    kind: target.kind,
    name: target.name,
    hash: "",
    seed: s.seed,
    sandbox: parts.sandbox,
    tasks,
    heldOutTasks: parts.heldOut,
    harnesses,
    pairs,
    steps,
    attempts: s.attempts,
    manifests: [],
    estimate: estimatePlan(
      s.scheduled.map((x) => x.steps),
      tasks,
      harnesses,
    ),
    sources: opts.sources ?? [],
    root: opts.cwd,
  };
  if (seeds) {
    plan.seeds = [...seeds];
    plan.schedule = s.schedule!;
  }
  if (model) plan.model = model;
  if (judges.length > 0) plan.judges = judges;
  if (parts.algorithm) plan.algorithm = parts.algorithm;
  if (parts.trainer) plan.trainer = parts.trainer;
  if (target.kind === "Experiment") addTraining(plan, target.spec);
  return { value: hashedPlan(plan), diagnostics: [] };
}

/** An Experiment's SFT stage, bad-step policy and metric sinks. */
function addTraining(plan: Plan, spec: DocumentOf<"Experiment">["spec"]): void {
  if (spec.sft) {
    const sft = spec.sft;
    plan.sft = {
      steps: sft.steps,
      learningRate: sft.learningRate ?? 1e-3,
      batchSize: sft.batchSize ?? 0,
      when: sft.when ?? "if-untrained",
      adamBetas: sft.adamBetas ? [sft.adamBetas[0], sft.adamBetas[1]] : [0.9, 0.999],
      optimizerState: sft.optimizerState ?? "reset",
    };
    const limits = spec.harnesses.filter((h) => h.sftReferences !== undefined);
    if (sft.targetLoss !== undefined) plan.sft.targetLoss = sft.targetLoss;
    if (limits.length > 0) plan.sft.referencesPerHarness = Object.fromEntries(limits.map((h) => [h.name, h.sftReferences!]));
  }
  plan.onBadStep = resolveBadStepPolicy(spec.onBadStep);
  if (spec.metrics) plan.metrics = resolveMetricsSinks(spec.metrics);
}
