/**
 * `reins eval`: run a plan's evaluation rollouts (an Evaluation's, or an Experiment's first
 * evaluation without training) in its sandboxes, verify them, and summarize pass@k and pass^k.
 * Resumable through the run store: finished rollouts are not run again.
 */
import type { Plan, PlanRollout } from "../../compiler/index.js";
import { summarizeEngine, type EngineSummary } from "../engines/engine.js";
import type { EvalSummary } from "../eval/index.js";
import { createExecutor } from "../executor/executor.js";
import { requireHostedKeys } from "../engines/hosted-api.js";
import { createJudges } from "../executor/judge.js";
import { summarizeResults } from "../executor/outcomes.js";
import { createProvider } from "../executor/providers.js";
import type { RunStore } from "../store/run-store.js";
import type { FidelityReport } from "../trajectories/fidelity.js";
import { evalFidelity } from "./fidelity.js";
import { startServedModel } from "./served-model.js";

export interface EvaluationOptions {
  plan: Plan;
  store: RunStore;
  /** Overrides the sandbox's concurrency. */
  concurrency?: number;
  /** Called once before the first rollout: how many rollouts, how many finished before (resume). */
  onStart?: (total: number, alreadyDone: number) => void;
  /** Rollout events (started, retried, finished), for progress. */
  onEvent?: (e: { type: string; [k: string]: unknown }) => void;
  signal?: AbortSignal;
  /** Lines about what reins starts for the run (a served engine), for the user. */
  log?: (line: string) => void;
}

export interface EvaluationOutcome extends EvalSummary {
  infraFailures: number;
  timeouts: number;
  runDir: string;
  planHash: string;
  /** Per harness: calls, prompt tokens stored vs fresh, prefix breaks, the would-be batch checked (control/fidelity.ts); absent for a hosted policy. */
  fidelity?: FidelityReport;
  /** Set when the policy is a hosted model: no token ids were recorded, so the run cannot train; says why. */
  evaluationOnly?: string;
  /** True when `signal` stopped the run before every rollout finished (no summary.json then). */
  interrupted: boolean;
  /** The policy's engine, when it is a probed server (vllm, sglang, llama-cpp); also in manifest.json. */
  engine?: EngineSummary;
}

/** The rollouts `reins eval` runs for a plan: every eval step of an Evaluation, an Experiment's first. */
export function listEvaluationRollouts(plan: Plan): { rollouts: PlanRollout[]; step: number } {
  const steps = plan.steps.filter((s) => s.kind === "eval");
  const rollouts = plan.kind === "Evaluation" ? steps.flatMap((s) => s.rollouts) : (steps[0]?.rollouts ?? []);
  return { rollouts, step: steps[0]?.index ?? 0 };
}

/** Run the evaluation rollouts of `plan` into `store` and summarize them (written to summary.json). */
export async function runEvaluation(opts: EvaluationOptions): Promise<EvaluationOutcome> {
  const { plan, store } = opts;
  const { rollouts, step } = listEvaluationRollouts(plan);
  const hosted = plan.model?.engine.type === "hosted" ? plan.model.engine : undefined;
  requireHostedKeys([plan.model, ...(plan.judges ?? [])]);
  // A Model with engine.serve: its vLLM server runs for this evaluation (stopped in the finally).
  const served = await startServedModel(plan, store.dir, { ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.log ? { log: opts.log } : {}) });
  let provider: Awaited<ReturnType<typeof createProvider>> | undefined;
  try {
    provider = await createProvider(plan.sandbox, { hidePaths: [store.dir] });
    // A rubric judged by the served policy asks the server reins started.
    const judges = await createJudges(served.server && served.model ? { ...plan, model: served.model } : plan);
    const executor = await createExecutor({
      plan,
      store,
      provider,
      ...(served.server && served.model ? { model: served.model } : {}),
      ...(judges.judge ? { judge: judges.judge } : {}),
      ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    const engineInfo = executor.proxy?.engineInfo;
    if (engineInfo) store.recordEngine(engineInfo);
    opts.onStart?.(rollouts.length, store.finishedIds().size);
    let results;
    try {
      results = await executor.runRollouts(rollouts, step);
    } finally {
      await executor.close();
      await judges.close();
    }
    const ks = [...new Set([1, plan.attempts].filter((k) => k >= 1))].sort((a, b) => a - b);
    const summary = summarizeResults(results, ks);
    const outcome: EvaluationOutcome = {
      ...summary,
      infraFailures: results.filter((r) => r.status === "infra-failed").length,
      timeouts: results.filter((r) => r.status === "timeout").length,
      runDir: store.dir,
      planHash: plan.hash,
      ...(hosted
        ? {
            evaluationOnly: `the policy ${plan.model!.name} is a hosted ${hosted.api} model (${hosted.model}): its calls were passed through without token ids or logprobs, so this run measures it and cannot train it`,
          }
        : { fidelity: evalFidelity(plan, results, store.calls()) }),
      interrupted: opts.signal?.aborted ?? false,
      ...(engineInfo ? { engine: summarizeEngine(engineInfo) } : {}),
    };
    if (!outcome.interrupted) {
      const { interrupted: _i, ...written } = outcome;
      store.writeJson("summary.json", written);
    }
    return outcome;
  } finally {
    await provider?.close();
    await served.stop();
  }
}
