/**
 * The control loop of `reins run`: (SFT warm-up, sft.ts) → for each planned step: sample the
 * step's rollouts through the harnesses → verify (rubrics graded by the judges the plan names) →
 * train (step.ts: trees → advantages → trainer) → publish (publish.ts: weights → engine hot reload
 * → checkpoint). Held-out evaluation steps measure the pass rate. Every call records the weights
 * version that produced it. A checkpoint is written after each trained step, and `--resume`
 * restores the last one: finished rollouts are not sampled again and no step is trained twice (a
 * step interrupted before its checkpoint is redone from the previous checkpoint, with the same
 * samples). A step the trainer refuses as non-finite stops the run, or is skipped under
 * `onBadStep: {action: skip}` (bad-step.ts); a skipped step publishes nothing and counts as done.
 * The Trainer's settings are checked before anything runs (local-trainer.ts). The engine that
 * samples and reloads (in-process onnx, or a vllm/sglang server, started by reins for `serve`) is
 * policy-engine.ts's.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, posix } from "node:path";
import type { Plan } from "../../compiler/contract/plan.js";
import { summarizeEngine, type EngineSummary } from "../engines/engine.js";
import { createExecutor } from "../executor/executor.js";
import { requireHostedKeys } from "../engines/hosted-api.js";
import { createJudges } from "../executor/judge.js";
import type { SandboxProvider } from "../sandbox/provider.js";
import type { RunStore } from "../store/run-store.js";
import { TrainerWorker, type TrainerHandle } from "../training/trainer-process.js";
import type { ClusterWorker } from "../k8s/cluster-worker.js";
import { renderRewardCurve } from "./curve.js";
import type { FidelityReport } from "../trajectories/fidelity.js";
import { runFidelity } from "./fidelity.js";
import { localTrainer } from "./local-trainer.js";
import type { ClusterTrainer } from "../k8s/trainer-cluster.js";
import { planRunId, trainerMountPath } from "../k8s/trainer-job.js";
import { checkResumePaths } from "./checkpoint-paths.js";
import { LoopError } from "./loop-error.js";
import { ensureInitialPolicy, hasPolicy } from "./policy.js";
import { openExternalEngine, openPolicyEngine, requireTrainableType, trainingPolicyDir, type PolicyEngine } from "./policy-engine.js";
import { Publisher } from "./publish.js";
import { decideSft, runSft, tokenizerCorpus, TOKENIZER_MERGES, type SftContext, type SftOutcome } from "./sft.js";
import { heldOutOutcome, scoreHeldOut, type HeldOutOutcome } from "./held-out.js";
import { readLoopState, type EvalEvent, type StepMetrics } from "./state.js";
import { trainStep } from "./step.js";
import { secondsSince } from "./step-metrics.js";
import { MetricSinks } from "../metrics/sink.js";
import { heldOutScalars, stepScalars } from "../metrics/names.js";

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
  /**
   * A tokenizer corpus made for the same reference replays (another seed of a multi-seed run):
   * when this run creates its policy, its tokenizer learns from this file instead of replaying the
   * references once more.
   */
  tokenizerCorpus?: string;
}

export interface RunOutcome {
  steps: number;
  heldOut: HeldOutOutcome;
  evaluations: EvalEvent[];
  metrics: StepMetrics[];
  /** Plan step indexes skipped as non-finite (onBadStep: skip). */
  skippedSteps: number[];
  /** Every weights version that served, in order, each once: the initial policy's, then each checkpoint's (before a resume too; a step with nothing to train keeps its version). */
  versions: string[];
  sft: SftOutcome | null;
  rewardCurve: string;
  runDir: string;
  interrupted: boolean;
  /** Per harness: calls, prompt tokens stored vs fresh, prefix breaks, trained tokens checked (control/fidelity.ts). */
  fidelity: FidelityReport;
  /** The policy's engine, when it is a probed server (vllm, sglang); also in manifest.json. */
  engine?: EngineSummary;
}

