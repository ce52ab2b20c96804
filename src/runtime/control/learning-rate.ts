/**
 * The RL learning rate of an optimizer step: linear warmup over the Algorithm's `warmupSteps`.
 * Step k (from 1) of RL — mini-batch j of the t-th trained step is k = (t-1)·miniBatches + j —
 * uses learningRate·k/warmupSteps while k < warmupSteps, then learningRate. Pure.
 */
import type { ResolvedAlgorithm } from "../../compiler/contract/plan.js";

/** The learning rate of RL optimizer step `k` (from 1); undefined without warmup (the worker's own, learningRate). */
export function warmupLearningRate(algorithm: Pick<ResolvedAlgorithm, "learningRate" | "warmupSteps">, k: number): number | undefined {
  const { learningRate, warmupSteps } = algorithm;
  if (!(warmupSteps > 0)) return undefined;
  return k < warmupSteps ? (learningRate * k) / warmupSteps : learningRate;
}
