/**
 * WorkspaceReader: how verifiers see a final workspace. A host directory implements it
 * (directory-reader.ts); a rollout's workspace is a snapshot copied out of its sandbox through the
 * sandbox contract after its processes are stopped, with commands run in a fresh verifier sandbox
 * (executor/sandbox-reader.ts).
 * Every method returns values for bad workspaces (missing, escaping symlink, too large); none throws
 * for hostile content.
 */
import type { ExecResult } from "../sandbox/provider.js";

export type ReadFailure =
  | { kind: "missing" }
  | { kind: "not-file"; actual: "directory" | "other" }
  /** A symlink (or path) that leads outside the workspace; never followed. */
  | { kind: "outside"; target: string }
  | { kind: "too-large"; size: number; limit: number }
  | { kind: "unreadable"; message: string };

/** `truncated`: only the first maxBytes bytes were returned (with `prefix: true`); `size` is the full size. */
export type ReadResult = { kind: "ok"; bytes: Uint8Array; size: number; truncated?: boolean } | ReadFailure;

export type StatResult = { kind: "file"; size: number } | { kind: "directory" } | { kind: "other" } | { kind: "outside"; target: string } | { kind: "missing" };

export interface ListResult {
  /** Regular files (symlinks inside the workspace resolved), relative POSIX paths, sorted. */
  files: string[];
  /** True when the walk stopped at its entry limit. */
  truncated: boolean;
  /** Entries left out, with why (escaping symlinks, unreadable directories). */
  skipped: { path: string; why: string }[];
}

export interface ExecRequest {
  argv: string[];
  timeoutMs: number;
  /** Extra environment for the command (the environment is otherwise minimal and fixed). */
  env?: Record<string, string>;
  /**
   * Host directory of the task's hidden files, made visible to this command only (read-only where
   * the provider can). The command sees its path in $REINS_HIDDEN.
   */
  hiddenDir?: string;
  /** Bytes of stdout/stderr kept (the tail); default 1 MiB each. */
  maxOutputBytes?: number;
}

export interface WorkspaceReader {
  /** Human name for reports, e.g. the host path or "sandbox r-12". */
  readonly description: string;
  /**
   * Reads a regular file of at most maxBytes; larger files give `too-large`, or with `prefix: true`
   * their first maxBytes bytes (`truncated: true`).
   */
  readFile(path: string, opts: { maxBytes: number; prefix?: boolean }): Promise<ReadResult>;
  stat(path: string): Promise<StatResult>;
  list(opts?: { maxEntries?: number }): Promise<ListResult>;
  /**
   * Run a command in the workspace (inside the sandbox); never throws for a bad command: one that
   * cannot start has `spawnError`. Absent when the workspace has no place to run commands.
   */
  exec?(req: ExecRequest): Promise<ExecResult>;
}

/** Rejects absolute paths and `..` segments; returns the normalized relative path or null. */
export function normalizeRelative(path: string): string | null {
  if (path.length === 0 || path.startsWith("/") || path.includes("\0") || /^[A-Za-z]:/.test(path)) return null;
  const parts: string[] = [];
  for (const seg of path.replace(/\\/g, "/").split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") return null;
    parts.push(seg);
  }
  return parts.length === 0 ? "." : parts.join("/");
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A sentence describing why a file could not be read, for check reasons. */
export function describeReadFailure(path: string, f: ReadFailure): string {
  switch (f.kind) {
    case "missing":
      return `${path} does not exist.`;
    case "not-file":
      return `${path} is a ${f.actual === "directory" ? "directory" : "special file"}, not a regular file.`;
    case "outside":
      return `${path} is a symlink leading outside the workspace (${f.target}); it was not followed.`;
    case "too-large":
      return `${path} is too large to check (${formatBytes(f.size)}; the limit is ${formatBytes(f.limit)}).`;
    case "unreadable":
      return `${path} could not be read: ${f.message}.`;
  }
}
