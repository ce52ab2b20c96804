/**
 * Plan building (pure): an Experiment or Evaluation over the resolved world → Plan.
 * Pairs are task × harness; rollouts get deterministic ids and seeds; every step and the
 * whole plan are content-addressed. Settings that do not change results (concurrency,
 * retries, the bad-step policy) stay out of the hashes.
 */
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import type { SourcePosition } from "../contract/problem.js";
import { checkPairMcpServers, resolveMcpServers } from "../resolve/mcp-servers.js";
import { CODES } from "../contract/codes.js";
import type { HarnessKnobValues, Plan, PlanSchedule, PlanStep, ResolvedAlgorithm, ResolvedHarness, ResolvedModel, ResolvedSandbox, ResolvedTask, ResolvedTrainer } from "../contract/plan.js";
import { digestOf } from "../contract/hash.js";
import { scheduleEvaluation, scheduleExperiment, type ScheduledSteps } from "./schedule.js";
import { applyUse, checkKnobs } from "./knobs.js";
import { selectTasks } from "./select.js";
import { checkAlgorithm, type World } from "../resolve/world.js";
import { checkTrainer, resolveAlgorithm, resolveBadStepPolicy, resolveMetricsSinks, resolveSandbox, resolveTrainer } from "../resolve/defaults.js";
import type { TrainerSpec } from "../schema/sandbox.js";
import { suggest, type TypedDocument } from "../schema/validate.js";
import { positionAt } from "../source/yaml.js";
import { portableHarness, portableModel, portablePlan } from "./paths.js";
import { MAX_PLAN_ROLLOUTS } from "../resolve/limits.js";
import { DEFAULT_TASK_TIMEOUT_SECONDS } from "../resolve/tasks.js";
import { checkHarnessFiles, checkPodProxy, checkWarmPool } from "./sandbox-checks.js";
import { checkPythonAt, type PythonEnv } from "../resolve/python-path.js";

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

