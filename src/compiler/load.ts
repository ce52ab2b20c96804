/**
 * Loading specs: files and directories → parsed, schema-checked documents, following
 * `spec.imports` of Experiments and Evaluations, plus the library shipped in `specs/`.
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Diagnostic, Result } from "./contract/diagnostics.js";
import { sha256 } from "./contract/hash.js";
import { listSpecFiles, readSpecFile } from "./source/files.js";
import { parseSource, positionAt } from "./source/yaml.js";
import { validateDocument, type TypedDocument } from "./schema/validate.js";

export const BUILTIN_SPECS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../specs");

export interface LoadOptions {
  /** Directory relative paths are resolved from and shown relative to; recorded as Plan.root. Default: the process's cwd. */
  cwd?: string;
  /** Environment for `${VAR}` interpolation. Default: the process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Load the shipped library (specs/) as fallbacks for references. Default true. */
  builtins?: boolean;
}

export interface LoadedSpecs {
  documents: TypedDocument[];
  builtins: TypedDocument[];
  sources: { file: string; digest: string }[];
}

export function loadSpecs(paths: readonly string[], opts: LoadOptions & { cwd: string; env: NodeJS.ProcessEnv }): Result<LoadedSpecs> {
  const { cwd, env } = opts;
  const diagnostics: Diagnostic[] = [];
  const listed = listSpecFiles(paths, cwd);
  diagnostics.push(...listed.diagnostics);
  const documents: TypedDocument[] = [];
  const sources: LoadedSpecs["sources"] = [];
  const seen = new Set<string>();
  const queue = [...listed.value];
  while (queue.length > 0) {
    const file = queue.shift()!;
    const abs = resolve(cwd, file);
    if (seen.has(abs)) continue;
    seen.add(abs);
    const read = readSpecFile(file, cwd);
    diagnostics.push(...read.diagnostics);
    if (!read.value) continue;
    sources.push({ file, digest: sha256(read.value.text) });
    const parsed = parseSource(read.value, env);
    diagnostics.push(...parsed.diagnostics);
    for (const src of parsed.value) {
      const typed = validateDocument(src);
      diagnostics.push(...typed.diagnostics);
      if (!typed.value) continue;
      documents.push(typed.value);
      const imports: string[] = (typed.value.kind === "Experiment" || typed.value.kind === "Evaluation") ? typed.value.doc.spec.imports ?? [] : [];
      imports.forEach((imp, i) => {
        const target = resolve(dirname(abs), imp);
        if (!existsSync(target)) {
          diagnostics.push({
            code: "FileNotFound",
            severity: "error",
            message: `Import ${imp} does not exist.`,
            hint: "Imports are resolved from the file that lists them.",
            ...pick(positionAt(src, ["spec", "imports", i])),
          });
          return;
        }
        const more = listSpecFiles([target], cwd);
        diagnostics.push(...more.diagnostics);
        for (const f of more.value) if (!seen.has(resolve(cwd, f))) queue.push(f);
      });
    }
  }
  let builtins: TypedDocument[] = [];
  if (opts.builtins !== false) builtins = loadBuiltins(env);
  return { value: { documents, builtins, sources }, diagnostics };
}

function pick(p: { file: string; line: number; column: number }) {
  return { file: p.file, line: p.line, column: p.column };
}

let builtinCache: TypedDocument[] | undefined;

/**
 * The shipped library; problems there are reins bugs, caught by its own tests. Its files are shown
 * by absolute path, whatever the caller's cwd.
 */
export function loadBuiltins(env: NodeJS.ProcessEnv): TypedDocument[] {
  if (builtinCache) return builtinCache;
  const out: TypedDocument[] = [];
  if (!existsSync(BUILTIN_SPECS_DIR)) return (builtinCache = out);
  const listed = listSpecFiles([BUILTIN_SPECS_DIR], BUILTIN_SPECS_DIR);
  for (const f of listed.value) {
    const read = readSpecFile(resolve(BUILTIN_SPECS_DIR, f), BUILTIN_SPECS_DIR);
    if (!read.value) continue;
    read.value.file = read.value.absPath;
    for (const src of parseSource(read.value, env).value) {
      const typed = validateDocument(src);
      if (typed.value) out.push(typed.value);
    }
  }
  return (builtinCache = out);
}
