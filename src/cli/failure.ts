/**
 * The one place a failure becomes output. An expected failure (a ReinsError, or an operating
 * system error on a named file) prints `error[Code]: message` + `  hint: …` on stderr, or
 * `{ok: false, problems, diagnostics}` on stdout with --json, and exits 1. Anything else is a bug
 * in reins: one line asking to report it, exit 70; the stack only with REINS_DEBUG=1.
 */
import { inspect } from "node:util";
import { CODES, diagnosticOf, DiagnosticsError, isReinsError, ReinsError, type Diagnostic, type Problem } from "../compiler/index.js";
import { EXIT } from "./exit-codes.js";
import { printable, renderDiagnostics } from "./render/diagnostics.js";
import { renderProblems } from "./render/problems.js";

/** Exit code of a bug (EX_SOFTWARE). */
export const EXIT_BUG = 70;

export interface FailureOptions {
  /** --json: the problems go to stdout as JSON. */
  json: boolean;
  /** REINS_DEBUG=1: add the stack (and causes) on stderr. */
  debug: boolean;
  color: boolean;
}

export interface RenderedFailure {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** What to print, and the exit code, for anything a command threw. Pure. */
export function renderFailure(error: unknown, opts: FailureOptions): RenderedFailure {
  const expected = expectedFailure(error);
  const debug = opts.debug ? `${inspect(error, { depth: 6 })}\n` : "";
  if (expected) {
    const many = expected instanceof DiagnosticsError;
    const diagnostics = many ? expected.diagnostics : [diagnosticOf(expected.problem)];
    const problems = many ? diagnostics.filter((d) => d.severity === "error").map(problemFromDiagnostic) : [expected.problem];
    const human = many ? renderDiagnostics(diagnostics, opts.color) : renderProblems(problems, opts.color);
    return { stdout: opts.json ? jsonFailure(problems, diagnostics) : "", stderr: (opts.json ? "" : human) + debug, exitCode: EXIT.failed };
  }
  const message = printable(oneLine(error instanceof Error ? error.message : String(error)));
  const line = `reins: internal error (a bug): ${message}. Please report it with REINS_DEBUG=1 output.\n`;
  const problem: Problem = { code: "InternalError", message, hint: CODES.InternalError };
  return { stdout: opts.json ? jsonFailure([problem], [diagnosticOf(problem)]) : "", stderr: line + debug, exitCode: EXIT_BUG };
}

/** The ReinsError a thrown value stands for, or undefined when it is a bug. */
export function expectedFailure(error: unknown): ReinsError | undefined {
  if (isReinsError(error)) return error;
  // A full disk or quota (a write without a path: a descriptor's) is the machine's state, not a bug.
  const full =
    error instanceof Error && ["ENOSPC", "EDQUOT"].includes(String((error as NodeJS.ErrnoException).code)) ? (error as NodeJS.ErrnoException) : undefined;
  if (full)
    return new ReinsError("DiskFull", `Cannot ${full.path ? `write ${full.path}` : "write"}: ${describeErrno(full)}.`, CODES.DiskFull, { cause: error });
  const sys = systemError(error);
  if (sys)
    return new ReinsError("FileSystemError", `Cannot ${verbOf(sys.syscall)} ${sys.path}: ${describeErrno(sys)}.`, CODES.FileSystemError, { cause: error });
  return undefined;
}

/**
 * For a path the user named as an output: an operating system error writing it becomes
 * OutputIsDirectory / OutputUnwritable; anything else is returned as it is (to be rethrown).
 */
export function outputError(path: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (isReinsError(error) || !(error instanceof Error) || typeof code !== "string" || !/^E[A-Z]+$/.test(code)) return error;
  if (code === "EISDIR") return new ReinsError("OutputIsDirectory", `Cannot write ${path}: it is a directory.`, undefined, { cause: error });
  return new ReinsError("OutputUnwritable", `Cannot write ${path}: ${describeErrno(error)}.`, undefined, { cause: error });
}

/** The --json form of a failure: `{ok: false, problems, diagnostics}` (diagnostics: the shape `validate --json` uses too). */
export function jsonFailure(problems: readonly Problem[], diagnostics: readonly Diagnostic[]): string {
  return `${JSON.stringify({ ok: false, problems, diagnostics }, null, 2)}\n`;
}

export function problemFromDiagnostic(d: Diagnostic): Problem {
  return { code: d.code, message: d.message, hint: d.hint, position: { file: d.file, line: d.line, column: d.column } };
}

interface SystemError {
  code: string;
  syscall: string;
  path: string;
  message: string;
}

/** Node's errors of file system calls (ENOENT, EACCES, …) carry code, syscall and path. */
function systemError(error: unknown): SystemError | undefined {
  const e = error as Partial<SystemError> | undefined;
  if (!(error instanceof Error) || typeof e?.code !== "string" || !/^E[A-Z]+$/.test(e.code)) return undefined;
  if (typeof e.syscall !== "string" || typeof e.path !== "string") return undefined;
  return e as SystemError;
}

const ERRNO_WORDS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  ENOTDIR: "a part of the path is not a directory",
  EISDIR: "it is a directory",
  EEXIST: "it already exists",
  EMFILE: "too many open files",
  ENAMETOOLONG: "the name is too long",
  ELOOP: "too many symbolic links",
};

function describeErrno(e: { code?: string; message: string }): string {
  return (e.code && ERRNO_WORDS[e.code]) ?? e.message;
}

const VERBS: Record<string, string> = {
  mkdir: "create",
  scandir: "list",
  opendir: "list",
  stat: "read",
  lstat: "read",
  unlink: "remove",
  rmdir: "remove",
  rm: "remove",
};

function verbOf(syscall: string): string {
  return VERBS[syscall] ?? syscall;
}

function oneLine(message: string): string {
  const first = message.split("\n").find((l) => l.trim() !== "") ?? "";
  return first.trim().replace(/[.:]$/, "") || "(no message)";
}
