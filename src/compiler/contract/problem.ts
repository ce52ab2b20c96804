/**
 * One problem shape for the whole of reins — compiler and runtime alike — and the one base error.
 * A Problem is a mistake as a value: a permanent code from the catalogue (codes.ts), what
 * happened, what to do, and where when there is a place. A ReinsError carries a Problem through a
 * `throw` from an effect (a dead trainer, a sandbox that would not start); the CLI turns any of
 * them into `error[Code]: message` + hint and exit 1. Anything else thrown is a bug.
 */
import type { SourcePosition } from "./diagnostics.js";

export interface Problem {
  /** Permanent PascalCase code from the catalogue. */
  code: string;
  /** What happened and why. */
  message: string;
  /** What to do about it. */
  hint: string;
  /** Where, when the problem has a place in a file. */
  position?: SourcePosition;
}

export class ReinsError extends Error {
  readonly code: string;
  readonly hint: string;
  readonly position?: SourcePosition;

  constructor(code: string, message: string, hint: string, options?: { cause?: unknown; position?: SourcePosition }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = new.target.name;
    this.code = code;
    this.hint = hint;
    if (options?.position) this.position = options.position;
  }

  get problem(): Problem {
    return { code: this.code, message: this.message, hint: this.hint, ...(this.position ? { position: this.position } : {}) };
  }
}

export function isReinsError(error: unknown): error is ReinsError {
  return error instanceof ReinsError;
}
