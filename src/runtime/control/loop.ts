/**
 * The control loop's front: `runExperiment` (experiment.ts) and what its callers need. The loop
 * itself is split by noun: experiment.ts (the run), sft.ts (the SFT warm-up), step.ts (one RL
 * step), train-step.ts (trainer calls), publish.ts (weights → reload → checkpoint),
 * local-trainer.ts (the Trainer's settings), bad-step.ts and mini-batches.ts.
 */
export { runExperiment, type LoopOptions, type RunOutcome } from "./experiment.js";
export { LoopError } from "./loop-error.js";
export { sftRollouts, TOKENIZER_MERGES } from "./sft.js";
