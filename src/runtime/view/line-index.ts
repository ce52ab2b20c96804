/**
 * A byte-offset index of a JSON-lines file of a run directory, built by streaming and updated
 * incrementally as the file grows (a running run appends to its files). Only complete lines
 * (ending in a newline) are indexed, so a line being written is picked up on a later refresh; the
 * part of it already read is kept, so a long unfinished line is never read twice. Each line is
 * handed to `onLine` either whole (small records: rollouts, metrics, events; a line over
 * VIEW_LIMITS.lineBytes is skipped) or as its first `head` bytes only (call records, whose token
 * arrays can be megabytes): a big file is never held in memory or parsed whole. The file is opened
 * through the run's RunRoot (inside the run directory, a regular file) and read no further than
 * its stream cap; a refused file indexes nothing and says why.
 */
import { closeSync, readSync } from "node:fs";
import { formatBytes, VIEW_LIMITS, type RunFileRefusal, type RunRoot } from "./run-root.js";

/** Where one line lives in its file (newline excluded). */
export interface LineSpan {
  offset: number;
  length: number;
}

export interface LineIndexOptions<T> {
  /** Hand `onLine` only the first `head` bytes of each line; whole lines when absent. */
  head?: number;
  /** Turn one line (or its head) into an entry; undefined skips the line. */
  onLine: (bytes: Buffer, span: LineSpan) => T | undefined;
}

const CHUNK = 1 << 20;

export class LineIndex<T> {
  /** Bytes consumed: the end of the last complete line seen. */
  private consumed = 0;
  /** Bytes read: past `consumed` when a line is unfinished (its kept bytes are in `parts`). */
  private position = 0;
  private parts: Buffer[] = [];
  private kept = 0;
  private identity = "";
  readonly entries: T[] = [];
  /** Bumped whenever entries change (appended, or reset because the file was replaced). */
  version = 0;
  /** True when the last refresh stopped at its byte budget with more of the file to read. */
  more = false;
  /** Why the file is not read (or not all of it); null when it is read whole or absent. */
  refusal: RunFileRefusal | null = null;
  /** The most bytes of the file indexed. */
  readonly maxBytes: number;

  constructor(
    private readonly root: RunRoot,
    /** The file, relative to the run directory. */
    readonly file: string,
    private readonly options: LineIndexOptions<T>,
  ) {
    this.maxBytes = VIEW_LIMITS.streamBytes[file] ?? VIEW_LIMITS.jsonBytes;
  }

  /**
   * Read what was appended since the last refresh (at most about `maxBytes` of it; the rest on a
   * later refresh). Returns true when entries changed.
   */
  refresh(maxBytes = Infinity): boolean {
    const opened = this.root.open(this.file);
    if (!opened.ok) {
      this.refusal = opened.refusal;
      this.more = false;
      if (this.consumed === 0 && this.entries.length === 0 && this.position === 0) return false;
      this.reset();
      return true;
    }
    const { fd, stat } = opened;
    try {
      const identity = `${stat.dev}:${stat.ino}`;
      let changed = false;
      // Replaced (a resume rewrites calls.jsonl) or cut: start over.
      if (identity !== this.identity || stat.size < this.position) {
        if (this.consumed > 0 || this.entries.length > 0) changed = true;
        this.reset();
        this.identity = identity;
      }
      const end = Math.min(stat.size, this.maxBytes);
      this.refusal =
        stat.size > this.maxBytes
          ? {
              file: this.file,
              code: "ViewFileRefused",
              message: `${this.file} is read only up to ${formatBytes(this.maxBytes)}: it is ${stat.size} bytes; lines past that are not shown.`,
            }
          : null;
      this.more = false;
      if (end <= this.position) return changed;
      return this.scan(fd, end, this.position + maxBytes) || changed;
    } finally {
      closeSync(fd);
    }
  }

  /** One indexed line's bytes, read back from the file; null when it cannot be read now. */
  readLine(span: LineSpan): Buffer | null {
    const read = this.root.readRange(this.file, span.offset, span.length);
    return read.ok ? read.value : null;
  }

  private reset(): void {
    this.consumed = 0;
    this.position = 0;
    this.parts = [];
    this.kept = 0;
    this.entries.length = 0;
    this.identity = "";
    this.version++;
  }

  private scan(fd: number, end: number, limit: number): boolean {
    const head = this.options.head ?? VIEW_LIMITS.lineBytes + 1;
    const buffer = Buffer.allocUnsafe(CHUNK);
    let position = this.position;
    let added = 0;
    while (position < end && position < limit) {
      const n = readSync(fd, buffer, 0, Math.min(CHUNK, end - position), position);
      if (n <= 0) break;
      let from = 0;
      while (from < n) {
        const nl = buffer.indexOf(10, from);
        const stop = nl < 0 || nl >= n ? n : nl;
        const want = Math.max(0, Math.min(stop - from, head - this.kept));
        if (want > 0) {
          this.parts.push(Buffer.from(buffer.subarray(from, from + want)));
          this.kept += want;
        }
        if (nl < 0 || nl >= n) break;
        const lineStart = this.consumed;
        const lineEnd = position + nl;
        const length = lineEnd - lineStart;
        // A whole line over the line cap is skipped (its bytes past the cap were never kept).
        const whole = this.options.head !== undefined || length <= VIEW_LIMITS.lineBytes;
        if (length > 0 && whole) {
          const bytes = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
          const entry = this.options.onLine(bytes, { offset: lineStart, length });
          if (entry !== undefined) {
            this.entries.push(entry);
            added++;
          }
        }
        this.consumed = lineEnd + 1;
        this.parts = [];
        this.kept = 0;
        from = nl + 1;
      }
      position += n;
    }
    this.position = position;
    this.more = position < end;
    if (added > 0) this.version++;
    return added > 0;
  }
}

/** Parse a JSON line, or undefined when it is not JSON (a torn or foreign line is skipped, not fatal). */
export function parseJsonLine(bytes: Buffer | null): unknown {
  if (bytes === null) return undefined;
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}
