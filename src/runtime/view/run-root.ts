/**
 * The one way `reins view` opens a file of a run directory. A run directory may be someone
 * else's (copied from another machine, or shaped by a hostile harness), and what the viewer reads
 * it serves to a browser, so `RunRoot.open` is the only place a run file is opened:
 *
 * - its real path (links followed) lies inside the run directory's real path: a link to another
 *   file of the run is read, a link or a linked folder that leads out is refused; after opening,
 *   the kernel is asked where the open file is (/proc/self/fd), so a folder swapped for a link
 *   in between is refused too;
 * - it is a regular file: opened non-blocking and without following a last link, then checked
 *   with fstat, so a FIFO, a device or a socket is never read (nothing blocks, nothing streams
 *   without end);
 * - it is size-capped (VIEW_LIMITS): a whole read refuses a file over its cap before reading it
 *   and never reads more than the cap; a tail or a stream reads a bounded window.
 *
 * A refusal is a value naming the file (relative to the run directory) and why; callers skip the
 * file and say so, in a note or in their answer.
 */
import { closeSync, constants, fstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, type Stats } from "node:fs";
import { isAbsolute, join, resolve, sep } from "node:path";
import { describeType } from "../../compiler/index.js";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** What the viewer reads of each kind of run file, at most. */
export const VIEW_LIMITS = {
  /** plan.json, read whole once (compilation caps rendered text at 128 MiB in all). */
  planBytes: 256 * MiB,
  /** manifest.json, summary.json (and each seed's), read whole. */
  jsonBytes: 16 * MiB,
  /** A try's workspace diff, read whole. */
  diffBytes: 4 * MiB,
  /** The tail of a try's harness output that is shown (the run store keeps 256 KiB). */
  outputTailBytes: 256 * 1024,
  /** The tail of one step's trainer logprobs file that is read. */
  logprobsTailBytes: 256 * MiB,
  /** One line of a JSON-lines file read whole (a call record with its token arrays). */
  lineBytes: 64 * MiB,
  /** The JSON-lines streams, indexed a line at a time (heads only for calls.jsonl): bytes past these are not read. */
  streamBytes: { "rollouts.jsonl": 1 * GiB, "events.jsonl": 1 * GiB, "metrics.jsonl": 256 * MiB, "calls.jsonl": 64 * GiB } as Record<string, number>,
} as const;

/** A run file the viewer would not read, and why (shown to whoever reads the viewer). */
export interface RunFileRefusal {
  /** The file, relative to the run directory. */
  file: string;
  code: "ViewFileRefused";
  message: string;
}

/** A read of a run file: its value, absent (`refusal: null`), or refused. */
export type RunFileRead<T> = { ok: true; value: T } | { ok: false; refusal: RunFileRefusal | null };

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY;

export function formatBytes(n: number): string {
  return n >= GiB && n % GiB === 0
    ? `${n / GiB} GiB`
    : n >= MiB && n % MiB === 0
      ? `${n / MiB} MiB`
      : n >= 1024 && n % 1024 === 0
        ? `${n / 1024} KiB`
        : `${n} bytes`;
}

