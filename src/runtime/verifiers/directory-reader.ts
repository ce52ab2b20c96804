/**
 * A WorkspaceReader over a host directory (a workspace snapshot, a test's directory). Symlinks are
 * resolved and must stay inside the root; reads are capped; `exec` runs commands on the host with
 * the sandboxes' process runner, a fixed, minimal environment, and the whole process tree killed
 * at the deadline.
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readdirSync, readSync, realpathSync, statSync, type Stats } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, sep } from "node:path";
import { runHostCommand } from "../sandbox/host/process-runner.js";
import type { ExecResult } from "../sandbox/provider.js";
import { SYSTEM_PATH } from "../sandbox/layout.js";
import { normalizeRelative, type ExecRequest, type ListResult, type ReadResult, type StatResult, type WorkspaceReader } from "./workspace.js";

const DEFAULT_MAX_ENTRIES = 100_000;

type Resolved = { kind: "inside"; abs: string } | { kind: "outside"; target: string } | { kind: "missing" } | { kind: "error"; message: string };

export interface DirectoryReaderOptions {
  /** Allow `exec` (host processes). Default true. */
  exec?: boolean;
}

/** Environment every verifier command gets: nothing from the caller's or the harness's environment. */
export function verifierEnv(workspace: string, home: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: `${dirname(process.execPath)}:${SYSTEM_PATH}`,
    HOME: home,
    TMPDIR: home,
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONSAFEPATH: "1",
    PYTHONNOUSERSITE: "1",
    NO_COLOR: "1",
    REINS_WORKSPACE: workspace,
    ...extra,
  };
}

export class DirectoryReader implements WorkspaceReader {
  readonly description: string;
  private rootReal: string | null | undefined;

  constructor(
    readonly rootPath: string,
    options: DirectoryReaderOptions = {},
  ) {
    this.description = rootPath;
    if (options.exec !== false) this.exec = (req) => this.runCommand(req);
  }

  /** Absent with `exec: false`. */
  readonly exec?: (req: ExecRequest) => Promise<ExecResult>;

  /** Root with symlinks resolved; null when it does not exist. */
  private root(): string | null {
    if (this.rootReal === undefined) {
      try {
        this.rootReal = realpathSync(this.rootPath);
      } catch {
        this.rootReal = null;
      }
    }
    return this.rootReal;
  }

  // File access is synchronous on purpose: local-disk syscalls cost microseconds, while a
  // thread-pool round trip per call made 1,000-file checks several times slower. Reads are capped.
  private resolve(path: string): Resolved {
    const rel = normalizeRelative(path);
    if (rel === null) return { kind: "outside", target: path };
    const root = this.root();
    if (root === null) return { kind: "error", message: "the workspace directory does not exist" };
    let real: string;
    try {
      real = realpathSync(join(root, rel));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return { kind: "missing" };
      if (code === "ELOOP") return { kind: "error", message: "symlink loop" };
      return { kind: "error", message: code ?? String(e) };
    }
    if (real !== root && !real.startsWith(root + sep)) return { kind: "outside", target: real };
    return { kind: "inside", abs: real };
  }

  async stat(path: string): Promise<StatResult> {
    const r = this.resolve(path);
    if (r.kind === "outside") return { kind: "outside", target: r.target };
    if (r.kind !== "inside") return { kind: "missing" };
    try {
      const st = statSync(r.abs);
      if (st.isFile()) return { kind: "file", size: st.size };
      if (st.isDirectory()) return { kind: "directory" };
      return { kind: "other" };
    } catch {
      return { kind: "missing" };
    }
  }

