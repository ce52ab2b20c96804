/**
 * Finding and reading spec files. The only I/O of the compiler besides workspace directories;
 * both go through project.ts (regular files only, non-blocking, size-capped).
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import { extname, join, relative, resolve } from "node:path";
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import { MAX_DIR_ENTRIES, MAX_SPEC_BYTES, MAX_SPEC_FILES, readRegularFile, type ProjectRoot } from "./project.js";

export { MAX_SPEC_BYTES };

export interface SourceText {
  /** Path as shown to the user. */
  file: string;
  /** Absolute path. */
  absPath: string;
  text: string;
  /** The project this file belongs to: the host paths it names resolve inside it. */
  roots?: readonly ProjectRoot[];
}

const SPEC_EXTENSIONS = new Set([".yaml", ".yml"]);

/** Expand files and directories (recursively, *.yaml / *.yml, sorted) into a file list. */
/** `cwd`: relative paths are resolved from it and shown relative to it. */
export function listSpecFiles(paths: readonly string[], cwd: string): Result<string[]> {
  const diagnostics: Diagnostic[] = [];
  const out: string[] = [];
  const seen = new Set<string>();
  for (const p of paths) {
    const abs = resolve(cwd, p);
    let st;
    try {
      st = statSync(abs);
    } catch {
      diagnostics.push(makeDiagnostic("FileNotFound", { file: p, line: 1, column: 1 }, `No such file or directory: ${p}.`, CODES.FileNotFound));
      continue;
    }
    const walked = st.isDirectory() ? walkSpecDir(abs) : { files: [abs], full: false };
    if (walked.full) {
      diagnostics.push(
        makeDiagnostic(
          "DirectoryTooLarge",
          { file: p, line: 1, column: 1 },
          `${p} holds more than ${MAX_SPEC_FILES} spec files or ${MAX_DIR_ENTRIES} entries; none of it was read.`,
          CODES.DirectoryTooLarge,
        ),
      );
      continue;
    }
    for (const f of walked.files) {
      if (seen.has(f)) continue;
      seen.add(f);
      out.push(f);
    }
  }
  if (out.length === 0 && diagnostics.length === 0) {
    diagnostics.push(makeDiagnostic("NoSpecFiles", { file: paths[0] ?? ".", line: 1, column: 1 }, "No spec files were found.", CODES.NoSpecFiles));
  }
  return { value: out.map((f) => displayPath(f, cwd)), diagnostics };
}

/** Spec files under dir (symlinks not followed); `full` when a limit was reached. */
function walkSpecDir(dir: string): { files: string[]; full: boolean } {
  const out: string[] = [];
  const stack = [dir];
  let entriesSeen = 0;
  while (stack.length > 0) {
    const d = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    entriesSeen += entries.length;
    if (entriesSeen > MAX_DIR_ENTRIES) return { files: [], full: true };
    for (const e of entries) {
      if (e.name.startsWith(".") || e.name === "node_modules") continue;
      const full = join(d, e.name);
      if (e.isDirectory()) stack.push(full);
      else if (e.isFile() && SPEC_EXTENSIONS.has(extname(e.name))) out.push(full);
    }
    if (out.length > MAX_SPEC_FILES) return { files: [], full: true };
  }
  return { files: out.sort(), full: false };
}

export function displayPath(abs: string, cwd: string): string {
  const rel = relative(cwd, abs);
  return rel.startsWith("..") || rel === "" ? abs : rel;
}

/**
 * Read a spec file as UTF-8 text; a file that is not a regular file (a FIFO, a device, a
 * directory), an oversized, unreadable or binary file becomes a diagnostic. Nothing but a regular
 * file is ever opened.
 */
export function readSpecFile(file: string, cwd: string): Result<SourceText | undefined> {
  const absPath = resolve(cwd, file);
  const at = { file, line: 1, column: 1 };
  let real: string;
  try {
    real = realpathSync.native(absPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code === "ENOENT" ? "FileNotFound" : "FileUnreadable";
    return { value: undefined, diagnostics: [makeDiagnostic(code, at, `Cannot read ${file}: ${(err as Error).message}.`, CODES[code])] };
  }
  const read = readRegularFile(real, MAX_SPEC_BYTES);
  if (!read.ok) {
    const hint = read.code === "FileTooLarge" ? CODES.FileTooLarge : CODES[read.code];
    return { value: undefined, diagnostics: [makeDiagnostic(read.code, at, `Cannot read ${file}: ${read.why}.`, hint)] };
  }
  const buf = read.bytes;
  const binaryAt = findBinary(buf);
  if (binaryAt >= 0) {
    const line = countLines(buf, binaryAt);
    return {
      value: undefined,
      diagnostics: [makeDiagnostic("BinaryFile", { file, line, column: 1 }, `The file contains binary data (byte ${binaryAt}).`, CODES.BinaryFile)],
    };
  }
  let text = buf.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return { value: { file, absPath, text }, diagnostics: [] };
}

/** Index of the first NUL byte or invalid UTF-8 sequence, or -1. */
function findBinary(buf: Buffer): number {
  const nul = buf.indexOf(0);
  if (nul >= 0) return nul;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(buf);
    return -1;
  } catch {
    // Locate roughly: first byte >= 0x80 that fails to round-trip.
    for (let i = 0; i < buf.length; i++) {
      if (buf[i]! >= 0x80) return i;
    }
    return 0;
  }
}

function countLines(buf: Buffer, upto: number): number {
  let n = 1;
  for (let i = 0; i < upto && i < buf.length; i++) if (buf[i] === 10) n++;
  return n;
}
