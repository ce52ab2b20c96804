/**
 * When SFT stops early (`sft.targetLoss`): once the loss per trained token, averaged over the last
 * SFT_LOSS_WINDOW applied steps, is below the target. One step's loss is a sample of 16-odd
 * sequences (noisy); the window's mean is what the stop reads. Skipped (non-finite) steps add nothing.
 */

/** Applied SFT steps whose losses the stop averages. */
export const SFT_LOSS_WINDOW = 10;

export interface LossWindow {
  /** Records one applied step's loss; returns the window's mean once it is full, else undefined. */
  add(loss: number): number | undefined;
}

export function createLossWindow(size = SFT_LOSS_WINDOW): LossWindow {
  const losses: number[] = [];
  return {
    add(loss) {
      losses.push(loss);
      if (losses.length > size) losses.shift();
      return losses.length === size ? losses.reduce((a, b) => a + b, 0) / size : undefined;
    },
  };
}

/** Whether SFT stops after this step: a target is set and the full window's mean is below it. */
export function reachedTargetLoss(mean: number | undefined, target: number | undefined): boolean {
  return target !== undefined && mean !== undefined && mean < target;
}

/** The log line of an early stop. */
export function describeTargetStop(mean: number, target: number, done: number, steps: number): string {
  return `SFT: loss ${mean.toFixed(4)} per token over the last ${SFT_LOSS_WINDOW} steps is below sft.targetLoss ${target}: stopping after ${done} of at most ${steps} steps`;
}