  async readFile(path: string, opts: { maxBytes: number; prefix?: boolean }): Promise<ReadResult> {
    const r = this.resolve(path);
    if (r.kind === "outside") return { kind: "outside", target: r.target };
    if (r.kind === "missing") return { kind: "missing" };
    if (r.kind === "error") return { kind: "unreadable", message: r.message };
    let fd: number;
    try {
      // The path is fully resolved, so O_NOFOLLOW refuses a symlink swapped in since; O_NONBLOCK
      // keeps a FIFO planted in the workspace from blocking the open.
      fd = openSync(r.abs, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { kind: "missing" };
      return { kind: "unreadable", message: code ?? String(e) };
    }
    try {
      const st = fstatSync(fd);
      if (st.isDirectory()) return { kind: "not-file", actual: "directory" };
      if (!st.isFile()) return { kind: "not-file", actual: "other" };
      if (st.size > opts.maxBytes && !opts.prefix) return { kind: "too-large", size: st.size, limit: opts.maxBytes };
      const buf = Buffer.alloc(Math.min(st.size, opts.maxBytes) + 1);
      let total = 0;
      while (total < buf.length) {
        const n = readSync(fd, buf, total, buf.length - total, total);
        if (n === 0) break;
        total += n;
      }
      if (total > opts.maxBytes) {
        if (opts.prefix) return { kind: "ok", bytes: buf.subarray(0, opts.maxBytes), size: Math.max(st.size, total), truncated: true };
        // The file grew while being read: too large rather than a silent prefix.
        return { kind: "too-large", size: total, limit: opts.maxBytes };
      }
      return { kind: "ok", bytes: buf.subarray(0, total), size: total };
    } catch (e) {
      return { kind: "unreadable", message: (e as NodeJS.ErrnoException).code ?? String(e) };
    } finally {
      closeSync(fd);
    }
  }

  async list(opts: { maxEntries?: number } = {}): Promise<ListResult> {
    const max = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
    const root = this.root();
    if (root === null) return { files: [], truncated: false, skipped: [{ path: ".", why: "the workspace directory does not exist" }] };
    const files: string[] = [];
    const skipped: { path: string; why: string }[] = [];
    let seen = 0;
    let truncated = false;
    const visited = new Set<string>([root]);
    const walk = (absDir: string, relDir: string): void => {
      let entries;
      try {
        entries = readdirSync(absDir, { withFileTypes: true });
      } catch (e) {
        skipped.push({ path: relDir || ".", why: `unreadable directory (${(e as NodeJS.ErrnoException).code ?? e})` });
        return;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const ent of entries) {
        if (++seen > max) {
          truncated = true;
          return;
        }
        const rel = relDir ? `${relDir}/${ent.name}` : ent.name;
        if (ent.isFile()) files.push(rel);
        else if (ent.isDirectory()) walk(join(absDir, ent.name), rel);
        else if (ent.isSymbolicLink()) {
          const r = this.resolve(rel);
          if (r.kind === "outside") skipped.push({ path: rel, why: `symlink leading outside the workspace (${r.target})` });
          else if (r.kind === "inside") {
            let st: Stats | null = null;
            try {
              st = statSync(r.abs);
            } catch {
              st = null;
            }
            if (st?.isFile()) files.push(rel);
            else if (st?.isDirectory() && !visited.has(r.abs)) {
              visited.add(r.abs);
              walk(r.abs, rel);
            }
          } else skipped.push({ path: rel, why: r.kind === "missing" ? "dangling symlink" : r.message });
        }
        if (truncated) return;
      }
    };
    walk(root, "");
    files.sort();
    return { files, truncated, skipped };
  }

  private async runCommand(req: ExecRequest): Promise<ExecResult> {
    const root = this.root() ?? this.rootPath;
    const home = await mkdtemp(join(tmpdir(), "reins-verify-home-"));
    try {
      const extra: Record<string, string> = { ...(req.env ?? {}) };
      if (req.hiddenDir !== undefined) extra.REINS_HIDDEN = req.hiddenDir;
      return await runHostCommand(req.argv, {
        cwd: root,
        env: verifierEnv(root, home, extra),
        timeoutMs: req.timeoutMs,
        ...(req.maxOutputBytes !== undefined ? { maxOutputBytes: req.maxOutputBytes } : {}),
      });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }
}