export async function runExperiment(o: LoopOptions): Promise<RunOutcome> {
  const { plan, store } = o;
  const log = o.log ?? (() => undefined);
  const warn = o.warn ?? log;
  if (plan.kind !== "Experiment" || !plan.algorithm || !plan.model)
    throw new LoopError("NotAnExperiment", "reins run trains an Experiment.", "Use reins eval for an Evaluation.");
  const algorithm = plan.algorithm;
  const model = plan.model;
  requireTrainableType(model);
  requireHostedKeys(plan.judges ?? []);
  const trainer = localTrainer(plan.trainer, store.dir, model.engine.type);
  // A resume reads back only checkpoints and weights inside the run (checkpoint-paths.ts), checked
  // before anything runs. A worker in the cluster's pod checkpoints in the claim (k8s/cluster-worker.ts).
  const state = readLoopState(store);
  const remoteCheckpoints = trainer.inCluster ? posix.join(trainerMountPath(plan.trainer!), planRunId(plan), "checkpoints") : undefined;
  checkResumePaths(state, { runDir: store.dir, checkpointRoot: remoteCheckpoints ?? trainer.checkpointRoot, remote: Boolean(remoteCheckpoints) });
  // A server you run says which directory it serves: the trainer starts from those weights.
  const external = await openExternalEngine(model);
  const threads = o.threads ?? 2;
  const seed = plan.seed;
  const python = trainer.python;
  const policyDir = trainingPolicyDir(model, external);
  // TensorBoard / W&B, when the Experiment asks: started before anything runs, so a missing package stops the run at once.
  const sinks = await MetricSinks.open(plan.metrics, store.dir, warn);
  const sftContext: SftContext = {
    plan,
    provider: o.provider,
    log,
    warn,
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  };
  // A server's model directory that holds a checkpoint reins did not make (no READY) is used as it is.
  const checkpoint = model.engine.type !== "onnx" && !hasPolicy(policyDir) && existsSync(join(policyDir, "config.json"));
  const init = await closingOnError(sinks, async () => {
    const corpus = !checkpoint && !hasPolicy(policyDir) && plan.sft ? (o.tokenizerCorpus ?? (await tokenizerCorpus(sftContext, policyDir, python))) : undefined;
    if (checkpoint) return { corpus, version: "", created: false };
    return { corpus, ...(await ensureInitialPolicy(policyDir, { seed, python, ...(corpus ? { corpus, merges: TOKENIZER_MERGES } : {}) })) };
  });
  const corpus = init.corpus;
  if (init.created)
    log(
      `created the initial policy in ${policyDir} (weights ${init.version}${corpus ? `, ${TOKENIZER_MERGES} BPE merges learned from the reference trajectories` : ""})`,
    );

  const sft = decideSft(plan.sft, { policyDir, sftDone: state.sftDone });
  const trainerOut = join(store.dir, "trainer");
  mkdirSync(trainerOut, { recursive: true });
  // trainer.mode kubernetes: the Job, its Service and the weights claim on the cluster; with worker:
  // cluster the worker is torchrun in the Job's pod (k8s/cluster-worker.ts), else a process here.
  // Both modules load only then: the Kubernetes client takes a second to import.
  let cluster: ClusterTrainer | undefined;
  let inCluster: ClusterWorker | undefined;
  const worker: TrainerHandle = await closingOnError(sinks, async () => {
    try {
      if (plan.trainer?.mode === "kubernetes")
        cluster = await (await import("../k8s/trainer-cluster.js")).startClusterTrainer(plan, { log, ...(o.signal ? { signal: o.signal } : {}) });
      if (cluster && trainer.inCluster) {
        const target = { clients: cluster.clients, namespace: cluster.namespace, pod: cluster.rank0.pod, url: cluster.rank0.url, runDir: cluster.runDir };
        const { ClusterWorker } = await import("../k8s/cluster-worker.js");
        inCluster = await ClusterWorker.connect(target, policyDir, { log, ...(o.signal ? { signal: o.signal } : {}) });
        log(`trainer: the worker in pod ${cluster.rank0.pod} answers at ${cluster.rank0.url}`);
        return inCluster;
      }
      return await TrainerWorker.start({
        modelDir: policyDir,
        outDir: trainerOut,
        python,
        learningRate: algorithm.learningRate,
        threads,
        seed,
        valueHead: algorithm.type === "PPO",
        stderrLog: join(store.dir, "trainer.log"),
      });
    } catch (err) {
      await cluster?.close(false);
      throw err;
    }
  });
  const checkpointRoot = inCluster?.checkpointRoot ?? trainer.checkpointRoot;
  let serving: { version: string; weightsDir: string; checkpoint?: string; phase?: "sft" | "step" } = { version: init.version, weightsDir: policyDir };
  try {
    // The worker names a checkpoint's weights by their content.
    if (checkpoint) serving.version = init.version = (await worker.client.health()).weightsVersion;
    if (state.lastCheckpoint) {
      await worker.client.restore(state.lastCheckpoint.path);
      const c = state.lastCheckpoint;
      serving = { version: c.version, weightsDir: c.weightsDir, checkpoint: c.path, phase: c.phase };
      log(`resumed from the checkpoint of ${c.phase === "sft" ? "SFT" : `step ${c.step}`} (weights ${c.version})`);
    }
  } catch (err) {
    // A checkpoint the worker cannot restore stops the run with nothing left running.
    await worker.stop();
    await cluster?.close(false);
    await sinks?.close();
    throw err;
  }
  let policy: PolicyEngine | undefined;
  let judges: Awaited<ReturnType<typeof createJudges>> | undefined;
  let executor: Awaited<ReturnType<typeof createExecutor>> | undefined;
  let sftInfo: RunOutcome["sft"] = state.sft ?? null;
  let interrupted = false;
  let finished = false;
  const versions = [init.version, ...state.versions];
  try {
    try {
      policy = await openPolicyEngine({
        plan,
        model,
        runDir: store.dir,
        serving,
        ...(external ? { external } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        log,
        warn,
      });
    } catch (err) {
      // Ctrl-C while the served engine started: nothing ran; an interruption, not a failure.
      if (!o.signal?.aborted) throw err;
    }
    if (policy?.info) store.recordEngine(policy.info);
    if (!policy) {
      interrupted = true;
      return outcome(plan, store, state, versions, sftInfo, interrupted, undefined);
    }
    const engine = policy.engine;
    judges = await createJudges(plan, { policy: { engine, model } });
    executor = await createExecutor({
      plan,
      store,
      provider: o.provider,
      engine,
      ...(judges.judge ? { judge: judges.judge } : {}),
      ...(o.concurrency ? { concurrency: o.concurrency } : {}),
      ...(o.onEvent ? { onEvent: o.onEvent } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
      log,
    });
    // A worker in the cluster saves each version in the claim; the engine here loads a copy of it.
    const fetchWeights = inCluster ? (dir: string, version: string) => inCluster!.fetch(dir, join(trainerOut, "weights", version)) : undefined;
    const publisher = new Publisher({
      worker,
      engine,
      store,
      checkpointRoot,
      weightsFormat: trainer.weightsFormat,
      serving,
      ...(state.sftCheckpoint ? { sftCheckpoint: state.sftCheckpoint.path } : {}),
      ...(fetchWeights ? { fetchWeights } : {}),
    });

    // SFT warm-up on reference solutions replayed through the harnesses.
    if (sft.action === "skip") {
      store.event({ type: "sft-skipped", reason: sft.reason });
      log(`SFT skipped: ${sft.reason}`);
    } else if (sft.action === "run" && !o.signal?.aborted) {
      sftInfo = await runSft(sftContext, store, worker, publisher.version);
      if (!o.signal?.aborted) {
        o.onEvent?.({ type: "progress", phase: "publishing", label: "SFT publishing", unit: "weights", total: 1, done: 0 });
        publisher.commit(await publisher.publish("sft", -1));
        o.onEvent?.({ type: "progress", phase: "publishing", label: "SFT publishing", unit: "weights", total: 1, done: 1 });
      }
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
      const trainingStep = sampleSteps.findIndex((s) => s.index === step.index) + 1;
      log(
        step.kind === "eval"
          ? `held-out evaluation (${step.rollouts.length} rollouts, weights ${publisher.version})`
          : `step ${trainingStep}/${sampleSteps.length}: sampling ${step.rollouts.length} rollouts (weights ${publisher.version})`,
      );
      const started = performance.now();
      const phase =
        step.kind === "eval"
          ? { phase: "held-out", label: "held-out evaluation" }
          : { phase: "rollouts", label: `step ${trainingStep}/${sampleSteps.length} rollouts` };
      const done = store.finishedIds();
      o.onEvent?.({ type: "progress", ...phase, unit: "rollouts", total: step.rollouts.length, done: step.rollouts.filter((r) => done.has(r.id)).length });
      const results = await executor.runRollouts(step.rollouts, step.index);
      if (o.signal?.aborted) break;
      o.onEvent?.({ type: "progress", ...phase, unit: "rollouts", total: step.rollouts.length, done: step.rollouts.length });
      const rolloutSeconds = secondsSince(started);
      if (step.kind === "eval") {
        const ev: EvalEvent = {
          type: "held-out",
          step: step.index,
          trainedSteps: trained,
          ...scoreHeldOut(results),
          version: publisher.version,
          seconds: rolloutSeconds,
        };
        store.event({ ...ev });
        state.evals = state.evals.filter((x) => x.step !== ev.step).concat(ev);
        sinks?.write(ev.trainedSteps, heldOutScalars(ev));
        log(`  held-out pass rate ${(ev.passRate * 100).toFixed(1)}%, mean reward ${ev.meanReward.toFixed(3)}`);
        const harnesses = Object.entries(ev.byHarness ?? {});
        if (harnesses.length > 1) for (const [h, r] of harnesses) log(`    ${h}: ${(r.passRate * 100).toFixed(1)}% of ${r.rollouts}`);
        continue;
      }
      const calls = executor.calls(results.map((r) => r.id));
      const context = { plan, algorithm, store, worker, publisher, log, warn, ...(o.onEvent ? { onEvent: o.onEvent } : {}) };
      const stepDone = await trainStep(context, step, results, calls, {
        trainingStep,
        of: sampleSteps.length,
        done: trained,
        skipStreak,
        timing: { started, rollouts: rolloutSeconds },
      });
      skipStreak = stepDone.skipStreak;
      trained++;
      state.metrics = state.metrics.filter((x) => x.step !== stepDone.metrics.step).concat(stepDone.metrics);
      sinks?.write(stepDone.metrics.trainingStep, stepScalars(stepDone.metrics));
    }
    versions.push(...publisher.versions);
    interrupted = Boolean(o.signal?.aborted);
    finished = !interrupted;
  } finally {
    await executor?.close();
    await judges?.close();
    await (policy ?? external)?.close?.();
    // The worker first: one in the cluster then exits by itself and its pod succeeds.
    await worker.stop();
    await cluster?.close(finished);
    await sinks?.close();
  }
  return outcome(plan, store, state, versions, sftInfo, interrupted, policy?.info ? summarizeEngine(policy.info) : undefined);
}

/** `work`, closing the metric sinks when it fails (before the loop's own cleanup takes over). */
async function closingOnError<T>(sinks: MetricSinks | null, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    await sinks?.close();
    throw err;
  }
}

/** The run's outcome and its reward curve (reward-curve.svg in the run directory). */
function outcome(
  plan: Plan,
  store: RunStore,
  state: ReturnType<typeof readLoopState>,
  versions: string[],
  sft: RunOutcome["sft"],
  interrupted: boolean,
  engine: EngineSummary | undefined,
): RunOutcome {
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
    heldOut: heldOutOutcome(evals),
    evaluations: evals,
    metrics,
    skippedSteps: metrics.filter((m) => m.skipped).map((m) => m.step),
    versions: [...new Set(versions)],
    sft,
    rewardCurve: curveFile,
    runDir: store.dir,
    interrupted,
    fidelity: runFidelity(plan, store),
    ...(engine ? { engine } : {}),
  };
}
