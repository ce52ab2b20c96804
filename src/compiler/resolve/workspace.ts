/**
 * Workspace files: inline, from files, from directories, JSON/YAML values; paths checked to stay
 * inside the workspace; digests computed. `from` and `fromDir` read only inside the project (see
 * source/project.ts): regular files, size-capped, a directory capped in files and bytes.
 */
import { lstatSync, readdirSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import { stringify as yamlStringify } from "yaml";
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import { sha256 } from "../contract/hash.js";
import type { ResolvedFile } from "../contract/plan.js";
import type { WorkspaceFile } from "../schema/task.js";
import {
  describeType,
  locateInProject,
  MAX_DIR_BYTES,
  MAX_DIR_ENTRIES,
  MAX_DIR_FILES,
  MAX_WORKSPACE_FILE_BYTES,
  ownDirectoryRoots,
  readRegularFile,
  type ProjectRoot,
  type Refusal,
} from "../source/project.js";

export { MAX_WORKSPACE_FILE_BYTES };

const TOO_LARGE_HINT = `Workspace files are limited to ${MAX_WORKSPACE_FILE_BYTES / 1024 / 1024} MiB each and a fromDir to ${MAX_DIR_FILES} files and ${MAX_DIR_BYTES / 1024 / 1024} MiB; keep large data out of task workspaces.`;

/** A relative POSIX path that stays inside the workspace, or an explanation of why not. */
export function checkWorkspacePath(p: string): { ok: true; path: string } | { ok: false; why: string } {
  if (p.includes("\0")) return { ok: false, why: "it contains a NUL byte" };
  if (p.includes("\\")) return { ok: false, why: "it contains a backslash" };
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) return { ok: false, why: "it is absolute" };
  if (p.startsWith("~")) return { ok: false, why: "it starts with ~" };
  const segments = p.split("/");
  if (segments.some((s) => s === "..")) return { ok: false, why: "it has a '..' segment" };
  const norm = posix.normalize(p).replace(/^\.\//, "");
  if (norm === "." || norm === "" || norm.endsWith("/")) return { ok: false, why: "it names a directory, not a file" };
  return { ok: true, path: norm };
}

export interface WorkspaceContext {
  /** Absolute path of the spec file (for `from`/`fromDir`). */
  specFile: string;
  /** Where `from`/`fromDir` may read. Default: the spec file's directory. */
  roots?: readonly ProjectRoot[];
  /** Where to report problems with the i-th file, or with the directory. */
  positionOfFile: (index: number, field?: string) => SourcePosition;
  positionOfDir: () => SourcePosition;
  notes?: string[];
}

export function resolveWorkspace(spec: { files?: WorkspaceFile[]; fromDir?: string } | undefined, ctx: WorkspaceContext): Result<ResolvedFile[]> {
  const diagnostics: Diagnostic[] = [];
  const files: ResolvedFile[] = [];
  if (!spec) return { value: files, diagnostics };
  const roots = ctx.roots ?? ownDirectoryRoots(ctx.specFile);
  const refuse = (r: Refusal, at: SourcePosition, what: string) =>
    diagnostics.push(
      makeDiagnostic(r.code, at, `${what} is not read: ${r.why}.`, r.code === "FileTooLarge" ? TOO_LARGE_HINT : CODES[r.code], "error", ctx.notes),
    );
  if (spec.fromDir !== undefined) {
    const loc = locateInProject(roots, dirname(ctx.specFile), spec.fromDir);
    const st = loc.ok ? lstatSync(loc.real, { throwIfNoEntry: false }) : undefined;
    if (!loc.ok && loc.code !== "FileNotFound") refuse(loc, ctx.positionOfDir(), `Directory ${spec.fromDir}`);
    else if (!loc.ok || !st?.isDirectory()) {
      const why = st ? ` (it is ${st.isFile() ? "a file" : describeType(st)})` : "";
      diagnostics.push(
        makeDiagnostic(
          "WorkspaceDirNotFound",
          ctx.positionOfDir(),
          `Directory ${spec.fromDir} does not exist${why}.`,
          CODES.WorkspaceDirNotFound,
          "error",
          ctx.notes,
        ),
      );
    } else {
      const listed = listDirFiles(loc.real);
      if (!listed.ok) {
        diagnostics.push(
          makeDiagnostic("DirectoryTooLarge", ctx.positionOfDir(), `Directory ${spec.fromDir} is not read: ${listed.why}.`, TOO_LARGE_HINT, "error", ctx.notes),
        );
      } else {
        for (const f of listed.files) {
          const rel = relative(loc.real, f).split("\\").join("/");
          const read = readRegularFile(f, MAX_WORKSPACE_FILE_BYTES);
          if (!read.ok) {
            refuse(read, ctx.positionOfDir(), `${spec.fromDir}/${rel}`);
            continue;
          }
          files.push(makeFile(rel, read.bytes, (read.mode & 0o111) !== 0));
        }
      }
    }
  }
  (spec.files ?? []).forEach((f, i) => {
    const checked = checkWorkspacePath(f.path);
    if (!checked.ok) {
      diagnostics.push(
        makeDiagnostic(
          "PathEscape",
          ctx.positionOfFile(i, "path"),
          `Workspace path ${JSON.stringify(f.path)} is not allowed: ${checked.why}.`,
          CODES.PathEscape,
          "error",
          ctx.notes,
        ),
      );
      return;
    }
    const sources = ["content", "base64", "from", "json", "yaml"].filter((k) => (f as Record<string, unknown>)[k] !== undefined);
    if (sources.length !== 1) {
      diagnostics.push(
        makeDiagnostic(
          "InvalidValue",
          ctx.positionOfFile(i),
          sources.length === 0 ? `Workspace file ${f.path} has no content.` : `Workspace file ${f.path} has several sources (${sources.join(", ")}).`,
          "Give exactly one of content, base64, from, json, yaml.",
          "error",
          ctx.notes,
        ),
      );
      return;
    }
    let bytes: Buffer;
    if (f.content !== undefined) bytes = Buffer.from(f.content, "utf8");
    else if (f.base64 !== undefined) bytes = Buffer.from(f.base64, "base64");
    else if (f.json !== undefined) bytes = Buffer.from(`${JSON.stringify(f.json, null, 2)}\n`, "utf8");
    else if (f.yaml !== undefined) bytes = Buffer.from(yamlStringify(f.yaml), "utf8");
    else {
      const loc = locateInProject(roots, dirname(ctx.specFile), f.from!);
      const read = loc.ok ? readRegularFile(loc.real, MAX_WORKSPACE_FILE_BYTES) : loc;
      if (!read.ok) {
        if (read.code === "FileNotFound") {
          diagnostics.push(
            makeDiagnostic("FileNotFound", ctx.positionOfFile(i, "from"), `Cannot read ${f.from}: it does not exist.`, CODES.FileNotFound, "error", ctx.notes),
          );
        } else refuse(read, ctx.positionOfFile(i, "from"), `File ${f.from}`);
        return;
      }
      bytes = read.bytes;
    }
    files.push(makeFile(checked.path, bytes, f.executable === true));
  });
  // Later entries override earlier ones only when they come from fromDir; explicit duplicates are errors.
  const seen = new Map<string, number>();
  const out: ResolvedFile[] = [];
  for (const file of files) {
    const prev = seen.get(file.path);
    if (prev === undefined) {
      seen.set(file.path, out.length);
      out.push(file);
    } else {
      out[prev] = file;
    }
  }
  const explicit = new Map<string, number>();
  (spec.files ?? []).forEach((f, i) => {
    const c = checkWorkspacePath(f.path);
    if (!c.ok) return;
    if (explicit.has(c.path)) {
      diagnostics.push(
        makeDiagnostic(
          "DuplicateWorkspacePath",
          ctx.positionOfFile(i, "path"),
          `Workspace path ${c.path} is listed twice.`,
          CODES.DuplicateWorkspacePath,
          "error",
          ctx.notes,
        ),
      );
    } else explicit.set(c.path, i);
  });
  out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { value: out, diagnostics };
}

function makeFile(path: string, bytes: Buffer, executable: boolean): ResolvedFile {
  const text = isUtf8Text(bytes);
  return {
    path,
    content: text ? bytes.toString("utf8") : bytes.toString("base64"),
    encoding: text ? "utf8" : "base64",
    mode: executable ? 0o755 : 0o644,
    digest: sha256(bytes),
  };
}

function isUtf8Text(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * Regular files under dir (symlinks, FIFOs and devices are skipped, never opened), sorted; or why
 * the directory is too large to read (before any file is read).
 */
function listDirFiles(dir: string): { ok: true; files: string[] } | { ok: false; why: string } {
  const out: string[] = [];
  const stack = [dir];
  let bytes = 0;
  let entries = 0;
  while (stack.length > 0) {
    const d = stack.pop()!;
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      continue;
    }
    entries += names.length;
    if (entries > MAX_DIR_ENTRIES) return { ok: false, why: `it has more than ${MAX_DIR_ENTRIES} entries` };
    for (const name of names) {
      const full = join(d, name);
      const st = lstatSync(full, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) stack.push(full);
      else if (st.isFile()) {
        out.push(full);
        bytes += st.size;
        if (out.length > MAX_DIR_FILES) return { ok: false, why: `it has more than ${MAX_DIR_FILES} files` };
        if (bytes > MAX_DIR_BYTES) return { ok: false, why: `its files hold more than ${MAX_DIR_BYTES} bytes` };
      }
    }
  }
  return { ok: true, files: out.sort() };
}
