/** Rollout results → evaluation outcomes (for pass@k / pass^k summaries). */
import { outcomeOf, summarizeEval, type EvalSummary, type RolloutOutcome } from "../eval/index.js";
import type { RolloutResult } from "../records/index.js";
import type { VerifierResult } from "../verifiers/verify.js";

export function outcomeOfResult(r: RolloutResult): RolloutOutcome {
  const base = { task: r.task, category: r.category, harness: r.harness, attempt: r.attempt };
  if (r.status === "ok" && r.verifier) return outcomeOf(base, r.verifier as VerifierResult);
  if (r.status === "timeout") {
    const o: RolloutOutcome = {
      ...base,
      reward: 0,
      passed: false,
      failures: [{ name: "timeout", type: "timeout", reason: r.error?.message ?? "the harness timed out." }],
    };
    return o;
  }
  const cause = r.status === "verifier-error" ? "verifier" : "infrastructure";
  return { ...base, reward: null, passed: false, error: r.error ?? { code: r.status, message: r.status }, cause };
}

export function summarizeResults(results: readonly RolloutResult[], ks?: number[]): EvalSummary {
  return summarizeEval(results.map(outcomeOfResult), ks ? { ks } : {});
}
