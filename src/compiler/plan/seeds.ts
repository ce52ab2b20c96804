/**
 * One seed of a multi-seed plan (pure): the plan the Experiment has with `seed: s`, re-derived from
 * the multi-seed plan alone — its schedule gives the steps again for s (task order, harness mix,
 * rollout seeds), the tasks and judges are those the steps use, the onnx engine samples with s,
 * and the steps and the plan are hashed again. Optionally the policy's directory is another one
 * (a policy reins creates gets one per seed). The result is unfinished (no manifests): the runtime
 * finishes it like any compiled plan.
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import type { Plan, ResolvedModel } from "../contract/plan.js";
import { estimatePlan, hashPlan, hashSteps } from "./build.js";
import { scheduleExperiment } from "./schedule.js";

export interface SeedPlanOptions {
  /** The policy's directory `from` (an absolute path in the plan) becomes `to`, with the model files inside it. */
  policyDir?: { from: string; to: string };
}

export function planForSeed(plan: Plan, seed: number, opts: SeedPlanOptions = {}): Plan {
  if (!plan.seeds || !plan.schedule) throw new Error(`planForSeed: plan ${plan.name} has no seeds`);
  const { seeds: _s, schedule, judges: _j, ...rest } = plan;
  const { steps, pairs } = scheduleExperiment(schedule, seed);
  const byName = new Map(plan.tasks.map((t) => [t.name, t]));
  const tasks = [...new Set(steps.flatMap((s) => s.rollouts.map((r) => r.task)))].map((name) => {
    const task = byName.get(name);
    if (!task) throw new Error(`planForSeed: task ${name} of seed ${seed} is not in plan ${plan.name}`);
    return task;
  });
  const judged = new Set(tasks.map((t) => t.verifier.rubric?.judge));
  const judges = (plan.judges ?? []).filter((j) => judged.has(j.name));
  let model = plan.model;
  if (model?.engine.type === "onnx") model = { ...model, engine: { ...model.engine, seed } };
  if (model && opts.policyDir) model = relocatedPolicy(model, opts.policyDir.from, opts.policyDir.to);
  const out: Plan = { ...rest, seed, steps, pairs, tasks, manifests: [], estimate: estimatePlan([steps], tasks, plan.harnesses) };
  if (model) out.model = model;
  if (judges.length > 0) out.judges = judges;
  out.steps = hashSteps(out);
  out.hash = hashPlan(out);
  return out;
}

/** The model with every file under the directory `from` (tokenizer, onnx model, a served model) under `to` instead. */
export function relocatedPolicy(model: ResolvedModel, from: string, to: string): ResolvedModel {
  const move = (path: string) => {
    const rel = relative(from, path);
    return rel === "" ? to : rel.split(sep)[0] === ".." || isAbsolute(rel) ? path : resolve(to, rel);
  };
  const out: ResolvedModel = { ...model };
  if (out.tokenizer?.type === "file" || out.tokenizer?.type === "huggingface") out.tokenizer = { ...out.tokenizer, path: move(out.tokenizer.path) };
  if (out.engine.type === "onnx") out.engine = { ...out.engine, modelPath: move(out.engine.modelPath) };
  if (out.engine.type === "vllm" && out.engine.serve) out.engine = { ...out.engine, serve: { ...out.engine.serve, modelPath: move(out.engine.serve.modelPath) } };
  return out;
}
