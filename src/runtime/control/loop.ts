/**
 * The control loop of `reins run`: (SFT warm-up) → for each planned step: sample the step's
 * rollouts through the harnesses → verify → trees → advantages → train → publish weights →
 * the engine hot-reloads → checkpoint. Held-out evaluation steps measure the pass rate.
 * Every call records the weights version that produced it. A checkpoint is written after each
 * trained step, and `--resume` restores the last one: finished rollouts are not sampled again and
 * no step is trained twice (a step interrupted before its checkpoint is redone from the previous
 * checkpoint, with the same samples). A step the trainer refuses as non-finite stops the run, or
 * is skipped under `onBadStep: {action: skip}` (bad-step.ts); a skipped step publishes nothing and
 * counts as done.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Plan, PlanRollout, ResolvedModel, ScriptedTurn } from "../../compiler/contract/plan.js";
import { OnnxEngine } from "../engines/onnx.js";
import { createExecutor, type Executor } from "../executor/executor.js";
import { loadModelRuntime } from "../model/model-runtime.js";
import type { SandboxProvider } from "../sandbox/provider.js";
import type { RolloutResult } from "../records/index.js";
import { RunStore } from "../store/run-store.js";
import type { TrainingBatch } from "../trajectories/batch.js";
import type { ForwardBackwardOptions } from "../training/trainer-protocol.js";
import { TrainerWorker } from "../training/trainer-process.js";
import { badStepOf, decideBadStep, describeSkip, DEFAULT_BAD_STEP_POLICY, findNonFinite, stopAtBadStep, type BadStep, type SkipEvent } from "./bad-step.js";
import { rng } from "../../compiler/contract/rng.js";
import { buildSftBatch, buildStepBatch } from "./batches.js";
import { mergeTrainMetrics, splitMiniBatches } from "./mini-batches.js";
import { renderRewardCurve } from "./curve.js";
import { ensureInitialPolicy, hasPolicy, policyDirOf } from "./policy.js";
import { ReferenceEngine } from "./reference-engine.js";
import { setAsideUnloadable } from "./unloadable.js";
import { LoopError } from "./loop-error.js";
import { readLoopState, type CheckpointEvent, type EvalEvent, type StepMetrics } from "./state.js";

export { LoopError } from "./loop-error.js";

export interface LoopOptions {
  plan: Plan;
  store: RunStore;
  provider: SandboxProvider;
  concurrency?: number;
  threads?: number;
  onEvent?: (e: { type: string; [k: string]: unknown }) => void;
  /** Human progress lines (stderr). */
  log?: (line: string) => void;
  /** Warnings (stderr, also when progress is quiet), e.g. a skipped step; default: log. */
  warn?: (line: string) => void;
  signal?: AbortSignal;
}

export interface RunOutcome {
  steps: number;
  heldOut: { before: number | null; after: number | null };
  evaluations: EvalEvent[];
  metrics: StepMetrics[];
  /** Plan step indexes skipped as non-finite (onBadStep: skip). */
  skippedSteps: number[];
  versions: string[];
  sft: { rollouts: number; passed: number; sequences: number; steps: number } | null;
  rewardCurve: string;
  runDir: string;
  interrupted: boolean;
}

