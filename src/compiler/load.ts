/**
 * Loading specs: files and directories → parsed, schema-checked documents, following
 * `spec.imports` of Experiments and Evaluations, plus the library shipped in `specs/`.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { makeDiagnostic, type Diagnostic, type Result } from "./contract/diagnostics.js";
import { CODES } from "./contract/codes.js";
import { sha256 } from "./contract/hash.js";
import { listSpecFiles, readSpecFile } from "./source/files.js";
import { commonProjectDir, describeType, isWithin, locateInProject, projectRootAt, type ProjectRoot } from "./source/project.js";
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
  /**
   * The directory specs may read (imports, workspace `from`/`fromDir`, harness mounts, chat
   * template files), relative to cwd. Default: the deepest directory holding every path given.
   */
  projectRoot?: string;
}

export interface LoadedSpecs {
  documents: TypedDocument[];
  builtins: TypedDocument[];
  sources: { file: string; digest: string }[];
}

export function loadSpecs(paths: readonly string[], opts: LoadOptions & { cwd: string; env: NodeJS.ProcessEnv }): Result<LoadedSpecs> {
  const { cwd, env } = opts;
  const diagnostics: Diagnostic[] = [];
  const documents: TypedDocument[] = [];
  const sources: LoadedSpecs["sources"] = [];
  const project = projectOf(paths, opts);
  if (!project.ok) return { value: { documents, builtins: [], sources }, diagnostics: [project.diagnostic] };
  // Imports may name the project's files and reins's own (its specs/ library and examples/, e.g.
  // the starter tasks `reins init experiment` imports); each file reads only inside its own tree.
  const library = libraryRoots();
  const importRoots = [project.root, ...library];
  const rootsFor = (abs: string): ProjectRoot[] => {
    let real = abs;
    try {
      real = realpathSync.native(abs);
    } catch {
      // missing: reported when it is read
    }
    if (isWithin(project.root.real, real)) return [project.root];
    const own = library.find((r) => isWithin(r.real, real));
    return own ? [own] : [project.root];
  };
  const listed = listSpecFiles(paths, cwd);
  diagnostics.push(...listed.diagnostics);
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
    read.value.roots = rootsFor(abs);
    sources.push({ file, digest: sha256(read.value.text) });
    const parsed = parseSource(read.value, env);
    diagnostics.push(...parsed.diagnostics);
    for (const src of parsed.value) {
      src.roots = read.value.roots;
      const typed = validateDocument(src);
      diagnostics.push(...typed.diagnostics);
      if (!typed.value) continue;
      documents.push(typed.value);
      const imports: string[] = typed.value.kind === "Experiment" || typed.value.kind === "Evaluation" ? (typed.value.doc.spec.imports ?? []) : [];
      imports.forEach((imp, i) => {
        const at = pick(positionAt(src, ["spec", "imports", i]));
        const refuse = (code: "OutsideProject" | "FileNotFound" | "FileUnreadable" | "NotRegularFile", message: string, hint: string = CODES[code]) =>
          diagnostics.push(makeDiagnostic(code, at, message, hint));
        // Located (inside the project, symlinks resolved) and typed before anything is opened.
        const loc = locateInProject(importRoots, dirname(abs), imp);
        if (!loc.ok) {
          if (loc.code === "FileNotFound") refuse("FileNotFound", `Import ${imp} does not exist.`, "Imports are resolved from the file that lists them.");
          else refuse(loc.code === "FileTooLarge" ? "FileUnreadable" : loc.code, `Import ${imp} is not read: ${loc.why}.`);
          return;
        }
        const st = statSync(loc.real, { throwIfNoEntry: false });
        if (!st || (!st.isDirectory() && !st.isFile())) {
          refuse("NotRegularFile", `Import ${imp} is not read: it is ${st ? describeType(st) : "gone"}.`);
          return;
        }
        const more = listSpecFiles([loc.path], cwd);
        diagnostics.push(...more.diagnostics.map((d) => ({ ...d, ...at })));
        for (const f of more.value) if (!seen.has(resolve(cwd, f))) queue.push(f);
      });
    }
  }
  let builtins: TypedDocument[] = [];
  if (opts.builtins !== false) builtins = loadBuiltins(env);
  return { value: { documents, builtins, sources }, diagnostics };
}

/** The project root: --project-root when given, else the deepest directory holding every path given. */
function projectOf(paths: readonly string[], opts: LoadOptions & { cwd: string }): { ok: true; root: ProjectRoot } | { ok: false; diagnostic: Diagnostic } {
  const at = { file: opts.projectRoot ?? paths[0] ?? ".", line: 1, column: 1 };
  const dir = opts.projectRoot !== undefined ? resolve(opts.cwd, opts.projectRoot) : commonProjectDir(paths, opts.cwd);
  if (dir === undefined) {
    return {
      ok: false,
      diagnostic: makeDiagnostic(
        "NoProjectRoot",
        at,
        "The spec files given share no directory but /, so there is no project to read from.",
        CODES.NoProjectRoot,
      ),
    };
  }
  const root = projectRootAt(dir);
  if (!root.ok) return { ok: false, diagnostic: makeDiagnostic("NoProjectRoot", at, `The project root ${root.why}.`, CODES.NoProjectRoot) };
  return root;
}

/** reins's own spec trees, shipped with it: specs/ (the library) and examples/. */
export const EXAMPLES_DIR = resolve(BUILTIN_SPECS_DIR, "../examples");

let libraryCache: ProjectRoot[] | undefined;

function libraryRoots(): ProjectRoot[] {
  if (!libraryCache) {
    libraryCache = [];
    for (const dir of [BUILTIN_SPECS_DIR, EXAMPLES_DIR]) {
      const r = projectRootAt(dir);
      if (r.ok) libraryCache.push(r.root);
    }
  }
  return libraryCache;
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
    const roots = libraryRoots().slice(0, 1);
    for (const src of parseSource(read.value, env).value) {
      src.roots = roots;
      const typed = validateDocument(src);
      if (typed.value) out.push(typed.value);
    }
  }
  return (builtinCache = out);
}
