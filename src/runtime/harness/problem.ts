/**
 * A harness problem: something about installing or launching a harness that went wrong and that a
 * user (or the infrastructure) can fix. Problems are values; `throw` is kept for bugs. The shape
 * is reins' one Problem (src/compiler/contract/problem.ts).
 */
import type { Code } from "../../compiler/contract/codes.js";
import { failWith, type Outcome, type Problem } from "../../compiler/contract/problem.js";

export { succeed, type Outcome } from "../../compiler/contract/problem.js";

/** @deprecated the same as Problem. */
export type HarnessProblem = Problem;

export function fail<T = never>(code: Code, message: string, hint?: string): Outcome<T> {
  return failWith<T>(code, message, hint);
}
