/** Verifiers: score a final workspace with checks, a script and a rubric. */
export { CHECKS, findCheck } from "./checks/registry.js";
export { CheckContext, DEFAULT_MAX_FILE_BYTES, type CheckDefinition, type CheckOutcome } from "./checks/context.js";
export { combineScores, type Combined, type PartName, type PartScores } from "./combine.js";
export { DirectoryReader, verifierEnv } from "./directory-reader.js";
export { materializeHiddenFiles, writeResolvedFiles, type HiddenDir } from "./hidden.js";
export { createEngineJudge, judgeFromFunction, type Judge, type JudgeReply, type JudgeRequest } from "./judge.js";
export { buildJudgePrompt, JUDGE_SYSTEM } from "./rubric-prompt.js";
export { parseJudgeScores } from "./rubric-parse.js";
export { DEFAULT_RUBRIC_LIMITS, gatherRubricFiles, runRubric, type JudgeCall, type RubricPart } from "./rubric.js";
export { runChecks, type CheckResult, type ChecksPart, type VerifierProblem } from "./run-checks.js";
export { parseScriptOutput, runScript, type ScriptPart } from "./script.js";
export { runVerifier, verifyTask, type VerifierResult, type VerifyOptions } from "./verify.js";
export * from "./workspace.js";
