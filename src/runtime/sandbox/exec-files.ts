/**
 * File access through exec alone (kubernetes; podman when asked): a tar archive on stdin to write,
 * base64 on stdout to read, `find` to list. Needs sh, tar, base64 and find in the image (busybox
 * has them).
 */
import path from "node:path";
import { buildTar, type TarEntry } from "./tar.js";
import type { ExecOptions, ExecResult, SandboxFile } from "./provider.js";

export type ExecFn = (argv: string[], options?: ExecOptions) => Promise<ExecResult>;

const MAX_READ_BYTES = 256 * 1024 * 1024;

/** Absolute in-sandbox path for a file path relative to the workspace. */
export function absoluteIn(workspace: string, p: string): string {
  return p.startsWith("/") ? path.posix.normalize(p) : path.posix.join(workspace, p);
}

/** Tar entries (with parent directories below `roots`) for files given by absolute path. */
export function tarEntriesFor(files: { abs: string; content: Uint8Array; mode: number }[], roots: string[]): TarEntry[] {
  const dirs = new Set<string>();
  const entries: TarEntry[] = [];
  for (const f of files) {
    const root = roots.find((r) => f.abs.startsWith(r + "/"));
    if (!root) throw new Error(`path "${f.abs}" is outside ${roots.join(", ")}`);
    const rel = f.abs.slice(root.length + 1).split("/");
    if (rel.includes("..") || rel.includes("")) throw new Error(`invalid path "${f.abs}"`);
    for (let i = 1; i < rel.length; i++) {
      const dir = `${root.slice(1)}/${rel.slice(0, i).join("/")}`;
      if (!dirs.has(dir)) {
        dirs.add(dir);
        entries.push({ path: dir, type: "dir", mode: 0o755 });
      }
    }
    entries.push({ path: f.abs.slice(1), type: "file", mode: f.mode, content: f.content });
  }
  return entries;
}

function describe(result: ExecResult): string {
  return (result.stderr || result.stdout).trim().slice(-500) || `exit ${result.exitCode ?? result.signal}`;
}

export async function writeFilesViaExec(exec: ExecFn, workspace: string, roots: string[], files: SandboxFile[]): Promise<void> {
  if (files.length === 0) return;
  const prepared = files.map((f) => ({
    abs: absoluteIn(workspace, f.path),
    content: typeof f.content === "string" ? Buffer.from(f.content, "utf8") : f.content,
    mode: f.mode ?? 0o644,
  }));
  const archive = buildTar(tarEntriesFor(prepared, roots));
  const result = await exec(["tar", "-x", "-f", "-", "-C", "/"], { stdin: archive, cwd: "/" });
  if (result.exitCode !== 0) throw new Error(`tar in the sandbox failed: ${describe(result)}`);
}

export async function readFileViaExec(exec: ExecFn, workspace: string, p: string): Promise<Buffer> {
  const abs = absoluteIn(workspace, p);
  const result = await exec(["sh", "-c", 'test -f "$1" || { echo "not a regular file: $1" >&2; exit 2; }; base64 < "$1"', "sh", abs], {
    cwd: "/",
    maxOutputBytes: MAX_READ_BYTES,
  });
  if (result.exitCode !== 0) throw new Error(`cannot read ${abs}: ${describe(result)}`);
  if (result.stdoutTruncated) throw new Error(`${abs} is larger than ${MAX_READ_BYTES} bytes (base64)`);
  return Buffer.from(result.stdout.replace(/\s+/g, ""), "base64");
}

/** Regular files under dir, relative to it, sorted. Paths are NUL-separated on the wire. */
export async function listFilesViaExec(exec: ExecFn, workspace: string, dir: string): Promise<string[]> {
  const abs = absoluteIn(workspace, dir);
  const result = await exec(["find", abs, "-type", "f", "-print0"], { cwd: "/", maxOutputBytes: 64 * 1024 * 1024 });
  if (result.exitCode !== 0) throw new Error(`cannot list ${abs}: ${describe(result)}`);
  const prefix = abs.endsWith("/") ? abs : `${abs}/`;
  return result.stdout
    .split("\0")
    .filter((s) => s.startsWith(prefix))
    .map((s) => s.slice(prefix.length))
    .sort();
}
