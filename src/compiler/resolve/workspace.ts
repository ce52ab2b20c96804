/**
 * Workspace files: inline, from files, from directories, JSON/YAML values; paths checked to stay
 * inside the workspace; digests computed.
 */
import { readdirSync, readFileSync, statSync, lstatSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { stringify as yamlStringify } from "yaml";
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import { sha256 } from "../contract/hash.js";
import type { ResolvedFile } from "../contract/plan.js";
import type { WorkspaceFile } from "../schema/task.js";

export const MAX_WORKSPACE_FILE_BYTES = 64 * 1024 * 1024;
export const MAX_WORKSPACE_FILES = 100_000;

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
  /** Where to report problems with the i-th file, or with the directory. */
  positionOfFile: (index: number, field?: string) => SourcePosition;
  positionOfDir: () => SourcePosition;
  notes?: string[];
}

export function resolveWorkspace(
  spec: { files?: WorkspaceFile[]; fromDir?: string } | undefined,
  ctx: WorkspaceContext,
): Result<ResolvedFile[]> {
  const diagnostics: Diagnostic[] = [];
  const files: ResolvedFile[] = [];
  if (!spec) return { value: files, diagnostics };
  if (spec.fromDir !== undefined) {
    const dir = resolve(dirname(ctx.specFile), spec.fromDir);
    const listed = listDirFiles(dir);
    if (listed === undefined) {
      diagnostics.push(makeDiagnostic("WorkspaceDirNotFound", ctx.positionOfDir(), `Directory ${spec.fromDir} does not exist.`, CODES.WorkspaceDirNotFound, "error", ctx.notes));
    } else {
      for (const f of listed) {
        const rel = relative(dir, f).split("\\").join("/");
        const bytes = readFileSync(f);
        const executable = (statSync(f).mode & 0o111) !== 0;
        files.push(makeFile(rel, bytes, executable));
      }
    }
  }
  (spec.files ?? []).forEach((f, i) => {
    const checked = checkWorkspacePath(f.path);
    if (!checked.ok) {
      diagnostics.push(makeDiagnostic("PathEscape", ctx.positionOfFile(i, "path"), `Workspace path ${JSON.stringify(f.path)} is not allowed: ${checked.why}.`, CODES.PathEscape, "error", ctx.notes));
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
      const abs = resolve(dirname(ctx.specFile), f.from!);
      try {
        const st = statSync(abs);
        if (!st.isFile()) throw new Error("not a file");
        if (st.size > MAX_WORKSPACE_FILE_BYTES) throw new Error(`larger than ${MAX_WORKSPACE_FILE_BYTES} bytes`);
        bytes = readFileSync(abs);
      } catch (err) {
        diagnostics.push(makeDiagnostic("FileNotFound", ctx.positionOfFile(i, "from"), `Cannot read ${f.from}: ${(err as Error).message}.`, CODES.FileNotFound, "error", ctx.notes));
        return;
      }
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
      diagnostics.push(makeDiagnostic("DuplicateWorkspacePath", ctx.positionOfFile(i, "path"), `Workspace path ${c.path} is listed twice.`, CODES.DuplicateWorkspacePath, "error", ctx.notes));
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

/** Regular files under dir (symlinks are not followed), or undefined when dir is missing. */
function listDirFiles(dir: string): string[] | undefined {
  try {
    if (!statSync(dir).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  const out: string[] = [];
  const stack = [dir];
  while (stack.length > 0 && out.length < MAX_WORKSPACE_FILES) {
    const d = stack.pop()!;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      const st = lstatSync(full);
      if (st.isDirectory()) stack.push(full);
      else if (st.isFile() && st.size <= MAX_WORKSPACE_FILE_BYTES) out.push(full);
    }
  }
  return out.sort();
}
