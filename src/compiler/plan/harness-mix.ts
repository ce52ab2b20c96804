/**
 * The harness mix of an Experiment's training steps (pure): `harnesses[].weight` sets each
 * harness's share of the run's groups.
 *
 * A training step samples `tasksPerStep` tasks (the seeded task order) and runs each through ONE
 * harness, in one group of `groupSize` rollouts of that (task, harness) pair. The run's groups are
 * dealt to harnesses in proportion to their weights w_h (W = Σ w): counting the training steps'
 * groups in order (g = 0, 1, …), group g goes to the harness with the largest deficit
 * (g + 1)·w_h/W − n_h, where n_h counts the groups dealt to h so far (ties: the harness listed
 * first). A harness is therefore never a whole group ahead of its share, so with k harnesses never
 * more than k − 1 groups behind it (in practice little more than one). Within a step the dealt
 * harness slots are then shuffled (mulberry32, seeded by the Experiment's seed and the step
 * number) and matched in order to the step's tasks, so that a task meets different harnesses
 * across steps. With one harness every task goes through it, as before weights existed.
 * Held-out evaluation steps run every task through every harness.
 */
import { seededStream } from "../contract/seeds.js";

/** Harness index per group, for each training step (`groupsPerStep` groups each). */
export function dealHarnesses(weights: readonly number[], groupsPerStep: number, steps: number, seed: number): number[][] {
  if (weights.length === 0) throw new Error("dealHarnesses needs at least one harness");
  if (weights.some((w) => !(w > 0) || !Number.isFinite(w))) throw new Error(`harness weights must be positive numbers: ${weights.join(", ")}`);
  const total = weights.reduce((s, w) => s + w, 0);
  const share = weights.map((w) => w / total);
  const dealt = weights.map(() => 0);
  const out: number[][] = [];
  let g = 0;
  for (let s = 0; s < steps; s++) {
    const slots: number[] = [];
    for (let k = 0; k < groupsPerStep; k++, g++) {
      let best = 0;
      let bestDeficit = -Infinity;
      share.forEach((p, h) => {
        const deficit = (g + 1) * p - dealt[h]!;
        if (deficit > bestDeficit) {
          best = h;
          bestDeficit = deficit;
        }
      });
      dealt[best]!++;
      slots.push(best);
    }
    out.push(weights.length > 1 ? shuffle(slots, seededStream(seed, "harness-mix", s)) : slots);
  }
  return out;
}

function shuffle<T>(list: readonly T[], random: () => number): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
