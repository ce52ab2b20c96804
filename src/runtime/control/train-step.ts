/**
 * The trainer calls of one training step: forward_backward + optim_step per batch, or per
 * mini-batch (mini-batches.ts splits them). A step the trainer refuses as non-finite comes back
 * as a value (`bad`, see bad-step.ts), never half-applied.
 */
import type { TrainingBatch } from "../trajectories/batch.js";
import type { TrainerHandle } from "../training/trainer-process.js";
import type { ForwardBackwardOptions } from "../training/trainer-protocol.js";
import { badStepOf, type BadStep } from "./bad-step.js";
import { LoopError } from "./loop-error.js";
import { mergeTrainMetrics, splitMiniBatches } from "./mini-batches.js";

export type Applied = { fb: Record<string, unknown>; opt: Record<string, unknown> } | { bad: BadStep };

/** forward_backward + optim_step of one batch; a step the trainer refuses as non-finite comes back as `bad`. */
export async function applyStep(
  worker: TrainerHandle,
  batch: TrainingBatch,
  o: { fb?: ForwardBackwardOptions; learningRate?: number; resetState?: boolean; betas?: [number, number] } = {},
): Promise<Applied> {
  try {
    const fb = (await worker.client.forwardBackward(batch, o.fb ?? {})) as unknown as Record<string, unknown>;
    const opt = (await worker.client.optimStep({
      ...(o.learningRate !== undefined ? { learningRate: o.learningRate } : {}),
      ...(o.resetState ? { resetState: true } : {}),
      ...(o.betas ? { betas: o.betas } : {}),
    })) as unknown as Record<string, unknown>;
    return { fb, opt };
  } catch (err) {
    const bad = badStepOf(err);
    if (bad) return { bad };
    throw err;
  }
}

/** How the mini-batches of a training step are applied. */
export interface MiniBatchOptions {
  /** The checkpoint a refusal after some mini-batches rolls the trainer back to. */
  lastCheckpoint?: string;
  onApplied?: (done: number) => void;
  fb?: ForwardBackwardOptions;
  /** The first mini-batch's optimizer step starts from a fresh optimizer state. */
  resetState?: boolean;
  /** The learning rate of the j-th mini-batch's optimizer step (j from 0); the worker's own when absent. */
  learningRate?: (j: number) => number | undefined;
  /** Adam's (beta1, beta2) for these optimizer steps. */
  betas?: [number, number];
}

/**
 * A training step as `n` mini-batches, one optimizer step each. A refusal after some mini-batches
 * were applied rolls the trainer back to the last checkpoint, so a skipped step leaves nothing behind.
 */
export async function applyMiniBatches(worker: TrainerHandle, batch: TrainingBatch, n: number, o: MiniBatchOptions = {}): Promise<Applied> {
  const { lastCheckpoint, onApplied, fb = {} } = o;
  const fbs: Record<string, unknown>[] = [];
  const opts: Record<string, unknown>[] = [];
  for (const part of splitMiniBatches(batch, n)) {
    const learningRate = o.learningRate?.(fbs.length);
    const applied = await applyStep(worker, part, {
      fb,
      resetState: Boolean(o.resetState) && fbs.length === 0,
      ...(learningRate !== undefined ? { learningRate } : {}),
      ...(o.betas ? { betas: o.betas } : {}),
    });
    if ("bad" in applied) {
      if (fbs.length > 0) {
        if (!lastCheckpoint) {
          throw new LoopError(
            applied.bad.code,
            `${applied.bad.reason} (mini-batch ${fbs.length + 1}, after ${fbs.length} were applied, with no checkpoint to roll back to).`,
            "Lower the learning rate.",
          );
        }
        await worker.client.restore(lastCheckpoint);
      }
      return applied;
    }
    fbs.push(applied.fb);
    opts.push(applied.opt);
    onApplied?.(fbs.length);
  }
  return { fb: mergeTrainMetrics(fbs), opt: mergeTrainMetrics(opts) };
}
