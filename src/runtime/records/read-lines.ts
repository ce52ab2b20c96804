/**
 * The JSON-lines reading both record readers share: one JSON object per line, blank lines
 * skipped, every mistake a diagnostic with its catalogued code (src/compiler/contract/codes.ts)
 * and its line. Pure: text in, values and diagnostics out.
 */
import { CODES, type DiagnosticCode } from "../../compiler/contract/codes.js";
import type { Diagnostic } from "../../compiler/contract/diagnostics.js";
import { makeDiagnostic } from "../../compiler/contract/diagnostics.js";

/** Which record format a line belongs to: the prefix of its diagnostic codes. */
export type RecordKind = "CallRecord" | "RolloutRecord";

export interface ReadOptions {
  /**
   * Drop a last line that is not JSON and has no newline after it, without a diagnostic: the line a
   * crash tore while it was appended (the run store reads its own files this way).
   */
  tornTail?: boolean;
}

/** A mistake in one line; `suffix` completes the kind's code (NotObject, MissingField, …). */
export class LineError {
  constructor(
    readonly suffix: string,
    readonly message: string,
  ) {}
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function failField(field: string, expected: string, got: unknown): never {
  const shown = JSON.stringify(got);
  const short = shown === undefined ? String(got) : shown.length > 40 ? `${shown.slice(0, 40)}…` : shown;
  throw new LineError("InvalidField", `field \`${field}\` must be ${expected}, got ${short}`);
}

export function needField(obj: Record<string, unknown>, field: string, note = ""): unknown {
  if (!(field in obj)) throw new LineError("MissingField", `field \`${field}\` is missing${note}`);
  return obj[field];
}

/** An optional field: `fallback` when absent, checked when present. */
export function optionalField<T>(obj: Record<string, unknown>, field: string, check: (v: unknown) => boolean, expected: string, fallback: T): T {
  if (!(field in obj)) return fallback;
  const v = obj[field];
  if (!check(v)) failField(field, expected, v);
  return v as T;
}

export function diagnosticOf(code: DiagnosticCode, at: { file: string; line: number; column?: number }, message: string, severity: Diagnostic["severity"] = "error"): Diagnostic {
  return makeDiagnostic(code, { file: at.file, line: at.line, column: at.column ?? 1 }, message, CODES[code], severity);
}

/**
 * Parse each non-blank line as JSON and hand it to `parseLine`; a LineError becomes a diagnostic
 * with the kind's code. Returns the parsed values with their 1-based line numbers.
 */
export function readJsonLines<T>(
  text: string,
  file: string,
  kind: RecordKind,
  parseLine: (value: unknown, line: number) => T,
  options: ReadOptions = {},
): { items: { value: T; line: number }[]; diagnostics: Diagnostic[] } {
  const items: { value: T; line: number }[] = [];
  const diagnostics: Diagnostic[] = [];
  const lines = text.split("\n");
  const lastLine = lastNonBlank(lines);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      const torn = options.tornTail === true && i === lastLine && i === lines.length - 1;
      if (torn) continue;
      const message = (err as Error).message;
      diagnostics.push(diagnosticOf(`${kind}NotJson`, { file, line: i + 1, column: jsonColumn(message) }, `line is not valid JSON (${message})`));
      continue;
    }
    try {
      items.push({ value: parseLine(value, i + 1), line: i + 1 });
    } catch (err) {
      if (!(err instanceof LineError)) throw err;
      diagnostics.push(diagnosticOf(`${kind}${err.suffix}` as DiagnosticCode, { file, line: i + 1 }, err.message));
    }
  }
  return { items, diagnostics };
}

function lastNonBlank(lines: readonly string[]): number {
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.trim() !== "") return i;
  return -1;
}

function jsonColumn(message: string): number {
  const m = /position (\d+)/.exec(message) ?? /column (\d+)/.exec(message);
  if (!m) return 1;
  return /position/.test(m[0]) ? Number(m[1]) + 1 : Number(m[1]);
}