export async function runExperiment(o: LoopOptions): Promise<RunOutcome> {
  const { plan, store } = o;
  const log = o.log ?? (() => undefined);
  const warn = o.warn ?? log;
  const policy = plan.onBadStep ?? DEFAULT_BAD_STEP_POLICY;
  if (plan.kind !== "Experiment" || !plan.algorithm || !plan.model) throw new LoopError("NotAnExperiment", "reins run trains an Experiment.", "Use reins eval for an Evaluation.");
  const model = plan.model;
  if (model.engine.type !== "onnx") {
    throw new LoopError("EngineNotTrainable", `The model's engine is ${model.engine.type}; this build trains the in-process onnx engine.`, "Use an onnx Model for local training; GPU training with vLLM runs the trainer Job shown in the plan's manifests.");
  }
  const threads = o.threads ?? 2;
  const seed = plan.seed;
  const policyDir = policyDirOf(model.engine.modelPath);
  const python = plan.trainer?.python ?? "/usr/bin/python3";
  const corpus = !hasPolicy(policyDir) && plan.sft ? await tokenizerCorpus(plan, o, policyDir, python, log) : undefined;
  const init = await ensureInitialPolicy(policyDir, { seed, python, ...(corpus ? { corpus, merges: TOKENIZER_MERGES } : {}) });
  if (init.created) log(`created the initial policy in ${policyDir} (weights ${init.version}${corpus ? `, ${TOKENIZER_MERGES} BPE merges learned from the reference trajectories` : ""})`);

  const state = readLoopState(store);
  const trainerOut = join(store.dir, "trainer");
  mkdirSync(trainerOut, { recursive: true });
  const worker = await TrainerWorker.start({
    modelDir: policyDir,
    outDir: trainerOut,
    python,
    learningRate: plan.algorithm.learningRate,
    threads,
    seed,
    stderrLog: join(store.dir, "trainer.log"),
  });
  let version = init.version;
  let weightsDir = policyDir;
  const versions: string[] = [version];
  if (state.lastCheckpoint) {
    await worker.client.restore(state.lastCheckpoint.path);
    version = state.lastCheckpoint.version;
    weightsDir = state.lastCheckpoint.weightsDir;
    versions.push(version);
    log(`resumed from the checkpoint of ${state.lastCheckpoint.phase === "sft" ? "SFT" : `step ${state.lastCheckpoint.step}`} (weights ${version})`);
  }
  const engine = new OnnxEngine({ ...model.engine, modelPath: weightsDir, threads });
  await engine.ready().catch((err) => {
    throw new LoopError("EngineLoadFailed", `The onnx engine cannot load ${weightsDir}: ${(err as Error).message}`, "Check the weights directory, or start a new run.");
  });
  const executor = await createExecutor({ plan, store, provider: o.provider, engine, ...(o.concurrency ? { concurrency: o.concurrency } : {}), ...(o.onEvent ? { onEvent: o.onEvent } : {}), ...(o.signal ? { signal: o.signal } : {}) });
  const metricsFile = join(store.dir, "metrics.jsonl");
  let sftInfo: RunOutcome["sft"] = null;
  let interrupted = false;
  let lastCheckpoint = state.lastCheckpoint?.path;

  const publish = async (phase: CheckpointEvent["phase"], step: number) => {
    const saved = await worker.client.saveWeights({ formats: ["onnx"] });
    try {
      await engine.reload(saved.version, saved.dir);
    } catch (err) {
      const aside = setAsideUnloadable(saved.dir, store.dir);
      throw new LoopError(
        "EngineReloadFailed",
        `The engine could not load the new weights ${saved.version}: ${(err as Error).message.replace(/\.$/, "")}. The previous weights ${version} keep serving; nothing was checkpointed for this ${phase === "sft" ? "SFT" : "step"}.`,
        `${aside ? `The unloadable directory was moved to ${aside}, so a resumed run exports the weights again. ` : ""}Fix the cause first (a full disk? a damaged file?).`,
      );
    }
    const ckpt = await worker.client.checkpoint(join(trainerOut, `checkpoint-${phase}-${step}`));
    version = saved.version;
    weightsDir = saved.dir;
    versions.push(version);
    lastCheckpoint = ckpt.path;
    const ev: Omit<CheckpointEvent, "type"> = { phase, step, path: ckpt.path, version, weightsDir };
    store.event({ type: "checkpoint", ...ev });
  };

  try {
    // SFT warm-up on reference solutions replayed through the harnesses.
    if (plan.sft && !state.sftDone && !o.signal?.aborted) {
      sftInfo = await runSft(plan, store, o, worker, { log, warn, serving: version });
      if (!o.signal?.aborted) await publish("sft", -1);
    }
    const sampleSteps = plan.steps.filter((s) => s.kind === "sample");
    let trained = 0;
    let skipStreak = state.skipStreak;
    for (const step of plan.steps) {
      if (o.signal?.aborted) break;
      if (step.kind === "sample" && (state.trainedSteps.has(step.index) || state.skippedSteps.has(step.index))) {
        trained++;
        continue;
      }
      const trainingStep = sampleSteps.findIndex((s) => s.index === step.index);
      log(step.kind === "eval" ? `held-out evaluation (${step.rollouts.length} rollouts, weights ${version})` : `step ${trainingStep + 1}/${sampleSteps.length}: sampling ${step.rollouts.length} rollouts (weights ${version})`);
      const results = await executor.runRollouts(step.rollouts, step.index);
      if (o.signal?.aborted) break;
      const scored = results.filter((r) => r.reward !== null);
      const meanReward = scored.length > 0 ? scored.reduce((s, r) => s + r.reward!, 0) / scored.length : 0;
      if (step.kind === "eval") {
        const ev: EvalEvent = { type: "held-out", step: step.index, trainedSteps: trained, passRate: scored.length > 0 ? scored.filter((r) => r.passed).length / scored.length : 0, meanReward, rollouts: results.length, version };
        store.event({ ...ev });
        state.evals = state.evals.filter((x) => x.step !== ev.step).concat(ev);
        log(`  held-out pass rate ${(ev.passRate * 100).toFixed(1)}%, mean reward ${meanReward.toFixed(3)}`);
        continue;
      }
      const { batch, report } = buildStepBatch(plan, plan.algorithm, step.index, results, executor.calls(results.map((r) => r.id)));
      const what = `training step ${trainingStep + 1}/${sampleSteps.length}`;
      const applied = (batch.trees?.length ?? 0) > 0 ? await applyMiniBatches(worker, batch, plan.algorithm.miniBatches, lastCheckpoint) : { fb: null, opt: null };
      let skipped: SkipEvent | null = null;
      if ("bad" in applied) {
        const kept = `Nothing of this step was applied or published; the weights ${version} keep serving.`;
        if (decideBadStep(policy, skipStreak) === "stop") throw stopAtBadStep(applied.bad, { what, kept, policy, previousSkips: skipStreak, learningRate: "algorithm.learningRate" });
        skipStreak++;
        skipped = { type: "step-skipped", phase: "step", step: step.index, code: applied.bad.code, reason: applied.bad.reason, version, consecutive: skipStreak, maxSkips: policy.maxSkips };
      }
      const fb = "bad" in applied ? null : applied.fb;
      const opt = "bad" in applied ? null : applied.opt;
      const trainMetrics = {
        ...(fb ? { loss: fb.loss, kl: fb.kl, entropy: fb.entropy, clipFraction: fb.clipFraction, correction: fb.correction, tokensPerSecond: fb.tokensPerSecond } : {}),
        ...(opt ? { gradNorm: opt.gradNorm } : {}),
      };
      refuseNonFinite(what, { meanReward, ...trainMetrics }, fb !== null);
      if (skipped) {
        store.event({ ...skipped });
        warn(describeSkip(skipped, what));
      } else {
        await publish("step", step.index);
        skipStreak = 0;
      }
      trained++;
      const m: StepMetrics = {
        type: "step-metrics",
        step: step.index,
        trainingStep: trained,
        meanReward,
        passRate: scored.length > 0 ? scored.filter((r) => r.passed).length / scored.length : 0,
        rollouts: results.length,
        trainedRollouts: skipped ? 0 : (batch.trees?.length ?? 0),
        zeroVarianceGroups: report.groups?.filter((g) => (g as { zeroVariance?: boolean }).zeroVariance).length ?? 0,
        trainedTokens: report.totals.trainedTokens,
        naiveTokens: report.totals.naiveTokens,
        version,
        ...trainMetrics,
        ...(skipped ? { skipped: { code: skipped.code, reason: skipped.reason } } : {}),
      };
      store.event({ ...m });
      appendFileSync(metricsFile, `${JSON.stringify(m)}\n`);
      state.metrics = state.metrics.filter((x) => x.step !== m.step).concat(m);
      log(skipped ? `  mean reward ${meanReward.toFixed(3)}, step skipped → weights ${version}` : `  mean reward ${meanReward.toFixed(3)}, trained ${m.trainedRollouts}/${results.length} rollouts → weights ${version}`);
    }
    interrupted = Boolean(o.signal?.aborted);
  } finally {
    await executor.close();
    await engine.close();
    await worker.stop();
  }

  const evals = [...state.evals].sort((a, b) => a.step - b.step);
  const metrics = [...state.metrics].sort((a, b) => a.step - b.step);
  const curve = renderRewardCurve(
    [
      { name: "training mean reward", color: "#2b7bb9", points: metrics.map((m) => ({ step: m.trainingStep, value: m.meanReward })) },
      { name: "held-out pass rate", color: "#e07b00", points: evals.map((e) => ({ step: e.trainedSteps, value: e.passRate })) },
    ],
    `${plan.name}: reward curve`,
  );
  const curveFile = join(store.dir, "reward-curve.svg");
  writeFileSync(curveFile, curve);
  return {
    steps: metrics.length,
    heldOut: { before: evals[0]?.passRate ?? null, after: evals.length > 1 ? evals[evals.length - 1]!.passRate : null },
    evaluations: evals,
    metrics,
    skippedSteps: metrics.filter((m) => m.skipped).map((m) => m.step),
    versions: [...new Set(versions)],
    sft: sftInfo,
    rewardCurve: curveFile,
    runDir: store.dir,
    interrupted,
  };
}

