/**
 * The host side of a copy out of a sandbox: entries (directories, files, links) written under an
 * empty host directory, whatever read them (a walk of a host-backed sandbox, a tar stream over
 * exec). The entries come from the agent's workspace, so nothing is trusted: names are normalized
 * and may not climb out, an entry is only written below directories this writer made itself (a
 * planted symlink is never followed), modes lose their special bits, and a file keeps at most
 * `maxFileBytes` of content (its size is kept, the rest reads as zeros). Synchronous: a handful of
 * local syscalls per entry.
 */
import { closeSync, constants, ftruncateSync, linkSync, mkdirSync, openSync, symlinkSync, writeSync } from "node:fs";
import path from "node:path";
import type { CopyLimits, CopyReport } from "../provider.js";

export const DEFAULT_COPY_LIMITS: Required<CopyLimits> = {
  maxFileBytes: 16 * 1024 * 1024,
  maxEntries: 200_000,
  maxBytes: 2 * 1024 * 1024 * 1024,
  timeoutMs: 10 * 60_000,
  maxDepth: 256,
  maxPathChars: 3072,
};

/** One file being written: take `wanted` more bytes at the most, then end(). */
export interface FileSink {
  readonly wanted: number;
  write(chunk: Uint8Array): void;
  end(): void;
}

export const DISCARD_SINK: FileSink = { wanted: 0, write: () => undefined, end: () => undefined };

/** A relative POSIX path with no empty, "." or ".." segment; "" for the root itself; null when unsafe. */
export function normalizeEntryName(name: string): string | null {
  if (name.includes("\0") || name.startsWith("/")) return null;
  const parts = name.split("/").filter((s) => s !== "" && s !== ".");
  if (parts.includes("..")) return null;
  return parts.join("/");
}

/** What a copy has met so far: entries placed, the deepest path (segments), the longest (characters). */
export interface TreeShape {
  entries: number;
  depth: number;
  pathChars: number;
}

/** The limit a copy of this shape passes, said as the copy's report says it; null when none. */
export function limitPassed(limits: Required<CopyLimits>, shape: TreeShape): string | null {
  if (shape.entries > limits.maxEntries) return `more than ${limits.maxEntries} entries`;
  if (shape.depth > limits.maxDepth) return `a path deeper than ${limits.maxDepth} directory levels`;
  if (shape.pathChars > limits.maxPathChars) return `a path longer than ${limits.maxPathChars} characters`;
  return null;
}

export class SnapshotWriter {
  readonly limits: Required<CopyLimits>;
  private readonly report: CopyReport = { files: 0, directories: 0, symlinks: 0, bytes: 0, truncated: [], skipped: [] };
  /** Directories made here, relative; "" is the root. */
  private readonly dirs = new Set<string>([""]);
  /** Regular files written here, relative (targets for hard links). */
  private readonly files = new Set<string>();
  private entries = 0;

  constructor(
    readonly root: string,
    limits: CopyLimits = {},
  ) {
    this.limits = { ...DEFAULT_COPY_LIMITS, ...limits };
  }

  /** True once a limit stopped the copy. */
  get full(): boolean {
    return this.report.incomplete !== undefined;
  }

  result(): CopyReport {
    return { ...this.report, truncated: [...this.report.truncated], skipped: [...this.report.skipped] };
  }

  skip(name: string, why: string): void {
    // A skipped name is kept for the report only, cut short: an archive may carry names up to 1 MiB.
    if (this.report.skipped.length < 1000) this.report.skipped.push({ path: name.length > 4096 ? `${name.slice(0, 4096)}…` : name, why });
  }

  /** Marks the copy as stopped early. */
  stop(why: string): void {
    if (!this.full) this.report.incomplete = why;
  }

  /**
   * Stops the copy before anything is written when a tree of this shape (surveyed beforehand, by
   * a reader that can look cheaply) would pass a limit: true when it did.
   */
  refuse(shape: TreeShape): boolean {
    const over = limitPassed(this.limits, shape);
    if (over !== null) this.stop(over);
    return over !== null;
  }

  directory(name: string, mode: number): void {
    const rel = this.place(name);
    if (rel === null || rel === "") return;
    try {
      mkdirSync(path.join(this.root, rel), { mode: (mode & 0o777) | 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || !this.dirs.has(rel)) return this.skip(name, `cannot create (${(e as NodeJS.ErrnoException).code})`);
    }
    if (!this.dirs.has(rel)) this.report.directories++;
    this.dirs.add(rel);
  }

  symlink(name: string, target: string): void {
    const rel = this.place(name);
    if (rel === null || rel === "") return;
    try {
      symlinkSync(target, path.join(this.root, rel));
      this.report.symlinks++;
    } catch (e) {
      this.skip(name, `cannot create (${(e as NodeJS.ErrnoException).code})`);
    }
  }

  /** A hard link to a file written earlier in the same copy (tar writes these). */
  hardlink(name: string, target: string): void {
    const rel = this.place(name);
    const to = normalizeEntryName(target);
    if (rel === null || rel === "") return;
    if (to === null || !this.files.has(to)) return this.skip(name, "hard link to a file outside the copy");
    try {
      linkSync(path.join(this.root, to), path.join(this.root, rel));
      this.report.files++;
    } catch (e) {
      this.skip(name, `cannot create (${(e as NodeJS.ErrnoException).code})`);
    }
  }

  /** A regular file of `size` bytes; write its content to the sink, up to `wanted` bytes. */
  file(name: string, mode: number, size: number): FileSink {
    const rel = this.place(name);
    if (rel === null || rel === "") return DISCARD_SINK;
    let fd: number;
    try {
      const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
      fd = openSync(path.join(this.root, rel), flags, (mode & 0o777) | 0o600);
    } catch (e) {
      this.skip(name, `cannot create (${(e as NodeJS.ErrnoException).code})`);
      return DISCARD_SINK;
    }
    this.report.files++;
    this.files.add(rel);
    const keep = Math.min(size, this.limits.maxFileBytes);
    if (keep < size) this.report.truncated.push(rel);
    let written = 0;
    const report = this.report;
    const limits = this.limits;
    const stop = (why: string): void => this.stop(why);
    return {
      get wanted() {
        return Math.max(0, keep - written);
      },
      write(chunk: Uint8Array) {
        const part = chunk.subarray(0, Math.max(0, keep - written));
        if (part.length === 0) return;
        if (report.bytes + part.length > limits.maxBytes) return stop(`more than ${limits.maxBytes} bytes`);
        writeSync(fd, part, 0, part.length, written);
        written += part.length;
        report.bytes += part.length;
      },
      end() {
        try {
          if (written < size) ftruncateSync(fd, size);
        } finally {
          closeSync(fd);
        }
      },
    };
  }

  /**
   * The entry's path below the root, with every parent a directory this writer made (made now
   * when missing); null when the entry is refused or a limit is reached.
   */
  private place(name: string): string | null {
    if (this.full) return null;
    const rel = normalizeEntryName(name);
    if (rel === null) {
      this.skip(name, "unsafe name");
      return null;
    }
    if (rel === "") return rel;
    const parts = rel.split("/");
    const over = limitPassed(this.limits, { entries: ++this.entries, depth: parts.length, pathChars: rel.length });
    if (over !== null) {
      this.stop(over);
      return null;
    }
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (this.dirs.has(dir)) continue;
      try {
        mkdirSync(path.join(this.root, dir), { mode: 0o755 });
      } catch {
        this.skip(name, `its parent ${dir} is not a directory`);
        return null;
      }
      this.dirs.add(dir);
      this.report.directories++;
    }
    return rel;
  }
}