export function buildPlan(world: World, target: TypedDocument, opts: BuildOptions): Result<Plan | undefined> {
  const diagnostics: Diagnostic[] = [];
  const spec = target.doc.spec;
  const at = (...p: (string | number)[]) => positionAt(target.source, ["spec", ...p]);
  const isExperiment = target.kind === "Experiment";

  const selected = selectTasks(world, spec.tasks, target, ["spec", "tasks"]);
  diagnostics.push(...selected.diagnostics);
  const heldOut = isExperiment && spec.heldOut ? selectTasks(world, spec.heldOut, target, ["spec", "heldOut"]) : { names: [], diagnostics: [] };
  diagnostics.push(...heldOut.diagnostics);
  const heldSet = new Set(heldOut.names);
  const training = selected.names.filter((n) => !heldSet.has(n));
  if (isExperiment && heldOut.names.some((n) => selected.names.includes(n))) {
    diagnostics.push(makeDiagnostic("HeldOutOverlap", at("heldOut"), "Some held-out tasks are also selected for training; they are used for evaluation only.", CODES.HeldOutOverlap, "warning"));
  }
  if (selected.names.length === 0 && !selected.diagnostics.some((d) => d.severity === "error")) {
    diagnostics.push(makeDiagnostic("NoTasksSelected", at("tasks"), "The task selection is empty.", CODES.NoTasksSelected));
  }
  // Per-harness counts that only an SFT stage or a held-out evaluation reads.
  (spec.harnesses as { sftReferences?: number; heldOutAttempts?: number }[]).forEach((h, i) => {
    if (h.sftReferences !== undefined && !(isExperiment && spec.sft)) {
      diagnostics.push(makeDiagnostic("FieldHasNoEffect", at("harnesses", i, "sftReferences"), "`sftReferences` does nothing: this Experiment has no `sft` stage.", CODES.FieldHasNoEffect));
    }
    if (h.heldOutAttempts !== undefined && !(isExperiment && (spec.heldOut ?? []).length > 0)) {
      diagnostics.push(makeDiagnostic("FieldHasNoEffect", at("harnesses", i, "heldOutAttempts"), "`heldOutAttempts` does nothing: this Experiment has no `heldOut` tasks.", CODES.FieldHasNoEffect));
    }
  });

  const harnesses = (spec.harnesses as ({ name: string; weight?: number; env?: Record<string, string> } & HarnessKnobValues)[]).map((h, i) => {
    const e = world.harnesses.get(h.name);
    if (!e) {
      const guess = suggest(h.name, [...world.harnesses.keys()]);
      diagnostics.push(makeDiagnostic("UnknownReference", at("harnesses", i, "name"), `No Harness named "${h.name}".${guess ? ` Did you mean "${guess}"?` : ""}`, CODES.UnknownReference));
    } else diagnostics.push(...checkKnobs(h, e.value, (...p) => at("harnesses", i, ...p)));
    const first = (spec.harnesses as { name: string }[]).findIndex((o) => o.name === h.name);
    if (first < i) {
      const message = `The harness ${h.name} is listed twice (first as harnesses[${first}]); runs are keyed by harness name, so one entry would silently stand for both.`;
      diagnostics.push(makeDiagnostic("DuplicateName", at("harnesses", i, "name"), message, "List each harness once; to compare two settings of one harness, give the second its own Harness document (another name)."));
    }
    return { use: h, harness: e?.value };
  });

  let model = undefined as Plan["model"];
  if (spec.model) {
    const m = world.models.get(spec.model.name);
    if (!m) {
      const guess = suggest(spec.model.name, [...world.models.keys()]);
      diagnostics.push(makeDiagnostic("UnknownReference", at("model", "name"), `No Model named "${spec.model.name}".${guess ? ` Did you mean "${guess}"?` : ""}`, CODES.UnknownReference));
    } else {
      model = m.value;
      const engineAt = positionAt(m.doc.source, ["spec", "engine", "type"]);
      const setAt = `engine type set at ${engineAt.file}:${engineAt.line}:${engineAt.column}`;
      if (isExperiment && (model.engine.type === "llama-cpp" || model.engine.type === "hosted")) {
        const message =
          model.engine.type === "hosted"
            ? `The Model "${spec.model.name}" is a hosted model (${model.engine.api} ${model.engine.model}): it returns no token ids and loads no weights, so an Experiment cannot train it.`
            : `The Model "${spec.model.name}" is served by llama.cpp, which cannot load the weights training writes: an Experiment trains through an engine that reloads them.`;
        diagnostics.push(makeDiagnostic("EngineCannotTrain", at("model", "name"), message, CODES.EngineCannotTrain, "error", [setAt]));
      }
      if (!isExperiment && model.engine.type === "hosted") {
        const api = model.engine.api;
        harnesses.forEach(({ use, harness }, i) => {
          if (!harness?.dialect || harness.dialect === api) return;
          const message = `The harness ${use.name} speaks ${harness.dialect}, but the policy "${spec.model.name}" is a hosted ${api} model: the proxy passes a harness's requests through to a hosted model as they are.`;
          diagnostics.push(makeDiagnostic("HostedDialectMismatch", at("harnesses", i, "name"), message, CODES.HostedDialectMismatch, "error", [setAt]));
        });
      }
    }
  }
  const needsModel = harnesses.find((h) => h.harness?.dialect);
  if (needsModel && !spec.model) {
    diagnostics.push(makeDiagnostic("ModelRequired", at("harnesses"), `Harness "${needsModel.use.name}" calls a model (${needsModel.harness!.dialect}), but no model is given.`, CODES.ModelRequired));
  }

  const planMcp = resolveMcpServers(spec.mcpServers, { specFile: target.source.absPath, roots: target.source.roots, positionOf: (p) => at("mcpServers", ...p) });
  diagnostics.push(...planMcp.diagnostics);

  const sandbox = refOrInline<ResolvedSandbox>(spec.sandbox, world.sandboxes, resolveSandbox, "Sandbox", () => at("sandbox", "name"), diagnostics) ?? resolveSandbox(undefined);
  const atSandbox = (...p: (string | number)[]) => at("sandbox", ...("name" in (spec.sandbox ?? {}) ? [] : p));
  diagnostics.push(...checkPodProxy(sandbox, needsModel ? needsModel.use.name : undefined, atSandbox));
  diagnostics.push(...checkHarnessFiles(sandbox, harnesses, atSandbox, (i) => at("harnesses", i, "name")));
  diagnostics.push(...checkWarmPool(sandbox, atSandbox));
  let algorithm: ResolvedAlgorithm | undefined;
  let trainer: ResolvedTrainer | undefined;
  if (isExperiment) {
    algorithm = refOrInline<ResolvedAlgorithm>(spec.algorithm, world.algorithms, resolveAlgorithm, "Algorithm", () => at("algorithm", "name"), diagnostics);
    if (algorithm && !("name" in spec.algorithm)) diagnostics.push(...checkAlgorithm(algorithm, target, ["spec", "algorithm"]));
    trainer = refOrInline<ResolvedTrainer>(spec.trainer, world.trainers, resolveTrainer, "Trainer", () => at("trainer", "name"), diagnostics) ?? resolveTrainer(undefined);
    if (spec.trainer && !("name" in spec.trainer)) {
      diagnostics.push(...checkTrainer(spec.trainer as TrainerSpec, (...p) => at("trainer", ...p)));
      const inline = trainer;
      diagnostics.push(...checkPythonAt(target, ["spec", "trainer", "python"], opts.env ?? {}, (python) => (inline.python = python)));
    }
    if (trainer.device === "cpu" && (trainer.nodes > 1 || trainer.gpus > 0)) {
      diagnostics.push(makeDiagnostic("InvalidValue", at("trainer"), `A CPU trainer runs on one node without GPUs (nodes ${trainer.nodes}, gpus ${trainer.gpus}).`, "Use device: cuda for multi-node or GPU training, or set nodes: 1 and gpus: 0."));
    }
  }

  const seeds = isExperiment ? checkSeeds(spec, opts.seeds, at, diagnostics) : undefined;
  if (diagnostics.some((d) => d.severity === "error")) return { value: undefined, diagnostics };

  const seed: number = seeds?.[0] ?? spec.seed ?? 0;
  const harnessList = harnesses.map((h) => ({ name: h.use.name, weight: h.use.weight ?? 1, heldOutAttempts: (h.use as { heldOutAttempts?: number }).heldOutAttempts }));

  // The plan's size from its counts, before a single rollout is made (every seed's).
  const rollouts = countRollouts(spec, isExperiment, training.length, heldOut.names.length, selected.names.length, harnessList.length, algorithm?.groupSize ?? 1) * (seeds?.length ?? 1);
  const before = opts.rollouts?.count ?? 0;
  if (before + rollouts > MAX_PLAN_ROLLOUTS) {
    const others = before > 0 ? `, and the other plans compiled with it ${before.toLocaleString("en-US")}` : "";
    const message = `The plan would have ${rollouts.toLocaleString("en-US")} rollouts${others}; the limit is ${MAX_PLAN_ROLLOUTS.toLocaleString("en-US")}.`;
    diagnostics.push(makeDiagnostic("PlanTooLarge", at(isExperiment ? "steps" : "attempts"), message, CODES.PlanTooLarge));
    return { value: undefined, diagnostics };
  }
  if (opts.rollouts) opts.rollouts.count += rollouts;

  let attempts: number;
  let schedule: PlanSchedule | undefined;
  // One schedule per seed: the first seed's steps are the plan's; a multi-seed plan's tasks are every seed's.
  let scheduled: ScheduledSteps[];
  if (isExperiment) {
    const defaultAttempts: number = spec.eval?.attempts ?? 1;
    attempts = defaultAttempts;
    schedule = {
      training,
      heldOut: heldOut.names,
      steps: spec.steps,
      tasksPerStep: spec.tasksPerStep ?? training.length,
      groupSize: algorithm!.groupSize,
      evalEverySteps: spec.eval?.everySteps ?? 0,
      harnesses: harnessList.map((h) => ({ name: h.name, weight: h.weight, heldOutAttempts: h.heldOutAttempts ?? defaultAttempts })),
    };
    scheduled = (seeds ?? [seed]).map((s) => scheduleExperiment(schedule!, s));
  } else {
    attempts = spec.attempts ?? 1;
    scheduled = [scheduleEvaluation(selected.names, harnessList, attempts, seed)];
  }
  const { steps, pairs } = scheduled[0]!;

  const usedTasks = new Set(scheduled.flatMap((x) => x.steps.flatMap((s) => s.rollouts.map((r) => r.task))));
  const judged = planJudges([...usedTasks].map((n) => world.tasks.get(n)!.value), model, world, at);
  diagnostics.push(...judged.diagnostics);
  if (judged.diagnostics.some((d) => d.severity === "error")) return { value: undefined, diagnostics };
  // A task without its own timeoutSeconds takes the Sandbox's (the "default rollout timeout").
  const timed = judged.tasks.map((t) => (t.timeoutDefaulted && t.timeoutSeconds !== sandbox.timeoutSeconds ? { ...t, timeoutSeconds: sandbox.timeoutSeconds } : t));
  // The Experiment's or Evaluation's MCP servers come first in every task's (they are in the plan hash through the tasks).
  const tasks = planMcp.value.length > 0 ? timed.map((t) => ({ ...t, mcpServers: [...planMcp.value, ...(t.mcpServers ?? [])] })) : timed;
  const judges = judged.judges;
  const usedHarnesses = harnesses.map(({ use }) => applyUse(world.harnesses.get(use.name)!.value, use));
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const everyPair = [...new Map(scheduled.flatMap((x) => x.pairs).map((p) => [p.id, p])).values()];
  const pairMcp = checkPairMcpServers(
    everyPair.map((p) => {
      const hi = harnessList.findIndex((h) => h.name === p.harness);
      return { task: byName.get(p.task)!, harness: usedHarnesses[hi]!, at: at("harnesses", hi, "name") };
    }),
  );
  diagnostics.push(...pairMcp);
  if (pairMcp.length > 0) return { value: undefined, diagnostics };
  // With several seeds, the onnx engine samples with the seed of the run too.
  if (seeds && model?.engine.type === "onnx") model = { ...model, engine: { ...model.engine, seed } };

  const plan: Plan = {
    planVersion: 1,
    kind: target.kind as Plan["kind"],
    name: target.name,
    hash: "",
    seed,
    sandbox,
    tasks,
    heldOutTasks: heldOut.names,
    harnesses: usedHarnesses,
    pairs,
    steps,
    attempts,
    manifests: [],
    estimate: estimatePlan(scheduled.map((x) => x.steps), tasks, usedHarnesses),
    sources: opts.sources ?? [],
    root: opts.cwd,
  };
  if (seeds) {
    plan.seeds = [...seeds];
    plan.schedule = schedule!;
  }
  if (model) plan.model = model;
  if (judges.length > 0) plan.judges = judges;
  if (algorithm) plan.algorithm = algorithm;
  if (trainer) plan.trainer = trainer;
  if (isExperiment && spec.sft) {
    plan.sft = { steps: spec.sft.steps, learningRate: spec.sft.learningRate ?? 1e-3, batchSize: spec.sft.batchSize ?? 0, when: spec.sft.when ?? "if-untrained", adamBetas: spec.sft.adamBetas ? [spec.sft.adamBetas[0], spec.sft.adamBetas[1]] : [0.9, 0.999], optimizerState: spec.sft.optimizerState ?? "reset" };
    const limits = (spec.harnesses as { name: string; sftReferences?: number }[]).filter((h) => h.sftReferences !== undefined);
    if (spec.sft.targetLoss !== undefined) plan.sft.targetLoss = spec.sft.targetLoss;
    if (limits.length > 0) plan.sft.referencesPerHarness = Object.fromEntries(limits.map((h) => [h.name, h.sftReferences!]));
  }
  if (isExperiment) plan.onBadStep = resolveBadStepPolicy(spec.onBadStep);
  if (isExperiment && spec.metrics) plan.metrics = resolveMetricsSinks(spec.metrics);
  plan.steps = hashSteps(plan);
  plan.hash = hashPlan(plan);
  return { value: plan, diagnostics };
}