/**
 * A training step as `n` mini-batches, one optimizer step each. A refusal after some mini-batches
 * were applied rolls the trainer back to the last checkpoint, so a skipped step leaves nothing behind.
 */
async function applyMiniBatches(worker: TrainerWorker, batch: TrainingBatch, n: number, lastCheckpoint: string | undefined): Promise<Applied> {
  const fbs: Record<string, unknown>[] = [];
  const opts: Record<string, unknown>[] = [];
  for (const part of splitMiniBatches(batch, n)) {
    const applied = await applyStep(worker, part);
    if ("bad" in applied) {
      if (fbs.length > 0) {
        if (!lastCheckpoint) {
          throw new LoopError(applied.bad.code, `${applied.bad.reason} (mini-batch ${fbs.length + 1}, after ${fbs.length} were applied, with no checkpoint to roll back to).`, "Lower the learning rate.");
        }
        await worker.client.restore(lastCheckpoint);
      }
      return applied;
    }
    fbs.push(applied.fb);
    opts.push(applied.opt);
  }
  return { fb: mergeTrainMetrics(fbs), opt: mergeTrainMetrics(opts) };
}

type Applied = { fb: Record<string, unknown>; opt: Record<string, unknown> } | { bad: BadStep };

/** forward_backward + optim_step of one batch; a step the trainer refuses as non-finite comes back as `bad`. */
async function applyStep(worker: TrainerWorker, batch: TrainingBatch, o: { fb?: ForwardBackwardOptions; learningRate?: number } = {}): Promise<Applied> {
  try {
    const fb = (await worker.client.forwardBackward(batch, o.fb ?? {})) as unknown as Record<string, unknown>;
    const opt = (await worker.client.optimStep(o.learningRate !== undefined ? { learningRate: o.learningRate } : {})) as unknown as Record<string, unknown>;
    return { fb, opt };
  } catch (err) {
    const bad = badStepOf(err);
    if (bad) return { bad };
    throw err;
  }
}

