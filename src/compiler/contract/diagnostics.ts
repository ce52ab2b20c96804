/**
 * Diagnostics: mistakes are values. Every compiler function returns `{value, diagnostics}`
 * and keeps going; `throw` is reserved for bugs. A Diagnostic is a Problem (problem.ts) with a
 * position in a file (flattened: file, line, column) and a severity.
 */
import { CODES, type Code } from "./codes.js";
import { ReinsError, type Problem, type SourcePosition } from "./problem.js";

export type { SourcePosition };

export type Severity = "error" | "warning" | "info";

/**
 * A positioned Problem: `code` (permanent, from the catalogue, e.g. `UnknownField`), `message`
 * (what happened and why; no location, no "Error:" prefix), `hint` (what to do), where, and how bad.
 */
export interface Diagnostic extends Omit<Problem, "position">, SourcePosition {
  severity: Severity;
  /** Extra context lines (e.g. "rendered from matrix cell {who: ada}"). */
  notes?: string[];
}

export interface Result<T> {
  value: T;
  diagnostics: Diagnostic[];
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}

export function makeDiagnostic(code: Code, at: SourcePosition, message: string, hint: string, severity: Severity = "error", notes?: string[]): Diagnostic {
  const d: Diagnostic = { code, severity, message, hint, file: at.file, line: at.line, column: at.column };
  if (at.endLine !== undefined) d.endLine = at.endLine;
  if (at.endColumn !== undefined) d.endColumn = at.endColumn;
  if (notes && notes.length > 0) d.notes = notes;
  return d;
}

/** Stable ordering for output: file, line, column, code. */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  return [...diagnostics].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column || a.code.localeCompare(b.code));
}

/** The Problem a diagnostic stands for (its position kept). */
export function problemOf(d: Diagnostic): Problem {
  const position: SourcePosition = { file: d.file, line: d.line, column: d.column };
  if (d.endLine !== undefined) position.endLine = d.endLine;
  if (d.endColumn !== undefined) position.endColumn = d.endColumn;
  return { code: d.code, message: d.message, hint: d.hint, position };
}

/**
 * A Problem as a diagnostic (for `{ok: false, diagnostics}` JSON and the code-frame renderer). A
 * problem without a place gets file "" and line/column 0.
 */
export function diagnosticOf(p: Problem, severity: Severity = "error"): Diagnostic {
  return makeDiagnostic(p.code, p.position ?? { file: "", line: 0, column: 0 }, p.message, p.hint || CODES[p.code], severity);
}

/**
 * A failure that carries diagnostics (specs that do not compile, a config that does not load): the
 * code, message and hint are the first error's; the CLI prints every diagnostic.
 */
export class DiagnosticsError extends ReinsError {
  readonly diagnostics: Diagnostic[];

  constructor(diagnostics: readonly Diagnostic[]) {
    const first = diagnostics.find((d) => d.severity === "error") ?? diagnostics[0];
    if (!first) throw new Error("DiagnosticsError needs at least one diagnostic");
    super(first.code, first.message, first.hint, { position: problemOf(first).position! });
    this.diagnostics = [...diagnostics];
  }
}
