/** Evaluation metrics: pure functions over rollout outcomes. */
export { defaultKs, passAtK, passHatK } from "./pass-at-k.js";
export { outcomeOf, summarizeEval, topFailures, type EvalSummary, type FailureCount, type Metrics, type RolloutOutcome } from "./summary.js";
export { renderEvalTable, type TableOptions } from "./table.js";
