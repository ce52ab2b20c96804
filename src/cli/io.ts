/** Small I/O helpers for commands: JSON on stdout, talk on stderr, output files. */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Diagnostic } from "../compiler/index.js";
import { outputError } from "./failure.js";
import { renderDiagnostics } from "./render/diagnostics.js";

/** `--project-root DIR`, on every command that loads specs: the one directory specs may read. */
export const PROJECT_ROOT_OPTION = [
  "--project-root <dir>",
  "the directory specs may read (imports, workspace from/fromDir, mounts); default: the directory holding the spec paths given",
] as const;

/** `{projectRoot}` for the compiler when the flag was given. */
export function projectRootOf(opts: { projectRoot?: string }): { projectRoot?: string } {
  return opts.projectRoot !== undefined ? { projectRoot: opts.projectRoot } : {};
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function say(text: string): void {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function reportDiagnostics(diagnostics: readonly Diagnostic[], json: boolean): void {
  if (!json && diagnostics.length > 0) process.stderr.write(renderDiagnostics(diagnostics));
}

export function errorCount(diagnostics: readonly Diagnostic[]): number {
  return diagnostics.filter((d) => d.severity === "error").length;
}

/**
 * Write a file the user named (`--out`, `--record`): its directory is created; a path that cannot
 * be written throws OutputUnwritable / OutputIsDirectory.
 */
export function writeOutputFile(path: string, data: string | Uint8Array, options?: { flag?: string }): void {
  try {
    makeDirectory(dirname(path));
    writeFileSync(path, data, options);
  } catch (err) {
    throw outputError(path, err);
  }
}

/** Run an effect that writes to a path the user named; its file system errors become OutputUnwritable. */
export async function writingTo<T>(path: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw outputError(path, err);
  }
}

/**
 * `mkdir -p` that fails with the operating system's error. Node 20's recursive mkdir never
 * returns where mkdir answers ENOENT although the parent exists (e.g. under /proc), so the
 * missing directories are made one by one.
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); d = dirname(d)) {
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}