/**
 * Stop before publishing when a step's numbers are not finite although the trainer accepted it
 * (its JSON carries NaN as null): such a number must never reach the metrics as null, silently.
 */
function refuseNonFinite(what: string, metrics: Record<string, unknown>, trained: boolean): void {
  const bad = findNonFinite(metrics);
  if (trained) for (const k of ["loss", "gradNorm"]) if (typeof metrics[k] !== "number") bad.push(k);
  if (bad.length === 0) return;
  throw new LoopError(
    "NonFiniteMetrics",
    `${what}: ${bad.join(", ")} ${bad.length === 1 ? "is" : "are"} NaN, infinite or missing, although the trainer accepted the step; nothing of it was published.`,
    "The trainer worker should have refused this step; look at trainer.log in the run directory.",
  );
}

/** BPE merges learned for the policy's tokenizer (from the harness's own text, see tokenizerCorpus). */
export const TOKENIZER_MERGES = 400;

/** The reference rollouts of an SFT stage: each training task with a reference × each model-calling harness. */
export function sftRollouts(plan: Plan): { rollouts: PlanRollout[]; scriptOf: Map<string, { key: string; turns: ScriptedTurn[] }> } {
  const held = new Set(plan.heldOutTasks);
  const tasks = plan.tasks.filter((t) => !held.has(t.name) && t.reference && t.reference.length > 0);
  const rollouts: PlanRollout[] = [];
  const scriptOf = new Map<string, { key: string; turns: ScriptedTurn[] }>();
  tasks.forEach((t, i) => {
    for (const h of plan.harnesses.filter((x) => x.dialect)) {
      const id = `sft-${i}-${h.name}`;
      rollouts.push({ id, pair: `${t.name}@${h.name}`, task: t.name, harness: h.name, attempt: 0, seed: 0 });
      scriptOf.set(id, { key: id, turns: t.reference! });
    }
  });
  return { rollouts, scriptOf };
}

