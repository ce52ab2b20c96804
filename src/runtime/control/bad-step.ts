/**
 * Bad training steps: a step the trainer refuses as non-finite (a NaN or infinite loss, batch
 * value or gradient norm). The worker keeps no gradient of a refused step, so its weights and
 * optimizer state are those from before the step (in RL: the version serving). The Experiment's `onBadStep` decides what follows: `stop` (default)
 * ends the run with a plain, resumable error named after the worker's code; `skip` records the
 * step as skipped (it counts as done: a resumed run does not train it again) and goes on, until
 * more than `maxSkips` consecutive steps were skipped (counted separately for SFT and RL steps).
 */
import type { BadStepPolicy } from "../../compiler/contract/plan.js";
import { resolveBadStepPolicy } from "../../compiler/index.js";
import { TrainerError } from "../training/trainer-error.js";
import { LoopError } from "./loop-error.js";

/** The worker's codes for a refused non-finite step (trainers/torch/batch.py, trainer.py). Permanent. */
export const BAD_STEP_CODES = ["NonFiniteLoss", "NonFiniteBatch", "NonFiniteGradient"] as const;
export type BadStepCode = (typeof BAD_STEP_CODES)[number];

/** The compiler's default, for plans made before the field existed. */
export const DEFAULT_BAD_STEP_POLICY: BadStepPolicy = resolveBadStepPolicy(undefined);

export interface BadStep {
  code: BadStepCode;
  /** The trainer's own words. */
  reason: string;
}

/** A step-skipped event: the step's update was not applied and nothing was published for it. */
export interface SkipEvent {
  type: "step-skipped";
  phase: "sft" | "step";
  /** Plan step index (RL) or SFT step number (1-based). */
  step: number;
  code: BadStepCode;
  reason: string;
  /** The weights version that keeps serving. */
  version: string;
  /** Consecutive skipped steps of this phase, this one included. */
  consecutive: number;
  maxSkips: number;
}

/** The bad step an error stands for, or null when it is any other failure. */
export function badStepOf(err: unknown): BadStep | null {
  if (!(err instanceof TrainerError) || err.code !== "TrainerRefused") return null;
  const code = BAD_STEP_CODES.find((c) => c === err.workerCode);
  return code ? { code, reason: err.message } : null;
}

/** Paths of the numbers in `value` that are NaN or infinite (JSON would write them as null). */
export function findNonFinite(value: unknown, path = ""): string[] {
  if (typeof value === "number") return Number.isFinite(value) ? [] : [path || "(value)"];
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => findNonFinite(v, path ? `${path}.${k}` : k));
}

/** What a loop does with one more bad step, given how many came right before it. */
export function decideBadStep(policy: BadStepPolicy, previousSkips: number): "skip" | "stop" {
  return policy.action === "skip" && previousSkips < policy.maxSkips ? "skip" : "stop";
}

/**
 * The error that stops the run at a bad step. `what` names the step in words ("training step
 * 2/3", "SFT step 2/150"), `kept` says which weights keep serving, `learningRate` names the setting
 * to lower.
 */
export function stopAtBadStep(bad: BadStep, o: { what: string; kept: string; policy: BadStepPolicy; previousSkips: number; learningRate: string }): LoopError {
  if (o.policy.action === "skip") {
    return new LoopError(
      "TooManyBadSteps",
      `${capitalize(o.what)} failed (${bad.code}): ${bad.reason}. That is ${o.previousSkips + 1} bad steps in a row, more than onBadStep.maxSkips (${o.policy.maxSkips}) allows, so the run stops. ${o.kept}`,
      `When step after step is refused, the weights themselves have probably diverged and skipping cannot repair them: lower ${o.learningRate} and start a new run, or raise onBadStep.maxSkips.`,
    );
  }
  return new LoopError(
    bad.code,
    `${capitalize(o.what)} failed: ${bad.reason}. ${o.kept}`,
    `The weights have probably diverged (is ${o.learningRate} too high?) or the batch holds a NaN. To skip such steps instead of stopping, set onBadStep: {action: skip} in the Experiment.`,
  );
}

/** The stderr warning of a skipped step. */
export function describeSkip(e: SkipEvent, what: string): string {
  const kept = e.phase === "step" ? `nothing was published and the weights ${e.version} keep serving` : "its update was not applied";
  return `${what} skipped (${e.code}): ${e.reason}; ${kept} (${e.consecutive} skipped in a row; onBadStep.maxSkips ${e.maxSkips})`;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
