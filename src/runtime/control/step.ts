/**
 * One RL training step of `reins run`, after its rollouts were sampled and verified: trees →
 * advantages (GRPO/RLOO from the group's rewards; PPO per branch from the critic, asked on the
 * step's trees before the update) → forward_backward/optim_step per mini-batch → publish (save
 * weights → engine reload → checkpoint) → the step's metrics → its commit (the checkpoint event,
 * or step-skipped). A step the trainer refuses as non-finite is skipped or stops the run, as the
 * Experiment's onBadStep says (bad-step.ts).
 */
import { appendFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Plan, PlanStep, ResolvedAlgorithm } from "../../compiler/contract/plan.js";
import type { CallRecord } from "../records/call-record.js";
import type { RolloutResult } from "../records/index.js";
import { trainerLogprobsFile, type RunStore } from "../store/run-store.js";
import type { BatchReport } from "../trajectories/index.js";
import { applyCritic, type CriticStats } from "../trajectories/gae.js";
import type { TrainerHandle } from "../training/trainer-process.js";
import { decideBadStep, DEFAULT_BAD_STEP_POLICY, describeSkip, refuseNonFinite, stopAtBadStep, type SkipEvent } from "./bad-step.js";
import { buildStepBatch } from "./batches.js";
import { checkStepBatch, describeMismatch, recordCheck } from "./fidelity.js";
import type { Publisher } from "./publish.js";
import type { CheckpointEvent, StepMetrics } from "./state.js";
import { breakdownByFamilyHarness, infraFailures, secondsSince, stepFidelity, treeCounts, type StepTiming } from "./step-metrics.js";
import { splitMiniBatches } from "./mini-batches.js";
import { applyMiniBatches } from "./train-step.js";
import { warmupLearningRate } from "./learning-rate.js";

export interface StepContext {
  plan: Plan;
  algorithm: ResolvedAlgorithm;
  store: RunStore;
  worker: TrainerHandle;
  publisher: Publisher;
  log: (line: string) => void;
  warn: (line: string) => void;
  /** Progress of the training and publishing phases (`progress` events). */
  onEvent?: (e: { type: string; [k: string]: unknown }) => void;
}