/**
 * An Experiment's seeds when it has several (`seeds`, or the caller's `override`), else undefined.
 * `seed` and `seeds` together (SeedAndSeeds) and a repeated seed (DuplicateSeed) are errors.
 */
function checkSeeds(spec: any, override: readonly number[] | undefined, at: (...p: (string | number)[]) => SourcePosition, diagnostics: Diagnostic[]): readonly number[] | undefined {
  const listed = spec.seeds as number[] | undefined;
  if (listed !== undefined && spec.seed !== undefined) {
    diagnostics.push(makeDiagnostic("SeedAndSeeds", at("seeds"), `The Experiment gives both \`seed\` (${spec.seed}) and \`seeds\` (${listed.join(", ")}).`, CODES.SeedAndSeeds));
  }
  listed?.forEach((s, i) => {
    const first = listed.indexOf(s);
    if (first < i) diagnostics.push(makeDiagnostic("DuplicateSeed", at("seeds", i), `The seed ${s} is listed twice (first as seeds[${first}]).`, CODES.DuplicateSeed));
  });
  return override ?? listed;
}

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
    hash: digestOf({ common: commonDigest, kind: step.kind, rollouts: step.rollouts, tasks: [...new Set(step.rollouts.map((r) => r.task))].map((t) => [t, taskDigest.get(t)]) }),
  }));
}

