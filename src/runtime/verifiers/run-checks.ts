/** The checks part: every declarative check evaluated on the final workspace, then weighted. */
import type { ResolvedCheck } from "../../compiler/contract/plan.js";
import type { CheckContext } from "./checks/context.js";
import { findCheck } from "./checks/registry.js";

export interface VerifierProblem {
  code: string;
  message: string;
}

export interface CheckResult {
  type: string;
  /** The check's `name`, or its default label ("fileExists out.txt"). */
  name: string;
  weight: number;
  pass: boolean;
  score: number;
  /** A sentence a person can read. */
  reason: string;
  /** Set when the verifier could not judge this check (bad spec, no exec): not a task failure. */
  error?: VerifierProblem;
  /** A permanent code for a failure reins decided itself, before any check ran (WorkspaceTooLarge). */
  code?: string;
}

export interface ChecksPart {
  score: number;
  passed: number;
  total: number;
  results: CheckResult[];
  /** The first check error, when any check could not be judged. */
  error?: VerifierProblem;
}

const CONCURRENCY = 16;

async function evaluateOne(check: ResolvedCheck, ctx: CheckContext): Promise<CheckResult> {
  const def = findCheck(check.type);
  const weight = typeof check.weight === "number" ? check.weight : 1;
  const base = { type: check.type, weight };
  if (!def) {
    const error = { code: "UnknownCheckType", message: `reins has no check of type "${check.type}"` };
    return { ...base, name: (check.name as string) ?? check.type, pass: false, score: 0, reason: `${error.message}.`, error };
  }
  const name = typeof check.name === "string" ? check.name : def.label(check);
  try {
    const out = await def.evaluate(check, ctx);
    if ("error" in out) return { ...base, name, pass: false, score: 0, reason: `${out.error.message}.`, error: out.error };
    return { ...base, name, pass: out.pass, score: Math.min(1, Math.max(0, out.score)), reason: out.reason };
  } catch (e) {
    const error = { code: "CheckCrashed", message: `the ${check.type} check failed unexpectedly: ${(e as Error)?.message ?? e}` };
    return { ...base, name, pass: false, score: 0, reason: `${error.message}.`, error };
  }
}

/** Runs file checks concurrently (bounded) and command checks one after another. */
export async function runChecks(checks: readonly ResolvedCheck[], ctx: CheckContext): Promise<ChecksPart> {
  const results: CheckResult[] = new Array(checks.length);
  const fileIdx = checks.map((c, i) => (c.type === "commandExitsZero" ? -1 : i)).filter((i) => i >= 0);
  const cmdIdx = checks.map((c, i) => (c.type === "commandExitsZero" ? i : -1)).filter((i) => i >= 0);
  let next = 0;
  const worker = async () => {
    while (next < fileIdx.length) {
      const i = fileIdx[next++];
      results[i] = await evaluateOne(checks[i], ctx);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, fileIdx.length) }, worker));
  for (const i of cmdIdx) results[i] = await evaluateOne(checks[i], ctx);

  const totalWeight = results.reduce((s, r) => s + r.weight, 0);
  const score = totalWeight > 0 ? results.reduce((s, r) => s + r.weight * r.score, 0) / totalWeight : results.every((r) => r.pass) ? 1 : 0;
  const part: ChecksPart = { score, passed: results.filter((r) => r.pass).length, total: results.length, results };
  const firstError = results.find((r) => r.error);
  if (firstError?.error) part.error = { code: firstError.error.code, message: `${firstError.name}: ${firstError.error.message}` };
  return part;
}
