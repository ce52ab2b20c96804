/**
 * A byte-offset index of a JSON-lines file, built by streaming and updated incrementally as the
 * file grows (a running run appends to its files). Only complete lines (ending in a newline) are
 * indexed, so a line being written is picked up on a later refresh. Each line is handed to `onLine`
 * either whole (small records: rollouts, metrics, events) or as its first `head` bytes only (call
 * records, whose token arrays can be megabytes): a big file is never held in memory or parsed whole.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

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
  private identity = "";
  readonly entries: T[] = [];
  /** Bumped whenever entries change (appended, or reset because the file was replaced). */
  version = 0;

  constructor(
    readonly file: string,
    private readonly options: LineIndexOptions<T>,
  ) {}

  /** True when the last refresh stopped at its byte budget with more of the file to read. */
  more = false;

  /**
   * Read what was appended since the last refresh (at most about `maxBytes` of it, whole lines,
   * at least one line; the rest on a later refresh). Returns true when entries changed.
   */
  refresh(maxBytes = Infinity): boolean {
    let fd: number;
    try {
      fd = openSync(this.file, "r");
    } catch {
      if (this.consumed === 0 && this.entries.length === 0) return false;
      this.reset();
      return true;
    }
    try {
      const stat = fstatSync(fd);
      const identity = `${stat.dev}:${stat.ino}`;
      let changed = false;
      // Replaced (a resume rewrites calls.jsonl) or cut: start over.
      if (identity !== this.identity || stat.size < this.consumed) {
        if (this.consumed > 0 || this.entries.length > 0) changed = true;
        this.reset();
        this.identity = identity;
      }
      this.more = false;
      if (stat.size === this.consumed) return changed;
      return this.scan(fd, stat.size, this.consumed + maxBytes) || changed;
    } finally {
      closeSync(fd);
    }
  }

  private reset(): void {
    this.consumed = 0;
    this.entries.length = 0;
    this.identity = "";
    this.version++;
  }

  private scan(fd: number, size: number, limit: number): boolean {
    const head = this.options.head;
    const buffer = Buffer.allocUnsafe(CHUNK);
    const first = this.consumed;
    let lineStart = this.consumed;
    let parts: Buffer[] = [];
    let kept = 0;
    let position = this.consumed;
    let added = 0;
    while (position < size && (position < limit || lineStart === first)) {
      const n = readSync(fd, buffer, 0, Math.min(CHUNK, size - position), position);
      if (n <= 0) break;
      let from = 0;
      while (from < n) {
        const nl = buffer.indexOf(10, from);
        const end = nl < 0 || nl >= n ? n : nl;
        const want = head === undefined ? end - from : Math.max(0, Math.min(end - from, head - kept));
        if (want > 0) {
          parts.push(Buffer.from(buffer.subarray(from, from + want)));
          kept += want;
        }
        if (nl < 0 || nl >= n) break;
        const lineEnd = position + nl;
        const bytes = parts.length === 1 ? parts[0] : Buffer.concat(parts);
        if (lineEnd > lineStart) {
          const entry = this.options.onLine(bytes, { offset: lineStart, length: lineEnd - lineStart });
          if (entry !== undefined) {
            this.entries.push(entry);
            added++;
          }
        }
        lineStart = lineEnd + 1;
        parts = [];
        kept = 0;
        from = nl + 1;
      }
      position += n;
    }
    this.consumed = lineStart;
    this.more = position < size;
    if (added > 0) this.version++;
    return added > 0;
  }
}

/** Read one line's bytes back from its file. */
export function readSpan(file: string, span: LineSpan): Buffer {
  const fd = openSync(file, "r");
  try {
    const out = Buffer.allocUnsafe(span.length);
    let done = 0;
    while (done < span.length) {
      const n = readSync(fd, out, done, span.length - done, span.offset + done);
      if (n <= 0) break;
      done += n;
    }
    return out.subarray(0, done);
  } finally {
    closeSync(fd);
  }
}

/** Parse a JSON line, or undefined when it is not JSON (a torn or foreign line is skipped, not fatal). */
export function parseJsonLine(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}
