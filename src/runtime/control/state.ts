/**
 * The training loop's durable state, read back from the run store's events: the last checkpoint
 * (phase, step, path, weights version and directory), held-out evaluations, per-step metrics, and
 * the RL steps skipped as non-finite (done, like trained ones: a resumed run does not redo them).
 * A step is done when its commit (checkpoint or step-skipped event) is recorded, after its
 * metrics; metrics without a commit belong to a step the killed run did not finish, which a
 * resumed run redoes.
 */
import { join } from "node:path";
import type { RunStore } from "../store/run-store.js";
import { readJsonl } from "../store/run-store.js";
import type { SkipEvent } from "./bad-step.js";
import type { SftOutcome } from "./sft.js";

export interface CheckpointEvent {
  type: "checkpoint";
  phase: "sft" | "step";
  step: number;
  path: string;
  version: string;
  weightsDir: string;
}

export interface EvalEvent {
  type: "held-out";
  step: number;
  /** Training steps done when this evaluation ran. */
  trainedSteps: number;
  passRate: number;
  meanReward: number;
  rollouts: number;
  version: string;
  /** Seconds the evaluation's rollouts took; absent in runs recorded before. */
  seconds?: number;
  /** The same, per harness (every held-out task runs through every harness); absent in runs recorded before. */
  byHarness?: Record<string, { passRate: number; meanReward: number; rollouts: number }>;
}

export interface StepMetrics {
  type: "step-metrics";
  step: number;
  trainingStep: number;
  meanReward: number;
  rollouts: number;
  version: string;
  /** Present when the trainer refused the step: nothing was applied or published for it. */
  skipped?: { code: string; reason: string };
  [k: string]: unknown;
}

export interface LoopState {
  lastCheckpoint?: CheckpointEvent;
  /** SFT's checkpoint: the policy RL starts from, the KL term's reference. */
  sftCheckpoint?: CheckpointEvent;
  sftDone: boolean;
  /** SFT's summary once its checkpoint is recorded (a resumed run reports it too). */
  sft?: SftOutcome;
  /** The weights version of every recorded checkpoint, in order (what served before a resume). */
  versions: string[];
  trainedSteps: Set<number>;
  /** RL steps skipped as non-finite (see bad-step.ts). */
  skippedSteps: Set<number>;
  /** RL steps skipped since the last checkpoint: the current run of consecutive skips. */
  skipStreak: number;
  evals: EvalEvent[];
  metrics: StepMetrics[];
}

export function readLoopState(store: RunStore): LoopState {
  const events = readJsonl<{ type: string }>(join(store.dir, "events.jsonl"));
  const state: LoopState = { sftDone: false, versions: [], trainedSteps: new Set(), skippedSteps: new Set(), skipStreak: 0, evals: [], metrics: [] };
  let sft: SftOutcome | undefined;
  for (const e of events) {
    if (e.type === "sft") {
      const { rollouts, passed, sequences, steps } = e as unknown as SftOutcome;
      sft = { rollouts, passed, sequences, steps };
    } else if (e.type === "checkpoint") {
      const c = e as CheckpointEvent;
      state.lastCheckpoint = c;
      state.versions.push(c.version);
      if (c.phase === "sft") {
        state.sftDone = true;
        state.sftCheckpoint = c;
        if (sft) state.sft = sft;
      } else state.trainedSteps.add(c.step);
      state.skipStreak = 0;
    } else if (e.type === "step-skipped" && (e as SkipEvent).phase === "step") {
      state.skippedSteps.add((e as SkipEvent).step);
      state.skipStreak++;
    } else if (e.type === "held-out") {
      const ev = e as EvalEvent;
      state.evals = state.evals.filter((x) => x.step !== ev.step).concat(ev);
    } else if (e.type === "step-metrics") {
      const m = e as StepMetrics;
      state.metrics = state.metrics.filter((x) => x.step !== m.step).concat(m);
    }
  }
  state.metrics = state.metrics.filter((m) => state.trainedSteps.has(m.step) || state.skippedSteps.has(m.step));
  return state;
}