/**
 * Which Model grades each rubric: the one its `judge` names, or the policy when it names none.
 * The plan's tasks carry the name in `rubric.judge` (copies; the world's tasks are left as they
 * are) and `judges` holds the judge Models other than the policy. A rubric with neither a judge
 * nor a policy to fall back on is an error (JudgeRequired).
 */
function planJudges(used: ResolvedTask[], model: ResolvedModel | undefined, world: World, at: (...p: (string | number)[]) => ReturnType<typeof positionAt>): { tasks: ResolvedTask[]; judges: ResolvedModel[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const judges = new Map<string, ResolvedModel>();
  const tasks = used.map((t) => {
    const rubric = t.verifier.rubric;
    if (!rubric) return t;
    const name = rubric.judge ?? model?.name;
    if (name === undefined) {
      diagnostics.push(makeDiagnostic("JudgeRequired", at("tasks"), `Task "${t.name}" has a rubric that names no judge, and there is no model to grade it.`, CODES.JudgeRequired));
      return t;
    }
    if (name !== model?.name) {
      const m = world.models.get(name)?.value;
      if (!m) return t; // reported by the world (resolve/judges.ts) as UnknownReference
      judges.set(name, m);
    }
    return rubric.judge === name ? t : { ...t, verifier: { ...t.verifier, rubric: { ...rubric, judge: name } } };
  });
  return { tasks, judges: [...judges.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), diagnostics };
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

function refOrInline<T>(
  value: { name: string } | Record<string, unknown> | undefined,
  table: Map<string, { value: T }>,
  resolveInline: (spec: any) => T,
  kind: string,
  pos: () => ReturnType<typeof positionAt>,
  diagnostics: Diagnostic[],
): T | undefined {
  if (value === undefined) return undefined;
  if (typeof (value as { name?: unknown }).name === "string" && Object.keys(value).length === 1) {
    const name = (value as { name: string }).name;
    const e = table.get(name);
    if (!e) {
      const guess = suggest(name, [...table.keys()]);
      diagnostics.push(makeDiagnostic("UnknownReference", pos(), `No ${kind} named "${name}".${guess ? ` Did you mean "${guess}"?` : ""}`, CODES.UnknownReference));
      return undefined;
    }
    return e.value;
  }
  return resolveInline(value);
}

/** Rollouts the plan will have (mirrors the steps made in buildPlan). */
function countRollouts(spec: any, isExperiment: boolean, training: number, heldOut: number, selected: number, harnesses: number, groupSize: number): number {
  if (!isExperiment) return selected * harnesses * (spec.attempts ?? 1);
  const steps: number = spec.steps;
  const perStep = Math.min(spec.tasksPerStep ?? training, training);
  const evalEvery: number = spec.eval?.everySteps ?? 0;
  const evals = heldOut > 0 ? 2 + (evalEvery > 0 ? Math.floor(steps / evalEvery) : 0) : 0;
  const attempts = (spec.harnesses as { heldOutAttempts?: number }[]).slice(0, harnesses).reduce((n, h) => n + (h.heldOutAttempts ?? spec.eval?.attempts ?? 1), 0);
  return steps * perStep * groupSize + evals * heldOut * attempts;
}

/**
 * A rough estimate over the steps of each seed: documented as such in the plan summary. A task's
 * own timeout counts (not the Sandbox's that stands in for a task without one).
 */
export function estimatePlan(stepsPerSeed: readonly (readonly PlanStep[])[], tasks: readonly ResolvedTask[], harnesses: readonly ResolvedHarness[]): Plan["estimate"] {
  const taskByName = new Map(tasks.map((t) => [t.name, t]));
  const harnessByName = new Map(harnesses.map((h) => [h.name, h]));
  let rollouts = 0;
  let seconds = 0;
  let tokens = 0;
  for (const s of stepsPerSeed.flat()) {
    for (const r of s.rollouts) {
      rollouts++;
      const h = harnessByName.get(r.harness);
      const t = taskByName.get(r.task);
      const timeout = t ? (t.timeoutDefaulted ? DEFAULT_TASK_TIMEOUT_SECONDS : t.timeoutSeconds) : DEFAULT_TASK_TIMEOUT_SECONDS;
      seconds += (h?.startupSeconds ?? 0) + Math.min(timeout, h?.dialect ? 60 : 5);
      if (h?.dialect) tokens += 16_000;
    }
  }
  return { rollouts, sandboxMinutes: Math.round((seconds / 60) * 10) / 10, tokens };
}
