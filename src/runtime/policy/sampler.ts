/**
 * Token sampling from one row of log-probabilities: temperature, nucleus (top-p), greedy at T=0.
 *
 * The returned `logprob` is the UNTEMPERED model's log-probability of the chosen token
 * (log-softmax of the raw logits), which is what the trainer recomputes; `samplingLogprob` is the
 * log-probability under the distribution actually sampled from (after temperature and top-p).
 * The two coincide at temperature 1 with top-p 1.
 */
import type { Rng } from "../../compiler/contract/rng.js";

export interface SampleResult {
  id: number;
  logprob: number;
  samplingLogprob: number;
}

export function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** Sample one id from `logprobs` (a normalized log-distribution over the vocabulary). */
export function sampleToken(logprobs: Float32Array, temperature: number, topP: number, rng: Rng): SampleResult {
  const v = logprobs.length;
  if (temperature <= 0) {
    const id = argmax(logprobs);
    return { id, logprob: logprobs[id], samplingLogprob: 0 };
  }
  const probs = new Float64Array(v);
  let max = -Infinity;
  for (let i = 0; i < v; i++) if (logprobs[i] > max) max = logprobs[i];
  let sum = 0;
  for (let i = 0; i < v; i++) {
    const p = Math.exp((logprobs[i] - max) / temperature);
    probs[i] = p;
    sum += p;
  }
  for (let i = 0; i < v; i++) probs[i] /= sum;
  let candidates: number[] | null = null;
  let mass = 1;
  if (topP < 1) {
    const order = Array.from({ length: v }, (_, i) => i).sort((a, b) => probs[b] - probs[a] || a - b);
    candidates = [];
    mass = 0;
    for (const i of order) {
      candidates.push(i);
      mass += probs[i];
      if (mass >= topP) break;
    }
  }
  const u = rng.next() * mass;
  let acc = 0;
  let id = -1;
  if (candidates) {
    for (const i of candidates) {
      acc += probs[i];
      if (u < acc) {
        id = i;
        break;
      }
    }
    if (id < 0) id = candidates[candidates.length - 1];
  } else {
    for (let i = 0; i < v; i++) {
      acc += probs[i];
      if (u < acc) {
        id = i;
        break;
      }
    }
    if (id < 0) id = argmax(probs);
  }
  return { id, logprob: logprobs[id], samplingLogprob: Math.log(probs[id] / mass) };
}

/** In-place log-softmax of one row (for graphs that output raw logits). */
export function logSoftmax(row: Float32Array): Float32Array {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i] - max);
  const lse = max + Math.log(sum);
  for (let i = 0; i < row.length; i++) row[i] -= lse;
  return row;
}