/** Train one sampled step; returns its metrics (also recorded) and the run of consecutive skips. */
export async function trainStep(
  c: StepContext,
  step: PlanStep,
  results: readonly RolloutResult[],
  calls: readonly CallRecord[],
  at: { trainingStep: number; of: number; done: number; skipStreak: number; timing: { started: number; rollouts: number } },
): Promise<{ metrics: StepMetrics; skipStreak: number }> {
  const { plan, algorithm, store, worker, publisher } = c;
  const policy = plan.onBadStep ?? DEFAULT_BAD_STEP_POLICY;
  const scored = results.filter((r) => r.reward !== null);
  const meanReward = scored.length > 0 ? scored.reduce((s, r) => s + r.reward!, 0) / scored.length : 0;
  let { batch, report } = buildStepBatch(plan, algorithm, step.index, results, calls);
  const trees = batch.trees?.length ?? 0;
  let critic: CriticStats | undefined;
  if (algorithm.type === "PPO" && trees > 0) {
    // The critic's values on this step's trees, from the weights that sampled them, before any update.
    const values = await worker.client.computeValues(batch);
    const { gamma, lambda, normalizeStd, positiveOnly } = algorithm.advantage;
    ({ batch, stats: critic } = applyCritic(batch, values, { gamma, lambda, normalize: normalizeStd, positiveOnly }));
  }
  const what = `training step ${at.trainingStep}/${at.of}`;
  const progress = (phase: string, unit: string, total: number, done: number) =>
    c.onEvent?.({ type: "progress", phase, label: `step ${at.trainingStep}/${at.of} ${phase}`, unit, total, done });
  // The batch as it goes to the trainer, checked token by token against the engine-sampled ids.
  const check = checkStepBatch(algorithm, batch, results, calls);
  recordCheck(store, "step", step.index, check);
  const mismatch = describeMismatch(check, what);
  if (mismatch) c.warn(mismatch);
  const trainingStart = performance.now();
  // Nothing to train (every rollout dropped or every token masked, e.g. all truncated): the trainer
  // is not called; the step's checkpoint holds the weights it sampled with.
  const trainable = trees > 0 && report.totals.trainedTokens > 0;
  const parts = trainable ? splitMiniBatches(batch, algorithm.miniBatches).length : 0;
  if (parts > 0) progress("training", "mini-batches", parts, 0);
  // The trainer's logprob of each trained token (the viewer's ratio overlay); a redone step rewrites it.
  const recordLogprobs = trainerLogprobsFile(store.dir, step.index);
  rmSync(recordLogprobs, { force: true });
  // The first RL step after SFT starts Adam afresh unless the Experiment keeps SFT's state (sft.optimizerState).
  const resetState = publisher.lastPhase === "sft" && plan.sft?.optimizerState !== "keep";
  const fbOptions = { recordLogprobs, ...(algorithm.klCoef > 0 && publisher.sftCheckpoint ? { referenceCheckpoint: publisher.sftCheckpoint } : {}) };
  const applied = trainable
    ? await applyMiniBatches(worker, batch, algorithm.miniBatches, {
        ...(publisher.lastCheckpoint ? { lastCheckpoint: publisher.lastCheckpoint } : {}),
        onApplied: (done) => progress("training", "mini-batches", parts, done),
        fb: fbOptions,
        resetState,
        learningRate: (j) => warmupLearningRate(algorithm, at.done * algorithm.miniBatches + j + 1),
        betas: algorithm.adamBetas,
      })
    : { fb: null, opt: null };
  const training = secondsSince(trainingStart);
  let skipStreak = at.skipStreak;
  let skipped: SkipEvent | null = null;
  if ("bad" in applied) {
    const kept = `Nothing of this step was applied or published; the weights ${publisher.version} keep serving.`;
    if (decideBadStep(policy, skipStreak) === "stop")
      throw stopAtBadStep(applied.bad, { what, kept, policy, previousSkips: skipStreak, learningRate: "algorithm.learningRate" });
    skipStreak++;
    skipped = {
      type: "step-skipped",
      phase: "step",
      step: step.index,
      code: applied.bad.code,
      reason: applied.bad.reason,
      version: publisher.version,
      consecutive: skipStreak,
      maxSkips: policy.maxSkips,
    };
  }
  const fb = "bad" in applied ? null : applied.fb;
  const opt = "bad" in applied ? null : applied.opt;
  const trainMetrics = {
    ...(fb
      ? { loss: fb.loss, kl: fb.kl, entropy: fb.entropy, clipFraction: fb.clipFraction, correction: fb.correction, tokensPerSecond: fb.tokensPerSecond }
      : {}),
    ...(fb && fb.valueLoss !== undefined ? { valueLoss: fb.valueLoss } : {}),
    // KL between the sampling engine's and the trainer's token distributions (prime-rl's mismatch_kl).
    ...(fb && typeof fb.klRollout === "number" ? { mismatchKl: fb.klRollout } : {}),
    ...(opt ? { gradNorm: opt.gradNorm } : {}),
    ...(critic ? { critic } : {}),
  };
  refuseNonFinite(what, { meanReward, ...trainMetrics }, fb !== null);
  if (skipped) c.warn(describeSkip(skipped, what));
  const publishingStart = performance.now();
  let checkpoint: CheckpointEvent | null = null;
  if (!skipped) {
    progress("publishing", "weights", 1, 0);
    checkpoint = await publisher.publish("step", step.index);
    progress("publishing", "weights", 1, 1);
    skipStreak = 0;
  }
  const timing: StepTiming = {
    rollouts: at.timing.rollouts,
    training,
    publishing: skipped ? 0 : secondsSince(publishingStart),
    step: secondsSince(at.timing.started),
  };
  const m: StepMetrics = {
    type: "step-metrics",
    step: step.index,
    trainingStep: at.done + 1,
    meanReward,
    passRate: scored.length > 0 ? scored.filter((r) => r.passed).length / scored.length : 0,
    rollouts: results.length,
    trainedRollouts: skipped || !trainable ? 0 : trees,
    zeroVarianceGroups: report.groups?.filter((g) => g.zeroVariance).length ?? 0,
    ...infraFailures(results),
    trainedTokens: report.totals.trainedTokens,
    naiveTokens: report.totals.naiveTokens,
    version: publisher.version,
    ...trainMetrics,
    ...treeCounts(report.rollouts),
    timingSeconds: timing,
    fidelity: stepFidelity(results, calls, check, algorithm.filters.dropClasses),
    byFamilyHarness: breakdownByFamilyHarness(plan, results, report.rollouts),
    ...(skipped ? { skipped: { code: skipped.code, reason: skipped.reason } } : {}),
  };
  store.event({ ...m });
  appendFileSync(join(store.dir, "metrics.jsonl"), `${JSON.stringify(m)}\n`);
  // The step's commit, after its records: a run killed before this line redoes the step on resume.
  if (checkpoint) publisher.commit(checkpoint);
  if (skipped) store.event({ ...skipped });
  c.log(
    skipped
      ? `  mean reward ${meanReward.toFixed(3)}, step skipped → weights ${publisher.version}`
      : !trainable
        ? `  mean reward ${meanReward.toFixed(3)}, nothing to train (${describeNothing(report)}) → weights ${publisher.version}`
        : `  mean reward ${meanReward.toFixed(3)}, trained ${m.trainedRollouts}/${results.length} rollouts → weights ${publisher.version}${m.valueLoss !== undefined ? `, value loss ${Number(m.valueLoss).toFixed(4)}` : ""}`,
  );
  return { metrics: m, skipStreak };
}

/** Why a step trained nothing, from its batch report. */
function describeNothing(report: BatchReport): string {
  const why = new Map<string, number>();
  for (const r of report.rollouts) if (r.dropped) why.set(r.dropped, (why.get(r.dropped) ?? 0) + 1);
  if (report.rollouts.length === 0) return "no rollout made a model call";
  if (why.size === 0) return "every generated token masked";
  return [...why].map(([k, n]) => `${n} dropped ${k}`).join(", ");
}