export class RunRoot {
  /** The run directory as given, made absolute. */
  readonly dir: string;
  /** Its real path: every file read must lie under it. */
  readonly real: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
    let real = this.dir;
    try {
      real = realpathSync.native(this.dir);
    } catch {
      // not there (yet): nothing under it opens either
    }
    this.real = real;
  }

  /**
   * Open `rel` (a path of plain segments under the run directory) for reading: a regular file
   * inside the run directory, at most `maxBytes` long when given. The caller closes the fd.
   */
  open(rel: string, maxBytes?: number): { ok: true; fd: number; stat: Stats } | { ok: false; refusal: RunFileRefusal | null } {
    const refuse = (why: string) => ({ ok: false as const, refusal: { file: rel, code: "ViewFileRefused" as const, message: `${rel} is not read: ${why}.` } });
    if (rel === "" || isAbsolute(rel) || rel.split(/[\\/]/).some((s) => s === "" || s === "." || s === ".."))
      return refuse("it is not a plain path under the run directory");
    let real: string;
    try {
      real = realpathSync.native(join(this.real, rel));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return { ok: false, refusal: null };
      return refuse(code === "ELOOP" ? "its links loop" : `it cannot be resolved (${code ?? (err as Error).message})`);
    }
    if (!this.holds(real)) return refuse("a link leads outside the run directory");
    let fd: number;
    try {
      fd = openSync(real, OPEN_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { ok: false, refusal: null };
      return refuse(code === "ELOOP" ? "it changed into a link while it was opened" : `it cannot be opened (${code ?? (err as Error).message})`);
    }
    let keep = false;
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) return refuse(`it is ${describeType(stat)}, not a regular file`);
      const where = openedPath(fd);
      if (where !== undefined && !this.holds(where)) return refuse("a link leads outside the run directory");
      if (maxBytes !== undefined && stat.size > maxBytes) return refuse(`it is ${stat.size} bytes; the viewer reads at most ${formatBytes(maxBytes)} of it`);
      keep = true;
      return { ok: true, fd, stat };
    } finally {
      if (!keep) closeSync(fd);
    }
  }

  /** Open `rel`, hand the fd and its stat to `use`, close it. */
  withFile<T>(rel: string, maxBytes: number | undefined, use: (fd: number, stat: Stats) => T): RunFileRead<T> {
    const opened = this.open(rel, maxBytes);
    if (!opened.ok) return opened;
    try {
      return { ok: true, value: use(opened.fd, opened.stat) };
    } finally {
      closeSync(opened.fd);
    }
  }

  /** The whole of `rel` as UTF-8 text; refused when it is over `maxBytes`. */
  readText(rel: string, maxBytes: number): RunFileRead<string> {
    const read = this.withFile(rel, maxBytes, (fd) => readCapped(fd, maxBytes));
    if (read.ok && read.value === null)
      return {
        ok: false,
        refusal: { file: rel, code: "ViewFileRefused", message: `${rel} is not read: it grew past ${formatBytes(maxBytes)} while it was read.` },
      };
    return read.ok ? { ok: true, value: read.value!.toString("utf8") } : read;
  }

  /** The last `maxBytes` of `rel` (all of it when shorter). */
  readTail(rel: string, maxBytes: number): RunFileRead<string> {
    return this.withFile(rel, undefined, (fd, stat) => {
      const length = Math.min(stat.size, maxBytes);
      return readAt(fd, stat.size - length, length).toString("utf8");
    });
  }

  /** `length` bytes of `rel` from `offset` (one line of a JSON-lines file); refused over VIEW_LIMITS.lineBytes. */
  readRange(rel: string, offset: number, length: number): RunFileRead<Buffer> {
    if (length > VIEW_LIMITS.lineBytes)
      return {
        ok: false,
        refusal: {
          file: rel,
          code: "ViewFileRefused",
          message: `a line of ${rel} is not read: it is ${length} bytes; the viewer reads at most ${formatBytes(VIEW_LIMITS.lineBytes)} of one line.`,
        },
      };
    return this.withFile(rel, undefined, (fd) => readAt(fd, offset, length));
  }

  /** The names in folder `rel` when it is a folder inside the run directory; [] otherwise. */
  list(rel: string): string[] {
    try {
      const real = realpathSync.native(join(this.real, rel));
      return this.holds(real) ? readdirSync(real) : [];
    } catch {
      return [];
    }
  }

  private holds(real: string): boolean {
    return real === this.real || real.startsWith(this.real.endsWith(sep) ? this.real : this.real + sep);
  }
}

/** Where the kernel says an open fd is (Linux); undefined where it cannot say. */
function openedPath(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`).replace(/ \(deleted\)$/, "");
  } catch {
    return undefined;
  }
}

/** All of an open file, or null when it holds more than `maxBytes` (reads at most maxBytes + 1, whatever its size says). */
export function readCapped(fd: number, maxBytes: number): Buffer | null {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buffer = Buffer.allocUnsafe(Math.min(MiB, maxBytes + 1 - total));
    const n = readSync(fd, buffer, 0, buffer.length, total);
    if (n <= 0) break;
    chunks.push(buffer.subarray(0, n));
    total += n;
    if (total > maxBytes) return null;
  }
  return Buffer.concat(chunks, total);
}

/** Up to `length` bytes of an open file from `offset` (fewer at its end). */
export function readAt(fd: number, offset: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, out, done, length - done, offset + done);
    if (n <= 0) break;
    done += n;
  }
  return out.subarray(0, done);
}
