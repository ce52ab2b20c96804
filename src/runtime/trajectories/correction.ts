/**
 * Reference implementation of rollout-correction weights (the trainer is tested against it).
 *
 * Inputs per token: the trainer's logprob log pi(t) (pi_old in decoupled mode, pi_theta in bypass
 * mode), the rollout logprob log mu(t) recorded by the proxy, the loss mask, and for sequence
 * levels a sequence id. Only tokens with lossMask = 1 take part; all others get weight 0.
 *
 *   rho_t          = exp(log pi(t) - log mu(t))
 *   rho(seq)       = exp(sum_{t in seq} (log pi(t) - log mu(t)))   (computed in log space)
 *   rho_geo(seq)   = exp(mean_{t in seq} (log pi(t) - log mu(t)))
 *
 *   none                 w_t = 1
 *   TIS  token           w_t = min(rho_t, C)
 *   TIS  sequence        w_t = min(rho(seq), C)                      for every t in seq
 *   MIS  token           w_t = rho_t      if low <= rho_t <= high,      else 0   (token mask)
 *   MIS  sequence        w_t = rho(seq)   if low <= rho(seq) <= high,   else 0   (sequence reject)
 *   MIS  geometric       w_t = 1          if low <= rho_geo(seq) <= high, else 0 (geometric reject)
 *
 * `mask` is 1 where a trained token still contributes (0 for rejected/masked tokens), so a
 * trainer that wants a pure mask can use it and ignore the weights. A sequence is the set of
 * trained tokens sharing a sequence id: in the per-path layout the path index, in the tree layout
 * `ownerLeaf` (the same tokens, since each trained token is owned by exactly one path).
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";

export type CorrectionSettings = ResolvedAlgorithm["correction"];

export interface CorrectionInput {
  trainLogprobs: ArrayLike<number>;
  rolloutLogprobs: ArrayLike<number>;
  lossMask: ArrayLike<number>;
  /** Sequence id per token; required for sequence and geometric levels. */
  sequence?: ArrayLike<number>;
}

export interface CorrectionStats {
  /** Tokens with lossMask = 1. */
  trainedTokens: number;
  /** Trained tokens whose weight was capped (TIS) or that were masked/rejected (MIS). */
  affectedTokens: number;
  sequences: number;
  rejectedSequences: number;
  /** Mean of rho_t over trained tokens (NaN when there are none). */
  meanRatio: number;
  /** Largest |log pi - log mu| over trained tokens. */
  maxAbsLogRatio: number;
}

export interface CorrectionWeights {
  weights: Float64Array;
  mask: Uint8Array;
  stats: CorrectionStats;
}

interface SequenceAgg {
  sum: number;
  count: number;
}

function sequenceSums(input: CorrectionInput, logRatio: Float64Array): Map<number, SequenceAgg> {
  const seq = input.sequence;
  if (!seq) throw new Error("sequence ids are required for sequence-level corrections");
  if (seq.length !== logRatio.length) throw new Error("sequence ids and logprobs differ in length");
  const sums = new Map<number, SequenceAgg>();
  for (let i = 0; i < logRatio.length; i++) {
    if (!input.lossMask[i]) continue;
    let agg = sums.get(seq[i]);
    if (!agg) sums.set(seq[i], (agg = { sum: 0, count: 0 }));
    agg.sum += logRatio[i];
    agg.count++;
  }
  return sums;
}

/** Per-token loss weights for the configured rollout correction. Pure; arrays are not modified. */
export function computeCorrectionWeights(input: CorrectionInput, correction: CorrectionSettings): CorrectionWeights {
  const n = input.lossMask.length;
  if (input.trainLogprobs.length !== n || input.rolloutLogprobs.length !== n) {
    throw new Error("trainLogprobs, rolloutLogprobs and lossMask differ in length");
  }
  const logRatio = new Float64Array(n);
  const weights = new Float64Array(n);
  const mask = new Uint8Array(n);
  let trainedTokens = 0;
  let ratioSum = 0;
  let maxAbsLogRatio = 0;
  for (let i = 0; i < n; i++) {
    if (!input.lossMask[i]) continue;
    const lr = input.trainLogprobs[i] - input.rolloutLogprobs[i];
    logRatio[i] = lr;
    trainedTokens++;
    ratioSum += Math.exp(lr);
    if (Math.abs(lr) > maxAbsLogRatio) maxAbsLogRatio = Math.abs(lr);
  }
  let affectedTokens = 0;
  let sequences = 0;
  let rejectedSequences = 0;
  const level = correction.type === "none" ? "token" : correction.level;
  if (correction.type === "none" || level === "token") {
    for (let i = 0; i < n; i++) {
      if (!input.lossMask[i]) continue;
      const rho = Math.exp(logRatio[i]);
      let w = 1;
      let keep = true;
      if (correction.type === "TIS") {
        w = Math.min(rho, correction.cap);
        if (rho > correction.cap) affectedTokens++;
      } else if (correction.type === "MIS") {
        keep = rho >= correction.low && rho <= correction.high;
        w = keep ? rho : 0;
        if (!keep) affectedTokens++;
      }
      weights[i] = w;
      mask[i] = keep ? 1 : 0;
    }
  } else {
    const sums = sequenceSums(input, logRatio);
    sequences = sums.size;
    const seqWeight = new Map<number, number>();
    const seqKeep = new Map<number, boolean>();
    for (const [id, agg] of sums) {
      let w: number;
      let keep = true;
      if (correction.type === "TIS") {
        // min(exp(s), C) without overflow.
        w = agg.sum >= Math.log(correction.cap) ? correction.cap : Math.exp(agg.sum);
        if (agg.sum > Math.log(correction.cap)) affectedTokens += agg.count;
      } else {
        const stat = level === "geometric" ? agg.sum / agg.count : agg.sum;
        const rho = Math.exp(stat);
        keep = rho >= correction.low && rho <= correction.high;
        w = keep ? (level === "geometric" ? 1 : rho) : 0;
        if (!keep) {
          rejectedSequences++;
          affectedTokens += agg.count;
        }
      }
      seqWeight.set(id, w);
      seqKeep.set(id, keep);
    }
    const seq = input.sequence as ArrayLike<number>;
    for (let i = 0; i < n; i++) {
      if (!input.lossMask[i]) continue;
      weights[i] = seqWeight.get(seq[i]) as number;
      mask[i] = seqKeep.get(seq[i]) ? 1 : 0;
    }
  }
  return {
    weights,
    mask,
    stats: {
      trainedTokens,
      affectedTokens,
      sequences,
      rejectedSequences,
      meanRatio: trainedTokens > 0 ? ratioSum / trainedTokens : NaN,
      maxAbsLogRatio,
    },
  };
}
