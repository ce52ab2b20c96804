/**
 * Every seed reins derives, by name: one base seed (an Experiment's, a TaskFamily's `generate.seed`,
 * a Synthesis's, the onnx engine's) and a purpose give the seed of one random stream. The compiler
 * and the runtime both draw from here (the runtime through the contract), so each stream has one
 * name and one formula. The formulas are fixed: a run's task order, harness mix, generated tasks,
 * SFT replays and sampled tokens depend on the exact numbers, so changing one changes every run
 * (and the plans that hash them).
 *
 * | purpose            | parts                       | formula                                   | used by                        |
 * | ------------------ | --------------------------- | ----------------------------------------- | ------------------------------ |
 * | `task-order`       | —                           | seedOf("task-order", base)                | plan/schedule.ts               |
 * | `harness-mix`      | step                        | seedOf("harness-mix", base, step)         | plan/harness-mix.ts            |
 * | `family-cell`      | family, cell (canonical), i | seedOf(family, base, cell, i)             | resolve/families.ts            |
 * | `sft-replay-order` | —                           | (base ^ 0x5bd1e995) >>> 0                 | the SFT reference sample       |
 * | `sft-subsets`      | —                           | (base ^ 0x9e3779b9) >>> 0                 | the SFT steps' subsets         |
 * | `synthesis-order`  | —                           | (base ^ 0x2545f491) >>> 0                 | a Synthesis's combinations     |
 * | `sampling`         | rollout id, seq, try        | seedOf(base, id, seq), with `try` from 2  | the onnx engine, per call      |
 *
 * Pure; imports only the contract's hash and random source.
 */
import { seedOf } from "./hash.js";
import { rng } from "./rng.js";

/** What each purpose hashes besides the base seed. */
export interface SeedParts {
  "task-order": [];
  "harness-mix": [step: number];
  "family-cell": [family: string, cellKey: string, index: number];
  "sft-replay-order": [];
  "sft-subsets": [];
  "synthesis-order": [];
  /** `attempt`: the infrastructure try (1-based); a later try of a rollout samples afresh. */
  sampling: [rolloutId: string, seq: number, attempt: number];
}

export type SeedPurpose = keyof SeedParts;

const DERIVATIONS: { [P in SeedPurpose]: (base: number, ...parts: SeedParts[P]) => number } = {
  "task-order": (base) => seedOf("task-order", base),
  "harness-mix": (base, step) => seedOf("harness-mix", base, step),
  "family-cell": (base, family, cellKey, index) => seedOf(family, base, cellKey, index),
  "sft-replay-order": (base) => (base ^ 0x5bd1e995) >>> 0,
  "sft-subsets": (base) => (base ^ 0x9e3779b9) >>> 0,
  "synthesis-order": (base) => (base ^ 0x2545f491) >>> 0,
  sampling: (base, rolloutId, seq, attempt) => (attempt > 1 ? seedOf(base, rolloutId, seq, attempt) : seedOf(base, rolloutId, seq)),
};

/** The unsigned 32-bit seed of `purpose`'s stream under `base`. */
export function deriveSeed<P extends SeedPurpose>(base: number, purpose: P, ...parts: SeedParts[P]): number {
  return (DERIVATIONS[purpose] as (base: number, ...parts: SeedParts[P]) => number)(base, ...parts);
}

/** `purpose`'s random stream under `base`: mulberry32 (rng.ts) on the derived seed, uniform in [0, 1). */
export function seededStream<P extends SeedPurpose>(base: number, purpose: P, ...parts: SeedParts[P]): () => number {
  return rng(deriveSeed(base, purpose, ...parts));
}
