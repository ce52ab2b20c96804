/**
 * Run a verifier on a final workspace: checks, script, rubric, combined into a reward in [0, 1].
 * A part that cannot judge (bad output, timeout, judge unreachable) makes the result a verifier
 * error with reward null: the executor reports or retries it, and never records it as reward 0.
 */
import type { ResolvedFile, ResolvedTask, ResolvedVerifier } from "../../compiler/contract/plan.js";
import type { McpCallRecord } from "../records/rollout-result.js";
import { CheckContext } from "./checks/context.js";
import { combineScores, type PartName, type PartScores } from "./combine.js";
import { DirectoryReader } from "./directory-reader.js";
import { materializeHiddenFiles } from "./hidden.js";
import type { Judge } from "./judge.js";
import { runRubric, type RubricLimits, type RubricPart } from "./rubric.js";
import { runChecks, type ChecksPart } from "./run-checks.js";
import { runScript, type ScriptPart } from "./script.js";
import type { WorkspaceReader } from "./workspace.js";

export interface VerifyOptions {
  /** The final workspace. */
  reader: WorkspaceReader;
  /** The task instruction (for the judge). */
  instruction: string;
  /** Hidden files: materialized in a private directory for this verification only. */
  hiddenFiles?: readonly ResolvedFile[];
  /** Or a directory that already holds them (left in place). */
  hiddenDir?: string;
  judge?: Judge;
  rollout?: string;
  /** Cap on files read by checks (default 16 MiB). */
  maxFileBytes?: number;
  rubricLimits?: Partial<RubricLimits>;
  signal?: AbortSignal;
  /** The try's MCP tools/calls (mcpCall checks); absent when the rollout had no MCP servers. */
  mcpCalls?: readonly McpCallRecord[];
}

export interface VerifierResult {
  status: "ok" | "error";
  /** In [0, 1]; null when status is "error". */
  reward: number | null;
  passed: boolean;
  passThreshold: number;
  parts: { checks?: ChecksPart; script?: ScriptPart; rubric?: RubricPart };
  /** Effective weight per part (weighted mode). */
  weights: Partial<Record<PartName, number>>;
  error?: { part: PartName | "verifier"; code: string; message: string };
  durationMs: number;
}

export async function runVerifier(verifier: ResolvedVerifier, opts: VerifyOptions): Promise<VerifierResult> {
  const started = Date.now();
  let hiddenDir = opts.hiddenDir;
  let cleanup: (() => Promise<void>) | undefined;
  if (hiddenDir === undefined && opts.hiddenFiles && opts.hiddenFiles.length > 0) {
    const h = await materializeHiddenFiles(opts.hiddenFiles);
    hiddenDir = h.dir;
    cleanup = h.remove;
  }
  try {
    const result: VerifierResult = { status: "ok", reward: null, passed: false, passThreshold: verifier.passThreshold, parts: {}, weights: {}, durationMs: 0 };
    const scores: PartScores = {};
    const errors: { part: PartName; code: string; message: string }[] = [];

    if (verifier.checks.length > 0) {
      const ctx = new CheckContext(opts.reader, {
        ...(hiddenDir !== undefined ? { hidden: new DirectoryReader(hiddenDir, { exec: false }), hiddenDir } : {}),
        ...(opts.maxFileBytes !== undefined ? { maxFileBytes: opts.maxFileBytes } : {}),
        ...(opts.mcpCalls ? { mcpCalls: opts.mcpCalls } : {}),
      });
      const part = await runChecks(verifier.checks, ctx);
      result.parts.checks = part;
      if (part.error) errors.push({ part: "checks", ...part.error });
      else scores.checks = part.score;
    }
    if (verifier.script) {
      const part = await runScript(verifier.script, opts.reader, hiddenDir !== undefined ? { hiddenDir } : {});
      result.parts.script = part;
      if (part.error) errors.push({ part: "script", ...part.error });
      else scores.script = part.score;
    }
    // The judge is the costly part: skip it when the verifier has already failed.
    if (verifier.rubric && errors.length === 0) {
      const part = await runRubric(verifier.rubric, {
        instruction: opts.instruction,
        reader: opts.reader,
        ...(opts.judge ? { judge: opts.judge } : {}),
        ...(opts.rollout ? { rollout: opts.rollout } : {}),
        ...(opts.rubricLimits ? { limits: opts.rubricLimits } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      result.parts.rubric = part;
      if (part.error) errors.push({ part: "rubric", ...part.error });
      else scores.rubric = part.score;
    }

    if (errors.length > 0) {
      result.status = "error";
      result.error = errors[0];
    } else if (Object.keys(scores).length === 0) {
      result.status = "error";
      result.error = { part: "verifier", code: "EmptyVerifier", message: "the verifier has no checks, script or rubric" };
    } else {
      const combined = combineScores(scores, verifier.combine, verifier.passThreshold);
      result.reward = combined.reward;
      result.weights = combined.weights;
      result.passed = combined.reward >= verifier.passThreshold;
    }
    result.durationMs = Date.now() - started;
    return result;
  } finally {
    await cleanup?.();
  }
}

/** Verify a task's final workspace with its own verifier, instruction and hidden files. */
export function verifyTask(task: ResolvedTask, opts: Omit<VerifyOptions, "instruction" | "hiddenFiles">): Promise<VerifierResult> {
  return runVerifier(task.verifier, { ...opts, instruction: task.instruction, hiddenFiles: task.hiddenFiles });
}