/**
 * Before the policy exists: replay the reference solutions through the harness with a byte-level
 * bootstrap tokenizer, and return the text the harness and the model exchanged (a file), from
 * which the policy's tokenizer learns its BPE merges. Shorter sequences make every later stage
 * faster, and the model then picks whole words instead of spelling them byte by byte.
 */
async function tokenizerCorpus(plan: Plan, o: LoopOptions, policyDir: string, python: string, log: (l: string) => void): Promise<string | undefined> {
  const { rollouts, scriptOf } = sftRollouts(plan);
  if (rollouts.length === 0) return undefined;
  const bootDir = mkdtempSync(join(tmpdir(), "reins-bootstrap-policy-"));
  try {
    await ensureInitialPolicy(join(bootDir, "policy"), { seed: plan.seed, python });
    const model = plan.model!;
    const bootModel: ResolvedModel = { ...model, tokenizer: { type: "file", path: join(bootDir, "policy", "tokenizer.json") } };
    const runtime = await loadModelRuntime(bootModel);
    const engine = new ReferenceEngine({ model: bootModel, runtime }, (rolloutId) => scriptOf.get(rolloutId));
    const store = RunStore.open(join(bootDir, "run"), plan, { resume: false }).store!;
    const exec = await createExecutor({ plan, store, provider: o.provider, engine, model: bootModel, ...(o.signal ? { signal: o.signal } : {}) });
    let calls: ReturnType<Executor["calls"]>;
    try {
      const results = await exec.runRollouts(rollouts, -1);
      calls = exec.calls(results.map((r) => r.id));
    } finally {
      await exec.close();
      store.close();
    }
    const text = calls.map((c) => runtime.tokenizer.decode([...c.promptIds, ...c.completionIds])).join("\n");
    mkdirSync(dirname(policyDir), { recursive: true });
    const file = `${policyDir}.corpus.txt`;
    writeFileSync(file, text);
    log(`learned the tokenizer's corpus from ${rollouts.length} reference rollouts through the harness (${text.length} characters)`);
    return file;
  } finally {
    rmSync(bootDir, { recursive: true, force: true });
  }
}

