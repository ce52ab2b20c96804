/**
 * The JSON-lines reading both record readers share: one JSON object per line, blank lines
 * skipped, every mistake a diagnostic with its catalogued code (src/compiler/contract/codes.ts)
 * and its line. Pure: text in, values and diagnostics out.
 */
import { CODES, type Code, type DiagnosticCode } from "../../compiler/contract/codes.js";
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

/** What can be wrong with one line; each record kind has its own code for each (LINE_CODES). */
export type LineMistake = "NotJson" | "NotObject" | "MissingField" | "InvalidField" | "Version" | "LogprobMismatch";

/** The catalogued code of each mistake, per record kind (spelled out, so every code is findable). */
const LINE_CODES = {
  CallRecord: {
    NotJson: "CallRecordNotJson",
    NotObject: "CallRecordNotObject",
    MissingField: "CallRecordMissingField",
    InvalidField: "CallRecordInvalidField",
    Version: "CallRecordVersion",
    LogprobMismatch: "CallRecordLogprobMismatch",
  },
  RolloutRecord: {
    NotJson: "RolloutRecordNotJson",
    NotObject: "RolloutRecordNotObject",
    MissingField: "RolloutRecordMissingField",
    InvalidField: "RolloutRecordInvalidField",
  },
} as const satisfies Record<RecordKind, Partial<Record<LineMistake, Code>>>;

function codeOf(kind: RecordKind, mistake: LineMistake): DiagnosticCode {
  const codes: Partial<Record<LineMistake, Code>> = LINE_CODES[kind];
  const code = codes[mistake];
  if (!code) throw new Error(`bug: a ${kind} line cannot be ${mistake}`);
  return code;
}

/** A mistake in one line, thrown by a line parser and turned into a diagnostic with its kind's code. */
export class LineProblem {
  constructor(
    readonly mistake: LineMistake,
    readonly message: string,
  ) {}
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function failField(field: string, expected: string, got: unknown): never {
  const shown = JSON.stringify(got);
  const short = shown === undefined ? String(got) : shown.length > 40 ? `${shown.slice(0, 40)}…` : shown;
  throw new LineProblem("InvalidField", `field \`${field}\` must be ${expected}, got ${short}`);
}

export function needField(obj: Record<string, unknown>, field: string, note = ""): unknown {
  if (!(field in obj)) throw new LineProblem("MissingField", `field \`${field}\` is missing${note}`);
  return obj[field];
}

/** An optional field: `fallback` when absent, checked when present. */
export function optionalField<T>(obj: Record<string, unknown>, field: string, check: (v: unknown) => boolean, expected: string, fallback: T): T {
  if (!(field in obj)) return fallback;
  const v = obj[field];
  if (!check(v)) failField(field, expected, v);
  return v as T;
}

export function diagnosticOf(
  code: DiagnosticCode,
  at: { file: string; line: number; column?: number },
  message: string,
  severity: Diagnostic["severity"] = "error",
): Diagnostic {
  return makeDiagnostic(code, { file: at.file, line: at.line, column: at.column ?? 1 }, message, CODES[code], severity);
}

/**
 * Parse each non-blank line as JSON and hand it to `parseLine`; a LineProblem becomes a diagnostic
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
      diagnostics.push(diagnosticOf(codeOf(kind, "NotJson"), { file, line: i + 1, column: jsonColumn(message) }, `line is not valid JSON (${message})`));
      continue;
    }
    try {
      items.push({ value: parseLine(value, i + 1), line: i + 1 });
    } catch (err) {
      if (!(err instanceof LineProblem)) throw err;
      diagnostics.push(diagnosticOf(codeOf(kind, err.mistake), { file, line: i + 1 }, err.message));
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
