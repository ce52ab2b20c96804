/**
 * Group advantages (one scalar per rollout, broadcast to all of its kept branches).
 *
 * A group is the set of rollouts of one (task, harness) pair within one step. With n rollouts,
 * rewards r_1..r_n, mean m and sample standard deviation s (divisor n-1, as torch.std):
 * - GRPO: A_i = (r_i - m) / (s + eps) with `normalizeStd`, else A_i = r_i - m.
 * - RLOO: A_i = r_i - mean_{j != i} r_j = n/(n-1) (r_i - m); `normalizeStd` does not apply.
 * With `positiveOnly`, negative advantages become 0: rollouts worse than their group's mean are not
 * pushed down, only better ones pushed up (learning from successes, as RAFT/expert iteration).
 * A group is **zero-variance** when max r - min r <= 1e-12 (a group of one is zero-variance too):
 * its advantages are 0; with `dropZeroVariance` its rollouts leave the batch. Groups never mix
 * harnesses, so mix-harness batches keep per-pair normalization.
 */
export const ADVANTAGE_EPSILON = 1e-6;
const ZERO_VARIANCE = 1e-12;

export interface RolloutReward {
  rollout: string;
  task: string;
  harness: string;
  reward: number;
  /** Step the rollout was sampled in (default 0). */
  step?: number;
}

export interface GroupStats {
  step: number;
  task: string;
  harness: string;
  rollouts: string[];
  mean: number;
  /** Sample standard deviation (0 for a group of one). */
  std: number;
  zeroVariance: boolean;
  /** True when the group left the batch (zero-variance and `dropZeroVariance`). */
  dropped: boolean;
}

export interface GroupAdvantageOptions {
  estimator: "GRPO" | "RLOO";
  normalizeStd: boolean;
  dropZeroVariance: boolean;
  positiveOnly?: boolean;
  epsilon?: number;
}

export interface GroupAdvantages {
  /** Advantage per rollout id (absent for rollouts of dropped groups). */
  advantages: Map<string, number>;
  groups: GroupStats[];
}

export function groupKey(step: number, task: string, harness: string): string {
  return JSON.stringify([step, task, harness]);
}

export function computeGroupAdvantages(rewards: readonly RolloutReward[], options: GroupAdvantageOptions): GroupAdvantages {
  const eps = options.epsilon ?? ADVANTAGE_EPSILON;
  const byGroup = new Map<string, RolloutReward[]>();
  for (const r of rewards) {
    const key = groupKey(r.step ?? 0, r.task, r.harness);
    let list = byGroup.get(key);
    if (!list) byGroup.set(key, (list = []));
    list.push(r);
  }
  const advantages = new Map<string, number>();
  const groups: GroupStats[] = [];
  for (const members of byGroup.values()) {
    const n = members.length;
    const values = members.map((m) => m.reward);
    const mean = values.reduce((a, b) => a + b, 0) / n;
    const std = n > 1 ? Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1)) : 0;
    const zeroVariance = Math.max(...values) - Math.min(...values) <= ZERO_VARIANCE || n === 1;
    const dropped = zeroVariance && options.dropZeroVariance;
    const first = members[0];
    groups.push({
      step: first.step ?? 0,
      task: first.task,
      harness: first.harness,
      rollouts: members.map((m) => m.rollout),
      mean,
      std,
      zeroVariance,
      dropped,
    });
    if (dropped) continue;
    for (const m of members) {
      let a: number;
      if (zeroVariance) a = 0;
      else if (options.estimator === "RLOO") a = (n / (n - 1)) * (m.reward - mean);
      else a = options.normalizeStd ? (m.reward - mean) / (std + eps) : m.reward - mean;
      advantages.set(m.rollout, options.positiveOnly ? Math.max(a, 0) : a);
    }
  }
  return { advantages, groups };
}