async function runSft(plan: Plan, store: RunStore, o: LoopOptions, worker: TrainerWorker, io: { log: (l: string) => void; warn: (l: string) => void; serving: string }): Promise<NonNullable<RunOutcome["sft"]>> {
  const { log, warn } = io;
  const policy = plan.onBadStep ?? DEFAULT_BAD_STEP_POLICY;
  const sft = plan.sft!;
  const { rollouts, scriptOf } = sftRollouts(plan);
  log(`SFT: replaying ${rollouts.length} reference solutions through the harness`);
  const model = plan.model!;
  const runtime = await loadModelRuntime(model);
  const reference = new ReferenceEngine({ model, runtime }, (rolloutId) => scriptOf.get(rolloutId));
  const exec: Executor = await createExecutor({ plan, store, provider: o.provider, engine: reference, ...(o.onEvent ? { onEvent: o.onEvent } : {}), ...(o.signal ? { signal: o.signal } : {}) });
  let results: RolloutResult[];
  let calls: ReturnType<Executor["calls"]>;
  try {
    results = await exec.runRollouts(rollouts, -1);
    calls = exec.calls(results.map((r) => r.id));
  } finally {
    await exec.close();
  }
  const passedResults = results.filter((r) => r.passed);
  const passed = passedResults.length;
  if (passed === 0) throw new LoopError("NoSftData", "No reference rollout passed its verifier, so there is nothing to fine-tune on.", "Check the tasks' reference solutions with reins eval.");
  const size = sft.batchSize > 0 ? Math.min(sft.batchSize, passed) : passed;
  const random = seededRandom(plan.seed);
  const full = buildSftBatch(plan.algorithm!, passedResults, calls);
  const sequences = full.trees?.[0]?.leaves ?? 0;
  log(`SFT: ${passed}/${results.length} reference rollouts passed their verifier; ${sequences} sequences (tree of ${full.trees?.[0]?.tokens.length ?? 0} tokens), ${sft.steps} steps of ${size}`);
  let last: Record<string, unknown> = {};
  let streak = 0;
  let skipped = 0;
  for (let s = 0; s < sft.steps && !o.signal?.aborted; s++) {
    const batch = size === passed ? full : buildSftBatch(plan.algorithm!, sample(passedResults, size, random), calls);
    const what = `SFT step ${s + 1}/${sft.steps}`;
    const applied = await applyStep(worker, batch, { fb: { objective: "sft" }, learningRate: sft.learningRate });
    if ("bad" in applied) {
      const kept = `SFT publishes nothing before it ends; the weights ${io.serving} keep serving.`;
      if (decideBadStep(policy, streak) === "stop") throw stopAtBadStep(applied.bad, { what, kept, policy, previousSkips: streak, learningRate: "sft.learningRate" });
      streak++;
      skipped++;
      const ev: SkipEvent = { type: "step-skipped", phase: "sft", step: s + 1, code: applied.bad.code, reason: applied.bad.reason, version: io.serving, consecutive: streak, maxSkips: policy.maxSkips };
      store.event({ ...ev });
      warn(describeSkip(ev, what));
      continue;
    }
    refuseNonFinite(what, { loss: applied.fb.loss, gradNorm: applied.opt.gradNorm }, true);
    streak = 0;
    last = applied.fb;
  }
  store.event({ type: "sft", rollouts: results.length, passed, sequences, steps: sft.steps, skipped, lastLoss: last.loss ?? null });
  return { rollouts: results.length, passed, sequences, steps: sft.steps };
}

/** The SFT subsets' random source: the compiler's mulberry32, on a seed of its own. */
function seededRandom(seed: number): () => number {
  return rng((seed ^ 0x9e3779b9) >>> 0);
}

function sample<T>(list: readonly T[], k: number, random: () => number): T[] {
  const pool = [...list];
  const out: T[] = [];
  while (out.length < k && pool.length > 0) out.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return out;
}
