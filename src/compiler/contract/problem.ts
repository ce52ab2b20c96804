/**
 * One problem shape for the whole of reins — compiler and runtime alike — and the one base error.
 * A Problem is a mistake as a value: a permanent code from the catalogue (codes.ts), what
 * happened, what to do, and where when there is a place. A Diagnostic (diagnostics.ts) is a
 * Problem with a position and a severity. A ReinsError carries a Problem through a `throw` from an
 * effect (a dead trainer, a sandbox that would not start); the CLI turns any of them into
 * `error[Code]: message` + hint and exit 1. Anything else thrown is a bug.
 */
import { CODES, type Code } from "./codes.js";

/** A place in a file the user wrote. */
export interface SourcePosition {
  /** Path of the file as the user gave it (relative paths stay relative). */
  file: string;
  /** 1-based line. */
  line: number;
  /** 1-based column. */
  column: number;
  endLine?: number;
  endColumn?: number;
}

export interface Problem {
  /** Permanent PascalCase code from the catalogue. */
  code: Code;
  /** What happened and why. */
  message: string;
  /** What to do about it. */
  hint: string;
  /** Where, when the problem has a place in a file. */
  position?: SourcePosition;
}

/** A Problem; the hint defaults to the catalogue's. */
export function makeProblem(code: Code, message: string, hint: string = CODES[code], position?: SourcePosition): Problem {
  return position ? { code, message, hint, position } : { code, message, hint };
}

/** A result that is either a value or the one problem that kept it from being made. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; problem: Problem };

export function succeed<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

/** A failed Outcome; the hint defaults to the catalogue's. */
export function failWith<T = never>(code: Code, message: string, hint: string = CODES[code]): Outcome<T> {
  return { ok: false, problem: { code, message, hint } };
}

export class ReinsError extends Error {
  readonly code: Code;
  readonly hint: string;
  readonly position?: SourcePosition;

  /** `hint` defaults to the catalogue's hint for the code (also when given empty). */
  constructor(code: Code, message: string, hint?: string, options?: { cause?: unknown; position?: SourcePosition }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = new.target.name;
    this.code = code;
    this.hint = hint || CODES[code];
    if (options?.position) this.position = options.position;
  }

  /** A ReinsError from a Problem (e.g. a failed Outcome an effect cannot go on without). */
  static of(problem: Problem, options?: { cause?: unknown }): ReinsError {
    return new ReinsError(problem.code, problem.message, problem.hint, { ...options, ...(problem.position ? { position: problem.position } : {}) });
  }

  get problem(): Problem {
    return { code: this.code, message: this.message, hint: this.hint, ...(this.position ? { position: this.position } : {}) };
  }
}

export function isReinsError(error: unknown): error is ReinsError {
  return error instanceof ReinsError;
}
