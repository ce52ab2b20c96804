/**
 * Diagnostics: mistakes are values. Every compiler function returns `{value, diagnostics}`
 * and keeps going; `throw` is reserved for bugs.
 */
export type Severity = "error" | "warning" | "info";

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

export interface Diagnostic {
  /** Permanent PascalCase code, e.g. `UnknownField`. Never renamed once shipped. */
  code: string;
  severity: Severity;
  /** What happened and why. No location, no "Error:" prefix. */
  message: string;
  /** What to do about it. */
  hint: string;
  file: string;
  line: number;
  column: number;
  endLine?: number;
  endColumn?: number;
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

export function makeDiagnostic(
  code: string,
  at: SourcePosition,
  message: string,
  hint: string,
  severity: Severity = "error",
  notes?: string[],
): Diagnostic {
  const d: Diagnostic = { code, severity, message, hint, file: at.file, line: at.line, column: at.column };
  if (at.endLine !== undefined) d.endLine = at.endLine;
  if (at.endColumn !== undefined) d.endColumn = at.endColumn;
  if (notes && notes.length > 0) d.notes = notes;
  return d;
}

/** Stable ordering for output: file, line, column, code. */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  return [...diagnostics].sort(
    (a, b) =>
      a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column || a.code.localeCompare(b.code),
  );
}
