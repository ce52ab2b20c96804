/**
 * One seed of a multi-seed plan (pure): the plan the Experiment has with `seed: s`, re-derived from
 * the multi-seed plan alone — its schedule gives the steps again for s (task order, harness mix),
 * the tasks and judges are those the steps use, the onnx engine samples with s,
 * and the steps and the plan are hashed again. Optionally the policy's directory is another one
 * (a policy reins creates gets one per seed). The result is unfinished (no manifests): the runtime
 * finishes it like any compiled plan.
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { Plan, ResolvedModel } from "../contract/plan.js";
import type { SourcePosition } from "../contract/problem.js";
import type { ExperimentSpecValue } from "../schema/experiment.js";
import { hashPlan, hashSteps } from "./hash.js";
import { scheduleExperiment } from "./schedule.js";
import { estimatePlan } from "./size.js";

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
  let model = plan.model && withSamplingSeed(plan.model, seed);
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
  if (out.engine.type === "vllm" && out.engine.serve)
    out.engine = { ...out.engine, serve: { ...out.engine.serve, modelPath: move(out.engine.serve.modelPath) } };
  return out;
}

/** The model sampling with the run's seed: the onnx engine's `seed` (other engines take none from the plan). */
export function withSamplingSeed(model: ResolvedModel, seed: number): ResolvedModel {
  return model.engine.type === "onnx" ? { ...model, engine: { ...model.engine, seed } } : model;
}

/**
 * An Experiment's seeds when it has several (`seeds`, or the caller's `override`), else undefined.
 * `seed` and `seeds` together (SeedAndSeeds) and a repeated seed (DuplicateSeed) are errors.
 */
export function checkSeeds(
  spec: Pick<ExperimentSpecValue, "seed" | "seeds">,
  override: readonly number[] | undefined,
  at: (...p: (string | number)[]) => SourcePosition,
): Result<readonly number[] | undefined> {
  const diagnostics: Diagnostic[] = [];
  const listed = spec.seeds;
  if (listed !== undefined && spec.seed !== undefined) {
    diagnostics.push(
      makeDiagnostic(
        "SeedAndSeeds",
        at("seeds"),
        `The Experiment gives both \`seed\` (${spec.seed}) and \`seeds\` (${listed.join(", ")}).`,
        CODES.SeedAndSeeds,
      ),
    );
  }
  listed?.forEach((s, i) => {
    const first = listed.indexOf(s);
    if (first < i)
      diagnostics.push(makeDiagnostic("DuplicateSeed", at("seeds", i), `The seed ${s} is listed twice (first as seeds[${first}]).`, CODES.DuplicateSeed));
  });
  return { value: override ?? listed, diagnostics };
}
