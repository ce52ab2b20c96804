/**
 * The scalar names the metric sinks (TensorBoard, W&B) log, from the run's records: a training
 * step's record in metrics.jsonl, and a held-out evaluation's event. Names follow the common RL
 * conventions (verl, prime-rl, TRL): `reward/mean`, `kl`, `entropy`, `clip_frac`, `grad_norm`,
 * `timing_s/<phase>`; reins's own `fidelity/*`, `num_branches`, `num_dead_leaves`; and the
 * breakdown per task family and harness as `<name>/<family>/<harness>`. Pure; docs/metrics.md
 * holds the table and the crosswalk to prime-rl's and verl's names.
 */

export type Scalars = Record<string, number>;

/** A training step's record as metrics.jsonl holds it (older records lack the newer fields). */
export interface StepRecord {
  trainingStep: number;
  [k: string]: unknown;
}

/** A held-out evaluation's event (events.jsonl). */
export interface HeldOutRecord {
  trainedSteps: number;
  passRate: number;
  meanReward: number;
  rollouts: number;
  seconds?: number;
  byHarness?: Record<string, { passRate: number; meanReward: number; rollouts: number }>;
}

/** metrics.jsonl field → scalar name, for the fields that are plain numbers. */
export const STEP_FIELDS: Readonly<Record<string, string>> = {
  meanReward: "reward/mean",
  passRate: "pass_rate",
  loss: "loss",
  kl: "kl",
  mismatchKl: "mismatch_kl",
  entropy: "entropy",
  clipFraction: "clip_frac",
  gradNorm: "grad_norm",
  valueLoss: "value_loss",
  rollouts: "num_rollouts",
  trainedRollouts: "num_trained_rollouts",
  zeroVarianceGroups: "num_zero_variance_groups",
  infraFailedRate: "infra_failed_rate",
  infraFailed: "num_infra_failed",
  infraRetries: "num_infra_retries",
  trainedTokens: "tokens/trained",
  naiveTokens: "tokens/naive",
  tokensPerSecond: "perf/tokens_per_s",
  branches: "num_branches",
  deadLeaves: "num_dead_leaves",
};

/** Per (family, harness) cell: field → name prefix (the scalar is `<prefix>/<family>/<harness>`). */
export const GROUP_FIELDS: Readonly<Record<string, string>> = {
  meanReward: "reward/mean",
  passRate: "pass_rate",
  rollouts: "num_rollouts",
  branches: "num_branches",
  deadLeaves: "num_dead_leaves",
};

/** The scalars of one training step, logged at global step `trainingStep`. */
export function stepScalars(m: StepRecord): Scalars {
  const out: Scalars = {};
  const put = (name: string, v: unknown) => {
    if (typeof v === "number" && Number.isFinite(v)) out[name] = v;
  };
  for (const [field, name] of Object.entries(STEP_FIELDS)) put(name, m[field]);
  put("step_skipped", m.skipped ? 1 : 0);
  for (const [phase, seconds] of Object.entries(record(m.timingSeconds))) put(`timing_s/${phase}`, seconds);
  const f = record(m.fidelity);
  put("fidelity/calls", f.calls);
  put("fidelity/prefix_breaks", f.prefixBreaks);
  put("fidelity/checked_tokens", f.checkedTokens);
  put("fidelity/mismatched_tokens", f.mismatchedTokens);
  if (typeof f.checkedTokens === "number" && typeof f.mismatchedTokens === "number" && f.checkedTokens > 0)
    put("fidelity/token_match_rate", 1 - f.mismatchedTokens / f.checkedTokens);
  if (typeof f.calls === "number" && typeof f.prefixBreaks === "number" && f.calls > 0) put("fidelity/prefix_break_rate", f.prefixBreaks / f.calls);
  for (const [key, v] of Object.entries(record(m.critic))) put(`critic/${snake(key)}`, v);
  for (const [key, v] of Object.entries(record(m.correction))) put(`rollout_corr/${snake(key)}`, v);
  for (const [family, harnesses] of Object.entries(record(m.byFamilyHarness))) {
    for (const [harness, cell] of Object.entries(record(harnesses))) {
      for (const [field, prefix] of Object.entries(GROUP_FIELDS)) put(`${prefix}/${family}/${harness}`, record(cell)[field]);
    }
  }
  return out;
}

/** The scalars of a held-out evaluation, logged at global step `trainedSteps` (0: before RL). */
export function heldOutScalars(e: HeldOutRecord): Scalars {
  const out: Scalars = { "held_out/pass_rate": e.passRate, "held_out/reward/mean": e.meanReward, "held_out/num_rollouts": e.rollouts };
  if (e.seconds !== undefined) out["timing_s/evaluation"] = e.seconds;
  for (const [harness, h] of Object.entries(e.byHarness ?? {})) {
    out[`held_out/pass_rate/${harness}`] = h.passRate;
    out[`held_out/reward/mean/${harness}`] = h.meanReward;
  }
  return Object.fromEntries(Object.entries(out).filter(([, v]) => Number.isFinite(v)));
}

function record(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** explainedVariance → explained_variance. */
function snake(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}
