/**
 * File access through exec alone (kubernetes; podman when asked): a tar archive on stdin to write,
 * base64 on stdout to read, `find` to list, and `tar -c` streamed into a TarReader to copy a tree
 * out. Needs sh, tar, base64 and find in the image (busybox has them).
 */
import type { ExecOptions, ExecResult } from "../provider.js";
import type { SnapshotWriter } from "./snapshot-writer.js";
import { TarReader } from "./tar-reader.js";
import { buildTar, type TarEntry } from "./tar-writer.js";
import type { FileTransport, PreparedExtras, PreparedFile, SandboxPath } from "./transport.js";

export type ExecFn = (argv: string[], options?: ExecOptions) => Promise<ExecResult>;

const MAX_READ_BYTES = 256 * 1024 * 1024;

/** One entry of a write over exec, by absolute in-sandbox path. */
export type ExecWriteEntry =
  | { abs: string; content: Uint8Array; mode: number }
  | { abs: string; directory: true; mode: number }
  | { abs: string; linkTarget: string };

/**
 * Tar entries (with parent directories below `roots`) for files, directories and symlinks given
 * by absolute path, in the order given.
 */
export function tarEntriesFor(files: ExecWriteEntry[], roots: readonly string[]): TarEntry[] {
  const dirs = new Set<string>();
  const entries: TarEntry[] = [];
  for (const f of files) {
    const root = roots.find((r) => f.abs.startsWith(`${r}/`));
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
    const name = f.abs.slice(1);
    if ("linkTarget" in f) entries.push({ path: name, type: "symlink", mode: 0o777, linkTarget: f.linkTarget });
    else if ("directory" in f) {
      if (!dirs.has(name)) entries.push({ path: name, type: "dir", mode: f.mode });
      dirs.add(name);
    } else entries.push({ path: name, type: "file", mode: f.mode, content: f.content });
  }
  return entries;
}

function describe(result: ExecResult): string {
  return (result.stderr || result.stdout).trim().slice(-500) || `exit ${result.exitCode ?? result.signal}`;
}

/**
 * One tar archive extracted by the sandbox user: files, then directories, then symlinks (last, so
 * that no entry of the archive is extracted through one of them).
 */
async function writeFilesViaExec(exec: ExecFn, files: PreparedFile[], extras?: PreparedExtras): Promise<void> {
  const entries: ExecWriteEntry[] = [
    ...files.map((f) => ({ abs: f.at.abs, content: f.content, mode: f.mode })),
    ...(extras?.directories ?? []).map((d) => ({ abs: d.at.abs, directory: true as const, mode: d.mode })),
    ...(extras?.links ?? []).map((l) => ({ abs: l.at.abs, linkTarget: l.target })),
  ];
  if (entries.length === 0) return;
  const roots = [
    ...new Set([...files.map((f) => f.at.root), ...(extras?.directories ?? []).map((d) => d.at.root), ...(extras?.links ?? []).map((l) => l.at.root)]),
  ];
  const archive = await buildTar(tarEntriesFor(entries, roots));
  const result = await exec(["tar", "-x", "-f", "-", "-C", "/"], { stdin: archive, cwd: "/" });
  if (result.exitCode !== 0) throw new Error(`tar in the sandbox failed: ${describe(result)}`);
}

async function readFileViaExec(exec: ExecFn, abs: string): Promise<Buffer> {
  const result = await exec(["sh", "-c", 'test -f "$1" || { echo "not a regular file: $1" >&2; exit 2; }; base64 < "$1"', "sh", abs], {
    cwd: "/",
    maxOutputBytes: MAX_READ_BYTES,
  });
  if (result.exitCode !== 0) throw new Error(`cannot read ${abs}: ${describe(result)}`);
  if (result.stdoutTruncated) throw new Error(`${abs} is larger than ${MAX_READ_BYTES} bytes (base64)`);
  return Buffer.from(result.stdout.replace(/\s+/g, ""), "base64");
}

/** Regular files under dir, relative to it, sorted. Paths are NUL-separated on the wire. */
async function listFilesViaExec(exec: ExecFn, abs: string): Promise<string[]> {
  const result = await exec(["find", abs, "-type", "f", "-print0"], { cwd: "/", maxOutputBytes: 64 * 1024 * 1024 });
  if (result.exitCode !== 0) throw new Error(`cannot list ${abs}: ${describe(result)}`);
  const prefix = abs.endsWith("/") ? abs : `${abs}/`;
  return result.stdout
    .split("\0")
    .filter((s) => s.startsWith(prefix))
    .map((s) => s.slice(prefix.length))
    .sort();
}

/**
 * `tar -c` of the tree, read as it streams. tar's own complaints about single entries (unreadable
 * files, a file that changed while read) leave a complete archive and are reported as skipped;
 * an archive that did not end is a failure.
 */
async function copyOutViaExec(exec: ExecFn, abs: string, into: SnapshotWriter, timeoutMs: number): Promise<void> {
  const reader = new TarReader(into);
  const result = await exec(["tar", "-c", "-f", "-", "-C", abs, "."], {
    cwd: "/",
    timeoutMs,
    maxOutputBytes: 64 * 1024,
    onOutput: (stream, chunk) => {
      if (stream === "stdout") reader.push(chunk);
    },
  });
  await reader.end();
  if (result.timedOut) throw new Error(`copying ${abs} out took longer than ${timeoutMs} ms`);
  if (reader.error) throw new Error(`copying ${abs} out: ${reader.error}`);
  if (!reader.complete) throw new Error(`copying ${abs} out: the archive ended early (${describe(result)})`);
  if (result.exitCode !== 0) into.skip(".", `tar: ${describe(result)}`);
}

export function execTransport(exec: ExecFn): FileTransport {
  return {
    write: (files: PreparedFile[], extras?: PreparedExtras) => writeFilesViaExec(exec, files, extras),
    read: (at: SandboxPath) => readFileViaExec(exec, at.abs),
    list: (at: SandboxPath) => listFilesViaExec(exec, at.abs),
    copyOut: (at, into, timeoutMs) => copyOutViaExec(exec, at.abs, into, timeoutMs),
  };
}
