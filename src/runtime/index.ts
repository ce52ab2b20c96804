/**
 * The runtime's front door: everything outside src/runtime (the CLI, the public reins/testing
 * module) uses the runtime through this file only. It carries a plan out; it prints nothing and
 * reads no argv (callers pass callbacks for progress and log lines).
 */

// The plan that runs: finished in one place, or read back from a reviewed plan file.
export { finishPlan, isPlanFile, planSpecs, readPlanFile } from "./control/plan.js";
// Run directories: new, or resumed with the plan they started with.
export { buildRunManifest, checkRunKind, openRun, readReinsVersion, readRunPlan, type OpenRunOptions, type RunKind } from "./control/run-directory.js";
export type { RolloutResult } from "./records/index.js";
export type { RunStore } from "./store/run-store.js";

// `reins eval`: evaluation rollouts and their pass@k / pass^k summary.
export { listEvaluationRollouts, runEvaluation, type EvaluationOptions, type EvaluationOutcome } from "./control/evaluation.js";
export { renderEvalTable, type EvalSummary } from "./eval/index.js";
// Both: the fidelity report, per harness (summary.json, --json, the printed summary).
export type { FidelityReport, HarnessFidelity } from "./trajectories/fidelity.js";

// `reins run`: the training loop, the sandbox provider it runs in, and the ways it stops.
export { LoopError, runExperiment, type LoopOptions, type RunOutcome } from "./control/loop.js";
export { createProvider } from "./executor/providers.js";
export { runSummary, type RunSummary } from "./control/run-summary.js";
// `reins run` of several seeds: a run directory per seed, one after another, and the spread over them.
export { openSeedsDirectory, runSeeds, type SeedsOptions, type SeedsOutcome } from "./control/seeds.js";
export type { GainSpread, OverSeeds, SeedEntry, SeedsSummary } from "./control/seed-summary.js";
export { EngineError, summarizeEngine, type EngineInfo, type EngineSummary } from "./engines/engine.js";
export { checkSamplingFidelity, requireSamplingFidelity, requireTrainable } from "./engines/fidelity.js";
export { TrainerError } from "./training/trainer-error.js";

// `reins proxy`: the serving proxy alone.
export { startProxy } from "./proxy/server.js";
export type { ProxyHandle, ProxyOptions } from "./proxy/api.js";
export { ModelLoadError } from "./model/model-runtime.js";

// `reins trajectories`: prefix trees, filters, advantages and batches of recorded calls.
export {
  analyzeRollouts,
  buildReport,
  buildSftSamples,
  buildTrainingBatch,
  parseCallRecords,
  parseRewards,
  renderTreeSvg,
  type BatchReport,
  type RewardTable,
} from "./trajectories/index.js";
export { readTextFile, writeBatchDirectory, writeJsonl, writeTextFile } from "./trajectories/io.js";

// Verifiers, for checking a task family against its reference solution (reins/testing).
export { DirectoryReader, judgeFromFunction, runVerifier, writeResolvedFiles, type Judge, type VerifierResult } from "./verifiers/index.js";

// The run viewer (reins view).
export { isLoopbackHost, startViewServer, type ViewHandle, type ViewOptions } from "./view/server.js";

// `reins synth`: task families written by a generator, kept only when they pass the gates.
export { runSynthesis, type SynthesisOptions, type SynthesisSummary } from "./synth/synthesize.js";
export { exitEarly } from "./synth/mutations.js";
